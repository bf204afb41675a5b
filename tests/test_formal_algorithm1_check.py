"""Algorithm 1's convergence, checked outside its loop: every test's advantage recomputed
from the finished estimator played in the exact engine."""

from __future__ import annotations

import pytest

from llmdebate.formal.algorithm1_check import check_algorithm1, largest_advantage
from llmdebate.formal.game import Game
from llmdebate.formal.ogd import algorithm1_estimator
from llmdebate.formal.problems import make_problem
from llmdebate.formal.strategies import OracleJudge, make_prover

EPS, RHO, DELTA = 0.45, 0.1, 2e-3


def _built(variant: str, max_steps: int = 200_000) -> tuple[Game, float, bool]:
    prob = make_problem("interval", 1, 2, 16, 0)
    pol = make_prover("dishonest", prob, EPS)
    est, rep = algorithm1_estimator(
        prob, pol, EPS, RHO, delta=DELTA, variant=variant, max_steps=max_steps
    )
    return (
        Game(prob, pol, est, OracleJudge(prob), EPS, RHO, variant),
        rep.delta_reached,
        (rep.converged),
    )


@pytest.mark.parametrize("variant", ["figure2", "marginal", "commit-marginal"])
def test_every_test_is_below_delta_when_recomputed(variant: str) -> None:
    game, reported, converged = _built(variant)
    found = check_algorithm1(game)
    assert converged
    assert {t.level for t in found} == {"init", "round 1"}
    assert len(found) == 3 + (2 + 2 + 1)  # init: 3; round 1: reward, M_D, z_1, z_2, eq. (7)
    worst, _ = largest_advantage(game)
    assert worst < DELTA
    assert worst == pytest.approx(reported, rel=1e-9)  # the loop's own figure, reproduced


def test_the_recheck_sees_an_estimator_that_did_not_converge() -> None:
    game, reported, converged = _built("figure2", max_steps=20)
    worst, _ = largest_advantage(game)
    assert not converged and worst >= DELTA
    assert worst == pytest.approx(reported, rel=1e-9)


def test_the_recheck_sees_a_moved_estimator() -> None:
    game, _, _ = _built("figure2")
    est = game.estimator
    est.p_top = est.p_top + 0.01  # type: ignore[attr-defined]
    worst, _ = largest_advantage(game)
    assert worst > 5 * DELTA
