"""A JSON schema as a GBNF grammar (llama.cpp's grammar format), for ``structured: grammar``.

:func:`schema_to_gbnf` covers the subset of JSON schema that the reply schemas use
(:mod:`llmdebate.agents.replies`, the verbalised probability):

* objects whose properties are all required (written in the order listed, as OpenAI's strict
  schemas have them; ``additionalProperties`` is taken as false);
* ``enum`` and ``const`` of JSON values; ``anyOf`` (e.g. with ``{"type": "null"}``);
* ``boolean``, ``null``;
* ``integer`` with ``minimum`` / ``maximum``: a bounded range of up to :data:`MAX_ENUMERATED`
  values is listed exactly, a lower bound of 0 or 1 drops the sign (and 0), other bounds are
  left to validation;
* ``number``: non-negative when ``minimum >= 0``; exactly [0, 1] when the bounds are 0 and 1
  (a probability; as ``repr`` writes floats, ``1e-05`` included); other bounds are left
  to validation;
* ``string`` with ``minLength`` / ``maxLength`` (a JSON escape counts as one character);
* ``array`` with ``items``, ``minItems`` / ``maxItems``.

Anything else raises :class:`GrammarError` naming the schema path. Whitespace between tokens
is at most one space, so a reply in the grammar is also compact JSON (``json.dumps`` with its
default separators fits). Replies are still validated against the schema by the caller: a
bound the grammar cannot express is caught there.
"""

from __future__ import annotations

import json
from typing import Any

MAX_ENUMERATED = 64
"""The widest integer range listed value by value."""
DIGITS = 17
"""The most digits of an integer or an exponent."""
FRACTION_DIGITS = 20
"""The most digits after the point: repr writes up to 17 significant digits after up to 3
zeros (0.000123...; smaller numbers get an exponent)."""

_CHAR = r'[^"\\\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})'  # JSON string chars
_NAT = f'"0" | [1-9] [0-9]{{0,{DIGITS - 1}}}'  # 0, 1, 2, ...: no leading zeros
_POS = f"[1-9] [0-9]{{0,{DIGITS - 1}}}"  # 1, 2, ...
_FRAC = f'"." [0-9]{{1,{FRACTION_DIGITS}}}'
_EXP = f"[eE] [-+]? [0-9]{{1,{DIGITS}}}"


class GrammarError(ValueError):
    """A schema outside the subset :func:`schema_to_gbnf` converts."""


def literal(text: str) -> str:
    """``text`` as a GBNF string literal."""
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


