"""The metrics of labels against a checker: one definition each (``docs/labelling.md``).

A label is 1 (the answer is correct), 0 (incorrect) or None (the labeller abstained); the
truth is the checker's 1 or 0. The confusion counts (:class:`Confusion`) are over the labelled
answers; abstentions are counted apart, and every metric but :func:`abstention` leaves them
out (a labeller that abstains where it is unsure is shown so by its abstention rate beside
them). "Positive" is "the answer is correct".

* accuracy = (TP + TN) / labelled
* accuracy on correct answers (true positive rate) = TP / (TP + FN); on incorrect answers
  (true negative rate) = TN / (TN + FP)
* macro-F1 = the mean of the F1 of each class, F1_c = 2 TP_c / (2 TP_c + FP_c + FN_c)
  (0 where a class is neither true nor labelled: the convention of scikit-learn)
* Matthews correlation MCC = (TP·TN − FP·FN) / sqrt((TP+FP)(TP+FN)(TN+FP)(TN+FN)), 0 where
  a factor of the denominator is 0 (scikit-learn's convention)
* Youden's J = TPR + TNR − 1 (None unless both classes are among the labelled answers)
* abstention rate = abstained / all answers
* McNemar's exact test of two labellers on the same answers: b answers only the first got
  right, c only the second (an abstention is not right); p = min(1, 2·P[X ≤ min(b, c)]),
  X ~ Binomial(b + c, 1/2) (1 where b + c = 0).

:func:`metric_intervals` bootstraps each over the questions (the unit; several answers to one
question move together), under the one rule of :mod:`llmdebate.intervals`.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import binom

from llmdebate.intervals import MIN_ITEMS, no_spread, too_few, units

Label = int | None


@dataclass(frozen=True)
class Confusion:
    """Counts of labels against the truth: the labelled answers' four cells, the abstained."""

    tp: int = 0
    fn: int = 0
    fp: int = 0
    tn: int = 0
    abstained: int = 0

    @property
    def labelled(self) -> int:
        return self.tp + self.fn + self.fp + self.tn

    @property
    def total(self) -> int:
        return self.labelled + self.abstained


def confusion(truth: Sequence[int], labels: Sequence[Label]) -> Confusion:
    """The counts of ``labels`` against ``truth`` (the same answers, in the same order)."""
    if len(truth) != len(labels):
        raise ValueError(f"{len(truth)} truths and {len(labels)} labels")
    cells = {"tp": 0, "fn": 0, "fp": 0, "tn": 0, "abstained": 0}
    for y, label in zip(truth, labels, strict=True):
        if label is None:
            cells["abstained"] += 1
        elif y:
            cells["tp" if label else "fn"] += 1
        else:
            cells["fp" if label else "tn"] += 1
    return Confusion(**cells)


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def accuracy(c: Confusion) -> float | None:
    return _ratio(c.tp + c.tn, c.labelled)


def on_correct(c: Confusion) -> float | None:
    """Accuracy on the answers that are correct (true positive rate)."""
    return _ratio(c.tp, c.tp + c.fn)


def on_incorrect(c: Confusion) -> float | None:
    """Accuracy on the answers that are incorrect (true negative rate)."""
    return _ratio(c.tn, c.tn + c.fp)


def _f1(tp: int, fp: int, fn: int) -> float:
    den = 2 * tp + fp + fn
    return 2 * tp / den if den else 0.0


def macro_f1(c: Confusion) -> float | None:
    if not c.labelled:
        return None
    return (_f1(c.tp, c.fp, c.fn) + _f1(c.tn, c.fn, c.fp)) / 2


def mcc(c: Confusion) -> float | None:
    if not c.labelled:
        return None
    den = (c.tp + c.fp) * (c.tp + c.fn) * (c.tn + c.fp) * (c.tn + c.fn)
    return (c.tp * c.tn - c.fp * c.fn) / math.sqrt(den) if den else 0.0


def youden_j(c: Confusion) -> float | None:
    tpr, tnr = on_correct(c), on_incorrect(c)
    return None if tpr is None or tnr is None else tpr + tnr - 1


def abstention(c: Confusion) -> float | None:
    return _ratio(c.abstained, c.total)


METRICS: dict[str, Callable[[Confusion], float | None]] = {
    "accuracy": accuracy,
    "on_correct": on_correct,
    "on_incorrect": on_incorrect,
    "macro_f1": macro_f1,
    "mcc": mcc,
    "youden_j": youden_j,
    "abstention": abstention,
}
"""Every label metric by name, in the order a table shows them."""


@dataclass(frozen=True)
class McNemar:
    """McNemar's exact test: ``b`` answers only the first labeller got right, ``c`` only the
    second, ``n`` answers both labelled or abstained on, ``p`` the two-sided p-value."""

    b: int
    c: int
    n: int
    p: float


def mcnemar_exact(truth: Sequence[int], first: Sequence[Label], second: Sequence[Label]) -> McNemar:
    """McNemar's exact test of two labellers' labels of the same answers."""
    b = c = 0
    for y, x1, x2 in zip(truth, first, second, strict=True):
        right1, right2 = x1 is not None and x1 == y, x2 is not None and x2 == y
        b += right1 and not right2
        c += right2 and not right1
    p = 1.0 if b + c == 0 else min(1.0, 2.0 * float(binom.cdf(min(b, c), b + c, 0.5)))
    return McNemar(b, c, len(truth), p)


@dataclass(frozen=True)
class Interval:
    """A metric's bootstrap interval over the questions, or why there is none."""

    ci: tuple[float, float] | None
    note: str | None = None


def metric_intervals(
    truth: Sequence[int],
    labels: Sequence[Label],
    clusters: Sequence[Hashable],
    *,
    seed: int,
    n_boot: int,
    level: float = 0.95,
) -> dict[str, Interval]:
    """Each metric's percentile bootstrap interval, resampling the questions (``clusters``:
    each answer's question) with replacement; none under :data:`MIN_ITEMS` questions."""
    qs = units(clusters)
    if len(qs) < MIN_ITEMS:
        note = too_few(len(qs), "questions")
        return {name: Interval(None, note) for name in METRICS}
    members: dict[Hashable, list[int]] = defaultdict(list)
    for i, q in enumerate(clusters):
        members[q].append(i)
    rng = np.random.default_rng(seed)
    draws: dict[str, list[float]] = {name: [] for name in METRICS}
    for _ in range(n_boot):
        picked = rng.integers(0, len(qs), size=len(qs))
        rows = [i for k in picked for i in members[qs[int(k)]]]
        c = confusion([truth[i] for i in rows], [labels[i] for i in rows])
        for name, fn in METRICS.items():
            value = fn(c)
            if value is not None:
                draws[name].append(value)
    whole = confusion(truth, labels)
    out: dict[str, Interval] = {}
    for name, values in draws.items():
        point = METRICS[name](whole)
        if point is None or len(values) < n_boot / 2:
            out[name] = Interval(None, "undefined in most resamples")
            continue
        lo, hi = np.quantile(values, [(1 - level) / 2, 1 - (1 - level) / 2])
        if lo == hi:
            out[name] = Interval(None, no_spread(len(qs), "questions", point))
        else:
            out[name] = Interval((float(lo), float(hi)))
    return out
