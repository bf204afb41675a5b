"""Debaters that learn from the protocol's reward in the formal engine (tiny, seeded)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llmdebate.formal.exact import exact_naive
from llmdebate.formal.game import NaiveGame
from llmdebate.formal.learning.es import ESConfig, Learner
from llmdebate.formal.learning.estimator import LearnedEstimator, estimator_dim
from llmdebate.formal.learning.experiments import TINY, arms, majority
from llmdebate.formal.learning.naive_prover import LearnedNaiveProver, exact_learned_naive
from llmdebate.formal.learning.naive_train import NaiveRun, train_naive
from llmdebate.formal.learning.prover import ANSWER, LEAF, PROVER_DIM, LearnedProver
from llmdebate.formal.learning.replicas import per_member, replicate
from llmdebate.formal.learning.stackelberg import Run, Trainer, train
from llmdebate.formal.problems.interval import make_interval
from llmdebate.formal.problems.problem import TreeProblem
from llmdebate.formal.strategies import OracleJudge, make_estimator
from llmdebate.formal.strategies.naive import EstimatorChallenger, naive_dishonest

ES = ESConfig(pairs=3)


@pytest.fixture(scope="module")
def prob() -> TreeProblem:
    return majority(TINY)


def test_a_learned_prover_beats_its_init_and_learns_the_honest_structure(prob: TreeProblem) -> None:
    run = Run(prob, prover="learned", estimator="calibrated-ignorant", outer=12, es=ES)
    curve = train(run)
    assert curve.points[-1].payoff > curve.points[0].payoff + 1.0
    assert curve.points[-1].accuracy > curve.points[0].accuracy
    theta = curve.prover_params
    assert theta[ANSWER][1] > 0  # answers the truth
    assert theta[LEAF][1] > 0  # at the leaf, points +1 when the truth is above p_0


def test_a_learned_estimator_lowers_the_honest_provers_payoff(prob: TreeProblem) -> None:
    curve = train(Run(prob, prover="honest", outer=4, inner=2, es=ES))
    assert curve.points[-1].payoff < curve.points[0].payoff - 10.0
    assert curve.points[-1].brier < curve.points[0].brier
    assert curve.prover_params.shape == (0,)
    assert curve.estimator_params.shape == (estimator_dim(prob.depth),)


def test_training_is_deterministic_per_seed_and_shaped(prob: TreeProblem) -> None:
    one, two = (train(Run(prob, outer=3, inner=1, seed=5, es=ES)) for _ in range(2))
    other = train(Run(prob, outer=3, inner=1, seed=6, es=ES))
    assert len(one.points) == 4
    assert one.points == two.points
    assert np.array_equal(one.prover_params, two.prover_params)
    assert one.points[1:] != other.points[1:]
    assert one.prover_params.shape == (PROVER_DIM,)


def test_the_population_is_evaluated_in_one_call(prob: TreeProblem) -> None:
    tr = Trainer(Run(prob, es=ES))
    members = np.random.default_rng(0).standard_normal((6, PROVER_DIM))
    together = tr._payoffs(members, np.zeros((6, estimator_dim(prob.depth))))
    for m in (0, 4):
        assert tr.a is not None
        tr.a.theta = members[m]
        assert together[m] == pytest.approx(tr.point().payoff, rel=1e-9)


def test_a_liar_keeps_a_wrong_answer(prob: TreeProblem) -> None:
    curve = train(Run(prob, prover="learned-liar", outer=2, inner=1, es=ES))
    assert all(p.accuracy == 0.0 for p in curve.points)
    assert np.all(curve.prover_params[ANSWER] == 0.0)


def test_naive_evaluator_matches_the_engine_for_the_dishonest_prover() -> None:
    prob = make_interval(3, 2, 16, 0)
    est = make_estimator("calibrated-ignorant", prob)
    pol = LearnedNaiveProver(prob, prob.n, lie=True)
    pol.set_params(np.array([[40.0, 0.0, 40.0, 0.0, 0.0]]))  # every subclaim stated clean
    mine = exact_learned_naive(prob, pol, EstimatorChallenger(est))
    game = NaiveGame(prob, naive_dishonest(prob), EstimatorChallenger(est), OracleJudge(prob))
    ref = exact_naive(game)
    assert np.allclose(mine.payoff, ref.payoff, atol=1e-9)
    assert ref.win is not None and np.allclose(mine.win, ref.win, atol=1e-9)


def test_b_a_learned_liar_finds_obfuscation_only_against_a_blind_challenger() -> None:
    prob = make_interval(2, 2, 8, 0)
    blind = train_naive(NaiveRun(prob, outer=15, es=ES))
    assert blind.points[0].win < 0.2
    assert blind.points[-1].win > 0.6  # the ceiling is 1 - 1/4
    seeing = train_naive(NaiveRun(prob, challenger="omniscient", outer=3, es=ES))
    assert all(p.payoff == pytest.approx(-1.0) for p in seeing.points)


def test_experiments_are_built_for_every_name() -> None:
    for name in ("a", "b", "c", "d", "e", "f", "g", "h", "i"):
        got = arms(name, TINY, [0, 1])
        assert got and all(len(arm.runs) == 2 for arm in got)
    with pytest.raises(ValueError, match="experiment must be one of"):
        arms("z", TINY, [0])


def test_es_climbs_a_quadratic() -> None:
    learner = Learner(3, ESConfig(pairs=4, sigma=0.3, lr=0.2), np.random.default_rng(0), np.ones(3))
    target = np.array([1.0, -2.0, 0.5])
    for _ in range(150):
        learner.step(lambda m: -((m - target) ** 2).sum(axis=1))
    assert np.abs(learner.theta - target).max() < 0.2


def test_replicas_repeat_instances_in_order(prob: TreeProblem) -> None:
    rep = replicate(prob, 3)
    assert rep.n == 3 * prob.n
    assert np.array_equal(rep.truth[0][prob.n : 2 * prob.n], prob.truth[0])
    assert np.allclose(per_member(np.arange(rep.n, dtype=float), 3)[0], (prob.n - 1) / 2)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.floats(-8, 8), min_size=18, max_size=18), st.floats(0.01, 0.99))
def test_policies_are_distributions(params: list[float], p: float) -> None:
    prob = majority(TINY)
    inst = np.arange(prob.n)
    node = np.zeros(prob.n, dtype=np.int64)
    pv = np.full(prob.n, p)
    est = LearnedEstimator(prob, prob.n)
    est.set_params(np.array([params[: est.dim]]))
    joint = est.joint(inst, 1, node, pv)
    assert np.all(joint >= 0) and np.allclose(joint.sum(axis=1), 1.0)
    pr = LearnedProver(prob, prob.n)
    pr.set_params(np.array([params[:PROVER_DIM]]))
    for alts in (pr.answer(inst), pr.direction(inst, 1, node, pv)):
        total = sum(np.broadcast_to(np.asarray(w, dtype=float), (prob.n,)) for _, w in alts)
        assert np.allclose(total, 1.0)
