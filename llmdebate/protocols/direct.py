"""Direct judge: the judge answers the question alone (no debater).

On an item with a passage the direct protocol is the two baselines of the QA debate studies,
one debate each (``judge.direct_passage``): ``blind`` (the passage hidden: the judge answers
from the question and the two answers alone) and ``expert`` (the passage shown)."""

from __future__ import annotations

from collections.abc import Sequence

from llmdebate.agents.factory import Team
from llmdebate.core.schemas import Transcript
from llmdebate.protocols.common import (
    VIEW_VARIANTS,
    decided,
    judge_choice,
    judge_variables,
    view_of,
)
from llmdebate.protocols.families import ChoiceProtocol
from llmdebate.protocols.interface import Additions
from llmdebate.protocols.registry import register
from llmdebate.protocols.spec import DebateSpec, Log, ProtocolSettings
from llmdebate.qa.passage import HIDDEN


@register("direct")
class Direct(ChoiceProtocol):
    """Direct judging: the judge alone chooses between the two answers."""

    title = "Direct judging"
    rank = 0
    judge_act = "direct_judge"
    shows_transcript = False
    adds = Additions(models=frozenset())  # the judge alone

    def variants(
        self, assignment: str, index: int, views: Sequence[str] | None = None
    ) -> tuple[str, ...]:
        """One debate, or on an item with a passage one per judge view (``blind``,
        ``expert``)."""
        if views is None:
            return (self.name,)
        names: dict[str, str] = {mode: name for name, mode in VIEW_VARIANTS.items()}
        return tuple(names[v] for v in views) or (names[HIDDEN],)

    async def run(
        self, spec: DebateSpec, team: Team, settings: ProtocolSettings, log: Log
    ) -> Transcript:
        """One direct-judge decision between the item's gold answer and its distractor."""
        view = view_of(spec, team)
        decision = await judge_choice(
            team, self.judge_act, spec.shown, log, **judge_variables(spec.item.question, view)
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
            passage=view.mode,
        )
