"""Training the learned naive-debate prover against a fixed challenger (seeded)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from llmdebate.formal.problems.problem import TreeProblem
from llmdebate.formal.strategies import make_estimator
from llmdebate.formal.strategies.naive import EstimatorChallenger

from .es import ESConfig, Learner
from .naive import LearnedNaiveProver, exact_learned_naive, mean
from .replicas import per_member, replicate


@dataclass
class NaiveRun:
    problem: TreeProblem
    challenger: str = "calibrated-ignorant"  # the estimator the challenger reads
    lie: bool = True
    outer: int = 40
    seed: int = 0
    es: ESConfig = field(default_factory=ESConfig)


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


def train_naive(run: NaiveRun) -> NaiveCurve:
    """ES on the prover's exact expected payoff; evaluated before and after every step."""
    start = time.perf_counter()
    members = 2 * run.es.pairs
    base, rep = run.problem, replicate(run.problem, members)
    n = base.n
    pol_rep = LearnedNaiveProver(rep, n, lie=run.lie)
    pol_base = LearnedNaiveProver(base, n, lie=run.lie)
    ch_rep = EstimatorChallenger(make_estimator(run.challenger, rep))
    ch_base = EstimatorChallenger(make_estimator(run.challenger, base))
    mask = np.ones(pol_rep.dim)
    if run.lie:
        mask[3:] = 0.0
    rng = np.random.default_rng(np.random.SeedSequence([run.seed, 31]))
    learner = Learner(pol_rep.dim, run.es, rng, mask)

    def objective(params: np.ndarray) -> np.ndarray:
        pol_rep.set_params(params)
        return per_member(exact_learned_naive(rep, pol_rep, ch_rep).payoff, members)

    def point() -> NaivePoint:
        pol_base.set_params(learner.theta[None, :])
        res = exact_learned_naive(base, pol_base, ch_base)
        return NaivePoint(mean(res.payoff), mean(res.win), mean(res.accuracy))

    points = [point()]
    for _ in range(run.outer):
        learner.step(objective)
        points.append(point())
    return NaiveCurve(points, time.perf_counter() - start, learner.theta.copy())
