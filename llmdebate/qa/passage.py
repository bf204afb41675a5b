"""What a judge sees of an item's passage: all of it (``shown``) or only checked quotes
(``hidden``).

Debaters, the consultant, the prover and the estimator always read the passage; the judge's
view is set by ``judge.passage``. :class:`JudgeView` is the one place that turns text an agent
wrote (a speech, the leaf evidence, a claim) into what a judge reads:

* every ``<quote>…</quote>`` is checked against the passage (:mod:`llmdebate.qa.quotes`) and
  shown as ``<v_quote>`` (verified) or ``<u_quote>`` (unverified) to a model judge, or as
  styled segments to a person;
* with the passage hidden, a run of at least :data:`COPY_CHARS` characters copied from the
  passage without quote markup is shown as a verified quote too, so no passage text reaches
  a hidden-passage judge except inside a verified quote. Copies are found under the field's
  normalisation (:data:`~llmdebate.qa.quotes.KHAN_2024`: case and punctuation ignored), and
  they are quotes in every respect: :meth:`JudgeView.quoted` lists them beside the marked
  quotes, so they count against the quote budget (the same re-ask and cut) and are recorded
  (``copied: true``) for the quote statistics.

An item without a passage has no view to set: its text passes unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from llmdebate.qa.quotes import (
    KHAN_2024,
    UNVERIFIED_CLOSE,
    UNVERIFIED_OPEN,
    VERIFIED_CLOSE,
    VERIFIED_OPEN,
    CheckedQuote,
    Passage,
    Quote,
    QuoteBudget,
    check_budget,
    check_quotes,
    normalise,
    strip_quote_tags,
)

PassageMode = Literal["hidden", "shown"]
HIDDEN: PassageMode = "hidden"
SHOWN: PassageMode = "shown"
COPY_CHARS = 30
"""Unmarked passage text of at least this many characters (normalised as
:data:`~llmdebate.qa.quotes.KHAN_2024`), in a hidden-passage judge's view, is a verified
quote."""
_WORD = re.compile(r"\S+")


def passage_text(item: Mapping[str, Any] | None) -> str | None:
    """The item's passage (its ``context``), or None when it has none."""
    ctx = (item or {}).get("context")
    return ctx if isinstance(ctx, str) and ctx.strip() else None


@dataclass(frozen=True)
class CopiedQuote(CheckedQuote):
    """Passage text a speaker copied without quote markup: a verified quote."""


def quote_record(cq: CheckedQuote, status: str | None = None) -> dict[str, Any]:
    """One checked quote as transcript data (``copied``: passage text without markup)."""
    out: dict[str, Any] = {
        "text": cq.text,
        "status": status or cq.status,
        "spans": [list(s) for s in cq.spans],
    }
    if isinstance(cq, CopiedQuote):
        out["copied"] = True
    return out


