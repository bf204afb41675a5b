"""A population of policies evaluated in one call: the problem's instances repeated.

Replica m of a problem with n instances holds instances m·n .. m·n + n - 1 (the same
instances in the same order), so a policy reads its parameters for a row as
``params[inst // n]`` and one exact evaluation gives every member's payoff.
"""

from __future__ import annotations

import numpy as np

from llmdebate.formal.problems.problem import TreeProblem
from llmdebate.formal.stable import subset


def replicate(problem: TreeProblem, count: int) -> TreeProblem:
    """``problem`` with its instances repeated ``count`` times (replica-major)."""
    return subset(problem, np.tile(np.arange(problem.n), count))


def per_member(values: np.ndarray, count: int) -> np.ndarray:
    """Mean of a per-instance array over each replica's instances, shape (count,)."""
    return np.asarray(values.reshape(count, -1).mean(axis=1))


class Parametrised:
    """Parameters (members, dim) shared by the rows of one replica."""

    dim = 0

    def __init__(self, n_base: int):
        self.n_base = n_base
        self.params = np.zeros((1, self.dim))

    def set_params(self, params: np.ndarray) -> None:
        assert params.ndim == 2 and params.shape[1] == self.dim, params.shape
        self.params = params

    def rows(self, inst: np.ndarray) -> np.ndarray:
        """Each row's parameters, shape (len(inst), dim)."""
        return np.asarray(self.params[inst // self.n_base])


def softmax(logits: np.ndarray) -> np.ndarray:
    z = logits - logits.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return np.asarray(e / e.sum(axis=-1, keepdims=True))


def sigmoid(x: np.ndarray) -> np.ndarray:
    return np.asarray(0.5 * (1.0 + np.tanh(0.5 * x)))
