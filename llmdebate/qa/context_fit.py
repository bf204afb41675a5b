"""Whether a prompt fits a model's context window, checked before it is sent.

A long passage (a QuALITY article is about 5,000 tokens) plus the transcript can outgrow a
model's context; the server would refuse the request or cut it silently. :func:`context_fit`
says so first, in one line. Tokens are counted with the backend's tokenizer when one is known
(:func:`tokenizer_counter` wraps a Hugging Face tokenizer or anything with ``encode``), else
estimated at :data:`CHARS_PER_TOKEN` characters a token: English text runs near 4 characters
a token for current tokenizers, so 3 over-counts, which errs on the side of refusing.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

TokenCounter = Callable[[str], int]

CHARS_PER_TOKEN = 3.0
MESSAGE_OVERHEAD = 4  # role and separators of a chat template, per message (tokens)


def estimate_tokens(text: str) -> int:
    """A conservative token count: ``len(text) / CHARS_PER_TOKEN``, rounded up."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


class _Encoder(Protocol):
    def encode(self, text: str) -> Any: ...


def tokenizer_counter(tokenizer: _Encoder) -> TokenCounter:
    """A counter from a tokenizer's ``encode`` (no special tokens when it accepts the flag)."""

    def count(text: str) -> int:
        try:
            ids = tokenizer.encode(text, add_special_tokens=False)  # type: ignore[call-arg]
        except TypeError:
            ids = tokenizer.encode(text)
        return len(ids)

    return count


def _content(message: Mapping[str, Any] | str) -> str:
    if isinstance(message, str):
        return message
    content = message.get("content", "")
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):  # a list of parts: {"type": "text", "text": ...}
        return "".join(p.get("text", "") for p in content if isinstance(p, Mapping))
    return str(content)


def prompt_tokens(
    messages: Sequence[Mapping[str, Any] | str], counter: TokenCounter | None = None
) -> int:
    """Tokens of ``messages`` (chat messages with ``content``, or plain strings), with
    :data:`MESSAGE_OVERHEAD` per message."""
    count = counter or estimate_tokens
    return sum(count(_content(m)) + MESSAGE_OVERHEAD for m in messages)


def context_fit(
    messages: Sequence[Mapping[str, Any] | str],
    context_length: int,
    *,
    counter: TokenCounter | None = None,
    reply_tokens: int = 0,
) -> str | None:
    """None when ``messages`` plus ``reply_tokens`` kept for the reply fit in
    ``context_length`` tokens, else one line saying by how much they do not."""
    if context_length <= 0:
        raise ValueError(f"context_length must be positive, not {context_length}")
    n = prompt_tokens(messages, counter)
    if n + reply_tokens <= context_length:
        return None
    how = "" if counter else f" (estimated at {CHARS_PER_TOKEN:g} characters a token)"
    room = f", with {reply_tokens} kept for the reply" if reply_tokens else ""
    return (
        f"prompt of {n} tokens{how} does not fit the model's context of "
        f"{context_length} tokens{room}"
    )
