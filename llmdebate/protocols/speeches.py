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

A protocol describes one speech once, as a :class:`Speech` (the debate, the seat, the round,
its answer, what it has seen, the options, the judge's template, the log): its prompt is
``speech.prompt(act, **variables)``, the speech under the rules ``await
speech.deliver(messages)``, both at once ``await speech.say(act)``. With ``speech`` in
``prover.best_of_acts`` the speech is the best of ``prover.best_of`` candidates, each scored
by the judge's probability of the speaker's answer given what the speaker saw plus the
candidate (:func:`llmdebate.core.scoring.judged_reward`; a one-step look-ahead).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from llmdebate.agents.best_of_n import best_of_speech
from llmdebate.agents.factory import Team
from llmdebate.agents.settings import ProverSettings
from llmdebate.core import scoring
from llmdebate.core.schemas import ModelCallRecord, Turn
from llmdebate.errors import ConfigError
from llmdebate.protocols.common import (
    judge_choice,
    judge_variables,
    options_text,
    transcript_text,
)
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


@dataclass(frozen=True)
class Speech:
    """One speech of a debate: everything its prompt and the rules it goes through read.

    ``team``, ``spec`` and ``view`` (the judge's view of the passage) are the debate's;
    ``role`` speaks in round ``rnd`` of ``rounds`` for ``position`` (empty: for no answer),
    having ``seen`` these turns; ``options`` are the two answers in the order shown;
    ``judge_act`` is the judge's template, which scores a best-of-n candidate; ``log`` is the
    debate's log of calls."""

    team: Team
    spec: DebateSpec
    view: JudgeView
    role: str
    rnd: int
    rounds: int
    position: str
    seen: Sequence[Turn]
    options: tuple[str, str]
    judge_act: str
    log: Log

    def prompt(self, act: str, **variables: Any) -> list[dict[str, str]]:
        """The prompt of template ``act``: the question, the passage (the speakers always
        read it), the options, ``position``, ``round`` of ``rounds``, the turns ``seen`` as
        ``transcript``, what the run's rules say (:class:`Rules`), and ``variables``."""
        return self.team.prompts.render(
            act,
            question=self.spec.item.question,
            context=self.spec.item.context,
            options=options_text(self.options),
            position=self.position,
            round=self.rnd,
            rounds=self.rounds,
            transcript=transcript_text(list(self.seen), self.view),
            **Rules.of(self.team.prover).prompt_variables(),
            **variables,
        )

    async def say(self, act: str, **variables: Any) -> Turn:
        """The speech on template ``act``, the rules applied: :meth:`deliver` of
        :meth:`prompt`."""
        return await self.deliver(self.prompt(act, **variables))

    async def deliver(self, messages: list[dict[str, str]]) -> Turn:
        """The speech asked with ``messages``, the rules applied (see the module doc)."""
        team, view, role, rnd = self.team, self.view, self.role, self.rnd
        rules = Rules.of(team.prover)
        raw = await self._speak(messages)
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
                convo, team.speech_config(), role=role, act=f"argue round {rnd} (re-ask)",
                log=self.log,
            )
            raw = out.text
        return _turn(self, rules, attempt, reasks, records)

    async def _speak(self, messages: list[dict[str, str]]) -> str:
        """The raw reply to ``messages``. With best of n, every candidate is scored by
        :func:`~llmdebate.protocols.common.judge_choice` on :attr:`judge_act` with the turns
        seen plus the candidate, as the speaker's expected reward by
        :func:`llmdebate.core.scoring.judged_reward` (the judge's probability of
        ``position``). A model that replays recorded speeches (``replays(role, rnd)`` true: a
        fork) is asked once, as without best of n."""
        team, role, rnd = self.team, self.role, self.rnd
        model = team.model_for(role)
        act = f"argue round {rnd}"
        n = team.prover.best_of if "speech" in team.prover.best_of_acts else 1
        if n <= 1 or model.replays(role, rnd):
            out = await model.generate(
                messages, team.speech_config(), role=role, act=act, log=self.log
            )
            return out.text
        if team.judge_defers:
            raise ConfigError(
                "prover.best_of_acts: speech needs a model judge to score the candidate "
                f"speeches (judge.kind is {team.judge.kind})"
            )
        return await best_of_speech(
            model, messages, team.speech_config(), n, role=role, act=act, rnd=rnd,
            seed_key=f"{self.spec.seed}:{self.spec.debate_id}", score=self._score,
            log=self.log,
        )

    async def _score(self, text: str, own: list[ModelCallRecord]) -> float:
        """A candidate's expected reward: the judge's probability of :attr:`position` given
        the turns seen plus the candidate."""
        team, options = self.team, self.options
        argument = parse_reply(text).argument if team.prover.scratchpad else text
        turn = Turn(role=self.role, round=self.rnd, text=argument, position=self.position)
        decision = await judge_choice(
            team, self.judge_act, options, own,
            **judge_variables(self.spec.item.question, self.view, [*self.seen, turn]),
        )
        assert decision is not None  # the judge does not defer
        choice, _, raw = decision
        _, expected = scoring.judged_reward(
            float(raw["p_first"]), self.position == options[0], choice == options[0]
        )
        return expected


def _turn(
    speech: Speech, rules: Rules, attempt: _Attempt, reasks: int,
    records: list[dict[str, object]],
) -> Turn:
    """The turn of a speech's last attempt, with what the rules decided."""
    reply = attempt.reply
    text = attempt.decision.text if attempt.decision is not None else reply.argument
    kept: dict[str, Any] = {"reasks": reasks}
    if records:
        kept["words"] = records
    if attempt.budget:
        kept["quote_budget"] = attempt.budget
    if reply.problem:
        kept["problem"] = reply.problem
    quotes = speech.view.records(text, rules.budget)
    return Turn(
        role=speech.role,
        round=speech.rnd,
        text=text,
        position=speech.position,
        thinking=reply.thinking or None,
        quotes=quotes if speech.view.passage is not None else None,
        rules=kept,
    )


# ----------------------------------------------------------------- authoring API 1
def speech_prompt(
    team: Team, spec: DebateSpec, view: JudgeView, act: str, *, options: tuple[str, str],
    position: str, rnd: int, rounds: int, seen: list[Turn], **variables: Any,
) -> list[dict[str, str]]:
    """Authoring API 1's prompt of a speech: :meth:`Speech.prompt`."""
    return Speech(team, spec, view, "", rnd, rounds, position, seen, options, "", []).prompt(
        act, **variables
    )


async def deliver(
    team: Team, spec: DebateSpec, view: JudgeView, messages: list[dict[str, str]], *,
    role: str, position: str, rnd: int, seen: list[Turn], options: tuple[str, str],
    judge_act: str, log: Log,
) -> Turn:
    """Authoring API 1's speech under the rules: :meth:`Speech.deliver`."""
    speech = Speech(team, spec, view, role, rnd, 0, position, seen, options, judge_act, log)
    return await speech.deliver(messages)
