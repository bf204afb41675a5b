"""Comparison metrics, computed from transcripts alone (definitions: ``docs/metrics.md``).

Nothing here calls a model or recomputes a reward by other means than :mod:`llmdebate.scoring`:
payoffs are read from ``Transcript.total`` and normalised with :func:`scoring.normalized`.

Conventions written by :mod:`llmdebate.protocols` into ``Transcript.meta``:

* ``item_id`` — the dataset item the debate is about (debates on one item are *paired*);
* ``variant`` — ``honest`` / ``dishonest`` (prover-estimator, naive recursive),
  ``correct`` / ``incorrect`` (consultancy: the assigned answer), ``order-0`` / ``order-1``
  (two-sided: which answer debater A defends), ``direct``;
* ``decision`` — the answer text the judge chose (direct, consultancy, two-sided);
* ``gold`` — the gold answer text.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from llmdebate import scoring
from llmdebate.agents.audit import decomposition_summary
from llmdebate.schemas import Transcript

ASYMMETRIC = ("prover-estimator", "naive-recursive")
PROTOCOL_ORDER = ("direct", "consultancy", "two-sided", "naive-recursive", "prover-estimator")
DEFAULT_BOOTSTRAP = 2000


def item_id(t: Transcript) -> str:
    """The id of the item a debate is about (``meta.item_id``, else ``item.id``, else its id)."""
    if "item_id" in t.meta:
        return str(t.meta["item_id"])
    if t.item and "id" in t.item:
        return str(t.item["id"])
    return t.id


def gold(t: Transcript) -> str | None:
    """The gold answer text of the debate's item."""
    if "gold" in t.meta:
        return str(t.meta["gold"])
    if t.item and t.item.get("answer") is not None:
        return str(t.item["answer"])
    return None


def decision_correct(t: Transcript) -> float | None:
    """1.0 / 0.0 if the judge's ``decision`` equals the gold answer; None if undecided."""
    dec, g = t.meta.get("decision"), gold(t)
    if t.status != "complete" or dec is None or g is None:
        return None
    return float(str(dec).strip().lower() == g.strip().lower())


def normalized_payoff(t: Transcript) -> float | None:
    """The prover's payoff R_A in units of r^(d+1) (prover-estimator) or as is (naive: ±1)."""
    return scoring.normalized_total(t)


def normalized_expected_payoff(t: Transcript) -> float | None:
    """E[R_A] over the protocol's own draws, in units of r^(d+1) (prover-estimator only)."""
    return scoring.normalized_total(t, expected=True) if t.protocol == "prover-estimator" else None


def side(t: Transcript) -> str | None:
    """``honest`` if the prover defended the gold answer, ``dishonest`` if not, else None."""
    claimed, g = t.meta.get("claimed_answer"), gold(t)
    if claimed is None or g is None:
        return None
    return "honest" if str(claimed).strip().lower() == g.strip().lower() else "dishonest"


def payoffs_by_side(transcripts: Iterable[Transcript], protocol: str) -> dict[str, Any]:
    """Mean normalised payoff (sampled and expected) of honest and dishonest provers."""
    vals: dict[str, list[float]] = defaultdict(list)
    exp: dict[str, list[float]] = defaultdict(list)
    for t in transcripts:
        s = side(t) if t.protocol == protocol else None
        pay = normalized_payoff(t)
        if s is None or pay is None:
            continue
        vals[s].append(pay)
        e = normalized_expected_payoff(t)
        if e is not None:
            exp[s].append(e)
    return {
        s: {
            "n": len(vals[s]),
            "mean_normalized": float(np.mean(vals[s])) if vals[s] else None,
            "mean_expected_normalized": float(np.mean(exp[s])) if exp[s] else None,
        }
        for s in ("honest", "dishonest")
    }


@dataclass
class Pair:
    """An honest and a dishonest prover on the same item (and the same claim)."""

    item_id: str
    honest: float
    dishonest: float

    @property
    def score(self) -> float:
        """1 if the honest prover earns more, 1/2 on a tie, 0 otherwise."""
        if self.honest > self.dishonest:
            return 1.0
        return 0.5 if self.honest == self.dishonest else 0.0


def pairs(transcripts: Iterable[Transcript], protocol: str) -> list[Pair]:
    """Honest/dishonest pairs of one asymmetric protocol, by item, in item order of appearance."""
    by_item: dict[str, dict[str, float]] = defaultdict(dict)
    for t in transcripts:
        if t.protocol != protocol:
            continue
        pay = normalized_payoff(t)
        variant = t.meta.get("variant")
        if pay is not None and variant in ("honest", "dishonest"):
            by_item[item_id(t)][variant] = pay
    return [
        Pair(i, v["honest"], v["dishonest"])
        for i, v in by_item.items()
        if "honest" in v and "dishonest" in v
    ]


