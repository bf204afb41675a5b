"""What a training curve reads off one exact evaluation: A's payoff and accuracy, B's
Brier score and its distinguishability advantage.

B's advantage is Algorithm 1's quantity (Appendix A.1) for the tests it uses, measured on
the distribution of states the debate reaches: for each round k, |E[f(truth)] − E_h[f]|
with f the coordinates z_i, M_D(z) and A's round reward σ_k·(M_D(z) − p_k) unscaled
(σ_k = E[s_k]); at the top, the coordinate ẑ; and for every k, A's reward test E[r_k]/r^k
(at the leaf this is Algorithm 1's test A_0(y_j, b_j)·z_j with an oracle judge: it sees a
B that is wrong where A recurses). ``advantage`` is the largest of them: the δ that
:func:`soundness_threshold` puts into Lemma A.4. B's
Brier score is the mean squared error of its numbers against the truth: p_d on the top
claim, and its marginals on the subclaims of every claim reached (weighted by reach).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from llmdebate.core import scoring
from llmdebate.core.rules import outcome_bits
from llmdebate.formal.exact import exact_prover_estimator
from llmdebate.formal.game import Game
from llmdebate.formal.tables import expected_rule
from llmdebate.formal.variants import RoundView

from .estimator import LearnedEstimator


@dataclass
class Point:
    """One evaluation of the current pair (payoff normalised by r^(d+1))."""

    payoff: float
    accuracy: float
    brier: float
    advantage: float


def _expect(alts: list[tuple[np.ndarray, np.ndarray | float]], n: int) -> np.ndarray:
    out = np.zeros(n)
    for v, pr in alts:
        out += np.asarray(pr, dtype=float) * np.broadcast_to(v, (n,))
    return out


class _Observer:
    def __init__(self, game: Game):
        self.game = game
        self.advantage = 0.0
        self.sq_err = 0.0
        self.mass = 0.0

    def __call__(
        self,
        k: int,
        inst: np.ndarray,
        node: np.ndarray,
        p: np.ndarray,
        w: np.ndarray,
        view: RoundView,
    ) -> None:
        prob = self.game.problem
        wn = w / prob.n
        t = prob.children_of(prob.truth, inst, k, node).astype(np.float64)
        table = prob.rule(k).table
        m_true = prob.truth[k][inst, node].astype(np.float64)
        m_b = expected_rule(view.joint, table)
        sigma = _expect(self.game.prover.direction(inst, k, node, p), len(inst))
        q = t.shape[1]
        tests = [abs(math.fsum((wn * (t[:, i] - view.marg[:, i])).tolist())) for i in range(q)]
        tests.append(abs(math.fsum((wn * (m_true - m_b)).tolist())))
        tests.append(abs(math.fsum((wn * sigma * (m_true - m_b)).tolist())))
        self.advantage = max(self.advantage, *tests)
        sq = (wn[:, None] * (view.marg - t) ** 2).sum(axis=1)
        self.sq_err += math.fsum(sq.tolist()) / q
        self.mass += math.fsum(wn.tolist())


def evaluate(game: Game) -> Point:
    """Exact payoff (normalised), accuracy, B's Brier score and advantage of one pair."""
    prob = game.problem
    obs = _Observer(game)
    res = exact_prover_estimator(game, observe=obs)
    w = prob.weights
    inst = np.arange(prob.n)
    p_top = game.estimator.top(inst)
    truth = prob.top_truth().astype(np.float64)
    top_adv = abs(math.fsum((w * (truth - p_top)).tolist()))
    top_sq = math.fsum((w * (p_top - truth) ** 2).tolist())
    brier = (top_sq + obs.sq_err) / (1.0 + obs.mass)
    assert res.by_round is not None
    rounds = res.round_means(w)  # E[r_init], E[r_d], ..., E[r_0]
    reward_tests = [abs(rounds[prob.depth + 1 - k]) / game.r**k for k in range(prob.depth + 1)]
    payoff = scoring.normalized(res.mean(w), game.r, prob.depth)
    return Point(
        payoff=float(payoff),
        accuracy=math.fsum((w * res.accuracy).tolist()),
        brier=brier,
        advantage=max(top_adv, obs.advantage, *reward_tests),
    )


def joint_summary(est: LearnedEstimator, inst: int) -> dict[str, float]:
    """B's round-1 joint at one instance's top claim, handed B's own p_d: its p_d, mean
    marginal, E[M_D] and the mean correlation between two subclaims' outcomes."""
    one = np.array([inst])
    node = np.zeros(1, dtype=np.int64)
    p_top = est.top(one)
    joint = est.joint(one, est.problem.depth, node, p_top)[0]
    bits = outcome_bits(est.problem.width).astype(np.float64)
    marg = (joint[:, None] * bits).sum(axis=0)
    cov = (joint[:, None, None] * bits[:, :, None] * bits[:, None, :]).sum(axis=0)
    cov -= marg[:, None] * marg[None, :]
    sd = np.sqrt(np.diag(cov))
    corr = cov / np.maximum(sd[:, None] * sd[None, :], 1e-300)
    q = len(marg)
    off = corr[~np.eye(q, dtype=bool)]
    table = est.problem.rule(est.problem.depth).table
    return {
        "p_top": float(p_top[0]),
        "marginal": float(marg.mean()),
        "expected_rule": float(expected_rule(joint[None, :], table)[0]),
        "correlation": float(off.mean()),
    }


def soundness_threshold(point: Point, r: float, depth: int) -> float:
    """Lemma A.4's bound on E[R_A], normalised: P[A correct] + (2d+1)·δ/r^(d+1), with δ the
    measured advantage (a lower estimate of Algorithm 1's δ: fewer tests)."""
    return point.accuracy + (2 * depth + 1) * point.advantage / r ** (depth + 1)
