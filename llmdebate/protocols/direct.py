"""Direct judge: the judge answers the question alone (no debater)."""

from __future__ import annotations

from llmdebate.agents.factory import Team
from llmdebate.protocols.base import DebateSpec, Log, ProtocolSettings
from llmdebate.protocols.common import decided, judge_choice
from llmdebate.schemas import Transcript


async def run_direct(
    spec: DebateSpec, team: Team, settings: ProtocolSettings, log: Log
) -> Transcript:
    """One direct-judge decision between the item's gold answer and its distractor."""
    decision = await judge_choice(
        team,
        "direct_judge",
        spec.shown,
        log,
        question=spec.item.question,
        context=spec.item.context,
    )
    return decided(
        spec,
        settings,
        agents={"judge": team.judge_name()},
        turns=[],
        log=log,
        decision=decision,
        judge_round=0,
        options=spec.shown,
    )
