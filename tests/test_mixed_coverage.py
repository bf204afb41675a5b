"""The mixed-effects interval holds its level: in simulated crossed judge × item studies of
the field's size with a known row effect, its 95% interval covers the truth at least 93% of
the time.

How many datasets. A test of a coverage of ≥ 0.93 over N datasets is a binomial draw. With
N = 300 it passes when at least 279 intervals cover. A method whose true coverage is 0.95
covers X ~ Bin(300, 0.95) times: mean 285, sd 3.77, so it fails (X ≤ 278) with probability
about Φ((278.5 − 285)/3.77) = Φ(−1.72) ≈ 0.04. The variational interval this replaced
covers about 0.84 (benchmarks/README.md): X ~ Bin(300, 0.84), mean 252, sd 6.35, and it
passes (X ≥ 279) with probability about Φ(−4.2) ≈ 1e-5. The draws are seeded, so the test
gives the same answer every time.

The design (each of 8 judges judges each of 30 items once, the row alternating so that
every judge and every item has both rows; 240 judgments; intercept 0.3, row effect
β = 0.8, judge sd 0.5, item sd 1.0) is that of ``benchmarks/bench_mixed_coverage.py``,
which also measures the old interval on the same datasets.
"""

from __future__ import annotations

import numpy as np
import pytest

from llmdebate.report.inference import mixed_logit

JUDGES, ITEMS, BETA, INTERCEPT, SD_JUDGE, SD_ITEM = 8, 30, 0.8, 0.3, 0.5, 1.0
DATASETS, NEEDED = 300, 279  # coverage ≥ 0.93 (see the module doc)


def simulate(
    rng: np.random.Generator, judges: int = JUDGES, items: int = ITEMS
) -> tuple[np.ndarray, list[str], list[str], list[str]]:
    """One study: (correct, rows, judges, items), every judge on every item once."""
    j = np.repeat(np.arange(judges), items)
    i = np.tile(np.arange(items), judges)
    row = (j + i) % 2
    eta = (INTERCEPT + BETA * row + rng.normal(0.0, SD_JUDGE, judges)[j]
           + rng.normal(0.0, SD_ITEM, items)[i])
    y = (rng.random(len(eta)) < 1.0 / (1.0 + np.exp(-eta))).astype(float)
    return y, [("a", "b")[r] for r in row], [f"j{k}" for k in j], [f"i{k}" for k in i]


def test_the_row_effects_interval_covers_the_truth_at_its_level() -> None:
    rng = np.random.default_rng(2024)
    covered = 0
    for _ in range(DATASETS):
        fit = mixed_logit(*simulate(rng))
        assert fit is not None
        (effect,) = fit["effects"]
        lo, hi = effect["ci95"]
        covered += lo <= BETA <= hi
    assert covered >= NEEDED, f"coverage {covered / DATASETS:.3f} of {DATASETS} datasets"


def test_fewer_than_ten_items_give_no_interval_and_one_judge_drops_its_effect() -> None:
    rng = np.random.default_rng(5)
    y, rows, judges, items = simulate(rng, judges=4, items=6)
    fit = mixed_logit(y, rows, judges, items)
    assert fit is not None and fit["items"] == 6
    (effect,) = fit["effects"]
    assert effect["ci95"] is None and effect["log_odds"] is not None
    assert effect["note"] == "n = 6 items: too few for an interval (at least 10)"
    y, rows, judges, items = simulate(rng, judges=1, items=40)
    alone = mixed_logit(y, rows, judges, items)
    assert alone is not None and alone["model"] == "logit(P[correct]) ~ row + (1 | item)"
    assert alone["dropped"] == ["the judge random effect: every judgment is of one judge"]
    assert set(alone["random_effect_sd"]) == {"item"}


def test_a_row_judged_by_separate_judges_gets_t_degrees_of_freedom() -> None:
    """Each judge in one row only: the contrast rests on the judges (8 judges, 2 rows: 6
    degrees of freedom, Student's t quantile 2.447 instead of 1.96)."""
    rng = np.random.default_rng(3)
    y, _, judges, items = simulate(rng)
    rows = ["a" if int(j[1:]) % 2 else "b" for j in judges]
    fit = mixed_logit(y, rows, judges, items)
    assert fit is not None
    (effect,) = fit["effects"]
    assert effect["df"] == 6
    half = (effect["ci95"][1] - effect["ci95"][0]) / 2
    assert half == pytest.approx(2.4469118511449692 * effect["se"])
    within = mixed_logit(*simulate(rng))
    assert within is not None and within["effects"][0]["df"] is None
