"""Judges at the leaf: the oracle and the noisy oracle (errs with probability η)."""

from __future__ import annotations

import numpy as np

from llmdebate.formal.problems.problem import TreeProblem


class OracleJudge:
    """P[O = 1] for a leaf: its truth, flipped with probability ``noise`` (η)."""

    def __init__(self, problem: TreeProblem, noise: float | None = None):
        self.problem = problem
        self.noise = problem.judge_noise if noise is None else noise
        self.name = "oracle" if self.noise == 0 else f"noisy-oracle({self.noise:g})"

    def prob_true(self, inst: np.ndarray, node: np.ndarray) -> np.ndarray:
        g = self.problem.truth[0][inst, node].astype(np.float64)
        return np.asarray(g * (1.0 - self.noise) + (1.0 - g) * self.noise)
