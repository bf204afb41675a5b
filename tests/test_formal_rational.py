"""The rational evaluation agrees with an independent one written from docs/protocol.md, and
with the engine where no decision sits within the engine's tolerance of its edge."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from llmdebate.core.schemas import VARIANTS
from llmdebate.formal.exact import exact_prover_estimator
from llmdebate.formal.game import Game
from llmdebate.formal.problems import make_problem
from llmdebate.formal.rational import decimal, rational_payoffs
from llmdebate.formal.strategies import OracleJudge, make_estimator, make_prover
from llmdebate.formal.strategy_files import TableEstimator


def _game(problem: str, prover: str, estimator: str, variant: str, **kw: int) -> Game:
    prob = make_problem(problem, kw.get("depth", 2), kw.get("width", 3), 50, 0)
    return Game(
        prob,
        make_prover(prover, prob, 0.2),
        make_estimator(estimator, prob),
        OracleJudge(prob),
        0.2,
        0.5,
        variant,
    )


def test_honest_vs_adversarial_equals_the_hand_written_fraction() -> None:
    rat = rational_payoffs(_game("interval", "honest", "adversarial", "figure2"))
    assert rat.mean() == Fraction(2955165625, 10**10)  # tests/test_formal_ties.py's value
    assert rat.ties > 0  # |0.7 - 1| = |0.3 - 0| is an exact tie here


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize(
    ("prover", "estimator"),
    [("honest", "omniscient"), ("dishonest", "adversarial"), ("last-index", "adversarial")],
)
def test_rational_and_engine_agree(variant: str, prover: str, estimator: str) -> None:
    game = _game("interval", prover, estimator, variant, depth=2, width=2)
    engine = exact_prover_estimator(game).payoff
    rat = rational_payoffs(game).payoff
    assert np.allclose(engine, [float(v) for v in rat], rtol=0, atol=1e-13)


def test_decimal_reads_a_float_as_written() -> None:
    assert decimal(0.2) == Fraction(1, 5) and decimal(0.7) + decimal(0.3) == 1
    assert decimal(0.1 + 0.2) != Fraction(3, 10)  # 0.30000000000000004 is not 3/10


def test_a_table_probability_one_ulp_outside_the_dead_zone_makes_a_points() -> None:
    """One instance, d = 1: B hands on 0.8 - 1e-9 to a true child. The engine's tolerance
    reads it as inside the dead zone (A silent at the leaf), exact arithmetic as outside."""
    prob = make_problem("majority", 1, 3, 1, 2)
    est = TableEstimator(3, np.array([0.5]))
    g = prob.truth[0][0].astype(np.float64)
    marg = np.where(g == 1, 0.8 - 1e-9, 0.2 + 1e-9)
    bits = (np.arange(8)[:, None] >> np.array([2, 1, 0])[None, :]) & 1
    joint = np.prod(np.where(bits == 1, marg[None, :], 1 - marg[None, :]), axis=1)
    est.joints[(0, 1, 0, int(np.float64(0.5).view(np.int64)))] = joint
    game = Game(prob, make_prover("honest", prob, 0.2), est, OracleJudge(prob), 0.2, 0.5)
    engine = exact_prover_estimator(game).payoff[0]
    rat = rational_payoffs(game)
    assert rat.clearance is not None and 0 < rat.clearance < Fraction(1, 10**8)
    assert float(rat.payoff[0]) - engine > 0.1  # the leaf pays A about 0.2 exactly
