"""The structured reply of a model judge who may question the debaters and end the debate.

After every debate turn such a judge (Michael et al. 2023) states its current probability
that the option shown first is correct, and either asks a question — the debate goes on for
another turn, at a cost (:func:`llmdebate.core.scoring.interactive_judge_score`) — or decides,
which ends the debate with that probability as its verdict.

:class:`JudgeTurnReply` is one flat object, so that strict structured output (OpenAI's
``response_format``, an Anthropic tool, a local grammar) can enforce :func:`judge_turn_schema`:
``{"action": "ask" | "decide", "question": str, "p_first": number}`` — ``question`` is ""
when deciding. :func:`parse_judge_turn` reads a reply, constrained or not (a JSON object
inside prose or a code fence is accepted), and checks what the schema cannot express: an
``ask`` needs a question.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from llmdebate.models.structured import OutputSchema
from llmdebate.records.jsonl import first_error

QUESTION_CHARS = 400
"""The longest question a judge may ask (bounded so a constrained reply always closes)."""


class JudgeTurnError(ValueError):
    """A judge's reply that is not a valid turn; the one-line message names the problem."""


class JudgeTurnReply(BaseModel):
    """One turn of an interactive judge: ``ask`` (``question`` goes to the debaters) or
    ``decide``; ``p_first`` is its probability that the option shown first is correct."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    action: Literal["ask", "decide"]
    question: str = Field(max_length=QUESTION_CHARS)
    p_first: float = Field(ge=0.0, le=1.0)

    @field_validator("question")
    @classmethod
    def _question_when_asking(cls, value: str, info: ValidationInfo) -> str:
        if info.data.get("action") == "ask" and not value.strip():
            raise ValueError("an 'ask' turn needs a non-empty question")
        return value

    @property
    def asks(self) -> bool:
        return self.action == "ask"

    def p_correct(self, first_is_correct: bool) -> float:
        """The judge's probability on the correct answer."""
        return self.p_first if first_is_correct else 1.0 - self.p_first


def judge_turn_schema() -> OutputSchema:
    """The strict JSON schema of :class:`JudgeTurnReply`, named ``judge_turn``."""
    return OutputSchema.from_model(JudgeTurnReply, "judge_turn")


def _first_object(text: str) -> Any:
    """The first JSON object in ``text``, wherever it starts."""
    decoder = json.JSONDecoder()
    pos = text.find("{")
    while pos >= 0:
        try:
            obj, _ = decoder.raw_decode(text, pos)
        except json.JSONDecodeError:
            obj = None
        if isinstance(obj, dict):
            return obj
        pos = text.find("{", pos + 1)
    raise JudgeTurnError("the judge's reply contains no complete JSON object")


def parse_judge_turn(text: str) -> JudgeTurnReply:
    """The judge's turn from its reply text; :class:`JudgeTurnError` (one line naming the
    field) if it is not one. A missing ``question`` in a ``decide`` reply reads as ""."""
    raw = _first_object(text)
    if raw.get("action") == "decide" and "question" not in raw:
        raw = {**raw, "question": ""}
    try:
        return JudgeTurnReply.model_validate(raw)
    except ValidationError as exc:
        raise JudgeTurnError(f"judge turn: {first_error(exc)}") from None