def item_scores(transcripts: Sequence[Transcript], protocol: str) -> dict[str, float]:
    """Per item, the protocol's score in [0, 1] (see ``docs/metrics.md``, accuracy)."""
    if protocol in ASYMMETRIC:
        return {p.item_id: p.score for p in pairs(transcripts, protocol)}
    acc: dict[str, list[float]] = defaultdict(list)
    for t in transcripts:
        if t.protocol == protocol:
            c = decision_correct(t)
            if c is not None:
                acc[item_id(t)].append(c)
    return {i: float(np.mean(v)) for i, v in acc.items()}


def bootstrap_ci(
    values: Sequence[float], *, seed: int, n_boot: int = DEFAULT_BOOTSTRAP, level: float = 0.95
) -> tuple[float, float] | None:
    """Percentile bootstrap interval of the mean (resampling ``values`` with replacement)."""
    if len(values) == 0:
        return None
    x = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(x), size=(n_boot, len(x)))
    means = x[idx].mean(axis=1)
    lo, hi = np.quantile(means, [(1 - level) / 2, 1 - (1 - level) / 2])
    return float(lo), float(hi)


@dataclass
class CalibrationBin:
    lo: float
    hi: float
    n: int
    mean_p: float | None
    frac_true: float | None


@dataclass
class Calibration:
    """The estimator's top-level probability p_d against the claim's gold truth."""

    n: int
    brier: float | None
    ece: float | None
    accuracy: float | None
    bins: list[CalibrationBin] = field(default_factory=list)
    points: list[tuple[float, int]] = field(default_factory=list)


def calibration_points(transcripts: Iterable[Transcript]) -> list[tuple[float, int]]:
    """(p_d, truth) once per item and claim, from prover-estimator transcripts with gold truth."""
    seen: set[tuple[str, str]] = set()
    pts: list[tuple[float, int]] = []
    for t in transcripts:
        if t.protocol != "prover-estimator" or t.init is None or t.init.claim.truth is None:
            continue
        key = (item_id(t), t.init.claim.text)
        if key in seen:
            continue
        seen.add(key)
        pts.append((float(t.init.estimate.value), int(t.init.claim.truth)))
    return pts


def calibration(points: Sequence[tuple[float, int]], n_bins: int = 10) -> Calibration:
    """Equal-width bins on [0, 1] (the last bin closed); Brier score; expected calibration error."""
    if not points:
        return Calibration(0, None, None, None)
    p = np.array([q for q, _ in points], dtype=float)
    y = np.array([v for _, v in points], dtype=float)
    which = np.minimum((p * n_bins).astype(int), n_bins - 1)
    bins: list[CalibrationBin] = []
    ece = 0.0
    for b in range(n_bins):
        mask = which == b
        n = int(mask.sum())
        mp = float(p[mask].mean()) if n else None
        ft = float(y[mask].mean()) if n else None
        if n:
            ece += n / len(p) * abs(mp - ft)  # type: ignore[operator]
        bins.append(CalibrationBin(b / n_bins, (b + 1) / n_bins, n, mp, ft))
    return Calibration(
        n=len(points),
        brier=float(np.mean((p - y) ** 2)),
        ece=float(ece),
        accuracy=float(np.mean((p > 0.5) == (y == 1))),
        bins=bins,
        points=[(float(a), int(b)) for a, b in points],
    )


@dataclass
class Cost:
    debates: int = 0
    failed: int = 0
    calls: int = 0
    cached_calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float = 0.0


def costs(transcripts: Iterable[Transcript]) -> dict[str, Cost]:
    """Debates, model calls, tokens and USD cost per protocol, summed over ``Transcript.calls``."""
    out: dict[str, Cost] = defaultdict(Cost)
    for t in transcripts:
        c = out[t.protocol]
        c.debates += 1
        c.failed += t.status == "failed"
        for call in t.calls:
            c.calls += 1
            c.cached_calls += call.cached
            c.tokens_in += call.tokens_in
            c.tokens_out += call.tokens_out
            c.cost += call.cost
    return dict(out)


def _protocols(transcripts: Sequence[Transcript]) -> list[str]:
    present = {t.protocol for t in transcripts}
    return [p for p in PROTOCOL_ORDER if p in present]


