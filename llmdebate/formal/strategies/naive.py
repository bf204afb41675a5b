"""Naive recursive debate (Irving et al. 2018): provers that state subclaim values, challengers.

The prover states a value for every subclaim (its beliefs: the truth for the honest prover, the
wrong top answer defended with the fewest changes for the dishonest one, so the stated values
always satisfy the rule). The challenger derives its choice from an estimator: it challenges
argmax_i |claimed_i - b_i| with b_i B's marginal probability P(z_i = 1) under B's joint for the
current claim, ties broken uniformly at random. B's probability for the next claim is the
marginal of the challenged subclaim. With the calibrated-ignorant estimator the challenger is
"an equally blind opponent": it cannot locate the factor any better than by guessing.
"""

from __future__ import annotations

import numpy as np

from llmdebate.formal.problems.problem import TreeProblem, believed_values
from llmdebate.formal.strategies.alternatives import Alternatives
from llmdebate.formal.strategies.estimators import EstimatorPolicy
from llmdebate.formal.tables import joint_from_levels, marginals

TIE_TOLERANCE = 1e-12


class NaiveProverPolicy:
    """States ``values`` (truth or beliefs) for every claim."""

    def __init__(self, problem: TreeProblem, values: list[np.ndarray], name: str):
        self.problem, self.values, self.name = problem, values, name

    def claimed(self, inst: np.ndarray, k: int, node: np.ndarray) -> np.ndarray:
        return np.asarray(self.values[k][inst, node].astype(np.int64))

    def children(self, inst: np.ndarray, k: int, node: np.ndarray) -> np.ndarray:
        return self.problem.children_of(self.values, inst, k, node).astype(np.int64)


def naive_honest(problem: TreeProblem) -> NaiveProverPolicy:
    return NaiveProverPolicy(problem, problem.truth, "honest")


def naive_dishonest(problem: TreeProblem) -> NaiveProverPolicy:
    return NaiveProverPolicy(
        problem, believed_values(problem, 1 - problem.top_truth()), "dishonest"
    )


class EstimatorChallenger:
    """Challenge the subclaim whose stated value is furthest from B's marginal."""

    def __init__(self, estimator: EstimatorPolicy):
        self.estimator = estimator
        self.name = f"challenger[{estimator.name}]"

    def marginals(self, inst: np.ndarray, k: int, node: np.ndarray, p: np.ndarray) -> np.ndarray:
        return marginals(joint_from_levels(self.estimator.levels(inst, k, node, p)))

    def challenge(self, claimed: np.ndarray, marg: np.ndarray) -> Alternatives:
        """Alternatives over indices: uniform over the maximisers of |claimed_i - b_i|."""
        gap = np.abs(claimed - marg)
        ties = gap >= gap.max(axis=1, keepdims=True) - TIE_TOLERANCE
        prob = ties / ties.sum(axis=1, keepdims=True)
        n, q = claimed.shape
        return [(np.full(n, c, dtype=np.int64), prob[:, c]) for c in range(q)]
