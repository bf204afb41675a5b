"""Whether a reply matches the JSON schema it was constrained to: the check behind
``constrained``.

A server may accept a structured-output field and ignore it (llama-cpp-python drops
``response_format`` and ``json_schema``; vLLM 0.32 drops ``guided_json``): whether it enforces
the field is established apart (:mod:`llmdebate.models.enforcement`), and a backend records a
call ``constrained`` only where it does and the reply is JSON matching the schema. The check
covers the subset of JSON schema that :func:`~llmdebate.models.structured.strict_schema`
produces (types, properties, required, additionalProperties, items, enum, const, anyOf,
min/max items, length and value bounds); a keyword outside it is not checked.
"""

from __future__ import annotations

import json
from typing import Any

_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}


def reply_matches(text: str, schema: dict[str, Any]) -> bool:
    """``text`` is a JSON document matching ``schema``."""
    try:
        value = json.loads(text)
    except ValueError:
        return False
    return matches(value, schema)


def looks_unconstrained(text: str) -> bool:
    """A reply no JSON constraint could have produced: it does not open with ``{`` or ``[``
    (a constrained decoder writes the opening bracket first)."""
    return not text.lstrip().startswith(("{", "["))


def matches(value: Any, schema: dict[str, Any]) -> bool:
    """``value`` satisfies ``schema`` (within the subset named in the module docstring)."""
    if "anyOf" in schema and not any(matches(value, s) for s in schema["anyOf"]):
        return False
    if "enum" in schema and value not in schema["enum"]:
        return False
    if "const" in schema and value != schema["const"]:
        return False
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind] if kind else []
    if kinds and not any(_is(value, k) for k in kinds):
        return False
    if isinstance(value, dict):
        return _object(value, schema)
    if isinstance(value, list):
        return _array(value, schema)
    if isinstance(value, str):
        return _bounded(len(value), schema, "minLength", "maxLength")
    if isinstance(value, int | float) and not isinstance(value, bool):
        return _bounded(value, schema, "minimum", "maximum")
    return True


def _is(value: Any, kind: str) -> bool:
    if kind in ("integer", "number") and isinstance(value, bool):
        return False
    if kind == "integer" and isinstance(value, float):
        return value.is_integer()
    return isinstance(value, _TYPES.get(kind, (object,)))


def _bounded(size: float, schema: dict[str, Any], low: str, high: str) -> bool:
    return not ((low in schema and size < schema[low]) or (high in schema and size > schema[high]))


def _object(value: dict[str, Any], schema: dict[str, Any]) -> bool:
    props: dict[str, Any] = schema.get("properties", {})
    if any(k not in value for k in schema.get("required", [])):
        return False
    if schema.get("additionalProperties") is False and any(k not in props for k in value):
        return False
    return all(matches(v, props[k]) for k, v in value.items() if k in props)


def _array(value: list[Any], schema: dict[str, Any]) -> bool:
    if not _bounded(len(value), schema, "minItems", "maxItems"):
        return False
    items = schema.get("items")
    return not isinstance(items, dict) or all(matches(v, items) for v in value)
