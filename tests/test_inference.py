"""Intervals a reviewer accepts: none where n is too small, clustered by item and judge,
paired on shared items, and a mixed-effects logistic regression from statsmodels."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llmdebate.report.inference import (
    MIN_ITEMS,
    clustered_interval,
    interval,
    mixed_logit,
    paired_difference,
)


def test_a_two_item_run_gets_no_zero_width_interval_but_the_reason() -> None:
    ci, note = interval([0.5, 0.5], seed=0, n_boot=200)
    assert ci is None and note == "n = 2 items: too few for an interval (at least 10)"


def test_identical_scores_get_no_empty_interval() -> None:
    ci, note = interval([1.0] * 30, seed=0, n_boot=200)
    assert ci is None and note is not None and "every one of the 30" in note


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from([0.0, 0.5, 1.0]), min_size=MIN_ITEMS, max_size=40))
def test_an_interval_is_seeded_and_holds_the_mean_of_a_resample(xs: list[float]) -> None:
    ci, note = interval(xs, seed=3, n_boot=200)
    assert (ci, note) == interval(xs, seed=3, n_boot=200)
    if ci is not None:
        assert min(xs) <= ci[0] <= ci[1] <= max(xs)


def test_judgments_clustered_by_judge_get_a_wider_interval_than_independent_ones() -> None:
    # four judges, two always right and two always wrong, on 20 items: the judgments are
    # not independent, and resampling judges shows it
    items = [f"i{k}" for k in range(20) for _ in range(4)]
    judges = [f"j{j}" for _ in range(20) for j in range(4)]
    y = [1.0 if j in ("j0", "j1") else 0.0 for j in judges]
    naive, _ = interval(y, seed=0, n_boot=500)
    clustered, _ = clustered_interval(y, items, judges, seed=0, n_boot=500)
    assert naive is not None and clustered is not None
    assert clustered[1] - clustered[0] > 3 * (naive[1] - naive[0])


def test_clustered_interval_needs_ten_items() -> None:
    ci, note = clustered_interval([1.0, 0.0] * 9, ["a", "b", "c"] * 6, ["x", "y"] * 9,
                                  seed=0, n_boot=100)
    assert ci is None and note is not None and "3 items" in note


def test_a_paired_comparison_uses_only_shared_items() -> None:
    a = {f"i{k}": 1.0 for k in range(12)}
    b = {f"i{k}": float(k % 2) for k in range(10)} | {"other": 0.0}
    d = paired_difference(a, b, seed=0, n_boot=300)
    assert d["items"] == 10 and d["difference"] == 0.5
    assert d["ci95"] is not None and d["ci95"][0] <= 0.5 <= d["ci95"][1]


def test_the_mixed_effects_regression_finds_a_row_effect_against_judge_noise() -> None:
    rng = np.random.default_rng(1)
    rows, judges, items, y = [], [], [], []
    skill = {f"j{j}": rng.normal(0, 0.5) for j in range(6)}
    for k in range(300):
        # every judge judges both rows (a row judged by some judges only is confounded with
        # them, and its interval is rightly as wide as three judges a side allow)
        row, judge, item = ("debate" if k % 2 else "consultancy"), f"j{k // 2 % 6}", f"i{k // 3}"
        logit = (1.5 if row == "debate" else 0.0) + skill[judge]
        rows.append(row)
        judges.append(judge)
        items.append(item)
        y.append(float(rng.random() < 1 / (1 + np.exp(-logit))))
    fit = mixed_logit(y, rows, judges, items)
    assert fit == mixed_logit(y, rows, judges, items)  # deterministic: the same to the bit
    assert fit is not None and fit["reference"] == "consultancy"
    (effect,) = fit["effects"]
    assert effect["row"] == "debate" and effect["ci95"][0] > 0.5
    assert effect["ci95"][0] < effect["log_odds"] < effect["ci95"][1]
    assert set(fit["random_effect_sd"]) == {"judge", "item"} and fit["dropped"] == []
    assert fit["model"] == "logit(P[correct]) ~ row + (1 | judge) + (1 | item)"
    assert mixed_logit([1.0, 0.0], ["a", "a"], ["j", "k"], ["i", "i"]) is None


def test_the_mixed_effects_regression_is_not_fitted_when_every_judgment_agrees() -> None:
    rows = ["a", "b"] * 4
    judges = ["j0", "j1", "j2", "j3"] * 2
    items = ["i0", "i0", "i1", "i1"] * 2
    assert mixed_logit([0.0] * 8, rows, judges, items) is None
    assert mixed_logit([1.0] * 8, rows, judges, items) is None


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from([0.0, 0.5, 1.0]), min_size=MIN_ITEMS, max_size=40))
def test_one_value_per_item_clustered_is_the_plain_bootstrap_to_the_bit(xs: list[float]) -> None:
    assert interval(xs, seed=4, n_boot=100, clusters=[f"i{k}" for k in range(len(xs))]) == (
        interval(xs, seed=4, n_boot=100))


def test_pairs_of_one_item_are_one_unit() -> None:
    # 12 items, three pairs each, every pair of an item scoring alike: 36 pairs are not 36
    # independent units, and the interval over items is wider than the one over pairs
    scores = [float(k % 2) for k in range(12) for _ in range(3)]
    items = [f"i{k}" for k in range(12) for _ in range(3)]
    by_pair, _ = interval(scores, seed=0, n_boot=500, unit="pairs")
    by_item, note = interval(scores, seed=0, n_boot=500, clusters=items)
    assert by_pair is not None and by_item is not None and note is None
    assert by_item[1] - by_item[0] > 1.3 * (by_pair[1] - by_pair[0])
    few, why = interval(scores[:27], seed=0, n_boot=50, clusters=items[:27])
    assert few is None and why == "n = 9 items: too few for an interval (at least 10)"
