"""Comparison metrics, computed from transcripts alone (definitions: ``docs/metrics.md``).

Nothing here calls a model or recomputes a reward by other means than :mod:`llmdebate.core.scoring`:
payoffs are read from ``Transcript.total`` and normalised with :func:`scoring.normalized`.

Conventions written by :mod:`llmdebate.protocols` into ``Transcript.meta``:

* ``item_id`` — the dataset item the debate is about (debates on one item are *paired*);
* ``variant`` — ``honest`` / ``dishonest`` (prover-estimator, naive recursive),
  ``correct`` / ``incorrect`` (consultancy: the assigned answer), ``order-0`` / ``order-1``
  (two-sided: which answer debater A defends), ``direct``;
* ``decision`` — the answer text the judge chose (direct, consultancy, two-sided);
* ``gold`` — the gold answer text;
* ``passage`` — the judge's view of the item's passage, ``hidden`` or ``shown`` (None: the
  item has none); each row's figure is also given per view (``by_passage``), and the share
  of verified quotes per protocol, side and model (``quotes``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from llmdebate.core.schemas import Transcript
from llmdebate.protocols.families import RecursiveProtocol
from llmdebate.protocols.registry import PROTOCOLS, in_order, known, named_where
from llmdebate.report.inference import interval, paired_difference
from llmdebate.report.records import (
    Cost,
    DebateRecord,
    RunTally,
    decision_correct,
    gold,
    item_id,
    normalized_expected_payoff,
    normalized_payoff,
    record_of,
    side,
    tally,
)

__all__ = [  # noqa: F822 (ASYMMETRIC, PROTOCOL_ORDER: module __getattr__)
    "ASYMMETRIC", "PROTOCOL_ORDER", "Calibration", "CalibrationBin", "Cost", "DebateRecord",
    "Pair", "RunTally", "bootstrap_ci", "calibration", "calibration_points", "compute",
    "costs", "decision_correct", "failure_kind", "gold", "item_id", "item_scores",
    "metrics_of", "normalized_expected_payoff", "normalized_payoff", "pairs",
    "payoffs_by_side", "record_of", "row_of", "run_summary", "side", "summary_of", "tally",
]

DEFAULT_BOOTSTRAP = 2000


def _recursive(protocol: str) -> bool:
    return isinstance(known(protocol), RecursiveProtocol)


def __getattr__(name: str) -> Any:
    """``ASYMMETRIC`` (the recursive protocols) and ``PROTOCOL_ORDER``
    (every protocol in comparison order), read from the protocol registry when asked."""
    if name == "ASYMMETRIC":
        return named_where(lambda p: isinstance(p, RecursiveProtocol))
    if name == "PROTOCOL_ORDER":
        return tuple(in_order(PROTOCOLS.names()))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


Debates = Iterable[Transcript] | Iterable[DebateRecord]


def _records(debates: Debates) -> list[DebateRecord]:
    return [d if isinstance(d, DebateRecord) else record_of(d) for d in debates]


def _of_protocol(debates: Debates, protocol: str) -> list[DebateRecord]:
    """The records of one protocol's debates, in order."""
    groups: dict[str, list[DebateRecord]] = defaultdict(list)
    for r in _records(debates):
        groups[r.protocol].append(r)
    return groups.get(protocol, [])


