"""Reading structured replies from model text: JSON decompositions, indices, directions.

Every reply is validated with the pydantic models of :mod:`llmdebate.agents.replies`, the
same ones whose schemas the backends enforce, whether or not the backend constrained it.
A reply is valid only when the *whole* reply is the act's answer: a JSON object (alone, or
alone inside one code fence), or for the one-word acts the bare word or number (surrounding
white space and a final full stop allowed). Nothing is searched for inside prose. Every act
has a size cap (:data:`REPLY_CAPS`), checked before anything is parsed, in the engine's agents
and in the reward functions alike. Within a decomposition's object a rule may be a bare word
(``"and"``). What a schema cannot express is checked here: a subclaim that repeats its parent
or another subclaim.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import ValidationError

from llmdebate.agents.replies import (
    DecompositionReply,
    DirectionReply,
    IndexReply,
    decomposition_chars,
)
from llmdebate.core.schemas import Claim, CombinationRule, Decomposition
from llmdebate.errors import RuleError


class ReplyError(ValueError):
    """A reply that does not have the expected form; the message is shown to the model."""


SHORT_REPLY_CHARS = 64
"""The cap of the one-word acts (a direction, an index, a True/False word, a number)."""
REPLY_CAPS: dict[str, int] = {
    "direction": SHORT_REPLY_CHARS,
    "recurse": SHORT_REPLY_CHARS,
    "estimate": SHORT_REPLY_CHARS,
    "value": SHORT_REPLY_CHARS,
    "verdict": SHORT_REPLY_CHARS,
    # the longest reply the widest decomposition schema admits, with room for a rationale
    "decompose": 4 * decomposition_chars(16),
}
"""The longest reply each structured act accepts (characters). Free-text acts (evidence,
speech) are capped by the reward options' ``max_reply_chars`` instead."""


def reply_cap(act: str) -> int:
    """The most characters a reply to ``act`` may have (no cap of its own: a large number)."""
    return REPLY_CAPS.get(act, 1 << 62)


def check_size(text: str, act: str) -> None:
    """:class:`ReplyError` when ``text`` is longer than ``act``'s cap."""
    if len(text) > reply_cap(act):
        raise ReplyError(f"the reply is too long for a {act} ({len(text)} > {reply_cap(act)} "
                         "characters)")


_FENCE = re.compile(r"\A```[a-zA-Z]*\s*\n?(.*?)\n?\s*```\Z", re.DOTALL)


def extract_json(text: str) -> Any:
    """The JSON object that is the whole of ``text`` (alone inside one code fence allowed);
    :class:`ReplyError` for prose around it, trailing text, or anything but an object."""
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1).strip()
    if not body.startswith("{"):
        raise ReplyError("reply with the JSON object alone")
    try:
        obj = json.loads(body)
    except json.JSONDecodeError:
        raise ReplyError("the reply is not one JSON object (nothing before or after it)") from None
    if not isinstance(obj, dict):
        raise ReplyError("reply with the JSON object alone")
    return obj


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
    check_size(text, "decompose")
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


def _bare(text: str) -> str:
    """A one-word reply as read: white space around it and one final full stop dropped."""
    word = text.strip()
    return word[:-1].rstrip() if word.endswith(".") else word


def parse_index(text: str, n: int) -> int:
    """A 1-based option number in 1..n, the whole reply (or ``{"index": n}``), returned
    0-based."""
    check_size(text, "recurse")
    field = _json_field(text, "index")
    if field is not None:
        try:
            v = IndexReply.model_validate({"index": field}).index
        except ValidationError as exc:
            raise ReplyError(_first_error(exc)) from None
        if v > n:
            raise ReplyError(f"{v} is not a number from 1 to {n}")
        return v - 1
    word = _bare(text)
    if not re.fullmatch(r"\d{1,9}", word):
        raise ReplyError(f"reply with a number from 1 to {n} alone")
    v = int(word)
    if not 1 <= v <= n:
        raise ReplyError(f"{v} is not a number from 1 to {n}")
    return v - 1


_DIRECTION = {"higher": 1, "lower": -1, "right": 0}


def parse_direction(text: str) -> int:
    """+1 (higher), -1 (lower) or 0 (right): the whole reply is that one word (any case) or
    ``{"direction": ...}``."""
    check_size(text, "direction")
    field = _json_field(text, "direction")
    if field is not None:
        try:
            return _DIRECTION[DirectionReply.model_validate({"direction": field}).direction]
        except ValidationError as exc:
            raise ReplyError(_first_error(exc)) from None
    word = _bare(text).lower()
    if word in _DIRECTION:
        return _DIRECTION[word]
    raise ReplyError("reply with one word: higher, lower or right")
