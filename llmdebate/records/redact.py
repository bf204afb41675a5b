"""Keeping protected dataset text (GPQA) out of everything a run writes.

The GPQA authors ask that their questions never appear online in plain text. Items read from
an encrypted source carry ``meta["protected"]``; before a transcript of such an item is
written, :func:`redact` replaces

* the prompt and completion of every model call by their SHA-256 digests, and
* every occurrence of the item's question, context, answer options and facts, in any text of
  the transcript (claims, evidence, turns, the item itself), by a placeholder naming the item.

Numbers, rounds, rewards and everything needed to re-score stay as they were, so
``llmdebate score`` works on a redacted file. Runs over protected items also keep no on-disk
response cache (see :func:`is_protected`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

from llmdebate.core.schemas import Transcript

MIN_SECRET = 4  # shorter options (a number, "yes") are not worth hiding and would over-match


def is_protected(item: Any) -> bool:
    meta = item.get("meta") if isinstance(item, dict) else getattr(item, "meta", None)
    return bool(meta and meta.get("protected"))


def digest(text: str) -> str:
    return "[redacted sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16] + "]"


def _secrets(item: dict[str, Any]) -> list[tuple[str, str]]:
    iid = item.get("id", "?")
    found: list[tuple[str, str]] = []

    def add(text: Any, what: str) -> None:
        if isinstance(text, str) and len(text.strip()) >= MIN_SECRET:
            found.append((text.strip(), f"[{iid}:{what}]"))

    add(item.get("question"), "question")
    add(item.get("context"), "context")
    add(item.get("answer"), "answer")
    for i, c in enumerate(item.get("choices") or []):
        add(c, f"choice{i}")
    for i, f in enumerate(item.get("facts") or []):
        add(f, f"fact{i}")
    for i, f in enumerate(item.get("decomposition") or []):
        add(f, f"step{i}")
    return sorted(found, key=lambda p: -len(p[0]))  # longest first: options inside questions


def _scrub(value: Any, secrets: Iterable[tuple[str, str]]) -> Any:
    if isinstance(value, str):
        for text, placeholder in secrets:
            if text in value:
                value = value.replace(text, placeholder)
        return value
    if isinstance(value, list):
        return [_scrub(v, secrets) for v in value]
    if isinstance(value, dict):
        return {_scrub(k, secrets): _scrub(v, secrets) for k, v in value.items()}
    return value


def redact(t: Transcript) -> Transcript:
    """A copy of ``t`` with its protected item's text removed (``t`` itself if not protected)."""
    if not t.item or not is_protected(t.item):
        return t
    data = t.model_dump(mode="json")
    for call in data["calls"]:
        call["messages"] = [
            {"role": m.get("role", ""), "content": digest(str(m.get("content", "")))}
            for m in call["messages"]
        ]
        if call.get("completion") is not None:
            call["completion"] = digest(call["completion"])
        if call.get("samples") is not None:
            call["samples"] = [digest(s) for s in call["samples"]]
        if call.get("logprobs") is not None:
            call["logprobs"] = None
    data = _scrub(data, _secrets(t.item))
    data["meta"]["redacted"] = True
    return Transcript.model_validate(data)