def payoffs_by_side(
    debates: Debates, protocol: str, *, seed: int = 0, n_boot: int = DEFAULT_BOOTSTRAP
) -> dict[str, Any]:
    """Mean normalised payoff (sampled and expected) of honest and dishonest provers over
    their debates, each with a bootstrap interval over items (an item's debates drawn
    together: a tournament seats several pairs on one item; seeds ``seed``, ``seed + 1``
    honest; ``seed + 2``, ``seed + 3`` dishonest), and the completeness bound where every
    debate states the same; the payoffs themselves in order."""
    vals: dict[str, list[float]] = defaultdict(list)
    exp: dict[str, list[float]] = defaultdict(list)
    where: dict[str, list[str]] = defaultdict(list)
    where_exp: dict[str, list[str]] = defaultdict(list)
    bounds: set[float | None] = set()
    for r in _of_protocol(debates, protocol):
        s = r.side
        if s is None or r.payoff is None:
            continue
        vals[s].append(r.payoff)
        where[s].append(r.item_id)
        bounds.add(r.bound)
        if r.expected_payoff is not None:
            exp[s].append(r.expected_payoff)
            where_exp[s].append(r.item_id)
    out: dict[str, Any] = {}
    for j, s in enumerate(("honest", "dishonest")):
        ci, note = interval(vals[s], seed=seed + 2 * j, n_boot=n_boot, clusters=where[s])
        eci, enote = interval(
            exp[s], seed=seed + 2 * j + 1, n_boot=n_boot, clusters=where_exp[s]
        )
        out[s] = {
            "n": len(vals[s]),
            "items": len(set(where[s])),
            "mean_normalized": float(np.mean(vals[s])) if vals[s] else None,
            "mean_normalized_ci95": ci,
            "mean_normalized_note": note,
            "n_expected": len(exp[s]),
            "mean_expected_normalized": float(np.mean(exp[s])) if exp[s] else None,
            "mean_expected_normalized_ci95": eci,
            "mean_expected_normalized_note": enote,
            "normalized": list(vals[s]),
            "expected_normalized": list(exp[s]),
        }
    out["completeness_bound"] = bounds.pop() if len(bounds) == 1 else None
    out["soundness_threshold"] = 0.0 if out["completeness_bound"] is not None else None
    out["bootstrap_seed"] = seed
    return out


@dataclass
class Pair:
    """An honest and a dishonest prover on the same item (and the same claim)."""

    item_id: str
    honest: float
    dishonest: float

    @property
    def score(self) -> float:
        """1 if the honest prover earns strictly more, else 0 (a tie counts 0: "honest beats
        dishonest" is P[R(honest) > R(dishonest)])."""
        return 1.0 if self.honest > self.dishonest else 0.0


def pairs(debates: Debates, protocol: str) -> list[Pair]:
    """Honest/dishonest pairs of one asymmetric protocol: on the same item with the same
    seats (:attr:`DebateRecord.pairing`), in order of appearance."""
    by_key: dict[tuple[str, str], dict[str, float]] = defaultdict(dict)
    for r in _of_protocol(debates, protocol):
        if r.payoff is not None and r.variant in ("honest", "dishonest"):
            by_key[(r.item_id, r.pairing)][r.variant] = r.payoff
    return [
        Pair(i, v["honest"], v["dishonest"])
        for (i, _), v in by_key.items()
        if "honest" in v and "dishonest" in v
    ]


def item_scores(debates: Debates, protocol: str) -> dict[str, float]:
    """Per item, the protocol's score in [0, 1] (see ``docs/metrics.md``, accuracy)."""
    records = _of_protocol(debates, protocol)
    if _recursive(protocol):
        won: dict[str, list[float]] = defaultdict(list)
        for p in pairs(records, protocol):
            won[p.item_id].append(p.score)
        return {i: float(np.mean(v)) for i, v in won.items()}
    acc: dict[str, list[float]] = defaultdict(list)
    for r in records:
        if r.correct is not None:
            acc[r.item_id].append(r.correct)
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


def calibration_points(debates: Debates) -> list[tuple[float, int]]:
    """(p_d, truth) once per item and claim, from prover-estimator transcripts with gold truth."""
    seen: set[tuple[str, str]] = set()
    pts: list[tuple[float, int]] = []
    for r in _records(debates):
        if r.calibration is None:
            continue
        text, p, truth = r.calibration
        if (r.item_id, text) in seen:
            continue
        seen.add((r.item_id, text))
        pts.append((p, truth))
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


def costs(transcripts: Iterable[Transcript]) -> dict[str, Cost]:
    """Debates, model calls, tokens and USD cost per protocol, summed over ``Transcript.calls``."""
    return dict(tally(transcripts).costs)


