"""A-leading Stackelberg training of a learned prover and a learned estimator.

Every outer step: B takes ``inner`` evolution-strategy steps on its own payoff −R_A against
the current A (its inner loop approaches a best response), then A takes one step on R_A
against that B, and the pair is evaluated exactly. Either player may instead be a fixed
formal strategy (the eq.-(13) honest prover, or a built-in estimator). Everything is seeded:
the same :class:`Run` gives the same curve.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from llmdebate.core import scoring
from llmdebate.formal.exact import exact_prover_estimator
from llmdebate.formal.game import Game
from llmdebate.formal.learning.curves import Point, evaluate
from llmdebate.formal.learning.es import ESConfig, Learner
from llmdebate.formal.learning.estimator import LearnedEstimator
from llmdebate.formal.learning.observed import ObservedEstimator, ObservedProver, Sight
from llmdebate.formal.learning.prover import ANSWER, LearnedProver
from llmdebate.formal.learning.replicas import Parametrised, per_member, replicate
from llmdebate.formal.learning.sampled import Recorder
from llmdebate.formal.montecarlo import simulate_debates
from llmdebate.formal.problems.problem import TreeProblem
from llmdebate.formal.strategies import (
    EstimatorPolicy,
    OracleJudge,
    ProverPolicy,
    make_estimator,
    make_prover,
)


@dataclass
class Run:
    """One training run: who learns, on which game, for how long, from which seed."""

    problem: TreeProblem
    epsilon: float = 0.2
    rho: float = 0.5
    variant: str = "figure2"
    prover: str = "learned"  # "learned", "learned-liar", or a built-in prover's name
    estimator: str = "learned"  # "learned" or a built-in estimator's name
    outer: int = 60
    inner: int = 4
    seed: int = 0
    es: ESConfig = field(default_factory=ESConfig)  # A's steps (and the population size)
    es_estimator: ESConfig | None = None  # B's steps, if not those of ``es`` (same pairs)
    estimator_top: float | None = None  # B's p_d held at this distance from the truth
    refine: int = 0  # B-only steps after training: how far B was from a best response
    # "observed" players (:mod:`.observed`) see only the leaves they inspect: how many of
    # the q^d per instance (None: all), seeded by ``sight_seed``
    sight_a: int | None = None
    sight_b: int | None = None
    sight_seed: int = 0
    init_scale: float = 0.0  # learners start at N(0, init_scale²) parameters (0: at zero)
    # sampled debates (:mod:`.sampled`): A by REINFORCE on ``debates`` per step, B by ES on
    # ``member_debates`` per member; 0: exact expected payoffs (evolution strategies)
    debates: int = 0
    member_debates: int = 256


@dataclass
class Curve:
    """The pair's exact evaluation before training (index 0) and after every outer step."""

    points: list[Point]
    seconds: float
    prover_params: np.ndarray
    estimator_params: np.ndarray
    refined: Point | None = None  # after ``refine`` more steps of B against the final A


class _Side:
    """One player: a learned policy on the replicated problem and on the base problem, or a
    fixed formal strategy."""

    def __init__(
        self, learned: Parametrised | None, base: Parametrised | None, fixed: object | None
    ):
        self.learned, self.base, self.fixed = learned, base, fixed


def _prover(name: str, prob: TreeProblem, n: int, run: Run) -> ProverPolicy:
    if name in ("learned", "learned-liar"):
        return LearnedProver(prob, n, lie=name == "learned-liar")
    if name == "observed":
        return ObservedProver(prob, n, Sight(prob, n, run.sight_a, run.sight_seed))
    return make_prover(name, prob, run.epsilon)


def _estimator(name: str, prob: TreeProblem, n: int, run: Run) -> EstimatorPolicy:
    if name == "learned":
        return LearnedEstimator(prob, n)
    if name == "observed":
        return ObservedEstimator(prob, n, Sight(prob, n, run.sight_b, run.sight_seed + 1))
    return make_estimator(name, prob)


