"""Vectorised Monte Carlo of whole debates, with a 95% confidence interval.

Each array holds one entry per debate (instance, node id, p_k, ...); one pass per round draws
ẑ, z_1..z_q in order (z_i = 1[u_i < b_i(z_<i)] as in the engine), the strategies' random choices
and the verdict, and rewards come from :mod:`llmdebate.core.scoring` applied element-wise. Debates
whose prover committed to rest_zero keep going with direction 0, which adds exactly 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from llmdebate.core import scoring
from llmdebate.formal.game import Game, NaiveGame
from llmdebate.formal.strategies.alternatives import sample
from llmdebate.formal.strategies.provers import ProverPolicy
from llmdebate.formal.tables import Levels, joint_from_levels, marginals
from llmdebate.formal.variants import (
    COMMITTING,
    MARGINAL_NEXT,
    choices,
    round_view,
    stated_levels,
)

BATCH = 1 << 16
Z95 = 1.959963984540054


@dataclass
class MCResult:
    """Sample mean and standard error of the payoff (and of the win indicator, naive debate)."""

    mean: float
    stderr: float
    n: int
    accuracy: float
    win_rate: float | None = None
    win_stderr: float | None = None

    @property
    def ci(self) -> tuple[float, float]:
        return self.mean - Z95 * self.stderr, self.mean + Z95 * self.stderr


def _stats(chunks: list[np.ndarray]) -> tuple[float, float, int]:
    x = np.concatenate(chunks)
    n = len(x)
    sd = float(x.std(ddof=1)) if n > 1 else 0.0
    return float(x.mean()), sd / np.sqrt(n), n


def simulate_prover_estimator(game: Game, n: int, rng: np.random.Generator) -> np.ndarray:
    """Payoffs R_A of ``n`` independent debates (instances drawn uniformly)."""
    inst = rng.integers(0, game.problem.n, size=n)
    return simulate_debates(game, inst, rng)


def simulate_debates(game: Game, inst: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Payoffs R_A of one debate per entry of ``inst``. Every strategy is asked once per
    round for all of them, in this order (a learner's sampled decisions line up with the
    payoffs: :mod:`llmdebate.formal.learning.sampled`)."""
    prob, prover, est = game.problem, game.prover, game.estimator
    d, r = prob.depth, game.r
    n = len(inst)
    a = sample(prover.answer(inst), rng, n)
    p = est.top(inst)
    zhat = (rng.random(n) < p).astype(np.int64)
    rewards = [scoring.init_reward(r, d, zhat, a)]
    active = ~prover.stops(inst, p, a)
    node = np.zeros(n, dtype=np.int64)
    play = _drawn_round if _reads_drawn_rows(prover) else _viewed_round
    for k in range(d, 0, -1):
        s = sample(prover.direction(inst, k, node, p), rng, n) * active
        m, j, p_next = play(game, inst, k, node, est.levels(inst, k, node, p), rng)
        rewards.append(scoring.round_reward(r, k, s, m, p))
        p = p_next
        node = node * prob.width + j
    s = sample(prover.direction(inst, 0, node, p), rng, n) * active
    verdict = (rng.random(n) < game.judge.prob_true(inst, node)).astype(np.int64)
    rewards.append(scoring.leaf_reward(r, s, verdict, p))
    return scoring.total(rewards)


Round = tuple[np.ndarray, np.ndarray, np.ndarray]  # M_D(z), the index j, the next p


def _reads_drawn_rows(prover: ProverPolicy) -> bool:
    """Whether A's choice can be read off the drawn rows alone (:meth:`choose_drawn`): true
    unless its class reads a whole round's view without saying what it reads of one row."""
    cls = type(prover)
    return (
        cls.choose_rows is ProverPolicy.choose_rows
        or cls.choose_drawn is not ProverPolicy.choose_drawn
    )