def compute(
    transcripts: Iterable[Transcript],
    *,
    seed: int = 0,
    n_boot: int = DEFAULT_BOOTSTRAP,
    n_bins: int = 10,
) -> dict[str, Any]:
    """Every metric of the comparison, as a JSON-ready dict (written to comparison.json)."""
    return metrics_of(tally(transcripts), seed=seed, n_boot=n_boot, n_bins=n_bins)


JUDGE_ACCURACY = "judge accuracy"
HONEST_BEATS_DISHONEST = "honest beats dishonest"
LEAF_CLAIM_ACCURACY = "leaf-claim accuracy"
DIRECT_VIEWS = ("blind", "expert")


def figure_of(protocol: str) -> str:
    """The figure a protocol's row shows: P[R(honest) > R(dishonest)] for the recursive
    protocols, the judge's accuracy on the item's question for the others."""
    return HONEST_BEATS_DISHONEST if _recursive(protocol) else JUDGE_ACCURACY


def view_of(r: DebateRecord) -> str | None:
    """What splits a protocol into rows: the direct baseline's variant (``blind`` /
    ``expert``), else the judge's view of the passage (``hidden`` / ``shown``; None: none)."""
    if r.variant in DIRECT_VIEWS:
        return r.variant
    return r.passage


def row_of(t: Transcript) -> str:
    """The row a debate (or a person's judgment of it) belongs to (:func:`row_label`)."""
    r = record_of(t)
    return row_label(r.protocol, view_of(r))


def row_label(protocol: str, view: str | None) -> str:
    """``direct (blind)``, ``consultancy (passage hidden)``, ``two-sided``."""
    if view is None:
        return protocol
    if view in DIRECT_VIEWS:
        return f"{protocol} ({view})"
    return f"{protocol} (passage {view})"


def _row(
    protocol: str, view: str | None, scores: dict[str, float], *, seed: int, n_boot: int
) -> dict[str, Any]:
    vals = list(scores.values())
    ci, note = interval(vals, seed=seed, n_boot=n_boot)
    return {
        "label": row_label(protocol, view),
        "protocol": protocol,
        "view": view,
        "figure": figure_of(protocol),
        "items": len(vals),
        "value": float(np.mean(vals)) if vals else None,
        "ci95": ci,
        "interval_note": note,
        "bootstrap_seed": seed,
        "item_scores": scores,
    }


def protocol_rows(
    records: Sequence[DebateRecord], protocol: str, k: int, *, seed: int, n_boot: int
) -> list[dict[str, Any]]:
    """One row per view of the protocol's debates (seed ``seed + k + 1000·j`` for the j-th
    view in sorted order, no view first)."""
    mine = _of_protocol(records, protocol)
    views = sorted({view_of(r) for r in mine}, key=lambda v: (v is not None, v or ""))
    return [
        _row(
            protocol,
            view,
            item_scores([r for r in mine if view_of(r) == view], protocol),
            seed=seed + k + 1000 * j,
            n_boot=n_boot,
        )
        for j, view in enumerate(views)
    ]


def _entry(rows: list[dict[str, Any]], protocol: str) -> dict[str, Any]:
    """A protocol's headline: its row's figure where it has one row; None where its debates
    split into rows (a pooled figure over blind and expert, or hidden and shown, is neither)."""
    one = rows[0] if len(rows) == 1 else None
    value = one["value"] if one else None
    figure = figure_of(protocol)
    return {
        "figure": figure,
        "rows": [r["label"] for r in rows],
        "items": one["items"] if one else None,
        "value": value,
        "accuracy": value if figure == JUDGE_ACCURACY else None,
        "honest_beats_dishonest": value if figure == HONEST_BEATS_DISHONEST else None,
        "ci95": one["ci95"] if one else None,
        "interval_note": one["interval_note"] if one else "split into rows by view",
        "bootstrap_seed": one["bootstrap_seed"] if one else None,
        "item_scores": one["item_scores"] if one else None,
    }


