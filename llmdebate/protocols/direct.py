"""Direct judge: the judge answers the question alone (no debater)."""

from __future__ import annotations

from typing import Any

from llmdebate.protocols.common import ProtocolSettings, RoleModels, draws, item_dict, judge_choice
from llmdebate.protocols.recording import recording
from llmdebate.schemas import ModelCallRecord, Transcript, Turn

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
    with recording(calls):
        choice, prob, raw = await judge_choice(
            roles, "direct_judge", dr.shown, question=item.question, context=item.context
        )
    return Transcript(
        id=debate_id,
        protocol="direct",
        config=settings.debate,
        seed=seed,
        agents={"judge": roles.judge.name},
        item=item_dict(item),
        turns=[Turn(role="judge", text=f"The correct answer is: {choice}", position=choice)],
        calls=calls,
        meta={
            "item_id": item.id,
            "variant": variant,
            "decision": choice,
            "decision_probability": prob,
            "judge": raw,
            **dr.as_meta(),
        },
    )
