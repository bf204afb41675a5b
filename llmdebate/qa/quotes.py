"""Quotes from a hidden passage: the markup debaters write, checking each quote against the
passage, and showing a speech to a judge with verified and unverified quotes told apart.

A debater quotes the passage as ``<quote>text</quote>`` (:data:`QUOTE_OPEN`,
:data:`QUOTE_CLOSE`). A quote is *verified* when its normalised text occurs in the normalised
passage (:func:`normalise`: runs of whitespace become one space, and none is kept beside a
dash, so ``hide - even`` matches ``hide—even``; typographic quotes and
primes, dashes and the ellipsis character become their ASCII forms; optionally case and
ASCII punctuation are ignored). A quote with an ellipsis (``a ... b``) that does not occur as
written is also verified when its parts occur in order with gaps of at most
:attr:`MatchOptions.max_gap` normalised characters. Each verified quote carries its
character spans in the ORIGINAL passage text (one per part), so ``passage[start:end]``
normalises to the quoted part.

For a model judge, :func:`render_for_judge` rewrites the tags as ``<v_quote>``/``<u_quote>``
(the markup of Khan et al. 2024); :func:`segments` gives the same speech as a list of text
and quote segments for an HTML page. :class:`QuoteBudget` bounds the quoted words or
characters of one speech; :func:`quote_stats` gives the figures for metrics.

Pure functions over strings: nothing here imports the rest of the package.
"""

from __future__ import annotations

import functools
import re
import string
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

QUOTE_OPEN = "<quote>"
QUOTE_CLOSE = "</quote>"
VERIFIED_OPEN, VERIFIED_CLOSE = "<v_quote>", "</v_quote>"
UNVERIFIED_OPEN, UNVERIFIED_CLOSE = "<u_quote>", "</u_quote>"

Status = Literal["verified", "unverified"]
Span = tuple[int, int]

# one character of the passage or a quote -> its normalised form
_TYPOGRAPHIC: dict[str, str] = {
    **dict.fromkeys("‘’‚‛′`´", "'"),
    **dict.fromkeys("“”„‟″«»", '"'),
    **dict.fromkeys("‐‑‒–—―−", "-"),
    "…": "...",
    "\u00ad": "",  # soft hyphen
    "\u200b": "",  # zero-width space
    "\ufeff": "",
}
_ASCII_PUNCTUATION = frozenset(string.punctuation)
# a quote's own tags, and the tags of a rendered speech a model may echo back
_TAG = re.compile(r"<(/?)(quote|v_quote|u_quote)>")
_ELLIPSIS = re.compile(r"\s*(?:\.\s*){3,}|\s*…\s*")


@dataclass(frozen=True)
class MatchOptions:
    """How quotes are compared with the passage.

    ``case_sensitive=False`` compares lower-cased text; ``ignore_punctuation=True`` drops
    ASCII punctuation after the typographic mapping, as Khan et al.'s ``verify_strict`` does
    (their check also lower-cases). ``ellipsis_gaps`` lets ``a ... b`` match ``a`` then ``b``
    further on, at most ``max_gap`` normalised characters apart, when every part has at least
    ``min_part_words`` words (a part of one short word would match almost anywhere).
    """

    case_sensitive: bool = True
    ignore_punctuation: bool = False
    ellipsis_gaps: bool = True
    max_gap: int = 2000
    min_part_words: int = 3


STRICT = MatchOptions()
KHAN_2024 = MatchOptions(case_sensitive=False, ignore_punctuation=True)


def _char_form(ch: str, options: MatchOptions) -> str:
    out = _TYPOGRAPHIC.get(ch, ch)
    if ch.isspace():
        return " "
    if not options.case_sensitive:
        out = out.lower()
    if options.ignore_punctuation:
        out = "".join(c for c in out if c not in _ASCII_PUNCTUATION)
    return out


def normalised_with_offsets(text: str, options: MatchOptions = STRICT) -> tuple[str, list[int]]:
    """The normalised text and, for each of its characters, the index in ``text`` of the
    character it came from (whitespace runs become one space, none is kept beside a dash, and
    leading and trailing spaces go). A long text (a passage, shown on every page of its
    debates) is normalised once per process: the last few are kept.
    """
    if len(text) >= _KEEP_FROM:
        return _kept_normalised(text, options)
    return _normalised_with_offsets(text, options)


_KEEP_FROM = 2000  # characters: passages, not quotes


@functools.lru_cache(maxsize=16)
def _kept_normalised(text: str, options: MatchOptions) -> tuple[str, list[int]]:
    return _normalised_with_offsets(text, options)


def _normalised_with_offsets(text: str, options: MatchOptions) -> tuple[str, list[int]]:
    chars: list[str] = []
    origin: list[int] = []
    for i, ch in enumerate(text):
        form = _char_form(ch, options)
        for c in form:
            if c == " " and (not chars or chars[-1] in " -"):
                continue
            if c == "-" and chars and chars[-1] == " ":
                chars.pop()
                origin.pop()
            chars.append(c)
            origin.append(i)
    if chars and chars[-1] == " ":
        chars.pop()
        origin.pop()
    return "".join(chars), origin


