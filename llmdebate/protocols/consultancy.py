"""Consultancy: one consultant argues for an assigned answer for n rounds; the judge decides.

With ``prover.assignment: paired`` every item is run twice, the consultant assigned the gold
answer (variant ``honest``) and the distractor (``dishonest``), so the consultant argues for
the correct answer in exactly half of the debates.
"""

from __future__ import annotations

from llmdebate.agents.factory import Team
from llmdebate.core.schemas import Transcript, Turn
from llmdebate.errors import ProtocolViolation
from llmdebate.protocols.common import (
    decided,
    judge_choice,
    judge_variables,
    view_of,
    with_quote_penalty,
)
from llmdebate.protocols.families import SpeechProtocol
from llmdebate.protocols.interactive import JudgeTurns
from llmdebate.protocols.interface import Additions, Capabilities
from llmdebate.protocols.open_roles import chosen_position
from llmdebate.protocols.registry import register
from llmdebate.protocols.spec import DebateSpec, Log, ProtocolSettings
from llmdebate.protocols.speeches import deliver, speech_prompt


@register("consultancy")
class Consultancy(SpeechProtocol):
    """Consultancy: one consultant argues for an assigned answer."""

    can = Capabilities(assigned=True, open_roles=True, asks_questions=True)
    title = "Consultancy"
    seats = ("consultant",)
    adds = Additions(models=frozenset())
    rank = 1
    judge_act = "consultancy_judge"

    async def run(
        self, spec: DebateSpec, team: Team, settings: ProtocolSettings, log: Log
    ) -> Transcript:
        position = spec.answer
        if position is None:
            if spec.variant != "chosen":
                raise ProtocolViolation("consultancy needs an assigned answer")
            position = await chosen_position(team, spec, "consultant", log)
        model = team.model_for("consultant")
        view = view_of(spec, team)
        turns: list[Turn] = []
        asks = JudgeTurns(team, spec, spec.shown, settings.rounds, "a consultant")
        for rnd in range(1, settings.rounds + 1):
            msgs = speech_prompt(
                team, spec, view, "consultancy_consultant", options=spec.shown,
                position=position, rnd=rnd, rounds=settings.rounds, seen=turns,
            )
            turns.append(
                await deliver(
                    team, spec, view, msgs, role="consultant", position=position, rnd=rnd,
                    seen=turns, options=spec.shown, judge_act=self.judge_act, log=log,
                )
            )
            shown_to_judge = judge_variables(spec.item.question, view, turns)
            if not await asks.goes_on(rnd, turns, log, shown_to_judge):
                break
        decision = asks.decision() or await judge_choice(
            team,
            self.judge_act,
            spec.shown,
            log,
            **judge_variables(spec.item.question, view, turns),
        )
        t = decided(
            spec,
            settings,
            agents={"consultant": model.name, "judge": team.judge_name()},
            turns=turns,
            log=log,
            decision=decision,
            judge_round=asks.judge_round(),
            options=spec.shown,
            rounds=settings.rounds,
            passage=view.mode,
            **asks.meta(),
        )
        return with_quote_penalty(t, team)
