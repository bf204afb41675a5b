"""Direct judge: the judge answers the question alone (no debater)."""

from __future__ import annotations

from llmdebate.agents.factory import Team
from llmdebate.protocols.base import DebateSpec, Log, ProtocolSettings
from llmdebate.protocols.common import ChoiceProtocol, decided, judge_choice
from llmdebate.protocols.registry import register
from llmdebate.schemas import Transcript


@register("direct")
class Direct(ChoiceProtocol):
    """Direct judging: the judge alone chooses between the two answers."""

    title = "Direct judging"
    rank = 0
    judge_act = "direct_judge"
    shows_transcript = False

    async def run(
        self, spec: DebateSpec, team: Team, settings: ProtocolSettings, log: Log
    ) -> Transcript:
        """One direct-judge decision between the item's gold answer and its distractor."""
        decision = await judge_choice(
            team,
            self.judge_act,
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
