"""Intervals and comparisons a reviewer accepts (definitions: ``docs/metrics.md``).

* :func:`interval` — the percentile bootstrap over items, or, where it would mislead, no
  interval and the reason (fewer than :data:`MIN_ITEMS` units; every unit scored the same);
* :func:`clustered_interval` — judgments crossed with items and judges: the two-way
  ("pigeonhole") bootstrap that resamples items and judges independently and weights each
  judgment by how often its item and its judge were drawn (Owen 2007);
* :func:`paired_difference` — two rows compared on the items both have, resampling items;
* :func:`mixed_logit` — a logistic regression of correctness on the rows with judge and item
  random effects (statsmodels' ``BinomialBayesMixedGLM``, the ``report`` extra).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from llmdebate.errors import MissingExtraError

MIN_ITEMS = 10
"""Fewer units than this: no interval (a percentile bootstrap of 2 items says [0.5, 0.5])."""


def short_note(note: str | None) -> str:
    """A table cell for a missing interval: ``none (n < 10)``, ``none (no spread)``, ``–``."""
    if not note:
        return "–"
    if "too few" in note:
        return f"none (n < {MIN_ITEMS})"
    return "none (no spread)" if "no spread" in note else "none"


def too_few(n: int, unit: str = "items") -> str:
    return f"n = {n} {unit}: too few for an interval (at least {MIN_ITEMS})"


def _quantiles(means: np.ndarray, level: float) -> tuple[float, float]:
    lo, hi = np.quantile(means, [(1 - level) / 2, 1 - (1 - level) / 2])
    return float(lo), float(hi)


def interval(
    values: Sequence[float], *, seed: int, n_boot: int, level: float = 0.95, unit: str = "items"
) -> tuple[list[float] | None, str | None]:
    """(percentile bootstrap interval of the mean, None), or (None, why not)."""
    n = len(values)
    if n < MIN_ITEMS:
        return None, too_few(n, unit)
    x = np.asarray(values, dtype=float)
    if float(np.ptp(x)) == 0.0:
        return None, f"every one of the {n} {unit} scored {x[0]:g}: no spread to resample"
    idx = np.random.default_rng(seed).integers(0, n, size=(n_boot, n))
    return list(_quantiles(x[idx].mean(axis=1), level)), None


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
        return None, f"every one of the {len(x)} judgments scored {x[0]:g}: no spread to resample"
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


def mixed_logit(
    correct: Sequence[float],
    rows: Sequence[str],
    judges: Sequence[str],
    items: Sequence[str],
    *,
    seed: int = 0,
) -> dict[str, Any] | None:
    """Logistic regression of correct (0/1) on the row (treatment coding, the first row in
    sorted order the reference) with judge and item random intercepts, fitted by statsmodels'
    ``BinomialBayesMixedGLM.fit_vb`` (its random start drawn from ``seed``): each row's
    log-odds difference from the reference with its posterior standard deviation and a 95%
    interval (mean ± 1.96 sd). None where it
    cannot be fitted: fewer than two rows, a single judge and a single item, or every
    judgment right (or every one wrong: a logit has no finite estimate then)."""
    names = sorted(set(rows))
    if len(names) < 2 or len(correct) < 4 or (len(set(judges)) < 2 and len(set(items)) < 2):
        return None
    if len({float(c) for c in correct}) < 2:
        return None
    try:
        import pandas as pd
        from statsmodels.genmod.bayes_mixed_glm import BinomialBayesMixedGLM
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise MissingExtraError("statsmodels", "report") from exc
    frame = pd.DataFrame(
        {
            "y": [float(c) for c in correct],
            "row": pd.Categorical(list(rows), categories=names),
            "judge": list(judges),
            "item": list(items),
        }
    )
    vc = {}
    if len(set(judges)) > 1:
        vc["judge"] = "0 + C(judge)"
    if len(set(items)) > 1:
        vc["item"] = "0 + C(item)"
    model = BinomialBayesMixedGLM.from_formula("y ~ row", vc, frame)
    fit = model.fit_vb(rng=seed)
    effects = []
    for k, name in enumerate(model.exog_names):
        if not name.startswith("row[T."):
            continue
        mean, sd = float(fit.fe_mean[k]), float(fit.fe_sd[k])
        effects.append(
            {
                "row": name[len("row[T.") : -1],
                "log_odds": mean,
                "sd": sd,
                "ci95": [mean - 1.96 * sd, mean + 1.96 * sd],
            }
        )
    return {
        "model": "logit(P[correct]) ~ row + (1 | judge) + (1 | item)",
        "fit": "statsmodels BinomialBayesMixedGLM, variational Bayes (fit_vb)",
        "seed": seed,
        "reference": names[0],
        "judgments": len(correct),
        "judges": len(set(judges)),
        "items": len(set(items)),
        "effects": effects,
        "random_effect_sd": {
            name: float(np.exp(m)) for name, m in zip(model.vcp_names, fit.vcp_mean, strict=True)
        },
    }
