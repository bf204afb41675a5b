"""An independent check that Algorithm 1 converged: every test's advantage, recomputed.

:func:`llmdebate.formal.ogd.run_ogd` reports the largest advantage it saw when it stopped.
This module does not trust that number. It plays the finished estimator against the prover
in the exact engine (:func:`.exact.exact_prover_estimator`, whose observer sees every reached
round-k state, its probability and B's tables as played), and recomputes, state by state and
with correctly rounded sums (:func:`math.fsum`), the advantage

    Adv_f = E_x[ f(x, z*) ] - E_x[ Σ_z h_x(z)·f(x, z) ]      (z* the true outcome)

of every test in Lemma A.4's class, unscaled (the protocol's r^k factor applied):

* initialisation: 1[ẑ = A(x)]·r^(d+1), the coordinate ẑ, and A_d(x, p_d)·ẑ·r^d;
* round k: s_k·(M_D(z) - p_k)·r^k, M_D(z), every coordinate z_i, and eq. (7)'s
  A_(k-1)(y_j, p_(k-1))·z_j·r^(k-1) with j and p_(k-1) as the variant defines them.

Lemma A.4 needs every one below δ; :func:`check_algorithm1` returns them all.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from llmdebate.core.rules import outcome_bits
from llmdebate.formal.exact import exact_prover_estimator
from llmdebate.formal.game import Game
from llmdebate.formal.strategies.alternatives import Alternatives
from llmdebate.formal.tables import index_of
from llmdebate.formal.variants import RoundView, choices


@dataclass
class TestAdvantage:
    level: str  # "init" or "round k"
    test: str
    advantage: float  # unscaled: the protocol's r^k factor applied


def _mean(alts: Alternatives, n: int) -> np.ndarray:
    out = np.zeros(n)
    for v, pr in alts:
        out += np.asarray(pr, dtype=float) * np.broadcast_to(v, (n,))
    return out


def _adv(weights: np.ndarray, at_truth: np.ndarray, under_h: np.ndarray, scale: float) -> float:
    return scale * (
        math.fsum((weights * at_truth).tolist()) - math.fsum((weights * under_h).tolist())
    )


def _init_tests(game: Game) -> list[TestAdvantage]:
    prob, prover, est = game.problem, game.prover, game.estimator
    d, r = prob.depth, game.r
    inst = np.arange(prob.n)
    w = prob.weights
    p = np.asarray(est.top(inst), dtype=np.float64)
    truth = prob.top_truth().astype(np.float64)
    answer = _mean(prover.answer(inst), prob.n)
    go = np.zeros(prob.n)
    for a, pa in prover.answer(inst):
        go += np.asarray(pa) * ~prover.stops(inst, p, np.broadcast_to(a, (prob.n,)))
    s_d = _mean(prover.direction(inst, d, np.zeros(prob.n, dtype=np.int64), p), prob.n)
    agree_truth = truth * answer + (1 - truth) * (1 - answer)
    agree_h = p * answer + (1 - p) * (1 - answer)
    out = [
        TestAdvantage("init", "1[ẑ = A(x)]", _adv(w, agree_truth, agree_h, r ** (d + 1))),
        TestAdvantage("init", "ẑ", _adv(w, truth, p, 1.0)),
    ]
    if d > 0:
        a_d = go * s_d
        out.append(TestAdvantage("init", "A_d(x, p_d)·ẑ", _adv(w, a_d * truth, a_d * p, r**d)))
    return out


class _RoundTests:
    """Collects the round-k tests' advantages from the exact engine's observer."""

    def __init__(self, game: Game):
        self.game = game
        self.found: list[TestAdvantage] = []

    def __call__(
        self,
        k: int,
        inst: np.ndarray,
        node: np.ndarray,
        p: np.ndarray,
        w: np.ndarray,
        view: RoundView,
    ) -> None:
        game = self.game
        prob, prover = game.problem, game.prover
        q, r, n = prob.width, game.r, len(inst)
        weight = w * prob.weights[inst]
        h = view.joint  # what B plays at each state (n, 2^q)
        bits = outcome_bits(q).astype(np.int64)
        table = prob.rule(k).table.astype(np.float64)
        truth_bits = prob.children_of(prob.truth, inst, k, node).astype(np.int64)
        t_star = index_of(truth_bits)
        rows = np.arange(n)
        s_k = _mean(prover.direction(inst, k, node, p), n)
        em_h = (h * table[None, :]).sum(axis=1)
        m_truth = table[t_star]
        level = f"round {k}"
        self.found.append(
            TestAdvantage(
                level,
                "s_k·(M_D(z) - p_k)",
                _adv(weight, s_k * (m_truth - p), s_k * (em_h - p), r**k),
            )
        )
        self.found.append(TestAdvantage(level, "M_D(z)", _adv(weight, m_truth, em_h, 1.0)))
        marg = view.marg if view.marg.shape == (n, q) else None
        for i in range(q):
            mi = marg[:, i] if marg is not None else h[:, bits[:, i] == 1].sum(axis=1)
            self.found.append(
                TestAdvantage(level, f"z_{i + 1}", _adv(weight, truth_bits[:, i], mi, 1.0))
            )
        f = self._eq7(k, inst, node, view)  # (n, 2^q)
        self.found.append(
            TestAdvantage(
                level,
                "A_(k-1)(y_j, p_(k-1))·z_j",
                _adv(weight, f[rows, t_star], (h * f).sum(axis=1), r ** (k - 1)),
            )
        )

    def _eq7(self, k: int, inst: np.ndarray, node: np.ndarray, view: RoundView) -> np.ndarray:
        """f(x, z) = A_(k-1)(y_j, p_(k-1))·z_j for every state and outcome."""
        game = self.game
        prover, q = game.prover, game.problem.width
        n, size = len(inst), 1 << q
        rep = np.repeat(np.arange(n), size)
        zz = np.tile(outcome_bits(q).astype(np.int64), (n, 1))
        nextp = view.nextp.reshape(n * size, q)
        rows = np.arange(n * size)
        out = np.zeros(n * size)
        for j, pj in choices(prover, game.variant, inst, k, node, view, rep, zz):
            jj = np.broadcast_to(j, (n * size,))
            child = node[rep] * q + jj
            s_next = _mean(prover.direction(inst[rep], k - 1, child, nextp[rows, jj]), n * size)
            out += np.asarray(pj) * s_next * zz[rows, jj]
        return out.reshape(n, size)


def check_algorithm1(game: Game) -> list[TestAdvantage]:
    """Every test's unscaled advantage for ``game``'s estimator (module docstring)."""
    tests = _RoundTests(game)
    exact_prover_estimator(game, observe=tests)
    return _init_tests(game) + tests.found


def largest_advantage(game: Game) -> tuple[float, int]:
    """max |Adv| over the class (unscaled) and the number of tests checked."""
    found = check_algorithm1(game)
    return max(abs(t.advantage) for t in found), len(found)


__all__ = ["TestAdvantage", "check_algorithm1", "largest_advantage"]
