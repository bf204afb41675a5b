"""The rules every speech goes through: the private scratchpad, the word limit, quotes.

A debater's (consultant's) reply is split by :func:`llmdebate.qa.speech.parse_reply` into its
private ``<thinking>`` and the ``<argument>``; only the argument is ever shown to a judge or
to the other debater (the scratchpad is kept in ``Turn.thinking``). The argument's words are
counted against ``prover.max_words`` / ``prover.min_words``
(:func:`llmdebate.qa.speech.enforce_word_limit`): out of bounds, the model is asked once more in
the same conversation (act ``argue round r (re-ask)``); still over, the argument is cut at a
sentence end with a visible marker. Its quotes are checked against the passage and recorded
(``Turn.quotes``: text, status, spans); with the passage hidden from the judge, passage text
copied without quote tags is a quote too (:meth:`llmdebate.qa.passage.JudgeView.quoted`,
recorded ``copied``). Quoted words over ``prover.quote_words`` earn a re-ask, then the quotes
past the budget are left out of what the judge reads. Every decision
is recorded in ``Turn.rules``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from llmdebate.agents.factory import Team
from llmdebate.agents.settings import ProverSettings
from llmdebate.core.schemas import Turn
from llmdebate.protocols.common import options_text, speak, transcript_text
from llmdebate.protocols.spec import DebateSpec, Log
from llmdebate.qa.passage import JudgeView
from llmdebate.qa.quotes import QuoteBudget, check_budget
from llmdebate.qa.speech import LimitDecision, Reply, WordLimit, enforce_word_limit, parse_reply

REASKS = 1


@dataclass(frozen=True)
class Rules:
    """The speech rules of a run (from the prover's settings)."""

    limit: WordLimit | None = None
    budget: QuoteBudget | None = None
    scratchpad: bool = True

    @classmethod
    def of(cls, p: ProverSettings) -> Rules:
        limit = None
        if p.max_words is not None or p.min_words is not None:
            limit = WordLimit(max_words=p.max_words, min_words=p.min_words, reasks=REASKS)
        budget = QuoteBudget(max_words=p.quote_words) if p.quote_words is not None else None
        return cls(limit, budget, p.scratchpad)

    def prompt_variables(self) -> dict[str, Any]:
        """What the speakers' prompts say of the rules."""
        return {
            "max_words": self.limit.max_words if self.limit else None,
            "min_words": self.limit.min_words if self.limit else None,
            "quote_words": self.budget.max_words if self.budget else None,
            "scratchpad": self.scratchpad,
        }


def speech_prompt(
    team: Team,
    spec: DebateSpec,
    view: JudgeView,
    act: str,
    *,
    options: tuple[str, str],
    position: str,
    rnd: int,
    rounds: int,
    seen: list[Turn],
    **variables: Any,
) -> list[dict[str, str]]:
    """The prompt of a speech (template ``act``): the question, the passage (the speakers
    always read it), the options, the speaker's ``position``, the round of ``rounds``, the
    turns it has ``seen`` as the transcript, what the run's rules say (:class:`Rules`), and
    ``variables``."""
    return team.prompts.render(
        act,
        question=spec.item.question,
        context=spec.item.context,
        options=options_text(options),
        position=position,
        round=rnd,
        rounds=rounds,
        transcript=transcript_text(seen, view),
        **Rules.of(team.prover).prompt_variables(),
        **variables,
    )


def split(rules: Rules, raw: str) -> Reply:
    """A reply split into scratchpad and argument (all argument without a scratchpad)."""
    return parse_reply(raw) if rules.scratchpad else Reply("", raw.strip())


@dataclass
class _Attempt:
    reply: Reply
    decision: LimitDecision | None
    message: str | None
    budget: str | None


def _judge(rules: Rules, view: JudgeView, raw: str, reasks: int) -> _Attempt:
    """One reply against the rules: what to keep, and the re-ask message if any."""
    reply = split(rules, raw)
    dec = (
        enforce_word_limit(reply.argument, rules.limit, reasks_used=reasks)
        if rules.limit is not None
        else None
    )
    budget = None
    if rules.budget is not None:
        budget = check_budget(view.quoted(reply.argument), rules.budget).problem
    message = dec.message if dec is not None and dec.decision == "reask" else None
    if message is None and reasks < REASKS:
        if reply.problem:
            message = f"{reply.problem[0].upper()}{reply.problem[1:]}. Write your argument " \
                "inside <argument></argument>."
        elif budget:
            message = (
                f"Your argument has {budget} (passage text copied without quote tags counts "
                "as quoted). Write it again quoting less."
            )
    return _Attempt(reply, dec, message, budget)


async def deliver(
    team: Team,
    spec: DebateSpec,
    view: JudgeView,
    messages: list[dict[str, str]],
    *,
    role: str,
    position: str,
    rnd: int,
    seen: list[Turn],
    options: tuple[str, str],
    judge_act: str,
    log: Log,
) -> Turn:
    """The speech of ``role`` in round ``rnd``, the rules applied (see the module doc)."""
    rules = Rules.of(team.prover)
    raw = await speak(
        team, spec, messages, role=role, position=position, rnd=rnd, seen=seen,
        options=options, judge_act=judge_act, log=log, view=view,
    )
    convo = list(messages)
    records: list[dict[str, object]] = []
    reasks = 0
    while True:
        attempt = _judge(rules, view, raw, reasks)
        if attempt.decision is not None:
            records.append(attempt.decision.record())
        if attempt.message is None:
            break
        reasks += 1
        convo += [
            {"role": "assistant", "content": raw},
            {"role": "user", "content": attempt.message},
        ]
        out = await team.model_for(role).generate(
            convo, team.speech_config(), role=role, act=f"argue round {rnd} (re-ask)", log=log
        )
        raw = out.text
    reply = attempt.reply
    text = attempt.decision.text if attempt.decision is not None else reply.argument
    kept: dict[str, Any] = {"reasks": reasks}
    if records:
        kept["words"] = records
    if attempt.budget:
        kept["quote_budget"] = attempt.budget
    if reply.problem:
        kept["problem"] = reply.problem
    quotes = view.records(text, rules.budget)
    return Turn(
        role=role,
        round=rnd,
        text=text,
        position=position,
        thinking=reply.thinking or None,
        quotes=quotes if view.passage is not None else None,
        rules=kept,
    )