class Trainer:
    """The loop of the module docstring for one :class:`Run`."""

    def __init__(self, run: Run):
        self.run = run
        base = run.problem
        members = 2 * run.es.pairs
        self.members = members
        self.rep = replicate(base, members)
        n = base.n
        self.a_rep = _prover(run.prover, self.rep, n, run)
        self.b_rep = _estimator(run.estimator, self.rep, n, run)
        self.a_base = _prover(run.prover, base, n, run)
        self.b_base = _estimator(run.estimator, base, n, run)
        ss = np.random.SeedSequence([run.seed, 30])
        rng_a, rng_b = (np.random.default_rng(s) for s in ss.spawn(2))
        self.mc = np.random.default_rng(np.random.SeedSequence([run.seed, 33]))
        self.a: Learner | None = None
        self.b: Learner | None = None
        if isinstance(self.a_rep, (LearnedProver, ObservedProver)):
            mask = np.ones(self.a_rep.dim)
            if isinstance(self.a_rep, LearnedProver) and self.a_rep.lie:
                mask[ANSWER] = 0.0
            self.a = Learner(self.a_rep.dim, run.es, rng_a, mask)
        if isinstance(self.b_rep, (LearnedEstimator, ObservedEstimator)):
            cfg = run.es if run.es_estimator is None else run.es_estimator
            assert cfg.pairs == run.es.pairs, "one population size for both players"
            self.b = Learner(self.b_rep.dim, cfg, rng_b, np.ones(self.b_rep.dim))
            if run.estimator_top is not None:  # p_d = σ(w₁·(2T − 1)) = |T − estimator_top|
                x = run.estimator_top
                self.b.theta[:2] = (0.0, math.log((1.0 - x) / x))
                self.b.mask[:2] = 0.0
        if run.init_scale > 0:  # random starts, from their own stream
            init = np.random.default_rng(np.random.SeedSequence([run.seed, 32]))
            for lr in (self.a, self.b):
                if lr is not None:
                    start = init.normal(0.0, run.init_scale, len(lr.theta))
                    lr.theta = np.clip(start * lr.mask, -lr.cfg.clip, lr.cfg.clip)

    def _game(self, prob: TreeProblem, a: ProverPolicy, b: EstimatorPolicy) -> Game:
        run = self.run
        return Game(prob, a, b, OracleJudge(prob), run.epsilon, run.rho, run.variant)

    def _payoffs(self, a_params: np.ndarray | None, b_params: np.ndarray | None) -> np.ndarray:
        """A's normalised payoff for each of the population's members."""
        for pol, params in ((self.a_rep, a_params), (self.b_rep, b_params)):
            if isinstance(pol, Parametrised) and params is not None:
                pol.set_params(params)
        game = self._game(self.rep, self.a_rep, self.b_rep)
        res = exact_prover_estimator(game)
        pay = scoring.normalized(res.payoff, game.r, self.rep.depth)
        return per_member(np.asarray(pay), self.members)

    def _sampled_payoffs(
        self, a_params: np.ndarray | None, b_params: np.ndarray | None
    ) -> np.ndarray:
        """A's normalised payoff for each member, the mean of ``member_debates`` sampled
        debates on that member's instances."""
        for pol, params in ((self.a_rep, a_params), (self.b_rep, b_params)):
            if isinstance(pol, Parametrised) and params is not None:
                pol.set_params(params)
        game = self._game(self.rep, self.a_rep, self.b_rep)
        n, m = self.run.problem.n, self.run.member_debates
        inst = (np.arange(self.members)[:, None] * n + self.mc.integers(0, n, (self.members, m)))
        pay = simulate_debates(game, inst.reshape(-1), self.mc)
        norm = np.asarray(scoring.normalized(pay, game.r, self.rep.depth))
        return np.asarray(norm.reshape(self.members, m).mean(axis=1))

    def reinforce_step(self) -> None:
        """A's REINFORCE step on ``debates`` sampled debates against the current B."""
        a = self.a
        assert a is not None and isinstance(self.a_base, Parametrised)
        if isinstance(self.b_base, Parametrised) and self.b is not None:
            self.b_base.set_params(self.b.theta[None, :])
        self.a_base.set_params(a.theta[None, :])
        rec = Recorder(self.a_base, self.mc)
        game = self._game(self.run.problem, rec, self.b_base)
        inst = self.mc.integers(0, self.run.problem.n, self.run.debates)
        pay = np.asarray(scoring.normalized(simulate_debates(game, inst, self.mc), game.r,
                                            self.run.problem.depth))
        adv = pay - pay.mean()
        sd = float(adv.std())
        if sd == 0.0:  # every debate paid the same: no signal
            return
        grad = rec.gradient(adv / sd, a.theta, a.mask)
        step = a.adam.step(grad) * a.decay()
        a.theta = np.clip(a.theta + step, -a.cfg.clip, a.cfg.clip)

    def _tiled(self, learner: Learner | None) -> np.ndarray | None:
        return None if learner is None else np.tile(learner.theta, (self.members, 1))

    def point(self) -> Point:
        for pol, learner in ((self.a_base, self.a), (self.b_base, self.b)):
            if isinstance(pol, Parametrised) and learner is not None:
                pol.set_params(learner.theta[None, :])
        return evaluate(self._game(self.run.problem, self.a_base, self.b_base))

    def estimator_steps(self, count: int) -> None:
        if self.b is not None:
            a_fixed = self._tiled(self.a)
            pay = self._sampled_payoffs if self.run.debates else self._payoffs
            for _ in range(count):
                self.b.step(lambda m: -pay(a_fixed, m))

    def outer_step(self) -> None:
        self.estimator_steps(self.run.inner)
        if self.a is not None and self.run.debates:
            self.reinforce_step()
        elif self.a is not None:
            b_fixed = self._tiled(self.b)
            self.a.step(lambda m: self._payoffs(m, b_fixed))


def train(run: Run) -> Curve:
    """Train and evaluate after every outer step (the first point is the pair at init);
    then, if ``run.refine``, let B alone go on and evaluate once more."""
    start = time.perf_counter()
    tr = Trainer(run)
    points = [tr.point()]
    for _ in range(run.outer):
        tr.outer_step()
        points.append(tr.point())
    empty = np.zeros(0)
    prover_params = empty if tr.a is None else tr.a.theta.copy()
    estimator_params = empty if tr.b is None else tr.b.theta.copy()
    refined = None
    if run.refine and tr.b is not None:
        tr.estimator_steps(run.refine)
        refined = tr.point()
    return Curve(
        points=points,
        seconds=time.perf_counter() - start,
        prover_params=prover_params,
        estimator_params=estimator_params,
        refined=refined,
    )
