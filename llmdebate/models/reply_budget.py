"""Token budgets that fit a structured reply: the longest reply a schema admits, written the
ways a model or a grammar spaces JSON, counted in the model's own tokenizer, with a margin.

A fixed cap (12 tokens) cuts ``{ "direction": "higher" }`` under a grammar that puts spaces
inside the braces (llama.cpp's JSON grammar, and models that space their JSON): the reply
never closes, and the debate ends in an invalid output. :func:`reply_tokens` is the budget
of an act instead: :func:`longest_reply` builds the longest value the schema admits (the
longest enum member, the bound of an integer with more digits, every property present),
:func:`spellings` writes it compact, spaced (``{"a": 1}``), spaced inside the braces
(``{ "a": 1 }``) and indented; each is counted with the backend's tokenizer
(:meth:`~llmdebate.models.interface.Backend.count_tokens`) or, where the tokenizer is not
here (a server), as one token per character, an upper bound in any tokenizer. The budget is
the largest count times :data:`MARGIN` plus :data:`SLACK`.

A schema with an unbounded string or array has no longest reply: its budget is the floor the
caller gives. Whitespace a grammar lets run on past these spellings is met by the re-ask of
a cut reply (:func:`llmdebate.agents.llm.ask_structured`).
"""

from __future__ import annotations

import json
import math
from typing import Any

from llmdebate.models.structured import OutputSchema

MARGIN = 1.5
SLACK = 4
_INT_DIGITS = "-9223372036854775808"  # the longest 64-bit integer
_NUMBER = "-1.7976931348623157e+308"  # the longest double, as JSON writes one


class Unbounded(ValueError):
    """The schema admits replies of any length."""


def longest_reply(schema: dict[str, Any], defs: dict[str, Any] | None = None) -> Any:
    """The value with the longest JSON text that ``schema`` admits (:class:`Unbounded` for a
    string without ``maxLength`` or an array without ``maxItems``)."""
    defs = schema.get("$defs", defs or {})
    if "$ref" in schema:
        return longest_reply(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return max(schema["enum"], key=lambda v: len(json.dumps(v, ensure_ascii=False)))
    options = schema.get("anyOf") or schema.get("oneOf")
    if options:
        return _longest([longest_reply(o, defs) for o in options])
    kind = schema.get("type")
    if isinstance(kind, list):
        return _longest([longest_reply({**schema, "type": k}, defs) for k in kind])
    if kind == "object" or "properties" in schema:
        return {k: longest_reply(v, defs) for k, v in schema.get("properties", {}).items()}
    if kind == "array":
        if "maxItems" not in schema:
            raise Unbounded("an array without maxItems")
        return [longest_reply(schema.get("items", {}), defs)] * int(schema["maxItems"])
    if kind in _SCALARS:
        return _SCALARS[kind](schema)
    raise Unbounded(f"a schema of no known type: {json.dumps(schema)[:80]}")


def _string(schema: dict[str, Any]) -> str:
    if "maxLength" not in schema:
        raise Unbounded("a string without maxLength")
    return "x" * int(schema["maxLength"])


def _integer(schema: dict[str, Any]) -> int:
    bounds = [schema[k] for k in ("minimum", "maximum") if k in schema]
    if len(bounds) < 2:
        return int(_INT_DIGITS)
    return int(max(bounds, key=lambda b: len(str(b))))


_SCALARS: dict[str, Any] = {
    "string": _string,
    "integer": _integer,
    "number": lambda _: float(_NUMBER),
    "boolean": lambda _: False,
    "null": lambda _: None,
}


def _longest(values: list[Any]) -> Any:
    return max(values, key=lambda v: len(json.dumps(v, ensure_ascii=False)))


def spellings(value: Any) -> list[str]:
    """``value`` as JSON: compact, spaced, spaced inside brackets, and indented by 2."""
    return [
        json.dumps(value, ensure_ascii=False, separators=(",", ":")),
        json.dumps(value, ensure_ascii=False),
        _inside(value),
        json.dumps(value, ensure_ascii=False, indent=2),
    ]


def _inside(value: Any) -> str:
    """``{ "a": [ 1, 2 ] }``: a space inside every bracket (llama.cpp's grammar may write so)."""
    if isinstance(value, dict):
        body = ", ".join(f"{json.dumps(k)}: {_inside(v)}" for k, v in value.items())
        return "{ " + body + " }"
    if isinstance(value, list):
        return "[ " + ", ".join(_inside(v) for v in value) + " ]"
    return json.dumps(value, ensure_ascii=False)


def tokens_of(text: str, count: Any) -> int:
    """``text``'s tokens by ``count`` (a backend's ``count_tokens``), else its characters."""
    n = count(text) if count is not None else None
    return len(text) if n is None else int(n)


def reply_tokens(schema: OutputSchema, count: Any = None, floor: int = 8) -> int:
    """The token budget of a reply to ``schema`` (see the module docstring): at least
    ``floor``; ``count(text) -> int | None`` is the model's tokenizer."""
    try:
        value = longest_reply(schema.schema)
    except Unbounded:
        return floor
    most = max(tokens_of(s, count) for s in spellings(value))
    return max(floor, math.ceil(most * MARGIN) + SLACK)