@dataclass
class JudgeView:
    """One debate's passage and the judge's view of it (``mode`` None: no passage)."""

    passage: str | None
    mode: PassageMode | None
    _ref: Passage | None = field(default=None, init=False, repr=False)
    _copy_ref: Passage | None = field(default=None, init=False, repr=False)

    @classmethod
    def of(cls, item: Mapping[str, Any] | None, mode: str | None) -> JudgeView:
        text = passage_text(item)
        if text is None:
            return cls(None, None)
        return cls(text, HIDDEN if mode != SHOWN else SHOWN)

    @property
    def hidden(self) -> bool:
        return self.mode == HIDDEN

    @property
    def ref(self) -> Passage | None:
        if self._ref is None and self.passage is not None:
            self._ref = Passage(self.passage)
        return self._ref

    @property
    def copy_ref(self) -> Passage | None:
        """The passage normalised as the field does for copies (case, punctuation ignored)."""
        if self._copy_ref is None and self.passage is not None:
            self._copy_ref = Passage(self.passage, KHAN_2024)
        return self._copy_ref

    def context(self) -> str | None:
        """The passage for a judge's prompt: the text when shown, None when hidden."""
        return self.passage if self.mode == SHOWN else None

    # ---------------------------------------------------------------- checking
    def check(self, text: str) -> list[CheckedQuote]:
        """The quotes of ``text`` checked against the passage (none without a passage)."""
        ref = self.ref
        return check_quotes(text, ref) if ref is not None else []

    def quoted(self, text: str) -> list[CheckedQuote]:
        """Every quote of ``text`` in order: the marked ones checked, and (passage hidden) the
        passage text copied without markup, as :class:`CopiedQuote`. What the quote budget
        counts and the transcript records."""
        out: list[CheckedQuote] = []
        pos = 0
        for cq in self.check(text):
            out += self._copies(text, pos, cq.quote.outer[0])
            out.append(cq)
            pos = cq.quote.outer[1]
        return out + self._copies(text, pos, len(text))

    def _copies(self, text: str, start: int, end: int) -> list[CheckedQuote]:
        gap, ref = text[start:end], self.copy_ref
        if ref is None:
            return []
        return [
            CopiedQuote(
                Quote(gap[s:e], start + s, start + e, (start + s, start + e)),
                "verified",
                ref.find(gap[s:e]) or (),
            )
            for s, e in self.copied_runs(gap)
        ]

    def records(self, text: str, budget: QuoteBudget | None = None) -> list[dict[str, Any]]:
        """The quotes of ``text`` (:meth:`quoted`, copies included) as transcript data;
        quotes past ``budget`` are ``over_budget`` (left out of what a judge reads)."""
        checked = self.quoted(text)
        over = self.over_budget(checked, budget)
        return [
            quote_record(cq, "over_budget" if i in over else None)
            for i, cq in enumerate(checked)
        ]

    @staticmethod
    def over_budget(checked: list[CheckedQuote], budget: QuoteBudget | None) -> set[int]:
        """Indices of the quotes that bring the speech over ``budget`` (and all after)."""
        if budget is None or check_budget(checked, budget).within:
            return set()
        for n in range(len(checked), -1, -1):
            if check_budget(checked[:n], budget).within:
                return set(range(n, len(checked)))
        return set(range(len(checked)))

    # ---------------------------------------------------------------- copies
    def copied_runs(self, text: str) -> list[tuple[int, int]]:
        """With the passage hidden: (start, end) of every run of words of ``text`` (plain
        text, no quote markup) that occurs in the passage and has at least
        :data:`COPY_CHARS` normalised characters (:data:`~llmdebate.qa.quotes.KHAN_2024`:
        case and punctuation ignored); none when the passage is shown."""
        ref = self.copy_ref
        if not self.hidden or ref is None:
            return []
        words = list(_WORD.finditer(text))
        runs: list[tuple[int, int]] = []
        i = 0
        while i < len(words):
            j = i
            while j < len(words) and ref.find(text[words[i].start() : words[j].end()]):
                j += 1
            while j > i and not normalise(words[j - 1].group(), KHAN_2024):
                j -= 1  # a run ends on a word, not on punctuation that matches anywhere
            if j > i:
                start, end = words[i].start(), words[j - 1].end()
                if len(normalise(text[start:end], KHAN_2024)) >= COPY_CHARS:
                    runs.append((start, end))
                    i = j
                    continue
            i += 1
        return runs

    def _plain(self, text: str) -> list[dict[str, Any]]:
        text = strip_quote_tags(text)  # a stray closing tag: only the check writes tags
        out: list[dict[str, Any]] = []
        pos = 0
        for start, end in self.copied_runs(text):
            spans = self.copy_ref.find(text[start:end]) if self.copy_ref is not None else None
            out.append({"kind": "text", "text": text[pos:start]})
            out.append(
                {
                    "kind": "quote",
                    "text": text[start:end],
                    "status": "verified",
                    "spans": [list(x) for x in spans or ()],
                    "marked": True,
                }
            )
            pos = end
        out.append({"kind": "text", "text": text[pos:]})
        return out

    def _unverified(self, text: str) -> list[dict[str, Any]]:
        """An unverified quote; with the passage hidden, the runs of it that are passage text
        are shown as verified (marked) and the rest as unverified."""
        out: list[dict[str, Any]] = []
        for seg in self._plain(text):
            if seg["kind"] == "text":
                seg = {**seg, "kind": "quote", "status": "unverified", "spans": [], "marked": False}
            out.append(seg)
        return out

    # ---------------------------------------------------------------- what a judge reads
    def for_model(self, text: str, quotes: list[dict[str, Any]] | None = None) -> str:
        """``text`` as a model judge reads it: quotes as ``<v_quote>``/``<u_quote>``
        (``quotes``: recorded statuses, e.g. ``over_budget``, by position)."""
        if self.passage is None:
            return text
        return "".join(
            s["text"]
            if s["kind"] == "text"
            else (
                f"{VERIFIED_OPEN}{s['text']}{VERIFIED_CLOSE}"
                if s["status"] == "verified"
                else f"{UNVERIFIED_OPEN}{s['text']}{UNVERIFIED_CLOSE}"
            )
            for s in self.segments(text, quotes)
        )

    def segments(
        self, text: str, quotes: list[dict[str, Any]] | None = None
    ) -> list[dict[str, Any]]:
        """``text`` as text and quote segments for a person's page: ``status`` verified,
        unverified or over_budget, ``spans`` into the passage, ``marked`` for passage text
        the author copied without quote markup (passage hidden)."""
        if self.passage is None:
            return [{"kind": "text", "text": text}] if text else []
        marked = [str(q.get("status")) for q in quotes or [] if not q.get("copied")]
        copied = [str(q.get("status")) for q in quotes or [] if q.get("copied")]
        out: list[dict[str, Any]] = []
        pos = 0
        for cq in self.quoted(text):
            start, end = cq.quote.outer
            out.append({"kind": "text", "text": strip_quote_tags(text[pos:start])})
            statuses = copied if isinstance(cq, CopiedQuote) else marked
            status = statuses.pop(0) if statuses else None
            if status == "over_budget":
                words = len(cq.text.split())
                out.append(
                    {"kind": "quote", "text": f"[a quote over the budget, {words} words, left out]",
                     "status": "over_budget", "spans": [], "marked": False}
                )
            elif cq.verified:
                out.append(
                    {"kind": "quote", "text": cq.text, "status": "verified",
                     "spans": [list(x) for x in cq.spans],
                     "marked": isinstance(cq, CopiedQuote)}
                )
            else:
                out += self._unverified(cq.text)
            pos = end
        out.append({"kind": "text", "text": strip_quote_tags(text[pos:])})
        return [s for s in out if s["text"]]