def normalise(text: str, options: MatchOptions = STRICT) -> str:
    """``text`` in the form quotes are compared in (see :func:`normalised_with_offsets`)."""
    return normalised_with_offsets(text, options)[0]


class Passage:
    """A passage normalised once, to check many quotes against it."""

    def __init__(self, text: str, options: MatchOptions = STRICT) -> None:
        self.text = text
        self.options = options
        self._norm, self._origin = normalised_with_offsets(text, options)

    def _span(self, start: int, end: int) -> Span:
        return self._origin[start], self._origin[end - 1] + 1

    def find(self, quote: str) -> tuple[Span, ...] | None:
        """Spans in the original text of ``quote`` (one per part of an elided quote), or None
        when the quote is not in the passage."""
        norm = normalise(quote, self.options)
        if not norm:
            return None
        at = self._norm.find(norm)
        if at >= 0:
            return (self._span(at, at + len(norm)),)
        if self.options.ellipsis_gaps:
            return self._find_elided(quote)
        return None

    def _find_elided(self, quote: str) -> tuple[Span, ...] | None:
        parts = [normalise(p, self.options) for p in _ELLIPSIS.split(quote)]
        parts = [p for p in parts if p]
        if len(parts) < 2 or any(len(p.split()) < self.options.min_part_words for p in parts):
            return None
        start = self._norm.find(parts[0])
        while start >= 0:
            rest = self._place(parts[1:], start + len(parts[0]))
            if rest is not None:
                return (self._span(start, start + len(parts[0])), *rest)
            start = self._norm.find(parts[0], start + 1)
        return None

    def _place(self, parts: list[str], end: int) -> tuple[Span, ...] | None:
        """Spans of ``parts`` in order, the first starting at most ``max_gap`` characters
        after ``end`` and each next one as close after the one before; every place of a part
        within its window is tried (the nearest can leave the next part out of reach)."""
        if not parts:
            return ()
        part = parts[0]
        limit = end + self.options.max_gap + len(part)
        at = self._norm.find(part, end, limit)
        while at >= 0:
            rest = self._place(parts[1:], at + len(part))
            if rest is not None:
                return (self._span(at, at + len(part)), *rest)
            at = self._norm.find(part, at + 1, limit)
        return None


@dataclass(frozen=True)
class Quote:
    """One quote of a speech: its text as written and where that text sits in the speech.

    ``closed`` is False for a ``<quote>`` left open at the end of the speech (it runs to the
    end). ``start``/``end`` delimit the text between the tags, ``outer`` the tags included.
    """

    text: str
    start: int
    end: int
    outer: Span
    closed: bool = True


@dataclass(frozen=True)
class CheckedQuote:
    """A :class:`Quote` checked against the passage: ``spans`` in the passage's original text
    (empty when unverified)."""

    quote: Quote
    status: Status
    spans: tuple[Span, ...] = ()

    @property
    def verified(self) -> bool:
        return self.status == "verified"

    @property
    def text(self) -> str:
        return self.quote.text


def extract_quotes(speech: str) -> list[Quote]:
    """Every quote of ``speech``, in order. ``<quote>``, ``<v_quote>`` and ``<u_quote>`` all
    open a quote (a model may copy the judge's markup back); any of the three closes it.
    Tags do not nest: an opening tag inside a quote is part of its text."""
    quotes: list[Quote] = []
    open_at: tuple[int, int] | None = None  # (outer start, text start)
    for m in _TAG.finditer(speech):
        closing = m.group(1) == "/"
        if open_at is None and not closing:
            open_at = (m.start(), m.end())
        elif open_at is not None and closing:
            outer, start = open_at
            quotes.append(Quote(speech[start : m.start()], start, m.start(), (outer, m.end())))
            open_at = None
    if open_at is not None:
        outer, start = open_at
        quotes.append(Quote(speech[start:], start, len(speech), (outer, len(speech)), False))
    return quotes


def check_quotes(
    speech: str, passage: str | Passage, options: MatchOptions = STRICT
) -> list[CheckedQuote]:
    """Each quote of ``speech`` verified or not against ``passage``."""
    ref = passage if isinstance(passage, Passage) else Passage(passage, options)
    out: list[CheckedQuote] = []
    for q in extract_quotes(speech):
        spans = ref.find(q.text)
        out.append(CheckedQuote(q, "verified", spans) if spans else CheckedQuote(q, "unverified"))
    return out


