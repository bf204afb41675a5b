"""Protocol ``critiqued-consultancy``: consultancy with a critic. In every round the
consultant argues for its assigned answer, then a critic, a seat of its own with its own
model (``seats: {critic: {model: ...}}``, else the estimator's), names the weakest step of
the speech (its own template, ``critique.j2``); the judge then chooses between the two
answers, having read both. The critic's decisions are exported as the ``critic`` player."""

from __future__ import annotations

from llmdebate.agents.factory import Team
from llmdebate.core.schemas import Transcript, Turn
from llmdebate.protocols.common import (
    decided,
    judge_choice,
    judge_variables,
    options_text,
    transcript_text,
    view_of,
    with_quote_penalty,
)
from llmdebate.protocols.families import SpeechProtocol
from llmdebate.protocols.interface import Additions, Capabilities
from llmdebate.protocols.registry import register
from llmdebate.protocols.spec import DebateSpec, Log, ProtocolSettings
from llmdebate.protocols.speeches import Rules, deliver

CRITIC = "critic"


@register("critiqued-consultancy")
class CritiquedConsultancy(SpeechProtocol):
    """Consultancy with a critic: the consultant's speeches, each critiqued, then the judge."""

    title = "Critiqued consultancy"
    rank = 1
    seats = ("consultant", CRITIC)
    adds = Additions(
        seats={CRITIC: "estimator"},  # its settings, default model
        roles={CRITIC: CRITIC},  # exported as the critic player
        prompts="llmdebate_critic.prompts",
    )
    can = Capabilities(assigned=True)
    judge_act = "consultancy_judge"

    async def run(
        self, spec: DebateSpec, team: Team, settings: ProtocolSettings, log: Log
    ) -> Transcript:
        position = spec.answer or spec.gold
        view = view_of(spec, team)
        critic = team.model_for(CRITIC)
        turns: list[Turn] = []
        for rnd in range(1, settings.rounds + 1):
            msgs = team.prompts.render(
                "consultancy_consultant",
                question=spec.item.question,
                context=spec.item.context,
                options=options_text(spec.shown),
                position=position,
                round=rnd,
                rounds=settings.rounds,
                transcript=transcript_text(turns, view),
                **Rules.of(team.prover).prompt_variables(),
            )
            speech = await deliver(
                team, spec, view, msgs, role="consultant", position=position, rnd=rnd,
                seen=turns, options=spec.shown, judge_act=self.judge_act, log=log,
            )
            ask = team.prompts.render(
                "critique", question=spec.item.question, position=position, round=rnd,
                speech=speech.text,
            )
            out = await critic.generate(
                ask, team.speech_config(), role=CRITIC, act=f"argue round {rnd}", log=log
            )
            turns += [speech, Turn(role=CRITIC, round=rnd, text=out.text)]
        decision = await judge_choice(
            team, self.judge_act, spec.shown, log,
            **judge_variables(spec.item.question, view, turns),
        )
        t = decided(
            spec,
            settings,
            agents={
                "consultant": team.model_for("consultant").name,
                CRITIC: critic.name,
                "judge": team.judge_name(),
            },
            turns=turns,
            log=log,
            decision=decision,
            judge_round=settings.rounds + 1,
            options=spec.shown,
            rounds=settings.rounds,
            passage=view.mode,
        )
        return with_quote_penalty(t, team)
