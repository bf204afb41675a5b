"""Exact means exact: eq. (13)'s ties are broken by the documented first-index rule, not by
floating-point rounding, and the values agree with a rational-arithmetic evaluation."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

from llmdebate.core.schemas import VARIANTS
from llmdebate.formal.evaluate import evaluate
from llmdebate.formal.problems import make_problem
from llmdebate.formal.strategies.provers import TIE_TOLERANCE, eq13_direction, first_argmax


def rational_honest_vs_adversarial(depth: int, width: int, instances: int) -> Fraction:
    """Figure 2, honest prover vs the adversarial estimator (b = |g - 3/10|), in Fractions.

    Written from docs/protocol.md alone: E[R_A] averaged over the instances, first index on
    ties of |b_i - g(y_i)|, s_k = sign(g - p_k) outside |g - p_k| <= ε.
    """
    prob = make_problem("interval", depth, width, instances, 0)
    eps, rho, bias = Fraction(1, 5), Fraction(1, 2), Fraction(3, 10)
    r = eps * (1 - rho) / 4
    q = width

    def sign(g: int, p: Fraction) -> int:
        return 1 if g - p > eps else (-1 if g - p < -eps else 0)

    def value(inst: int, k: int, node: int, p: Fraction) -> Fraction:
        g = int(prob.truth[k][inst, node])
        if k == 0:
            return sign(g, p) * (g - p)
        kids = [int(prob.truth[k - 1][inst, node * q + c]) for c in range(q)]
        b = [abs(x - bias) for x in kids]
        table = prob.rule(k).table
        em = Fraction(0)
        for t, z in enumerate(itertools.product([0, 1], repeat=q)):
            pz = Fraction(1)
            for bi, zi in zip(b, z, strict=True):
                pz *= bi if zi else 1 - bi
            em += pz * int(table[t])
        gaps = [abs(b[i] - kids[i]) for i in range(q)]
        j = gaps.index(max(gaps))
        return r**k * sign(g, p) * (em - p) + value(inst, k - 1, node * q + j, b[j])

    total = Fraction(0)
    for i in range(prob.n):
        a = int(prob.top_truth()[i])
        p = abs(a - bias)
        total += r ** (depth + 1) * (p if a == 1 else 1 - p)
        if abs(p - a) > eps:
            total += value(i, depth, 0, p)
    return total / prob.n


def _payoff(**kw: object) -> float:
    args: dict[str, object] = {
        "protocol": "prover-estimator",
        "epsilon": 0.2,
        "rho": 0.5,
        "seed": 0,
        "instances": 50,
    }
    args.update(kw)
    return float(evaluate(**args)["expected_payoff"])  # type: ignore[arg-type]


@pytest.mark.parametrize("variant", VARIANTS)
def test_interval_d2_q2_honest_vs_adversarial_is_exact_in_every_variant(variant: str) -> None:
    got = _payoff(
        problem="interval",
        prover="honest",
        estimator="adversarial",
        depth=2,
        width=2,
        variant=variant,
    )
    assert got == pytest.approx(0.2985671875, abs=1e-12)  # float rounding gave 0.2948171875


@pytest.mark.parametrize("width", [2, 3])
def test_interval_matches_rational_arithmetic(width: int) -> None:
    exact = rational_honest_vs_adversarial(2, width, 50)
    got = _payoff(
        problem="interval", prover="honest", estimator="adversarial", depth=2, width=width
    )
    assert got == pytest.approx(float(exact), abs=1e-13)
    if width == 3:
        assert exact == Fraction(2955165625, 10**10)  # rounding at ties gave 0.2911815625


def test_majority_dishonest_vs_calibrated_ignorant_ties_at_one_half() -> None:
    got = _payoff(
        problem="majority",
        prover="dishonest",
        estimator="calibrated-ignorant",
        depth=1,
        width=5,
        instances=20,
    )
    assert got == pytest.approx(0.45488, abs=5e-6)  # rounding at ties gave 0.46343


def test_reproduction_row_commit_honest_vs_calibrated_ignorant() -> None:
    from llmdebate.formal.reproduce import completeness_rows

    rows = completeness_rows(0.2, 0.5, 2, 7, 40, 0, 0.05, variants=("commit",))
    row = next(r for r in rows if r["check"].startswith("honest vs calibrated-ignorant"))
    assert row["value"] == pytest.approx(0.5000078125, abs=1e-12)  # rounding gave 0.4750280


def test_first_argmax_takes_the_first_index_within_the_tolerance() -> None:
    gaps = np.array([[abs(0.7 - 1), abs(0.3 - 0), 0.1], [0.1, 0.3, 0.3 + 1e-6]])
    assert gaps[0, 0] > gaps[0, 1]  # the floating-point values differ ...
    assert first_argmax(gaps).tolist() == [0, 2]  # ... the rule does not see it
    assert first_argmax(np.array([[0.2, 0.2 + TIE_TOLERANCE / 2]])).tolist() == [0]


def test_direction_dead_zone_compares_with_tolerance() -> None:
    g = np.array([1, 1, 0, 0, 1])
    p = np.array([0.8, 0.7, 0.2, 0.3, 1 - 0.2 - 1e-6])
    assert eq13_direction(g, p, 0.2).tolist() == [0, 1, 0, -1, 1]
