"""One debater's speech: its private scratchpad, its word count and the word limits.

A debater's reply holds a private scratchpad and the argument the judge reads. The markup the
prompts teach is ``<thinking>…</thinking>`` then ``<argument>…</argument>`` (Khan et al. 2024),
or a JSON object ``{"thinking": …, "argument": …}``. :func:`parse_reply` splits a reply so
that no scratchpad text reaches the argument, also when a tag is missing.

Words are counted on the argument with the quote tags taken out (:func:`count_words`).
:func:`enforce_word_limit` decides what happens to an argument against a :class:`WordLimit`:
within it; a re-ask message (over the maximum, or under the minimum) while re-asks are left;
or, over the maximum with none left, the argument cut at a sentence boundary with a visible
marker (``[… truncated at N words]``). The decision is data (:class:`LimitDecision`) to record
with the speech.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from typing import Literal

from llmdebate.qa.quotes import QUOTE_CLOSE, extract_quotes

THINKING_OPEN, THINKING_CLOSE = "<thinking>", "</thinking>"
ARGUMENT_OPEN, ARGUMENT_CLOSE = "<argument>", "</argument>"
Markup = Literal["tags", "json"]

# quote tags and the truncation marker: not words
_NOT_WORDS = re.compile(r"</?(?:quote|v_quote|u_quote)>|\[… truncated at \d+ words\]")
_THINK_BLOCK = re.compile(r"<thinking>.*?</thinking>", re.DOTALL | re.IGNORECASE)
_ARG_BLOCK = re.compile(r"<argument>(.*?)(?:</argument>|\Z)", re.DOTALL | re.IGNORECASE)
_ANY_TAG = re.compile(r"</?(?:thinking|argument)>", re.IGNORECASE)
_WORD = re.compile(r"\S*\w\S*")  # a lone dash or full stop is not a word
_SENTENCE_END = re.compile(r"[.!?…][\"'”’)\]]*$")
_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)


@dataclass(frozen=True)
class Reply:
    """A reply split into the private ``thinking`` and the ``argument`` the judge reads;
    ``problem`` is one line when the reply had no argument (or was not valid JSON)."""

    thinking: str
    argument: str
    problem: str | None = None


def _index(text: str, tag: str, *, last: bool = False) -> int:
    low = text.lower()
    return low.rfind(tag) if last else low.find(tag)


def _split_tags(reply: str) -> Reply:
    thinking: list[str] = [
        m.group(0)[len(THINKING_OPEN) : -len(THINKING_CLOSE)] for m in _THINK_BLOCK.finditer(reply)
    ]
    rest = _THINK_BLOCK.sub("\n", reply)
    close = _index(rest, THINKING_CLOSE, last=True)
    if close >= 0:  # thinking whose opening tag was left out
        thinking.append(rest[:close])
        rest = rest[close + len(THINKING_CLOSE) :]
    start = _index(rest, THINKING_OPEN)
    if start >= 0:  # thinking never closed: up to the argument, or to the end
        arg_at = _index(rest[start:], ARGUMENT_OPEN)
        stop = start + arg_at if arg_at >= 0 else len(rest)
        thinking.append(rest[start + len(THINKING_OPEN) : stop])
        rest = rest[:start] + rest[stop:]
    blocks = [m.group(1) for m in _ARG_BLOCK.finditer(rest)]
    argument = "\n\n".join(b.strip() for b in blocks) if blocks else rest
    argument = _ANY_TAG.sub("", argument).strip()
    problem = None if argument else "the reply has no argument (only a scratchpad, or nothing)"
    return Reply("\n\n".join(t.strip() for t in thinking).strip(), argument, problem)


def _split_json(reply: str) -> Reply:
    text = reply.strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return Reply("", "", f"the reply is not a JSON object ({exc.msg} at column {exc.colno})")
    if not isinstance(data, dict):
        return Reply("", "", "the reply is not a JSON object")
    thinking, argument = data.get("thinking", ""), data.get("argument")
    if not isinstance(argument, str) or not argument.strip():
        return Reply(str(thinking or ""), "", 'the reply has no "argument" string')
    return Reply(str(thinking or "").strip(), argument.strip())


def parse_reply(reply: str, markup: Markup = "tags") -> Reply:
    """``reply`` split into thinking and argument.

    ``tags``: every ``<thinking>…</thinking>`` block is scratchpad; so is everything before a
    ``</thinking>`` that lacks its opening tag, and everything after an unclosed
    ``<thinking>`` up to an ``<argument>``. With ``<argument>`` tags only their content is
    the argument (an unclosed one runs to the end); without, what is left is.
    ``json``: an object with ``thinking`` and ``argument`` strings (a ```json fence allowed).
    """
    if markup == "json":
        return _split_json(reply)
    return _split_tags(reply)


def _masked(text: str) -> str:
    """``text`` with quote tags and the truncation marker blanked out, lengths kept (offsets
    stay valid)."""
    return _NOT_WORDS.sub(lambda m: " " * len(m.group(0)), text)


def count_words(text: str) -> int:
    """Whitespace-separated words of ``text`` (with a letter or digit in them); quote tags and
    the truncation marker are not counted."""
    return len(_WORD.findall(_masked(text)))


def truncation_marker(max_words: int) -> str:
    return f"[… truncated at {max_words} words]"


def truncate_words(text: str, max_words: int) -> tuple[str, int]:
    """``text`` cut to at most ``max_words`` words, with the marker; (text, words kept).

    The cut is after the last sentence end within the limit when that keeps at least half
    of the allowed words, else after the last allowed word. A quote left open is closed.
    """
    words = list(_WORD.finditer(_masked(text)))
    if len(words) <= max_words:
        return text, len(words)
    kept = max(max_words, 0)
    for n in range(kept, max(kept // 2, 1) - 1, -1):
        if n and _SENTENCE_END.search(words[n - 1].group(0)):
            kept = n
            break
    end = words[kept - 1].end() if kept else 0
    cut = text[:end]
    closing = text[end:].lstrip(" ")
    if closing.startswith(QUOTE_CLOSE):  # the quote ends right after the kept word
        cut += QUOTE_CLOSE
    quotes = extract_quotes(cut)
    if quotes and not quotes[-1].closed:
        cut += QUOTE_CLOSE
    return f"{cut.rstrip()} {truncation_marker(max_words)}", kept


@dataclass(frozen=True)
class WordLimit:
    """Bounds on a speech's words (None: no bound). ``reasks``: how many times a model is
    asked again for a speech out of bounds before the last one is cut (over the maximum) or
    kept as it is (under the minimum)."""

    max_words: int | None = None
    min_words: int | None = None
    reasks: int = 1

    def __post_init__(self) -> None:
        for name in ("max_words", "min_words", "reasks"):
            value = getattr(self, name)
            if value is not None and value < (1 if name == "max_words" else 0):
                raise ValueError(f"WordLimit.{name} cannot be {value}")
        if (
            self.max_words is not None
            and self.min_words is not None
            and self.min_words > self.max_words
        ):
            raise ValueError(
                f"WordLimit.min_words ({self.min_words}) is above max_words ({self.max_words})"
            )


Decision = Literal["within", "reask", "truncated", "short"]


@dataclass(frozen=True)
class LimitDecision:
    """What :func:`enforce_word_limit` decided: ``text`` is the speech to use (the cut one
    for ``truncated``), ``message`` the re-ask message for ``reask``."""

    decision: Decision
    words: int
    text: str
    kept_words: int
    message: str | None = None
    max_words: int | None = None
    min_words: int | None = None

    def record(self) -> dict[str, object]:
        """The decision as data for the transcript (the text left out)."""
        out = asdict(self)
        out.pop("text")
        return out


def enforce_word_limit(argument: str, limit: WordLimit, *, reasks_used: int = 0) -> LimitDecision:
    """The :class:`LimitDecision` for ``argument`` after ``reasks_used`` re-asks."""
    words = count_words(argument)
    can_reask = reasks_used < limit.reasks
    bounds = {"max_words": limit.max_words, "min_words": limit.min_words}
    if limit.max_words is not None and words > limit.max_words:
        if can_reask:
            message = (
                f"Your argument has {words} words, over the limit of {limit.max_words}. "
                f"Write it again in at most {limit.max_words} words."
            )
            return LimitDecision("reask", words, argument, words, message, **bounds)
        cut, kept = truncate_words(argument, limit.max_words)
        return LimitDecision("truncated", words, cut, kept, None, **bounds)
    if limit.min_words is not None and words < limit.min_words:
        if can_reask:
            message = (
                f"Your argument has {words} words, under the minimum of {limit.min_words}. "
                f"Write it again in at least {limit.min_words} words."
            )
            return LimitDecision("reask", words, argument, words, message, **bounds)
        return LimitDecision("short", words, argument, words, None, **bounds)
    return LimitDecision("within", words, argument, words, None, **bounds)
