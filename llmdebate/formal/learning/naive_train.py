"""Training the learned naive-debate prover against a fixed challenger (seeded)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from llmdebate.formal.learning.es import ESConfig, Learner
from llmdebate.formal.learning.naive_prover import LearnedNaiveProver, exact_learned_naive, mean
from llmdebate.formal.learning.observed import ObservedEstimator, ObservedNaiveProver, Sight
from llmdebate.formal.learning.replicas import Parametrised, per_member, replicate
from llmdebate.formal.problems.problem import TreeProblem
from llmdebate.formal.strategies import EstimatorPolicy, make_estimator
from llmdebate.formal.strategies.naive import EstimatorChallenger


@dataclass
class NaiveRun:
    problem: TreeProblem
    challenger: str = "calibrated-ignorant"  # the estimator the challenger reads, or "observed"
    lie: bool = True
    outer: int = 40
    seed: int = 0
    es: ESConfig = field(default_factory=ESConfig)
    # "observed" (:mod:`.observed`): the prover and/or the challenger's estimator see only the
    # leaves they inspect (None: all of them); a learned challenger takes ``inner`` steps on
    # −payoff per prover step
    prover: str = "learned"
    sight_a: int | None = None
    sight_b: int | None = None
    inner: int = 4
    init_scale: float = 0.0


@dataclass
class NaivePoint:
    payoff: float
    win: float
    accuracy: float


@dataclass
class NaiveCurve:
    points: list[NaivePoint]
    seconds: float
    params: np.ndarray


def _sides(
    run: NaiveRun, prob: TreeProblem, n: int
) -> tuple[LearnedNaiveProver, EstimatorChallenger]:
    if run.prover == "observed":
        pol: LearnedNaiveProver = ObservedNaiveProver(prob, n, Sight(prob, n, run.sight_a, 0))
    else:
        pol = LearnedNaiveProver(prob, n, lie=run.lie)
    if run.challenger == "observed":
        est: EstimatorPolicy = ObservedEstimator(prob, n, Sight(prob, n, run.sight_b, 1))
    else:
        est = make_estimator(run.challenger, prob)
    return pol, EstimatorChallenger(est)


def train_naive(run: NaiveRun) -> NaiveCurve:
    """ES on the prover's exact expected payoff (A-leading against a learned challenger,
    whose estimator takes ``inner`` steps on −payoff first); evaluated after every step."""
    start = time.perf_counter()
    members = 2 * run.es.pairs
    base, rep = run.problem, replicate(run.problem, members)
    n = base.n
    pol_rep, ch_rep = _sides(run, rep, n)
    pol_base, ch_base = _sides(run, base, n)
    mask = np.ones(pol_rep.dim)
    if run.lie and run.prover != "observed":
        mask[3:] = 0.0
    rng = np.random.default_rng(np.random.SeedSequence([run.seed, 31]))
    learner = Learner(pol_rep.dim, run.es, rng, mask)
    b_est = ch_rep.estimator
    b_learner = None
    if isinstance(b_est, Parametrised):
        rng_b = np.random.default_rng(np.random.SeedSequence([run.seed, 34]))
        b_learner = Learner(b_est.dim, run.es, rng_b, np.ones(b_est.dim))
    if run.init_scale > 0:
        init = np.random.default_rng(np.random.SeedSequence([run.seed, 32]))
        for lr in (learner, b_learner):
            if lr is not None:
                lr.theta = np.clip(init.normal(0.0, run.init_scale, len(lr.theta)) * lr.mask,
                                   -lr.cfg.clip, lr.cfg.clip)

    def payoffs(a_params: np.ndarray, b_params: np.ndarray | None) -> np.ndarray:
        pol_rep.set_params(a_params)
        if isinstance(b_est, Parametrised) and b_params is not None:
            b_est.set_params(b_params)
        return per_member(exact_learned_naive(rep, pol_rep, ch_rep).payoff, members)

    def point() -> NaivePoint:
        pol_base.set_params(learner.theta[None, :])
        est = ch_base.estimator
        if isinstance(est, Parametrised) and b_learner is not None:
            est.set_params(b_learner.theta[None, :])
        res = exact_learned_naive(base, pol_base, ch_base)
        return NaivePoint(mean(res.payoff), mean(res.win), mean(res.accuracy))

    def b_objective(a_params: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
        return lambda m: -payoffs(a_params, m)

    def a_objective(b_params: np.ndarray | None) -> Callable[[np.ndarray], np.ndarray]:
        return lambda m: payoffs(m, b_params)

    points = [point()]
    for _ in range(run.outer):
        if b_learner is not None:
            b_step = b_objective(np.tile(learner.theta, (members, 1)))
            for _ in range(run.inner):
                b_learner.step(b_step)
        b_fixed = None if b_learner is None else np.tile(b_learner.theta, (members, 1))
        learner.step(a_objective(b_fixed))
        points.append(point())
    return NaiveCurve(points, time.perf_counter() - start, learner.theta.copy())
