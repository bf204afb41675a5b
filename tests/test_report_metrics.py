"""Metrics of the comparison on hand-made transcripts, against hand-computed values."""

from __future__ import annotations

import math

import pytest

from llmdebate.core.schemas import (
    Claim,
    DebateConfig,
    Estimate,
    InitRecord,
    ModelCallRecord,
    Transcript,
)
from llmdebate.report import metrics
from llmdebate.report.tables import comparison_markdown

CFG = DebateConfig(epsilon=0.2, rho=0.5, depth=1, width=2)  # r = 0.025, r^(d+1) = 0.000625
UNIT = 0.025**2


def decided(
    protocol: str, item: str, variant: str, decision: str, gold: str = "yes", calls: int = 0
) -> Transcript:
    return Transcript(
        id=f"{protocol}/{item}/{variant}",
        protocol=protocol,
        config=CFG,
        seed=0,
        meta={"item_id": item, "variant": variant, "decision": decision, "gold": gold},
        calls=[
            ModelCallRecord(role="judge", model="m", tokens_in=10, tokens_out=2, cost=0.5)
            for _ in range(calls)
        ],
    )


def pe(
    item: str, variant: str, total: float, p: float = 0.5, truth: int = 1, text: str = "c"
) -> Transcript:
    claim = Claim(text=f"{text}-{variant}", truth=truth)
    init = InitRecord(
        claim=claim,
        answer=1,
        estimate=Estimate(value=p, method="oracle"),
        u=0.0,
        zhat=1,
        reward=0.0,
        expected_reward=0.0,
    )
    return Transcript(
        id=f"pe/{item}/{variant}",
        protocol="prover-estimator",
        config=CFG,
        seed=0,
        init=init,
        total=total,
        meta={"item_id": item, "variant": variant},
    )


def naive(item: str, variant: str, total: float) -> Transcript:
    return Transcript(
        id=f"n/{item}/{variant}",
        protocol="naive-recursive",
        config=CFG,
        seed=0,
        total=total,
        prover_won=total > 0,
        meta={"item_id": item, "variant": variant},
    )


def test_accuracy_averages_debates_within_an_item_then_items() -> None:
    ts = [
        decided("two-sided", "a", "order-0", "yes"),
        decided("two-sided", "a", "order-1", "no"),  # item a: 1/2
        decided("two-sided", "b", "order-0", "yes"),
        decided("two-sided", "b", "order-1", "Yes"),  # item b: 1 (case-insensitive)
    ]
    assert metrics.item_scores(ts, "two-sided") == {"a": 0.5, "b": 1.0}
    m = metrics.compute(ts, seed=3, n_boot=500)
    assert m["protocols"]["two-sided"]["accuracy"] == pytest.approx(0.75)


def test_failed_and_undecided_debates_do_not_count() -> None:
    bad = decided("direct", "a", "direct", "no").model_copy(update={"status": "failed"})
    ok = decided("direct", "b", "direct", "yes")
    assert metrics.item_scores([bad, ok], "direct") == {"b": 1.0}


def test_pairs_discrimination_and_normalized_gap_by_hand() -> None:
    ts = [
        pe("a", "honest", 1.0 * UNIT),
        pe("a", "dishonest", -0.5 * UNIT),  # win, gap 1.5
        pe("b", "honest", 0.0),
        pe("b", "dishonest", 0.0),  # tie, gap 0
        pe("c", "honest", -1.0 * UNIT),
        pe("c", "dishonest", 1.0 * UNIT),  # loss, gap -2
        pe("d", "honest", 2.0 * UNIT),  # no partner: not a pair
    ]
    ps = metrics.pairs(ts, "prover-estimator")
    assert [p.item_id for p in ps] == ["a", "b", "c"]
    st = metrics.compute(ts, n_boot=200)["protocols"]["prover-estimator"]
    assert st["pairs"]["n"] == 3
    assert st["pairs"]["discrimination"] == pytest.approx(1 / 3)  # strict >
    assert st["pairs"]["ties"] == 1
    assert st["pairs"]["mean_gap"] == pytest.approx((1.5 + 0 - 2) / 3)
    # one figure, one definition: the row is P[R(honest) > R(dishonest)], not judge accuracy
    assert st["accuracy"] is None and st["figure"] == "honest beats dishonest"
    assert st["honest_beats_dishonest"] == st["pairs"]["discrimination"]


def test_naive_payoffs_are_not_rescaled() -> None:
    ts = [
        naive("a", "honest", 1.0),
        naive("a", "dishonest", -1.0),
        naive("b", "honest", 1.0),
        naive("b", "dishonest", 1.0),
    ]
    st = metrics.compute(ts, n_boot=100)["protocols"]["naive-recursive"]["pairs"]
    assert st["mean_gap"] == pytest.approx(1.0)
    assert st["discrimination"] == pytest.approx(0.5)


def test_bootstrap_is_seeded_and_brackets_the_mean() -> None:
    vals = [1, 0, 1, 1, 0, 1, 0, 1, 1, 1]
    a = metrics.bootstrap_ci(vals, seed=7, n_boot=1000)
    assert a == metrics.bootstrap_ci(vals, seed=7, n_boot=1000)
    cont = [0.13, 0.71, 0.42, 0.99, 0.05, 0.66, 0.3, 0.58, 0.87, 0.21]
    assert metrics.bootstrap_ci(cont, seed=7, n_boot=300) != metrics.bootstrap_ci(
        cont, seed=8, n_boot=300
    )
    assert a is not None and a[0] < 0.7 < a[1]
    assert metrics.bootstrap_ci([1, 1, 1], seed=0) == (1.0, 1.0)
    assert metrics.bootstrap_ci([], seed=0) is None


def test_calibration_bins_brier_and_ece_by_hand() -> None:
    pts = [(0.05, 0), (0.15, 0), (0.95, 1), (0.85, 0)]
    cal = metrics.calibration(pts, n_bins=2)
    low, high = cal.bins
    assert (low.n, low.mean_p, low.frac_true) == (2, pytest.approx(0.1), 0.0)
    assert (high.n, high.mean_p, high.frac_true) == (2, pytest.approx(0.9), 0.5)
    assert cal.brier == pytest.approx((0.05**2 + 0.15**2 + 0.05**2 + 0.85**2) / 4)
    assert cal.ece == pytest.approx(0.5 * 0.1 + 0.5 * 0.4)
    assert cal.accuracy == pytest.approx(0.75)
    assert metrics.calibration([(1.0, 1)], n_bins=10).bins[-1].n == 1  # 1.0 in the last bin


def test_calibration_points_once_per_item_and_claim() -> None:
    ts = [
        pe("a", "honest", 0, p=0.8, truth=1),
        pe("a", "honest", 0, p=0.8, truth=1),
        pe("a", "dishonest", 0, p=0.3, truth=0),
    ]
    assert metrics.calibration_points(ts) == [(0.8, 1), (0.3, 0)]


def test_costs_per_protocol_and_markdown() -> None:
    ts = [
        decided("direct", "a", "direct", "yes", calls=2),
        decided("direct", "b", "direct", "no", calls=1),
    ]
    c = metrics.costs(ts)["direct"]
    assert (c.debates, c.calls, c.tokens_in, c.tokens_out) == (2, 3, 30, 6)
    assert math.isclose(c.cost, 1.5)
    md = comparison_markdown(metrics.compute(ts, n_boot=100))
    assert "| direct | judge accuracy | 2 | 0.500 | none (n < 10) |" in md
    assert "| direct | 2 | 0 | 3 | 30 | 6 | 1.5000 |" in md
