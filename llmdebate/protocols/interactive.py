"""The judge who may ask and stop (Michael et al. 2023), in a speech protocol that asks.

With ``judge.interactive`` a model judge gets a turn after every round (prompt ``judge_turn``,
the structured reply :class:`~llmdebate.protocols.judge_turn.JudgeTurnReply`, schema
``judge_turn``):
``ask`` — its question is added to the debate (a ``judge`` turn the debaters read) and another
round follows — or ``decide``, which ends the debate with its ``p_first`` as the verdict.
After the last round (``rounds``) its reply is the verdict whatever it says. Every round it
asks for costs ``judge.turn_cost`` in its score,
:func:`llmdebate.core.scoring.interactive_judge_score` (log base ``judge.log_base``), recorded in
``meta.judge_turns`` and re-scored by ``llmdebate score``
(:func:`llmdebate.core.scoring.judge_turns_score`).

A person (a deferred judge, ``judge.kind`` deferred or human) asks asynchronously: the debate
stops after the rounds the person has asked for so far and waits (status
``awaiting_verdict``); ``llmdebate answer`` runs it again, as a fork that replays the recorded
rounds, inside :func:`person_asks` with the person's questions — each is added after its
round as the model judge's is — and one more round is heard.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from llmdebate.agents.factory import Team
from llmdebate.agents.llm import ask_structured
from llmdebate.agents.parsing import ReplyError
from llmdebate.core import scoring
from llmdebate.core.schemas import Turn
from llmdebate.models import GenerateConfig
from llmdebate.protocols.common import choice_of, options_text
from llmdebate.protocols.judge_turn import (
    JudgeTurnError,
    JudgeTurnReply,
    judge_turn_schema,
    parse_judge_turn,
)
from llmdebate.protocols.spec import DebateSpec, Log

ACT = "judge_turn"
MAX_TOKENS = 300
MAX_ATTEMPTS = 3


_PERSON: ContextVar[tuple[str, ...]] = ContextVar("person_questions", default=())


@contextmanager
def person_asks(questions: Sequence[str]) -> Iterator[None]:
    """Within: a deferred interactive judge has asked ``questions`` (one after each round)."""
    token = _PERSON.set(tuple(questions))
    try:
        yield
    finally:
        _PERSON.reset(token)


def question_text(question: str) -> str:
    """A judge's question as the debaters read it (a ``judge`` turn)."""
    return f"Question: {question}"


def _parse(text: str) -> JudgeTurnReply:
    try:
        return parse_judge_turn(text)
    except JudgeTurnError as exc:
        raise ReplyError(str(exc)) from None


@dataclass
class JudgeTurns:
    """The interactive judge of one debate: its turns so far and its final reply."""

    team: Team
    spec: DebateSpec
    options: tuple[str, str]
    rounds: int
    speakers: str
    turns: list[dict[str, Any]] = field(default_factory=list)
    final: JudgeTurnReply | None = None
    heard: int | None = None
    """A person's debate: the last round heard before it waits for the person."""

    @property
    def on(self) -> bool:
        return self.team.judge.interactive and not self.team.judge_defers

    @property
    def person(self) -> bool:
        """A person who asks (:func:`person_asks`) rather than a model."""
        return self.team.judge.interactive and self.team.judge_defers

    def _person_goes_on(self, rnd: int, turns: list[Turn]) -> bool:
        asked = _PERSON.get()
        if rnd <= len(asked) and rnd < self.rounds:
            q = asked[rnd - 1]
            turns.append(Turn(role="judge", round=rnd, text=question_text(q)))
            self.turns.append({"round": rnd, "action": "ask", "question": q})
            return True
        self.heard = rnd
        return False

    async def goes_on(
        self, rnd: int, turns: list[Turn], log: Log, variables: dict[str, Any]
    ) -> bool:
        """After round ``rnd``: whether the debate goes on. ``variables``: what the judge's
        prompt shows, as its final judge prompt would (``question``, ``context``,
        ``transcript``: the debate so far). An ``ask`` adds the question to ``turns``."""
        if self.person:
            return self._person_goes_on(rnd, turns)
        if not self.on:
            return True
        messages = self.team.prompts.render(
            ACT, **variables, options=options_text(self.options), first=self.options[0],
            speakers=self.speakers, round=rnd, rounds=self.rounds,
            turn_cost=self.team.judge.turn_cost,
        )
        reply: JudgeTurnReply = await ask_structured(
            self.team.model_for("judge"), messages, _parse, role="judge", act="judge turn",
            config=GenerateConfig(temperature=0.0, max_tokens=MAX_TOKENS),
            max_attempts=MAX_ATTEMPTS, calls=log, schema=judge_turn_schema(),
        )
        self.turns.append({"round": rnd, **reply.model_dump()})
        if reply.asks and rnd < self.rounds:
            turns.append(Turn(role="judge", round=rnd, text=question_text(reply.question)))
            return True
        self.final = reply
        return False

    def decision(self) -> tuple[str, float, dict[str, Any]] | None:
        """The verdict (chosen option, its probability, raw) of the judge's last turn."""
        if self.final is None:
            return None
        choice, prob, raw = choice_of(self.options, self.final.p_first)
        return choice, prob, {**raw, "method": "judge-turn"}

    def judge_round(self) -> int:
        """The round of the verdict: after the last round heard."""
        if self.heard is not None:
            return self.heard + 1
        return (self.turns[-1]["round"] if self.turns else self.rounds) + 1

    def meta(self) -> dict[str, Any]:
        """``judge_turns`` for the transcript's meta (nothing without an interactive judge);
        a person's debate: ``person_asks`` (the questions asked, the last round heard)."""
        if self.person and self.heard is not None:
            j = self.team.judge
            return {
                "person_asks": {
                    "questions": [t["question"] for t in self.turns], "heard": self.heard,
                    "max_rounds": self.rounds, "turn_cost": j.turn_cost, "log_base": j.log_base,
                }
            }
        if self.final is None:
            return {}
        asked = sum(t["action"] == "ask" for t in self.turns[:-1])
        j = self.team.judge
        p = self.final.p_correct(self.options[0] == self.spec.gold)
        return {
            "judge_turns": {
                "turns": self.turns,
                "asked": asked,
                "max_rounds": self.rounds,
                "turn_cost": j.turn_cost,
                "log_base": j.log_base,
                "score": scoring.finite(
                    scoring.interactive_judge_score(p, asked, j.turn_cost, log_base=j.log_base)
                ),
            }
        }
