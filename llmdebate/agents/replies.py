"""The replies of the structured acts, as pydantic models: one schema asks for them and
validates them.

:func:`decomposition_schema` / :func:`direction_schema` / :func:`index_schema` /
:func:`verdict_schema` give the :class:`~llmdebate.models.structured.OutputSchema` that a
backend enforces (OpenAI strict ``response_format``, an Anthropic tool, xgrammar locally);
:mod:`llmdebate.agents.parsing` validates every reply, constrained or not, with the same
models. String lengths are bounded so that a constrained reply always closes within the
act's ``max_tokens``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from llmdebate.core.schemas import MAX_DEBATE_WIDTH, RuleKind
from llmdebate.models.structured import OutputSchema

SUBCLAIM_CHARS = 120
EXPR_CHARS = 60
JSON_CHARS = 80
"""The most characters a decomposition reply spends outside its strings (keys, rule, k)."""


def decomposition_chars(width: int) -> int:
    """The longest reply the decomposition schema of ``width`` admits, escapes aside: a
    token budget this large lets constrained decoding always close the JSON."""
    return width * SUBCLAIM_CHARS + EXPR_CHARS + JSON_CHARS


class _Reply(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RuleReply(_Reply):
    kind: RuleKind
    k: int | None = Field(ge=0, le=MAX_DEBATE_WIDTH)
    expr: str | None = Field(max_length=EXPR_CHARS)


class DecompositionReply(_Reply):
    """A decomposition as a model writes it: subclaim texts and the combination rule."""

    subclaims: list[str] = Field(min_length=1, max_length=MAX_DEBATE_WIDTH)
    rule: RuleReply


class DirectionReply(_Reply):
    direction: Literal["higher", "lower", "right"]


class IndexReply(_Reply):
    index: int = Field(ge=1)


class VerdictReply(_Reply):
    verdict: bool


def decomposition_schema(width: int) -> OutputSchema:
    """From 2 (a real split; 1 when ``width`` is 1) to ``width`` subclaims of at most
    :data:`SUBCLAIM_CHARS` characters each. The parser also accepts a single subclaim from
    an unconstrained reply (e.g. a circuit's input wire, restated)."""
    schema = OutputSchema.from_model(
        DecompositionReply,
        "decomposition",
        **{"subclaims.maxItems": width},
    ).schema
    schema["properties"]["subclaims"]["items"]["maxLength"] = SUBCLAIM_CHARS
    schema["properties"]["subclaims"]["items"]["minLength"] = 1
    schema["properties"]["subclaims"]["minItems"] = min(2, width)
    return OutputSchema.of("decomposition", schema)


def direction_schema() -> OutputSchema:
    return OutputSchema.from_model(DirectionReply, "direction")


def index_schema(n: int) -> OutputSchema:
    return OutputSchema.from_model(IndexReply, "index", **{"index.maximum": n})


def verdict_schema() -> OutputSchema:
    return OutputSchema.from_model(VerdictReply, "verdict")
