"""Direct judge: the judge answers the question alone (no debater)."""

from __future__ import annotations

from typing import Any

from llmdebate.agents.recording import debate_log
from llmdebate.protocols.common import ProtocolSettings, RoleModels, decided, draws, judge_choice
from llmdebate.schemas import ModelCallRecord, Transcript

VARIANTS = ("direct",)


async def run_direct(
    item: Any,
    roles: RoleModels,
    settings: ProtocolSettings,
    *,
    variant: str = "direct",
    seed: int = 0,
    debate_id: str = "direct-0",
) -> Transcript:
    """One direct-judge decision on ``item`` between its gold answer and the distractor."""
    dr = draws(item, seed)
    calls: list[ModelCallRecord] = []
    with debate_log(calls):
        decision = await judge_choice(
            roles, "direct_judge", dr.shown, question=item.question, context=item.context
        )
    return decided(
        protocol="direct",
        debate_id=debate_id,
        item=item,
        settings=settings,
        seed=seed,
        dr=dr,
        agents={"judge": roles.judge.name},
        turns=[],
        calls=calls,
        decision=decision,
        variant=variant,
        judge_round=0,
    )