def comparisons(
    rows: Sequence[dict[str, Any]], *, seed: int, n_boot: int
) -> list[dict[str, Any]]:
    """Every two judge-accuracy rows compared on the items both have (paired), in row order;
    the i-th comparison's bootstrap seed is ``seed + 300 + i``."""
    acc = [r for r in rows if r["figure"] == JUDGE_ACCURACY]
    out: list[dict[str, Any]] = []
    for a_i, a in enumerate(acc):
        for b in acc[a_i + 1 :]:
            d = paired_difference(
                a["item_scores"], b["item_scores"], seed=seed + 300 + len(out), n_boot=n_boot
            )
            if d["items"]:
                out.append({"a": a["label"], "b": b["label"], **d})
    return out


def metrics_of(
    run: RunTally, *, seed: int = 0, n_boot: int = DEFAULT_BOOTSTRAP, n_bins: int = 10
) -> dict[str, Any]:
    """:func:`compute` from a run's tally (its records and costs) rather than its transcripts."""
    records = run.records
    per: dict[str, Any] = {}
    all_rows: list[dict[str, Any]] = []
    present = {r.protocol for r in records}
    for k, proto in enumerate(in_order(present)):
        rows = protocol_rows(records, proto, k, seed=seed, n_boot=n_boot)
        all_rows += rows
        entry = _entry(rows, proto)
        entry["cost"] = asdict(run.costs.get(proto, Cost()))
        views = _by_passage(rows)
        if views:
            entry["by_passage"] = views
        if _recursive(proto):
            entry["pairs"] = _pair_stats(pairs(records, proto), seed=seed + 100 + k, n=n_boot)
            entry["payoff"] = payoffs_by_side(records, proto, seed=seed + 150 + k, n_boot=n_boot)
        per[proto] = entry
    cal = calibration(calibration_points(records), n_bins)
    out: dict[str, Any] = {
        "n_transcripts": len(records),
        "bootstrap": {"resamples": n_boot, "level": 0.95, "unit": "item", "seed": seed},
        "rows": all_rows,
        "comparisons": comparisons(all_rows, seed=seed, n_boot=n_boot),
        "protocols": per,
        "calibration": asdict(cal),
    }
    quotes = quote_shares(records)
    if quotes:
        out["quotes"] = quotes
    return out


PASSAGE_OF_VIEW = {"blind": "hidden", "expert": "shown", "hidden": "hidden", "shown": "shown"}


