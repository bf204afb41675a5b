"""Reading structured replies from model text: JSON decompositions, indices, directions."""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import ValidationError

from llmdebate.errors import RuleError
from llmdebate.schemas import Claim, CombinationRule, Decomposition


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


def _rule(raw: Any) -> CombinationRule:
    if isinstance(raw, str):
        word = raw.strip().lower().replace("-", "_").replace(" ", "_")
        if word in ("and", "or", "majority"):
            return CombinationRule(kind=word)  # type: ignore[arg-type]
        return CombinationRule(kind="expr", expr=raw)
    if isinstance(raw, dict):
        data = {k: raw[k] for k in ("kind", "k", "expr") if k in raw}
        if isinstance(data.get("kind"), str):
            data["kind"] = data["kind"].strip().lower().replace("-", "_").replace(" ", "_")
        return CombinationRule.model_validate(data)
    raise ReplyError('\'rule\' must be an object like {"kind": "and"}')


def parse_decomposition(text: str, parent: Claim, width: int) -> Decomposition:
    """A :class:`Decomposition` of ``parent`` from a JSON reply, or :class:`ReplyError`."""
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
        rule = _rule(obj["rule"])
        rationale = obj.get("rationale")
        return Decomposition(
            subclaims=[Claim(id=f"{parent.id}.{i + 1}", text=t) for i, t in enumerate(texts)],
            rule=rule,
            rationale=rationale if isinstance(rationale, str) else None,
        )
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(x) for x in err["loc"])
        raise ReplyError(f"{loc + ': ' if loc else ''}{err['msg']}") from None
    except RuleError as exc:
        raise ReplyError(str(exc)) from None


def parse_index(text: str, n: int) -> int:
    """A 1-based option number in 1..n from a reply, returned 0-based."""
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
    for word in re.findall(r"[a-z]+", text.lower()):
        for key, v in _DIRECTION.items():
            if word.startswith(key):
                return v
    raise ReplyError("reply with one word: higher, lower or right")
