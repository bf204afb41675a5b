"""The shipped attack witnesses are breaks in exact arithmetic, with no tolerance; a strategy
that breaks the bound only inside the engine's 1e-9 tolerance is not reported as a break; the
search reaches the hand-built correlated estimator, and the analytic limit of its margin going
to 0, at κ = 5 and 7, d = 1 under ``marginal`` (and ``commit-marginal``)."""

from __future__ import annotations

import json
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import pytest

from llmdebate.formal import attack_estimator
from llmdebate.formal.attack import AttackSpec, build_problem, run_attack
from llmdebate.formal.attack_estimator import SearchBudget
from llmdebate.formal.witness_files import HERE, WITNESSES, check_witness

SHIPPED = ["completeness-marginal-d1-k5", "completeness-marginal-d2-k5"]


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_witness_breaks_lemma_a5_in_fractions(name: str) -> None:
    path = HERE / f"{name}.json"
    got = check_witness(path)
    assert all(isinstance(v, Fraction) for v in got["normalized"])
    assert got["bound"] == Fraction(4, 5)
    assert got["breaks"] and got["worst"] < got["bound"] - 5  # far below, in exact arithmetic
    # every dead-zone decision of A is decided by more than float error or the tolerance
    assert got["clearance"] is not None and got["clearance"] > Fraction(1, 10**7)
    meta = json.loads(path.read_text(encoding="utf-8"))["meta"]["exact"]
    assert float(got["worst"]) == pytest.approx(meta["min_instance_normalized"], abs=1e-9)
    assert meta["breaks"] is True


def test_a_break_inside_the_tolerance_is_not_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no margin and no guard band the search's tables hand on 0.8 - 1e-9 (as the old
    witnesses did): the engine reads that as inside A's dead zone and finds a break; exactly
    it is outside, A points, and the payoff is far above the bound."""
    monkeypatch.setattr(attack_estimator, "GUARD", 0.0)
    spec = replace(WITNESSES["completeness-marginal-d1-k5"], budget=SearchBudget(margins=(0.0,)))
    res = run_attack(spec, tmp_path / "edge.json")
    assert res["min_instance_normalized"] < 0.8 - 1  # the engine, with its tolerance
    assert res["exact"]["breaks"] is False and res["below_bound"] is False
    assert res["exact"]["min_instance_normalized"] > 100
    assert res["exact"]["dead_zone_clearance"] < 1e-8


def _hand_built(spec: AttackSpec, m: Fraction) -> list[Fraction]:
    """Normalised E[R_A] per instance of a hand-built B (d = 1, majority, honest prover),
    in fractions: p_d outside A's stop zone by m; the children that agree with the answer
    flip together (a two-count law, the least favourable one) at rate ε - m, the others
    stay at their truth, so every handed-on marginal is inside the dead zone by m and the
    leaf pays 0, while E[M_D] falls far below p_d. m = 0 is the analytic limit (no B
    reaches it: A's decisions would sit on their edges)."""
    prob = build_problem(spec)
    q, eps = spec.width, Fraction(1, 5)
    r = eps * (1 - Fraction(1, 2)) / 4
    out = []
    for i in range(prob.n):
        a = int(prob.truth[1][i, 0])
        n_a = sum(1 for x in prob.truth[0][i] if int(x) == a)
        mean = (eps - m) * n_a
        holds = min(
            (f2 - mean) / (f2 - f1) * (n_a - f1 > q // 2)
            + (1 - (f2 - mean) / (f2 - f1)) * (n_a - f2 > q // 2)
            for f1 in range(n_a + 1)
            for f2 in range(f1 + 1, n_a + 1)
            if f1 <= mean <= f2
        )
        p = 1 - eps - m  # in the answer's frame
        out.append((r**2 * p + r * (holds - p)) / r**2)
    return out


def _mean(xs: list[Fraction]) -> Fraction:
    return sum(xs, Fraction(0)) / len(xs)


def test_the_shipped_d1_witnesses_reach_the_analytic_limit() -> None:
    """The margin is searched, not fixed: κ = 5 within 0.02 of 0.8 + (2/3 - 0.8)/r =
    -4.533 (the limit of the hand-built B as its margin goes to 0), κ = 7 at or below -6.0
    mean / -7.1 worst, in fractions, with A's decisions at least 1e-7 from their edges."""
    for name, mean_at, worst_at in (
        ("completeness-marginal-d1-k5", -4.5, -4.5),
        ("completeness-marginal-d1-k7", -6.0, -7.1),
    ):
        got = check_witness(HERE / f"{name}.json")
        limit = _hand_built(WITNESSES[name], Fraction(0))
        assert got["mean"] <= mean_at and got["worst"] <= worst_at
        assert got["mean"] - _mean(limit) < Fraction(2, 100)
        assert got["worst"] >= min(limit)  # nothing beats the limit
        assert got["clearance"] >= Fraction(1, 10**7)
    k5 = _hand_built(WITNESSES["completeness-marginal-d1-k5"], Fraction(0))
    assert float(_mean(k5)) == pytest.approx(0.8 + (2 / 3 - 0.8) / 0.025)


def test_search_reaches_the_hand_built_worst_case_at_kappa_7(tmp_path: Path) -> None:
    spec = WITNESSES["completeness-marginal-d1-k7"]
    hand = _hand_built(spec, Fraction(1, 10**4))  # the hand-built B 100x the guard band inside
    res = run_attack(spec, tmp_path / "k7.json")
    ex = res["exact"]
    assert ex["breaks"] is True and ex["dead_zone_clearance"] >= 1e-7
    assert ex["normalized_payoff"] <= float(_mean(hand)) <= -6.01
    assert ex["min_instance_normalized"] <= float(min(hand)) <= -7.18


def test_commit_marginal_at_kappa_5_reaches_the_limit_too(tmp_path: Path) -> None:
    spec = replace(WITNESSES["completeness-marginal-d1-k5"], variant="commit-marginal")
    ex = run_attack(spec, tmp_path / "cm.json")["exact"]
    assert ex["breaks"] is True and ex["dead_zone_clearance"] >= 1e-7
    assert ex["normalized_payoff"] <= -4.5 and ex["min_instance_normalized"] <= -4.5


def test_the_search_keeps_off_the_edges_so_floats_and_fractions_agree(tmp_path: Path) -> None:
    """Figure 2, q = 3, every instance: the search's shifted products once handed on 0.2 as
    a quotient that rounds to 0.2 + 4e-17, a break for the engine and none in fractions.
    With the guard band the tables it keeps mean the same thing in both."""
    spec = AttackSpec(
        problem="majority",
        variant="figure2",
        depth=1,
        width=3,
        noise=0.05,
        stable_only=False,
        budget=SearchBudget(evaluations=256),
    )
    res = run_attack(spec, tmp_path / "q3.json")
    ex = res["exact"]
    assert ex["normalized_payoff"] == pytest.approx(res["normalized_payoff"], abs=1e-9)
    assert ex["min_instance_normalized"] == pytest.approx(res["min_instance_normalized"], abs=1e-9)
    assert ex["breaks"] is True and ex["dead_zone_clearance"] >= 1e-7
