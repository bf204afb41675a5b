"""Two-sided debate: debaters A and B argue for the two options for n rounds; the judge decides.

Every item is run in both orders (variant ``order-0``: A defends ``shown[0]``; ``order-1``:
A defends ``shown[1]``), so any advantage of speaking first or of an option's position cancels
across the pair. With ``prover.assignment: choose`` (open debate) every item is run once
(variant ``chosen``): debater A's model picks the answer it defends before the first speech
(decision ``answer``), B defends the other, and the judge sees the options in the item's order.
``mode``: ``sequential`` (B sees A's speech of the same round) or
``simultaneous``.
"""

from __future__ import annotations

from collections.abc import Sequence

from llmdebate.agents.factory import Team
from llmdebate.core.schemas import Transcript, Turn
from llmdebate.protocols.common import (
    decided,
    judge_choice,
    judge_variables,
    view_of,
    with_quote_penalty,
)
from llmdebate.protocols.families import SpeechProtocol
from llmdebate.protocols.interactive import JudgeTurns
from llmdebate.protocols.interface import Additions, Capabilities, assignment_variants
from llmdebate.protocols.open_roles import chosen_position
from llmdebate.protocols.registry import register
from llmdebate.protocols.spec import DebateSpec, Log, ProtocolSettings
from llmdebate.protocols.speeches import deliver, speech_prompt
from llmdebate.qa.passage import JudgeView

JUDGE_ACT = "two_sided_judge"
CHOSEN = "chosen"


async def _speech(
    team: Team,
    spec: DebateSpec,
    view: JudgeView,
    options: tuple[str, str],
    who: str,
    position: str,
    opponent: str,
    rnd: int,
    rounds: int,
    seen: list[Turn],
    log: Log,
) -> Turn:
    msgs = speech_prompt(
        team, spec, view, "two_sided_debater", options=options, position=position, rnd=rnd,
        rounds=rounds, seen=seen, opponent_position=opponent,
    )
    return await deliver(
        team, spec, view, msgs, role=who, position=position, rnd=rnd, seen=seen,
        options=options, judge_act=JUDGE_ACT, log=log,
    )


@register("two-sided")
class TwoSided(SpeechProtocol):
    """Two-sided debate: both answers argued, every item in both orders."""

    can = Capabilities(open_roles=True, asks_questions=True, pairs=True)
    fork_records = ("rounds", "mode")
    title = "Two-sided debate"
    seats = ("debater A", "debater B")
    adds = Additions(models=frozenset())
    rank = 2
    judge_act = JUDGE_ACT

    def variants(
        self, assignment: str, index: int, views: Sequence[str] | None = None
    ) -> tuple[str, ...]:
        if assignment == "choose":
            return assignment_variants(assignment, index)
        return ("order-0", "order-1")

    async def run(
        self, spec: DebateSpec, team: Team, settings: ProtocolSettings, log: Log
    ) -> Transcript:
        shown = spec.shown if spec.variant != "order-1" else (spec.shown[1], spec.shown[0])
        pos_a, pos_b = shown
        if spec.variant == CHOSEN:
            pos_a = await chosen_position(team, spec, "debater A", log)
            pos_b = shown[1] if pos_a == shown[0] else shown[0]
        view = view_of(spec, team)
        turns: list[Turn] = []
        asks = JudgeTurns(team, spec, shown, settings.rounds, "two debaters")
        for rnd in range(1, settings.rounds + 1):
            before = list(turns)
            a = await _speech(
                team, spec, view, shown, "debater A", pos_a, pos_b, rnd, settings.rounds,
                before, log,
            )
            seen_b = [*before, a] if settings.mode == "sequential" else before
            b = await _speech(
                team, spec, view, shown, "debater B", pos_b, pos_a, rnd, settings.rounds,
                seen_b, log,
            )
            turns += [a, b]
            shown_to_judge = judge_variables(spec.item.question, view, turns)
            if not await asks.goes_on(rnd, turns, log, shown_to_judge):
                break
        decision = asks.decision() or await judge_choice(
            team,
            self.judge_act,
            shown,
            log,
            **judge_variables(spec.item.question, view, turns),
        )
        t = decided(
            spec,
            settings,
            agents={
                "debater A": team.model_for("debater A").name,
                "debater B": team.model_for("debater B").name,
                "judge": team.judge_name(),
            },
            turns=turns,
            log=log,
            decision=decision,
            judge_round=asks.judge_round(),
            options=shown,
            order=[pos_a, pos_b],
            rounds=settings.rounds,
            mode=settings.mode,
            passage=view.mode,
            **asks.meta(),
        )
        return with_quote_penalty(t, team)
