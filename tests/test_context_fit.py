"""The context-fit check before a prompt is sent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from llmdebate.qa.context_fit import (
    CHARS_PER_TOKEN,
    MESSAGE_OVERHEAD,
    context_fit,
    estimate_tokens,
    prompt_tokens,
    tokenizer_counter,
)


def test_estimate_is_conservative_for_english() -> None:
    text = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    words = len(text.split())
    # about 1.3 tokens a word for English with current tokenizers: the estimate is above it
    assert estimate_tokens(text) > 1.3 * words
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd") == 2  # 4 / 3 rounded up
    assert CHARS_PER_TOKEN == 3.0


def test_messages_fit_or_say_why() -> None:
    messages = [{"role": "system", "content": "x" * 300}, {"role": "user", "content": "y" * 600}]
    n = 100 + 200 + 2 * MESSAGE_OVERHEAD
    assert prompt_tokens(messages) == n
    assert context_fit(messages, n) is None
    assert context_fit(messages, n - 1) == (
        f"prompt of {n} tokens (estimated at 3 characters a token) does not fit the model's "
        f"context of {n - 1} tokens"
    )
    assert context_fit(messages, n + 10, reply_tokens=10) is None
    assert context_fit(messages, n + 10, reply_tokens=11) == (
        f"prompt of {n} tokens (estimated at 3 characters a token) does not fit the model's "
        f"context of {n + 10} tokens, with 11 kept for the reply"
    )
    with pytest.raises(ValueError, match="context_length"):
        context_fit(messages, 0)


def test_a_tokenizer_counts_when_known() -> None:
    class WordTokenizer:  # encode() as a Hugging Face tokenizer has it
        def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
            return [0] * (len(text.split()) + (2 if add_special_tokens else 0))

    class PlainEncoder:  # encode() as tiktoken has it
        def encode(self, text: str) -> list[int]:
            return [0] * len(text)

    messages: list[dict[str, Any] | str] = [
        "one two three",
        {"role": "user", "content": [{"type": "text", "text": "a b"}]},
    ]
    words = tokenizer_counter(WordTokenizer())
    assert prompt_tokens(messages, words) == 3 + 2 + 2 * MESSAGE_OVERHEAD
    reason = context_fit(messages, 5, counter=words)
    assert reason == "prompt of 13 tokens does not fit the model's context of 5 tokens"
    assert prompt_tokens(["abc"], tokenizer_counter(PlainEncoder())) == 3 + MESSAGE_OVERHEAD
