"""The one rule of every interval the project prints: count the independent units (the
items; the matches of a tournament that names no items) and give no interval under
:data:`MIN_ITEMS` of them, saying so with :func:`too_few`; nor where every unit scored the
same (:func:`no_spread`). Plain text and arithmetic, so that every layer can apply it
(definitions: ``docs/metrics.md``)."""

from __future__ import annotations

from collections.abc import Hashable, Sequence

MIN_ITEMS = 10
"""Fewer units than this: no interval (a percentile bootstrap of 2 items says [0.5, 0.5])."""


def short_note(note: str | None) -> str:
    """A table cell for a missing interval: ``none (n < 10)``, ``none (no spread)``,
    ``none (prior only)``, ``none (no matches)``, ``none``; ``–`` without a note."""
    if not note:
        return "–"
    for mark, cell in (("too few", f"none (n < {MIN_ITEMS})"), ("no spread", "none (no spread)"),
                       ("prior's", "none (prior only)"), ("no match", "none (no matches)")):
        if mark in note:
            return cell
    return "none"


def too_few(n: int, unit: str = "items") -> str:
    """The one sentence of every interval not given for want of units."""
    return f"n = {n} {unit}: too few for an interval (at least {MIN_ITEMS})"


def no_spread(n: int, unit: str, value: float) -> str:
    """The sentence of an interval not given because every unit scored the same."""
    return f"every one of the {n} {unit} scored {value:g}: no spread to resample"


def is_too_few(note: str | None) -> bool:
    """Whether an interval's note says it was not given for want of units."""
    return bool(note) and "too few for an interval" in str(note)


def too_few_to_tell(note: str | None, n: int) -> str:
    """A verdict without an interval: too few items to tell (with the interval's own
    sentence), or, where the units were enough but all scored alike, that."""
    if note and not is_too_few(note):
        return f"no interval ({note}): not established by an interval"
    return f"too few items to tell ({note or too_few(n)})"


def units(clusters: Sequence[Hashable]) -> list[Hashable]:
    """The distinct units of ``clusters``, in order of first appearance."""
    return list(dict.fromkeys(clusters))
