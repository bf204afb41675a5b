"""Estimator policies: B's p_d and conditional probabilities b_i(z_<i), vectorised.

* omniscient: the true 0/1 answers (independent across subclaims).
* calibrated-ignorant: the exact Bayesian posterior of an estimator who knows the instance
  distribution but cannot solve the hard part (for the interval problem: cannot factor N).
  Its p_d is the prior P[x true]; for the subclaims of ŷ_k it takes the prior over the children's
  truths, conditions it on ŷ_k being true with its own probability p_k (so E[M_D] = p_k: it is
  never inconsistent), i.e. joint(z) = p_k·P(z | M_D(z)=1) + (1-p_k)·P(z | M_D(z)=0), and reads
  b_i = P(z_i = 1 | z_<i) off that joint. For the interval problem this is "the factor is in ŷ_k
  with probability 1 - p_k, uniformly over its leaves".
* adversarial: the truth pushed towards the wrong side by a fixed ``bias`` (b = |g - bias|).
* :class:`Shrunk`: another estimator's every number shrunk towards a constant c,
  b' = (1 - λ)·b + λ·c (the class searched by :mod:`llmdebate.formal.best_response`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from llmdebate.formal.problems.problem import TreeProblem
from llmdebate.formal.tables import Levels, independent_levels, levels_from_joint

DEFAULT_BIAS = 0.3


class EstimatorPolicy(ABC):
    """B's numbers for a batch of debates (one current claim and its p_k per row)."""

    name = "estimator"

    @abstractmethod
    def top(self, inst: np.ndarray) -> np.ndarray:
        """p_d for each instance."""

    @abstractmethod
    def levels(self, inst: np.ndarray, k: int, node: np.ndarray, p: np.ndarray) -> Levels:
        """B's conditional probabilities at every prefix for the current claim of each row."""


class Omniscient(EstimatorPolicy):
    name = "omniscient"

    def __init__(self, problem: TreeProblem):
        self.problem = problem

    def top(self, inst: np.ndarray) -> np.ndarray:
        return np.asarray(self.problem.top_truth()[inst].astype(np.float64))

    def levels(self, inst: np.ndarray, k: int, node: np.ndarray, p: np.ndarray) -> Levels:
        g = self.problem.children_of(self.problem.truth, inst, k, node).astype(np.float64)
        return independent_levels(g)


class Adversarial(EstimatorPolicy):
    name = "adversarial"

    def __init__(self, problem: TreeProblem, bias: float = DEFAULT_BIAS):
        self.problem, self.bias = problem, bias

    def top(self, inst: np.ndarray) -> np.ndarray:
        return np.asarray(np.abs(self.problem.top_truth()[inst] - self.bias))

    def levels(self, inst: np.ndarray, k: int, node: np.ndarray, p: np.ndarray) -> Levels:
        g = self.problem.children_of(self.problem.truth, inst, k, node)
        return independent_levels(np.abs(g - self.bias))


def conditioned_priors(problem: TreeProblem, k: int) -> tuple[np.ndarray, np.ndarray]:
    """P(z | M_D(z) = 1) and P(z | M_D(z) = 0) under the level-k prior (uniform if 0/0)."""
    prior = problem.prior[k]
    table = problem.rule(k).table.astype(bool)
    out = []
    for mask in (table, ~table):
        mass = prior * mask
        tot = mass.sum()
        out.append(mass / tot if tot > 0 else mask / max(mask.sum(), 1))
    return out[0], out[1]


class CalibratedIgnorant(EstimatorPolicy):
    name = "calibrated-ignorant"

    def __init__(self, problem: TreeProblem):
        self.problem = problem
        self._cond = [None] + [conditioned_priors(problem, k) for k in range(1, problem.depth + 1)]

    def top(self, inst: np.ndarray) -> np.ndarray:
        return np.full(len(inst), float(self.problem.prior_top))

    def joint(self, k: int, p: np.ndarray) -> np.ndarray:
        true_part, false_part = self._cond[k]  # type: ignore[misc]
        return np.asarray(
            p[:, None] * true_part[None, :] + (1.0 - p)[:, None] * false_part[None, :]
        )

    def levels(self, inst: np.ndarray, k: int, node: np.ndarray, p: np.ndarray) -> Levels:
        return levels_from_joint(self.joint(k, p))


class Shrunk(EstimatorPolicy):
    """``base`` with every stated probability replaced by (1 - λ)·b + λ·c."""

    def __init__(self, base: EstimatorPolicy, lam: float, c: float):
        self.base, self.lam, self.c = base, lam, c
        self.name = f"shrunk({base.name}, λ={lam:g}, c={c:g})"

    def _shrink(self, v: np.ndarray) -> np.ndarray:
        return (1.0 - self.lam) * v + self.lam * self.c

    def top(self, inst: np.ndarray) -> np.ndarray:
        return self._shrink(self.base.top(inst))

    def levels(self, inst: np.ndarray, k: int, node: np.ndarray, p: np.ndarray) -> Levels:
        return [self._shrink(lv) for lv in self.base.levels(inst, k, node, p)]