def _drawn_round(
    game: Game,
    inst: np.ndarray,
    k: int,
    node: np.ndarray,
    levels: Levels,
    rng: np.random.Generator,
) -> Round:
    """One round, the variant's tables read along the drawn outcome only: the same draws and
    the same numbers as :func:`_viewed_round`, without the round's 2^q·q path table."""
    prover, variant = game.prover, game.variant
    n = len(inst)
    ar = np.arange(n)
    levels = stated_levels(levels, variant)
    q = len(levels)
    marg = None
    if variant in COMMITTING or variant in MARGINAL_NEXT:
        marg = marginals(joint_from_levels(levels))
    if variant in COMMITTING:  # A commits before the draws
        assert marg is not None
        j = sample(prover.commit(inst, k, node, marg), rng, n)
    idx = np.zeros(n, dtype=np.int64)
    b = np.empty((n, q))
    z = np.empty((n, q), dtype=np.int64)
    for i in range(q):
        b[:, i] = levels[i][ar, idx]
        z[:, i] = rng.random(n) < b[:, i]
        idx = 2 * idx + z[:, i]
    m = game.problem.rule(k).evaluate_many(idx)
    nextp = marg if variant in MARGINAL_NEXT else b
    assert nextp is not None
    if variant not in COMMITTING:
        j = sample(prover.choose_drawn(inst, k, node, b, nextp, z), rng, n)
    return m, j, nextp[ar, j]


def _viewed_round(
    game: Game,
    inst: np.ndarray,
    k: int,
    node: np.ndarray,
    levels: Levels,
    rng: np.random.Generator,
) -> Round:
    """One round through the variant's whole view (:func:`round_view`)."""
    prover, variant = game.prover, game.variant
    n = len(inst)
    ar = np.arange(n)
    view = round_view(levels, variant)
    q = view.marg.shape[1]
    if variant in COMMITTING:  # A commits before the draws
        j = sample(choices(prover, variant, inst, k, node, view, ar, np.empty((n, q))), rng, n)
    idx = np.zeros(n, dtype=np.int64)
    z = np.empty((n, q), dtype=np.int64)
    for i in range(q):
        z[:, i] = rng.random(n) < view.levels[i][ar, idx]
        idx = 2 * idx + z[:, i]
    m = game.problem.rule(k).evaluate_many(idx)
    if variant not in COMMITTING:
        j = sample(choices(prover, variant, inst, k, node, view, ar, z), rng, n)
    return m, j, view.nextp[ar, idx, j]


def simulate_naive(
    game: NaiveGame, n: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Payoffs (±1) and the prover's claimed top values of ``n`` naive debates."""
    prob, prover, ch = game.problem, game.prover, game.challenger
    ar = np.arange(n)
    inst = rng.integers(0, prob.n, size=n)
    node = np.zeros(n, dtype=np.int64)
    p = ch.estimator.top(inst)
    for k in range(prob.depth, 0, -1):
        claimed = prover.children(inst, k, node)
        marg = ch.marginals(inst, k, node, p)
        j = sample(ch.challenge(claimed, marg), rng, n)
        p = marg[ar, j]
        node = node * prob.width + j
    verdict = (rng.random(n) < game.judge.prob_true(inst, node)).astype(np.int64)
    return scoring.naive_payoff(verdict, prover.claimed(inst, 0, node)), inst


def monte_carlo(game: Game, samples: int, seed: int) -> MCResult:
    rng = np.random.default_rng(np.random.SeedSequence([seed, 7]))
    chunks = []
    left = samples
    while left > 0:
        m = min(left, BATCH)
        chunks.append(simulate_prover_estimator(game, m, rng))
        left -= m
    mean, se, n = _stats(chunks)
    acc = _accuracy(game)
    return MCResult(mean=mean, stderr=se, n=n, accuracy=acc)


def monte_carlo_naive(game: NaiveGame, samples: int, seed: int) -> MCResult:
    rng = np.random.default_rng(np.random.SeedSequence([seed, 8]))
    chunks = []
    left = samples
    while left > 0:
        m = min(left, BATCH)
        chunks.append(simulate_naive(game, m, rng)[0].astype(np.float64))
        left -= m
    mean, se, n = _stats(chunks)
    wins = [(c > 0).astype(np.float64) for c in chunks]
    wmean, wse, _ = _stats(wins)
    prob = game.problem
    inst = np.arange(prob.n)
    acc = float(
        np.mean(
            game.prover.claimed(inst, prob.depth, np.zeros(prob.n, dtype=np.int64))
            == prob.top_truth()
        )
    )
    return MCResult(mean=mean, stderr=se, n=n, accuracy=acc, win_rate=wmean, win_stderr=wse)


def _accuracy(game: Game) -> float:
    """Expected fraction of instances whose top answer is correct (over A's own randomness)."""
    inst = np.arange(game.problem.n)
    truth = game.problem.top_truth()
    acc = np.zeros(game.problem.n)
    for a, pa in game.prover.answer(inst):
        acc += np.asarray(pa) * (np.broadcast_to(a, truth.shape) == truth)
    return float(acc.mean())