class _Builder:
    def __init__(self) -> None:
        self.rules: dict[str, str] = {}  # name -> body, in order of definition
        self.by_body: dict[str, str] = {}

    def rule(self, name: str, body: str) -> str:
        """A rule with ``body`` (an existing one if the body is already defined)."""
        if body in self.by_body:
            return self.by_body[body]
        base, n = name, 1
        while name in self.rules:
            n += 1
            name = f"{base}{n}"
        self.rules[name] = body
        self.by_body[body] = name
        return name

    def value(self, schema: Any, path: str) -> str:
        """The GBNF expression of a value matching ``schema``."""
        where = path.replace("-", ".")
        if not isinstance(schema, dict):
            raise GrammarError(f"{where}: a schema must be an object (got {schema!r})")
        if "const" in schema:
            return literal(json.dumps(schema["const"], ensure_ascii=False))
        if "enum" in schema:
            values = schema["enum"]
            if not isinstance(values, list) or not values:
                raise GrammarError(f"{where}: enum must be a non-empty list")
            alts = " | ".join(literal(json.dumps(v, ensure_ascii=False)) for v in values)
            return self.rule(path, alts)
        if "anyOf" in schema:
            alts = " | ".join(self.value(s, f"{path}-{i}") for i, s in enumerate(schema["anyOf"]))
            return self.rule(path, alts)
        kind = schema.get("type")
        if isinstance(kind, list):  # {"type": ["integer", "null"]}
            alts = " | ".join(self.value({**schema, "type": k}, f"{path}-{k}") for k in kind)
            return self.rule(path, alts)
        if kind == "object":
            return self.obj(schema, path)
        if kind == "array":
            return self.array(schema, path)
        if kind == "string":
            return self.string(schema, path)
        if kind == "integer":
            return self.integer(schema, path)
        if kind == "number":
            return self.number(schema, path)
        if kind == "boolean":
            return self.rule("boolean", '"true" | "false"')
        if kind == "null":
            return '"null"'
        raise GrammarError(f"{where}: type {kind!r} is not supported")

    def obj(self, schema: dict[str, Any], path: str) -> str:
        props: dict[str, Any] = schema.get("properties") or {}
        required = schema.get("required", [])
        missing = [p for p in props if p not in required]
        if missing:
            where = path.replace("-", ".")
            raise GrammarError(f"{where}: every property must be required ({missing} is not)")
        if not props:
            return self.rule(path, '"{" ws "}"')
        parts = []
        for i, (key, sub) in enumerate(props.items()):
            value = self.value(sub, f"{path}-{_name(key)}")
            sep = "" if i == 0 else '"," ws '
            parts.append(f'{sep}{literal(json.dumps(key, ensure_ascii=False))} ws ":" ws {value}')
        return self.rule(path, '"{" ws ' + " ws ".join(parts) + ' ws "}"')

    def array(self, schema: dict[str, Any], path: str) -> str:
        item = self.value(schema.get("items", {"type": "string"}), f"{path}-item")
        lo = int(schema.get("minItems", 0))
        hi = schema.get("maxItems")
        if hi is not None and int(hi) < lo:
            raise GrammarError(f"{path.replace('-', '.')}: maxItems < minItems")
        if hi is not None and int(hi) == 0:
            return self.rule(path, '"[" ws "]"')
        more = f"{{{max(lo - 1, 0)},{'' if hi is None else int(hi) - 1}}}"
        items = f'{item} ("," ws {item}){more}'
        if lo == 0:
            items = f"({items})?"
        return self.rule(path, f'"[" ws {items} ws "]"')

    def string(self, schema: dict[str, Any], path: str) -> str:
        char = self.rule("char", _CHAR)
        lo = int(schema.get("minLength", 0))
        hi = schema.get("maxLength")
        reps = ("*" if lo == 0 else f"{{{lo},}}") if hi is None else f"{{{lo},{int(hi)}}}"
        return self.rule(path if (lo or hi is not None) else "string", f'"\\"" {char}{reps} "\\""')

    def integer(self, schema: dict[str, Any], path: str) -> str:
        lo, hi = _bound(schema, "minimum"), _bound(schema, "maximum")
        if lo is not None and hi is not None and int(lo) == lo and int(hi) == hi:
            lo_i, hi_i = int(lo), int(hi)
            if hi_i < lo_i:
                raise GrammarError(f"{path.replace('-', '.')}: maximum < minimum")
            if hi_i - lo_i < MAX_ENUMERATED:
                return self.rule(path, " | ".join(f'"{v}"' for v in range(lo_i, hi_i + 1)))
        if lo is not None and lo >= 1:
            return self.rule("positive", _POS)
        if lo is not None and lo >= 0:
            return self.rule("natural", _NAT)
        return self.rule("integer", f'"-"? ({_NAT})')

    def number(self, schema: dict[str, Any], path: str) -> str:
        lo, hi = _bound(schema, "minimum"), _bound(schema, "maximum")
        if lo == 0 and hi == 1:
            # d.ddd e-N (N >= 1) is below 1: how repr writes small probabilities (1e-05)
            small = f'[0-9] ({_FRAC})? [eE] "-" "0"{{0,2}} [1-9] [0-9]{{0,2}}'
            zeros = f'("." "0"{{1,{FRACTION_DIGITS}}})?'
            return self.rule("unit", f'"0" ({_FRAC})? | "1" {zeros} | "-0" {zeros} | {small}')
        sign = "" if lo is not None and lo >= 0 else '"-"? '
        name = "nonnegative" if not sign else "number"
        return self.rule(name, f"{sign}({_NAT}) ({_FRAC})? ({_EXP})?")


def _bound(schema: dict[str, Any], key: str) -> float | None:
    value = schema.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise GrammarError(f"{key} must be a number (got {value!r})")
    return float(value)


def _name(key: str) -> str:
    cleaned = "".join(c if c.isascii() and c.isalnum() else "-" for c in key).strip("-")
    return cleaned or "x"


def schema_to_gbnf(schema: dict[str, Any]) -> str:
    """The GBNF grammar (root rule ``root``) of the JSON values that ``schema`` admits (see
    the module docstring for the subset); :class:`GrammarError` outside it."""
    b = _Builder()
    top = b.value(schema, "root")
    rules = dict(b.rules)
    lines = [f"root ::= {rules.pop('root') if top == 'root' else top}"]
    lines += [f"{name} ::= {body}" for name, body in rules.items()]
    lines.append('ws ::= " "?')
    return "\n".join(lines) + "\n"
