"""Intervals and comparisons a reviewer accepts (definitions: ``docs/metrics.md``).

One rule for every interval the project prints: it counts its independent units — the
items (a unit's values are resampled together), or the matches where a tournament names no
items — and gives none under :data:`MIN_ITEMS` of them, saying so with :func:`too_few`; nor
where every unit scored the same (:func:`no_spread`).

* :func:`interval` — the percentile bootstrap of a mean over units: one value per unit, or
  several values per unit (``clusters``), the unit's values drawn together;
* :func:`clustered_interval` — judgments crossed with items and judges: the two-way
  ("pigeonhole") bootstrap that resamples items and judges independently and weights each
  judgment by how often its item and its judge were drawn (Owen 2007);
* :func:`paired_difference` — two rows compared on the items both have, resampling items;
* :func:`mixed_logit` — a logistic regression of correctness on the rows with judge and item
  random intercepts, fitted by maximum likelihood under the Laplace approximation
  (:mod:`llmdebate.report.glmm`), with Wald intervals (coverage measured by simulation:
  ``tests/test_mixed_coverage.py``, ``benchmarks/bench_mixed_coverage.py``).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np

from llmdebate.intervals import (
    MIN_ITEMS,
    is_too_few,
    no_spread,
    short_note,
    too_few,
    too_few_to_tell,
    units,
)
from llmdebate.report import glmm

__all__ = [  # the interval rule is re-exported from its one home, llmdebate.intervals
    "MIN_ITEMS", "RANDOM_EFFECTS", "Z95", "between_df", "clustered_interval", "interval",
    "is_too_few",
    "mixed_logit", "no_spread", "paired_difference", "short_note", "too_few",
    "too_few_to_tell", "units",
]

Z95 = 1.959963984540054
"""The 0.975 quantile of the standard normal (a Wald interval's half-width in sds)."""


def _quantiles(means: np.ndarray, level: float) -> tuple[float, float]:
    lo, hi = np.quantile(means, [(1 - level) / 2, 1 - (1 - level) / 2])
    return float(lo), float(hi)


def interval(
    values: Sequence[float],
    *,
    seed: int,
    n_boot: int,
    level: float = 0.95,
    unit: str = "items",
    clusters: Sequence[Hashable] | None = None,
) -> tuple[list[float] | None, str | None]:
    """(percentile bootstrap interval of the mean, None), or (None, why not).

    Without ``clusters`` every value is a unit. With them (one label per value), the units
    are the distinct labels in order of first appearance: each resample draws
    ``integers(0, n_units, n_units)`` and takes the mean of every value of the drawn units
    (a unit drawn twice counts twice); one value per unit gives the plain bootstrap, to the
    bit."""
    x = np.asarray(values, dtype=float)
    names = units(clusters) if clusters is not None else None
    n = len(x) if names is None else len(names)
    if n < MIN_ITEMS:
        return None, too_few(n, unit)
    if float(np.ptp(x)) == 0.0:
        return None, no_spread(n, unit, float(x[0]))
    idx = np.random.default_rng(seed).integers(0, n, size=(n_boot, n))
    if names is None:
        return list(_quantiles(x[idx].mean(axis=1), level)), None
    code = {c: k for k, c in enumerate(names)}
    which = np.array([code[c] for c in clusters or ()])
    sums = np.bincount(which, weights=x, minlength=n)
    sizes = np.bincount(which, minlength=n).astype(float)
    return list(_quantiles(sums[idx].sum(axis=1) / sizes[idx].sum(axis=1), level)), None


def clustered_interval(
    values: Sequence[float],
    items: Sequence[str],
    judges: Sequence[str],
    *,
    seed: int,
    n_boot: int,
    level: float = 0.95,
) -> tuple[list[float] | None, str | None]:
    """Two-way cluster bootstrap of the mean of ``values`` (one per judgment): each resample
    draws the distinct items and the distinct judges with replacement
    (``default_rng(seed)``: items first, then judges) and takes the mean weighted by
    (times the item was drawn) × (times the judge was drawn); resamples with zero weight are
    dropped. No interval with fewer than :data:`MIN_ITEMS` items."""
    item_names = sorted(set(items))
    judge_names = sorted(set(judges))
    if len(item_names) < MIN_ITEMS:
        return None, too_few(len(item_names))
    x = np.asarray(values, dtype=float)
    if float(np.ptp(x)) == 0.0:
        return None, no_spread(len(x), "judgments", float(x[0]))
    ii = np.array([item_names.index(i) for i in items])
    jj = np.array([judge_names.index(j) for j in judges])
    rng = np.random.default_rng(seed)
    n_i, n_j = len(item_names), len(judge_names)
    means: list[float] = []
    for _ in range(n_boot):
        ci = np.bincount(rng.integers(0, n_i, n_i), minlength=n_i)
        cj = np.bincount(rng.integers(0, n_j, n_j), minlength=n_j)
        w = ci[ii] * cj[jj]
        if w.sum() > 0:
            means.append(float((w * x).sum() / w.sum()))
    return list(_quantiles(np.asarray(means), level)), None


def paired_difference(
    a: Mapping[str, float], b: Mapping[str, float], *, seed: int, n_boot: int
) -> dict[str, Any]:
    """Row a minus row b over the items both have: mean difference of item scores, with a
    percentile bootstrap over those items (the pairs kept together)."""
    shared = [i for i in a if i in b]
    diffs = [a[i] - b[i] for i in shared]
    ci, note = interval(diffs, seed=seed, n_boot=n_boot)
    return {
        "items": len(shared),
        "difference": float(np.mean(diffs)) if diffs else None,
        "ci95": ci,
        "note": note,
        "bootstrap_seed": seed,
    }


RANDOM_EFFECTS = ("judge", "item")
MIXED_FIT = (
    "maximum likelihood under the Laplace approximation (llmdebate.report.glmm); "
    "95% Wald interval: estimate ± q standard errors, q the normal 0.975 quantile (1.96), "
    "or Student's t's with between-cluster degrees of freedom (levels − rows) where each "
    "judge (or item) saw a single row"
)


def _formula(kept: Sequence[str]) -> str:
    return "logit(P[correct]) ~ row" + "".join(f" + (1 | {g})" for g in kept)


def _separated(y: np.ndarray, rows: Sequence[str], names: Sequence[str]) -> dict[str, float]:
    """Rows whose judgments all scored the same (a logit has no finite estimate there)."""
    out: dict[str, float] = {}
    for name in names:
        mine = y[np.array([r == name for r in rows])]
        if float(np.ptp(mine)) == 0.0:
            out[name] = float(mine[0])
    return out


def between_df(rows: Sequence[str], groups: Mapping[str, Sequence[str]]) -> int | None:
    """The degrees of freedom of a row contrast that varies between a random factor's levels
    only (each judge, or each item, saw a single row): that factor's levels minus the rows,
    the least over such factors (SAS's between-within rule); None where the rows vary within
    every factor's levels (a normal quantile then)."""
    n_rows = len(set(rows))
    out: int | None = None
    for labels in groups.values():
        seen: dict[str, set[str]] = {}
        for r, lv in zip(rows, labels, strict=True):
            seen.setdefault(lv, set()).add(r)
        if all(len(v) == 1 for v in seen.values()):
            df = len(seen) - n_rows
            out = df if out is None else min(out, df)
    return out


def _quantile(df: int | None) -> float:
    if df is None:
        return Z95
    from scipy.stats import t

    return float(t.ppf(0.975, df))


def _effect(
    row: str, est: float | None, se: float | None, note: str | None, df: int | None = None
) -> dict[str, Any]:
    q = _quantile(df) if est is not None and se is not None and not note else None
    ci = None if q is None or est is None or se is None else [est - q * se, est + q * se]
    return {"row": row, "log_odds": est, "se": se, "df": df, "ci95": ci, "note": note}


def mixed_logit(
    correct: Sequence[float],
    rows: Sequence[str],
    judges: Sequence[str],
    items: Sequence[str],
) -> dict[str, Any] | None:
    """Logistic regression of correct (0/1) on the row (treatment coding, the first row in
    sorted order the reference) with a random intercept per judge and per item, fitted by
    maximum likelihood under the Laplace approximation (:func:`llmdebate.report.glmm.fit`):
    each row's log-odds difference from the reference with its standard error and a 95%
    Wald interval (estimate ± 1.96 se; Student's t's quantile with :func:`between_df`
    degrees of freedom where each judge, or each item, saw a single row). A random effect
    with a single level is dropped and said so (``dropped``), and ``model`` is the formula
    fitted. No interval under
    :data:`MIN_ITEMS` distinct items (:func:`too_few`), nor for a row whose judgments all
    scored the same (its log-odds has no finite estimate: none is given). None where nothing
    can be fitted: fewer than two rows or four judgments, or every judgment the same."""
    names = sorted(set(rows))
    y = np.asarray(correct, dtype=float)
    if len(names) < 2 or len(y) < 4 or float(np.ptp(y)) == 0.0:
        return None
    levels = {"judge": sorted(set(judges)), "item": sorted(set(items))}
    kept = [g for g in RANDOM_EFFECTS if len(levels[g]) > 1]
    dropped = [f"the {g} random effect: every judgment is of one {g}"
               for g in RANDOM_EFFECTS if g not in kept]
    sep = _separated(y, rows, names)
    out: dict[str, Any] = {
        "model": _formula(kept), "fit": MIXED_FIT, "reference": names[0],
        "judgments": len(y), "judges": len(levels["judge"]), "items": len(levels["item"]),
        "dropped": dropped, "random_effect_sd": {},
    }
    if names[0] in sep:
        why = (f"every judgment of the reference row scored {sep[names[0]]:g}: no finite "
               "log-odds against it")
        out["effects"] = [_effect(r, None, None, why) for r in names[1:]]
        return out
    fitted = [r for r in names if r not in sep]
    keep = np.array([r in fitted for r in rows])
    codes = {g: {v: k for k, v in enumerate(levels[g])} for g in kept}
    by = {"judge": judges, "item": items}
    zs = [glmm.indicator([codes[g][v] for v, k in zip(by[g], keep, strict=True) if k],
                         len(levels[g])) for g in kept]
    zs = [z[:, z.sum(axis=0) > 0] for z in zs]
    fit_rows = [r for r, k in zip(rows, keep, strict=True) if k]
    x = np.column_stack([np.ones(len(fit_rows))] + [
        np.array([float(r == name) for r in fit_rows]) for name in fitted[1:]])
    fit = glmm.fit(y[keep], x, zs)
    n_items = len({i for i, k in zip(items, keep, strict=True) if k})
    note = None if fit.finite else "the judgments separate: no finite estimate"
    df = between_df(fit_rows, {g: [v for v, k in zip(by[g], keep, strict=True) if k]
                               for g in kept})
    if df is not None and df < 1:
        note = (f"each {'judge' if 'judge' in kept else 'item'} saw a single row, and there "
                "are no more of them than rows: no degrees of freedom for an interval")
    note = too_few(n_items) if n_items < MIN_ITEMS else note
    est = {name: (float(fit.beta[k + 1]), float(fit.se[k + 1]))
           for k, name in enumerate(fitted[1:])}
    out["effects"] = [
        _effect(r, *est[r], note, df) if r in est else _effect(
            r, None, None, f"every judgment of this row scored {sep[r]:g}: its log-odds has "
            "no finite estimate")
        for r in names[1:]
    ]
    out["random_effect_sd"] = {g: float(s) for g, s in zip(kept, fit.sigma, strict=True)}
    out["deviance"] = fit.deviance
    return out