def compute(
    transcripts: Sequence[Transcript],
    *,
    seed: int = 0,
    n_boot: int = DEFAULT_BOOTSTRAP,
    n_bins: int = 10,
) -> dict[str, Any]:
    """Every metric of the comparison, as a JSON-ready dict (written to comparison.json)."""
    per: dict[str, Any] = {}
    cost = costs(transcripts)
    for k, proto in enumerate(_protocols(transcripts)):
        scores = item_scores(transcripts, proto)
        vals = list(scores.values())
        ci = bootstrap_ci(vals, seed=seed + k, n_boot=n_boot)
        entry: dict[str, Any] = {
            "items": len(vals),
            "accuracy": float(np.mean(vals)) if vals else None,
            "ci95": list(ci) if ci else None,
            "bootstrap_seed": seed + k,
            "item_scores": scores,
            "cost": asdict(cost.get(proto, Cost())),
        }
        if proto in ASYMMETRIC:
            entry["pairs"] = _pair_stats(pairs(transcripts, proto), seed=seed + 100 + k, n=n_boot)
            entry["payoff"] = payoffs_by_side(transcripts, proto)
        per[proto] = entry
    cal = calibration(calibration_points(transcripts), n_bins)
    return {
        "n_transcripts": len(transcripts),
        "bootstrap": {"resamples": n_boot, "level": 0.95, "unit": "item", "seed": seed},
        "protocols": per,
        "calibration": asdict(cal),
    }


def _pair_stats(ps: list[Pair], *, seed: int, n: int) -> dict[str, Any]:
    if not ps:
        return {"n": 0}
    wins = [float(p.honest > p.dishonest) for p in ps]
    gaps = [p.honest - p.dishonest for p in ps]
    ci = bootstrap_ci(wins, seed=seed, n_boot=n)
    gci = bootstrap_ci(gaps, seed=seed + 1, n_boot=n)
    return {
        "n": len(ps),
        "discrimination": float(np.mean(wins)),
        "discrimination_ci95": list(ci) if ci else None,
        "ties": int(sum(p.honest == p.dishonest for p in ps)),
        "mean_gap": float(np.mean(gaps)),
        "mean_gap_ci95": list(gci) if gci else None,
        "honest": [p.honest for p in ps],
        "dishonest": [p.dishonest for p in ps],
        "bootstrap_seed": seed,
    }


def _mean(xs: Sequence[float]) -> float | None:
    return float(np.mean(xs)) if len(xs) else None


def failure_kind(reason: str | None) -> str:
    """The class of a failure (``RetriesExhaustedError``, ``InvalidOutputError``, ...)."""
    head = (reason or "").split(":", 1)[0].strip()
    return head if head.isidentifier() else "other"


def run_summary(
    transcripts: Sequence[Transcript],
    *,
    seed: int = 0,
    n_boot: int = DEFAULT_BOOTSTRAP,
    n_bins: int = 10,
) -> dict[str, Any]:
    """``summary.json``: status, failures by reason, retries, time and calls per debate, usage
    per role, and every metric of :func:`compute` — from transcripts alone."""
    status: dict[str, int] = defaultdict(int)
    by_protocol: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    kinds: dict[str, int] = defaultdict(int)
    by_role: dict[str, dict[str, float]] = defaultdict(
        lambda: {"calls": 0, "tokens_in": 0, "tokens_out": 0, "cost": 0.0}
    )
    walls: list[float] = []
    retries = calls = cached = tokens_in = tokens_out = 0
    cost = 0.0
    judge_hits: list[float] = []
    for t in transcripts:
        status[t.status] += 1
        by_protocol[t.protocol][t.status] += 1
        if t.status == "failed":
            kinds[failure_kind(t.failure)] += 1
        if isinstance(t.meta.get("wall_s"), int | float):
            walls.append(float(t.meta["wall_s"]))
        for c in t.calls:
            calls += 1
            cached += c.cached
            tokens_in += c.tokens_in
            tokens_out += c.tokens_out
            cost += c.cost
            retries += int(getattr(c, "retries", 0) or 0)
            r = by_role[c.role or "?"]
            r["calls"] += 1
            r["tokens_in"] += c.tokens_in
            r["tokens_out"] += c.tokens_out
            r["cost"] += c.cost
        for rd in t.rounds:
            if rd.verdict is not None and rd.claim.truth is not None:
                judge_hits.append(float(rd.verdict.value == rd.claim.truth))
    n = len(transcripts)
    return {
        "transcripts": n,
        "status": dict(status),
        "by_protocol": {p: dict(v) for p, v in sorted(by_protocol.items())},
        "failures": {
            "by_kind": dict(sorted(kinds.items())),
            "debates": [
                {"id": t.id, "reason": t.failure} for t in transcripts if t.status == "failed"
            ],
        },
        "retries": retries,
        "debate_wall_s": {
            "mean": _mean(walls),
            "median": float(np.median(walls)) if walls else None,
            "max": max(walls) if walls else None,
        },
        "usage": {
            "calls": calls,
            "cached_calls": cached,
            "calls_per_debate": calls / n if n else None,
            "tokens_in": tokens_in,
            "tokens_out": tokens_out,
            "cost": cost,
            "by_role": {k: dict(v) for k, v in sorted(by_role.items())},
        },
        "leaf_judge_accuracy": {"n": len(judge_hits), "accuracy": _mean(judge_hits)},
        "decompositions": decomposition_summary(transcripts),
        "metrics": compute(transcripts, seed=seed, n_boot=n_boot, n_bins=n_bins),
    }