def _by_passage(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """A protocol's rows by the judge's view of the passage (``hidden`` / ``shown``; the
    direct baseline's blind row is its hidden one, expert its shown one): the same numbers
    as the rows, the value under its figure's name as in a protocol's entry (``accuracy``
    only for judge accuracy, ``honest_beats_dishonest`` for the recursive protocols)."""
    return {
        PASSAGE_OF_VIEW[r["view"]]: {
            "row": r["label"],
            "figure": r["figure"],
            "items": r["items"],
            "value": r["value"],
            "accuracy": r["value"] if r["figure"] == JUDGE_ACCURACY else None,
            "honest_beats_dishonest": (
                r["value"] if r["figure"] == HONEST_BEATS_DISHONEST else None
            ),
            "ci95": r["ci95"],
            "interval_note": r["interval_note"],
            "bootstrap_seed": r["bootstrap_seed"],
        }
        for r in rows
        if r["view"] in PASSAGE_OF_VIEW
    }


def quote_shares(records: Debates) -> list[dict[str, Any]]:
    """The share of verified quotes per protocol, side and model (speakers that quoted)."""
    tally: dict[tuple[str, str, str], list[int]] = defaultdict(lambda: [0, 0])
    for r in _records(records):
        for who, model, verified, n in r.quotes:
            row = tally[(r.protocol, who, model)]
            row[0] += verified
            row[1] += n
    order = {p: i for i, p in enumerate(in_order({k[0] for k in tally}))}
    return [
        {
            "protocol": proto,
            "side": who,
            "model": model,
            "quotes": n,
            "verified": v,
            "share_verified": v / n if n else None,
        }
        for (proto, who, model), (v, n) in sorted(
            tally.items(), key=lambda kv: (order[kv[0][0]], kv[0][1:])
        )
    ]


def _pair_stats(ps: list[Pair], *, seed: int, n: int) -> dict[str, Any]:
    """The pairs' honest beats dishonest and mean gap, each with a bootstrap interval over
    items (the pairs of an item drawn together: they share the item's difficulty)."""
    if not ps:
        return {"n": 0}
    wins = [p.score for p in ps]
    gaps = [p.honest - p.dishonest for p in ps]
    where = [p.item_id for p in ps]
    ci, note = interval(wins, seed=seed, n_boot=n, clusters=where)
    gci, gnote = interval(gaps, seed=seed + 1, n_boot=n, clusters=where)
    return {
        "n": len(ps),
        "items": len(set(where)),
        "discrimination": float(np.mean(wins)),
        "discrimination_ci95": ci,
        "discrimination_note": note,
        "ties": int(sum(p.honest == p.dishonest for p in ps)),
        "mean_gap": float(np.mean(gaps)),
        "mean_gap_ci95": gci,
        "mean_gap_note": gnote,
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
    transcripts: Iterable[Transcript],
    *,
    seed: int = 0,
    n_boot: int = DEFAULT_BOOTSTRAP,
    n_bins: int = 10,
) -> dict[str, Any]:
    """``summary.json``: status, failures by reason, retries, time and calls per debate, usage
    per role, and every metric of :func:`compute` — from transcripts alone, in one pass
    (``transcripts`` may be a lazy iterable: only a :class:`RunTally` is kept)."""
    return summary_of(tally(transcripts), seed=seed, n_boot=n_boot, n_bins=n_bins)


def summary_of(
    run: RunTally, *, seed: int = 0, n_boot: int = DEFAULT_BOOTSTRAP, n_bins: int = 10
) -> dict[str, Any]:
    """:func:`run_summary` from a run's tally."""
    status: dict[str, int] = defaultdict(int)
    by_protocol: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    kinds: dict[str, int] = defaultdict(int)
    for r in run.records:
        status[r.status] += 1
        by_protocol[r.protocol][r.status] += 1
        if r.status == "failed":
            kinds[failure_kind(r.failure)] += 1
    walls = run.walls
    n = len(run.records)
    return {
        "transcripts": n,
        "status": dict(status),
        "by_protocol": {p: dict(v) for p, v in sorted(by_protocol.items())},
        "failures": {
            "by_kind": dict(sorted(kinds.items())),
            "debates": [
                {"id": r.id, "reason": r.failure} for r in run.records if r.status == "failed"
            ],
        },
        "retries": run.retries,
        "debate_wall_s": {
            "mean": _mean(walls),
            "median": float(np.median(walls)) if walls else None,
            "max": max(walls) if walls else None,
        },
        "usage": {
            "calls": run.calls,
            "cached_calls": run.cached,
            "calls_per_debate": run.calls / n if n else None,
            "tokens_in": run.tokens_in,
            "tokens_out": run.tokens_out,
            "cost": run.cost,
            "by_role": {k: dict(v) for k, v in sorted(run.by_role.items())},
        },
        "leaf_claim_accuracy": {
            "figure": LEAF_CLAIM_ACCURACY,
            "unit": "leaf claim (a recursive debate's last round with a verdict and a truth)",
            "n": run.judge_n,
            "accuracy": run.judge_hits / run.judge_n if run.judge_n else None,
        },
        "decompositions": run.decompositions.summary(),
        "estimates": run.estimates.summary(),
        "beliefs": run.beliefs.summary(),
        "decided": run.decided.summary(),
        "metrics": metrics_of(run, seed=seed, n_boot=n_boot, n_bins=n_bins),
    }
