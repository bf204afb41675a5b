"""A learnable prover in naive recursive debate, and the exact expectation of its payoff.

At every claim it has stated (value c), the prover states a value for each subclaim,
independently: P(ŝ_i = 1) = σ(θ₀ + θ₁·(2t_i − 1) + θ₂·(2c − 1)) with t_i the subclaim's
truth; its top claim is P(c = 1) = σ(θ₃ + θ₄·(2t − 1)), or always the wrong answer when it
must lie. Stated values that break the rule end the debate at −1 (as
:func:`llmdebate.core.scoring.naive_round_payoff` scores a recorded round); otherwise the
challenger (:class:`llmdebate.formal.strategies.naive.EstimatorChallenger`) picks the
subclaim to recurse on and the judge rules on the leaf (±1 by
:func:`llmdebate.core.scoring.naive_payoff`). The expectation is exact: every stated vector
(2^q per claim), every challenge and the judge's verdict are enumerated, with equal states
merged. Parameters zero states every value by a fair coin.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from llmdebate.core import scoring
from llmdebate.core.rules import outcome_bits
from llmdebate.formal.exact import _merge
from llmdebate.formal.problems.problem import TreeProblem
from llmdebate.formal.strategies.judges import OracleJudge
from llmdebate.formal.strategies.naive import EstimatorChallenger

from .replicas import Parametrised, sigmoid

NAIVE_DIM = 5
RULE_BROKEN = -1.0  # the payoff of a round whose stated values break the rule


class LearnedNaiveProver(Parametrised):
    """The prover of the module docstring."""

    dim = NAIVE_DIM

    def __init__(self, problem: TreeProblem, n_base: int, lie: bool = False):
        super().__init__(n_base)
        self.problem, self.lie = problem, lie

    def top(self, inst: np.ndarray) -> np.ndarray:
        """P(the stated top value is 1) per instance."""
        t = self.problem.top_truth()[inst].astype(np.float64)
        if self.lie:
            return np.asarray(1.0 - t)
        th = self.rows(inst)
        return sigmoid(th[:, 3] + th[:, 4] * (2.0 * t - 1.0))

    def stated(self, inst: np.ndarray, k: int, node: np.ndarray, c: np.ndarray) -> np.ndarray:
        """P(every possible stated vector), shape (n, 2^q) (outcome order of core.rules)."""
        t = self.problem.children_of(self.problem.truth, inst, k, node).astype(np.float64)
        th = self.rows(inst)
        one = sigmoid(
            th[:, :1] + th[:, 1:2] * (2.0 * t - 1.0) + th[:, 2:3] * (2.0 * c[:, None] - 1.0)
        )
        bits = outcome_bits(self.problem.width)[None, :, :]
        each = np.where(bits == 1, one[:, None, :], 1.0 - one[:, None, :])
        return np.asarray(np.prod(each, axis=2))


@dataclass
class NaiveResult:
    payoff: np.ndarray  # expected payoff per instance
    win: np.ndarray  # P(the prover wins) per instance
    accuracy: np.ndarray  # P(the stated top value is the truth) per instance


def _leaf(judge: OracleJudge, inst: np.ndarray, node: np.ndarray, c: np.ndarray) -> np.ndarray:
    po = judge.prob_true(inst, node)
    return np.asarray(po * scoring.naive_payoff(1, c) + (1.0 - po) * scoring.naive_payoff(0, c))


def exact_learned_naive(
    problem: TreeProblem, prover: LearnedNaiveProver, challenger: EstimatorChallenger
) -> NaiveResult:
    """The exact expected payoff of the learned prover against ``challenger``."""
    n, q = problem.n, problem.width
    all_inst = np.arange(n)
    p_one = prover.top(all_inst)
    truth = problem.top_truth()
    accuracy = np.where(truth == 1, p_one, 1.0 - p_one)
    inst = np.concatenate([all_inst, all_inst])
    c = np.concatenate([np.ones(n, dtype=np.int64), np.zeros(n, dtype=np.int64)])
    w = np.concatenate([p_one, 1.0 - p_one])
    p = challenger.estimator.top(inst)
    node = np.zeros(len(inst), dtype=np.int64)
    broken = np.zeros(n)
    bits = outcome_bits(q).astype(np.int64)
    for k in range(problem.depth, 0, -1):
        probs = prover.stated(inst, k, node, c)  # (rows, 2^q)
        ok_rule = problem.rule(k).table[None, :].astype(np.int64) == c[:, None]
        lost = (w[:, None] * probs * ~ok_rule).sum(axis=1)
        broken += np.bincount(inst, weights=lost, minlength=n)
        rows, outs = np.nonzero(ok_rule & (w[:, None] * probs > 0))
        claimed = bits[outs]
        marg = challenger.marginals(inst[rows], k, node[rows], p[rows])
        ni, nn, nc, npp, nw = [], [], [], [], []
        for j, pj in challenger.challenge(claimed, marg):
            ww = w[rows] * probs[rows, outs] * pj
            keep = ww > 0
            ni.append(inst[rows][keep])
            nn.append(node[rows][keep] * q + j[keep])
            nc.append(claimed[np.flatnonzero(keep), j[keep]])
            npp.append(marg[np.flatnonzero(keep), j[keep]])
            nw.append(ww[keep])
        (inst, node, c), p, w = _merge(
            [np.concatenate(ni), np.concatenate(nn), np.concatenate(nc)],
            np.concatenate(npp),
            np.concatenate(nw),
        )
    judge = OracleJudge(problem)
    leaf = np.bincount(inst, weights=w * _leaf(judge, inst, node, c), minlength=n)
    payoff = np.asarray(leaf + RULE_BROKEN * broken, dtype=np.float64)
    po = judge.prob_true(inst, node)
    won = w * np.where(c == 1, po, 1.0 - po)
    return NaiveResult(payoff, np.bincount(inst, weights=won, minlength=n), accuracy)


def mean(values: np.ndarray) -> float:
    return math.fsum(values.tolist()) / len(values)
