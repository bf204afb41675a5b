"""Reading structured replies from model text: JSON decompositions, indices, directions.

Every reply is validated with the pydantic models of :mod:`llmdebate.agents.replies`, the
same ones whose schemas the backends enforce, whether or not the backend constrained it.
Unconstrained replies are read leniently first (a JSON object inside prose or a code fence, a
rule given as a bare word, a number or word instead of an object). What a schema cannot
express is checked here: a subclaim that repeats its parent or another subclaim.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import ValidationError

from llmdebate.agents.replies import DecompositionReply, DirectionReply, IndexReply
from llmdebate.core.schemas import Claim, CombinationRule, Decomposition
from llmdebate.errors import RuleError


class ReplyError(ValueError):
    """A reply that does not have the expected form; the message is shown to the model."""


def extract_json(text: str) -> Any:
    """The first JSON object in ``text`` (code fences and surrounding prose allowed)."""
    start = text.find("{")
    if start < 0:
        raise ReplyError("the reply contains no JSON object")
    decoder = json.JSONDecoder()
    for m in re.finditer(r"\{", text[start:]):
        try:
            obj, _ = decoder.raw_decode(text[start + m.start() :])
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            return obj
    raise ReplyError("the reply's JSON object does not parse")


def _rule(raw: Any) -> dict[str, Any]:
    if isinstance(raw, str):
        word = raw.strip().lower().replace("-", "_").replace(" ", "_")
        if word in ("and", "or", "majority"):
            return {"kind": word, "k": None, "expr": None}
        return {"kind": "expr", "k": None, "expr": raw}
    if isinstance(raw, dict):
        data: dict[str, Any] = {k: raw.get(k) for k in ("kind", "k", "expr")}
        kind = data["kind"]
        if isinstance(kind, str):
            data["kind"] = kind.strip().lower().replace("-", "_").replace(" ", "_")
        return data
    raise ReplyError('\'rule\' must be an object like {"kind": "and"}')


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    loc = ".".join(str(x) for x in err["loc"])
    return f"{loc + ': ' if loc else ''}{err['msg']}"


def _key(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


def parse_decomposition(
    text: str, parent: Claim, width: int, *, check_repeats: bool = True
) -> Decomposition:
    """A :class:`Decomposition` of ``parent`` from a JSON reply, or :class:`ReplyError`.

    ``check_repeats=False`` skips what the schema cannot express (a subclaim repeating the
    parent or another subclaim): the decomposition is well-formed but may be useless."""
    obj = extract_json(text)
    subs = obj.get("subclaims")
    if not isinstance(subs, list) or not subs:
        raise ReplyError("'subclaims' must be a non-empty list of strings")
    texts: list[str] = []
    for s in subs:
        if isinstance(s, dict):
            s = s.get("text")
        if not isinstance(s, str) or not s.strip():
            raise ReplyError("every subclaim must be a non-empty string")
        texts.append(s.strip())
    if len(texts) > width:
        raise ReplyError(f"give at most {width} subclaims (got {len(texts)})")
    if "rule" not in obj:
        raise ReplyError("the reply has no 'rule'")
    try:
        reply = DecompositionReply.model_validate({"subclaims": texts, "rule": _rule(obj["rule"])})
    except ValidationError as exc:
        raise ReplyError(_first_error(exc)) from None
    seen: dict[str, int] = {}
    for i, t in enumerate(reply.subclaims if check_repeats else [], start=1):
        if _key(t) == _key(parent.text):
            raise ReplyError(f"subclaim {i} repeats the claim; split it into simpler parts")
        if _key(t) in seen:
            raise ReplyError(f"subclaim {i} repeats subclaim {seen[_key(t)]}")
        seen[_key(t)] = i
    try:
        rule = CombinationRule.model_validate(reply.rule.model_dump())
        rationale = obj.get("rationale")
        return Decomposition(
            subclaims=[
                Claim(id=f"{parent.id}.{i + 1}", text=t) for i, t in enumerate(reply.subclaims)
            ],
            rule=rule,
            rationale=rationale if isinstance(rationale, str) else None,
        )
    except ValidationError as exc:
        raise ReplyError(_first_error(exc)) from None
    except RuleError as exc:
        raise ReplyError(str(exc)) from None


def _json_field(text: str, key: str) -> Any:
    """``obj[key]`` of a JSON object reply, or None when the reply is not one."""
    stripped = text.strip()
    if not stripped.startswith("{"):
        return None
    try:
        obj = json.loads(stripped)
    except json.JSONDecodeError:
        return None
    return obj.get(key) if isinstance(obj, dict) else None


def parse_index(text: str, n: int) -> int:
    """A 1-based option number in 1..n from a reply, returned 0-based."""
    field = _json_field(text, "index")
    if field is not None:
        try:
            v = IndexReply.model_validate({"index": field}).index
        except ValidationError as exc:
            raise ReplyError(_first_error(exc)) from None
        if v > n:
            raise ReplyError(f"{v} is not a number from 1 to {n}")
        return v - 1
    m = re.search(r"\d+", text)
    if not m:
        raise ReplyError(f"reply with a number from 1 to {n}")
    v = int(m.group())
    if not 1 <= v <= n:
        raise ReplyError(f"{v} is not a number from 1 to {n}")
    return v - 1


_DIRECTION = {"higher": 1, "up": 1, "under": 1, "lower": -1, "down": -1, "over": -1, "right": 0}


def parse_direction(text: str) -> int:
    """+1 (higher), -1 (lower) or 0 (right) from a one-word reply."""
    field = _json_field(text, "direction")
    if field is not None:
        try:
            return _DIRECTION[DirectionReply.model_validate({"direction": field}).direction]
        except ValidationError as exc:
            raise ReplyError(_first_error(exc)) from None
    for word in re.findall(r"[a-z]+", text.lower()):
        for key, v in _DIRECTION.items():
            if word.startswith(key):
                return v
    raise ReplyError("reply with one word: higher, lower or right")
