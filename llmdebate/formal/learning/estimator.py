"""A learnable estimator: B's joint over the 2^q outcomes as a log-linear model.

B knows the truth T of the current claim and t of its subclaims (what the omniscient
estimator reads; it is free not to use it) and the probability p_k it was handed. Its joint
is h(z) ∝ exp(Σ_{c,e} W_k[c, e]·f_e·φ_c(z)) with state features f = (1, 2T − 1, 2p_k − 1,
(2T − 1)(2p_k − 1)) and outcome features φ(z) = (agreement with t, mean of 2z − 1, its
square, 2·M_D(z) − 1): agreement makes B accurate, the square correlates the outcomes
(exchangeably), and M_D moves E[M_D] away from or towards p_k, so the family holds the
omniscient, calibrated, uniform and correlated estimators. Its top number is
p_d = σ(w₀ + w₁·(2T − 1)). Parameters zero is the uniform estimator (every b = 1/2).
"""

from __future__ import annotations

import numpy as np

from llmdebate.core.rules import outcome_bits
from llmdebate.formal.problems.problem import TreeProblem
from llmdebate.formal.strategies.estimators import EstimatorPolicy
from llmdebate.formal.tables import Levels, levels_from_joint

from .replicas import Parametrised, sigmoid, softmax

STATE_FEATURES = 4
OUTCOME_FEATURES = 4
PER_LEVEL = STATE_FEATURES * OUTCOME_FEATURES


def estimator_dim(depth: int) -> int:
    return 2 + PER_LEVEL * depth


class LearnedEstimator(Parametrised, EstimatorPolicy):
    """The estimator of the module docstring, one weight matrix per level k = 1..d."""

    name = "learned"

    def __init__(self, problem: TreeProblem, n_base: int):
        self.dim = estimator_dim(problem.depth)
        Parametrised.__init__(self, n_base)
        self.problem = problem
        q = problem.width
        self.signs = 2.0 * outcome_bits(q).astype(np.float64) - 1.0  # (2^q, q)
        self.bias = self.signs.mean(axis=1)
        self.polar = self.bias**2
        self.rules = [np.empty(0)] + [
            2.0 * problem.rule(k).table.astype(np.float64) - 1.0
            for k in range(1, problem.depth + 1)
        ]

    def top(self, inst: np.ndarray) -> np.ndarray:
        t = self.problem.top_truth()[inst].astype(np.float64)
        w = self.rows(inst)[:, :2]
        return sigmoid(w[:, 0] + w[:, 1] * (2.0 * t - 1.0))

    def joint(self, inst: np.ndarray, k: int, node: np.ndarray, p: np.ndarray) -> np.ndarray:
        big_t = 2.0 * self.problem.truth[k][inst, node].astype(np.float64) - 1.0
        t = 2.0 * self.problem.children_of(self.problem.truth, inst, k, node) - 1.0
        sp = 2.0 * p - 1.0
        f = np.stack([np.ones_like(sp), big_t, sp, big_t * sp], axis=1)  # (n, 4)
        start = 2 + PER_LEVEL * (k - 1)
        w = self.rows(inst)[:, start : start + PER_LEVEL].reshape(-1, OUTCOME_FEATURES, 4)
        coef = np.einsum("nce,ne->nc", w, f)  # (n, outcome features)
        agree = (t[:, None, :] * self.signs[None, :, :]).mean(axis=2)  # (n, 2^q), no BLAS
        logits = (
            coef[:, :1] * agree
            + coef[:, 1:2] * self.bias[None, :]
            + coef[:, 2:3] * self.polar[None, :]
            + coef[:, 3:4] * self.rules[k][None, :]
        )
        return softmax(logits)

    def levels(self, inst: np.ndarray, k: int, node: np.ndarray, p: np.ndarray) -> Levels:
        return levels_from_joint(self.joint(inst, k, node, p))