@dataclass(frozen=True)
class Segment:
    """A piece of a speech for display: plain text, or a quote with its status and spans."""

    kind: Literal["text", "quote"]
    text: str
    status: Status | None = None
    spans: tuple[Span, ...] = ()

    def as_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"kind": self.kind, "text": self.text}
        if self.kind == "quote":
            out["status"] = self.status
            out["spans"] = [list(s) for s in self.spans]
        return out


def segments(speech: str, passage: str | Passage, options: MatchOptions = STRICT) -> list[Segment]:
    """``speech`` as text and quote segments, in order (the tags themselves dropped); empty
    text segments are left out."""
    out: list[Segment] = []
    pos = 0
    for cq in check_quotes(speech, passage, options):
        if cq.quote.outer[0] > pos:
            out.append(Segment("text", speech[pos : cq.quote.outer[0]]))
        out.append(Segment("quote", cq.text, cq.status, cq.spans))
        pos = cq.quote.outer[1]
    if pos < len(speech):
        out.append(Segment("text", speech[pos:]))
    return out


def render_for_judge(speech: str, passage: str | Passage, options: MatchOptions = STRICT) -> str:
    """``speech`` with each quote tagged ``<v_quote>…</v_quote>`` (verified) or
    ``<u_quote>…</u_quote>`` (unverified); an unclosed quote is closed. Tags a debater wrote
    are never passed on: a ``<v_quote>`` in a speech is checked like any quote."""
    parts: list[str] = []
    for seg in segments(speech, passage, options):
        if seg.kind == "text":  # a stray closing tag goes: only the check writes the tags
            parts.append(strip_quote_tags(seg.text))
        elif seg.status == "verified":
            parts.append(f"{VERIFIED_OPEN}{seg.text}{VERIFIED_CLOSE}")
        else:
            parts.append(f"{UNVERIFIED_OPEN}{seg.text}{UNVERIFIED_CLOSE}")
    return "".join(parts)


def strip_quote_tags(speech: str) -> str:
    """``speech`` with every quote tag removed (the quoted text kept)."""
    return _TAG.sub("", speech)


def _words(text: str) -> int:
    return len(text.split())


def _union_length(spans: Iterable[Span]) -> int:
    total, reach = 0, -1
    for start, end in sorted(spans):
        if end <= reach:
            continue
        total += end - max(start, reach)
        reach = end
    return total


@dataclass(frozen=True)
class QuoteStats:
    """Figures about the quotes of one speech (or several: see :func:`quote_stats`).

    ``coverage_chars`` counts the passage characters covered by verified quotes, each
    character once (the quote measure of Michael et al. 2023)."""

    quotes: int
    verified: int
    unverified: int
    quoted_words: int
    quoted_chars: int
    coverage_chars: int

    @property
    def share_verified(self) -> float | None:
        """Verified quotes over all quotes; None when there are none."""
        return self.verified / self.quotes if self.quotes else None


def quote_stats(checked: Sequence[CheckedQuote]) -> QuoteStats:
    """The :class:`QuoteStats` of checked quotes (of one speech or of a whole debate side)."""
    verified = sum(1 for q in checked if q.verified)
    return QuoteStats(
        quotes=len(checked),
        verified=verified,
        unverified=len(checked) - verified,
        quoted_words=sum(_words(q.text) for q in checked),
        quoted_chars=sum(len(q.text.strip()) for q in checked),
        coverage_chars=_union_length(s for q in checked for s in q.spans),
    )


@dataclass(frozen=True)
class QuoteBudget:
    """The most a speech may quote: words and/or characters of quoted text (None: no bound).

    ``count`` chooses what is counted: ``all`` quotes, or only ``verified`` ones."""

    max_words: int | None = None
    max_chars: int | None = None
    count: Literal["all", "verified"] = "all"

    def __post_init__(self) -> None:
        for name in ("max_words", "max_chars"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ValueError(f"QuoteBudget.{name} must be at least 0, not {value}")


@dataclass(frozen=True)
class BudgetCheck:
    """The quoted amount of a speech against a :class:`QuoteBudget`; ``problem`` is None
    within the budget, else one line saying what went over."""

    words: int
    chars: int
    problem: str | None = None
    budget: QuoteBudget = field(default_factory=QuoteBudget)

    @property
    def within(self) -> bool:
        return self.problem is None


def check_budget(checked: Sequence[CheckedQuote], budget: QuoteBudget) -> BudgetCheck:
    """Whether the quotes of one speech stay within ``budget``."""
    counted = [q for q in checked if budget.count == "all" or q.verified]
    words = sum(_words(q.text) for q in counted)
    chars = sum(len(q.text.strip()) for q in counted)
    kind = "quoted" if budget.count == "all" else "verified quoted"
    problem = None
    if budget.max_words is not None and words > budget.max_words:
        problem = f"{words} {kind} words, over the limit of {budget.max_words}"
    elif budget.max_chars is not None and chars > budget.max_chars:
        problem = f"{chars} {kind} characters, over the limit of {budget.max_chars}"
    return BudgetCheck(words, chars, problem, budget)
