"""Prover policies for prover-estimator debate, vectorised over debates.

* :class:`BeliefProver` is the strategy of Appendix A.3, eq. (13), run on a belief function g:
  a = g(x); if |p_d - a| <= ε every direction is 0 (rest_zero); otherwise
  s_k = +1 if g(ŷ_k) - p_k > ε, -1 if g(ŷ_k) - p_k < -ε, else 0; recurse on
  j = argmax_i |b_i - g(y_i)| (first index on ties). Comparisons use the explicit tolerance
  :data:`TIE_TOLERANCE`: two gaps within it are a tie (|0.7 - 1| and |0.3 - 0| are equal, though
  their floating-point values differ), and a difference within it of ε is not outside the
  dead zone, so the values are those of exact arithmetic. With g the truth it is the honest prover
  of Lemma A.5; with the beliefs of :func:`believed_values` (a wrong top answer defended with
  the fewest changes) it is the dishonest prover, whose directions are the ones that maximise
  its reward under its own false beliefs.
* :func:`honest_no_dead_zone`: the same on the truth with no dead zone (ε = 0 in A's decisions).
* :class:`RandomProver` answers, points and recurses uniformly at random.
* :class:`LastIndexProver` is the counterexample of docs/protocol.md: it defends the wrong
  answer, points 0 in every round k >= 1, always recurses on the last subclaim (an index fixed
  before any draw), and at the leaf points +1 when p_0 < 1/2 and 0 otherwise.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Protocol

import numpy as np

from llmdebate.formal.problems.problem import TreeProblem, believed_values
from llmdebate.formal.strategies.alternatives import Alternatives, deterministic, uniform

TIE_TOLERANCE = 1e-9


class RoundLike(Protocol):
    """What a prover may read of a round (:class:`llmdebate.formal.variants.RoundView`)."""

    path: np.ndarray
    nextp: np.ndarray
    marg: np.ndarray


def first_argmax(values: np.ndarray) -> np.ndarray:
    """Per row, the first index whose value is within :data:`TIE_TOLERANCE` of the row's max."""
    n, q = values.shape
    cols = np.array(values.T, dtype=np.float64)  # one contiguous column per index
    thr = cols[0].copy()
    for c in cols[1:]:
        np.maximum(thr, c, out=thr)  # the row's max, column by column
    thr -= TIE_TOLERANCE
    out = np.full(n, q - 1, dtype=np.int64)
    for i in range(q - 2, -1, -1):  # the last write is the first index within the tolerance
        out[cols[i] >= thr] = i
    return out


def eq13_direction(g: np.ndarray, p: np.ndarray, epsilon: float) -> np.ndarray:
    """Eq. (13)'s s_k: +1 if g - p > ε, -1 if g - p < -ε, else 0 (ε compared with tolerance)."""
    diff = g - p
    up, down = diff > epsilon + TIE_TOLERANCE, diff < -epsilon - TIE_TOLERANCE
    return np.where(up, 1, np.where(down, -1, 0)).astype(np.int64)


class ProverPolicy(ABC):
    """The decisions of prover A for a batch of debates."""

    name = "prover"

    @abstractmethod
    def answer(self, inst: np.ndarray) -> Alternatives:
        """A's top answer a for each instance."""

    def stops(self, inst: np.ndarray, p: np.ndarray, a: np.ndarray) -> np.ndarray:
        """True where A sets every direction to 0 after seeing p_d (rest_zero at k = d)."""
        return np.zeros(len(inst), dtype=bool)

    @abstractmethod
    def direction(self, inst: np.ndarray, k: int, node: np.ndarray, p: np.ndarray) -> Alternatives:
        """s_k at the current claim (node) given B's p_k."""

    @abstractmethod
    def choose(
        self, inst: np.ndarray, k: int, node: np.ndarray, b: np.ndarray, z: np.ndarray
    ) -> Alternatives:
        """Recursion index given B's path probabilities b (n, q) and the draws z (n, q)."""

    def choose_rows(
        self,
        inst: np.ndarray,
        k: int,
        node: np.ndarray,
        view: RoundLike,
        rep: np.ndarray,
        z: np.ndarray,
    ) -> Alternatives:
        """:meth:`choose` for the rows (debate ``rep``, draws z) of a round's view: by default
        with b read along the drawn path (eq. 13's argmax reads every b_i). A policy may also
        read ``view.nextp``: what the next round would receive for each index."""
        q = z.shape[1]
        weights = 1 << np.arange(q - 1, -1, -1, dtype=np.int64)
        rows = rep * (1 << q) + z.astype(np.int64) @ weights
        b = view.path.reshape(-1, q)[rows]
        return self.choose(inst[rep], k, node[rep], b, z)

    def choose_drawn(
        self,
        inst: np.ndarray,
        k: int,
        node: np.ndarray,
        b: np.ndarray,
        nextp: np.ndarray,
        z: np.ndarray,
    ) -> Alternatives:
        """:meth:`choose_rows` for one drawn outcome per debate (the Monte Carlo): b (n, q)
        along the drawn path, ``nextp`` (n, q) what the next round would receive for each
        index. By default :meth:`choose`; a policy that overrides :meth:`choose_rows` to read
        ``nextp`` overrides this too (the Monte Carlo otherwise builds the whole view)."""
        return self.choose(inst, k, node, b, z)

    def commit(self, inst: np.ndarray, k: int, node: np.ndarray, marg: np.ndarray) -> Alternatives:
        """Recursion index chosen before the draws (committing variants), seeing B's marginals.

        By default :meth:`choose` with b = the marginals and every z_i = -1 (not drawn).
        """
        return self.choose(inst, k, node, marg, np.full(marg.shape, -1, dtype=np.int64))


class BeliefProver(ProverPolicy):
    """Eq. (13) with belief function ``values`` (truth: honest; false beliefs: dishonest)."""

    def __init__(self, problem: TreeProblem, values: list[np.ndarray], epsilon: float, name: str):
        self.problem, self.values, self.epsilon, self.name = problem, values, epsilon, name

    def answer(self, inst: np.ndarray) -> Alternatives:
        return deterministic(self.values[self.problem.depth][inst, 0].astype(np.int64))

    def stops(self, inst: np.ndarray, p: np.ndarray, a: np.ndarray) -> np.ndarray:
        return np.asarray(np.abs(p - a) <= self.epsilon + TIE_TOLERANCE)

    def direction(self, inst: np.ndarray, k: int, node: np.ndarray, p: np.ndarray) -> Alternatives:
        return deterministic(eq13_direction(self.values[k][inst, node], p, self.epsilon))

    def choose(
        self, inst: np.ndarray, k: int, node: np.ndarray, b: np.ndarray, z: np.ndarray
    ) -> Alternatives:
        g = self.problem.children_of(self.values, inst, k, node)
        return deterministic(first_argmax(np.abs(b - g)))


class RandomProver(ProverPolicy):
    """Uniformly random answer, directions and recursion."""

    name = "random"

    def __init__(self, problem: TreeProblem):
        self.problem = problem

    def answer(self, inst: np.ndarray) -> Alternatives:
        return uniform([0, 1], len(inst))

    def direction(self, inst: np.ndarray, k: int, node: np.ndarray, p: np.ndarray) -> Alternatives:
        return uniform([-1, 0, 1], len(inst))

    def choose(
        self, inst: np.ndarray, k: int, node: np.ndarray, b: np.ndarray, z: np.ndarray
    ) -> Alternatives:
        return uniform(list(range(self.problem.width)), len(inst))


class LastIndexProver(ProverPolicy):
    """Wrong answer; s_k = 0 for k >= 1; j = q - 1 always; s_0 = 1[p_0 < 1/2]."""

    name = "last-index"

    def __init__(self, problem: TreeProblem):
        self.problem = problem

    def answer(self, inst: np.ndarray) -> Alternatives:
        return deterministic(1 - self.problem.top_truth()[inst].astype(np.int64))

    def direction(self, inst: np.ndarray, k: int, node: np.ndarray, p: np.ndarray) -> Alternatives:
        if k > 0:
            return deterministic(np.zeros(len(inst), dtype=np.int64))
        return deterministic((p < 0.5).astype(np.int64))

    def choose(
        self, inst: np.ndarray, k: int, node: np.ndarray, b: np.ndarray, z: np.ndarray
    ) -> Alternatives:
        return deterministic(np.full(len(inst), self.problem.width - 1, dtype=np.int64))


def honest(problem: TreeProblem, epsilon: float) -> BeliefProver:
    return BeliefProver(problem, problem.truth, epsilon, "honest")


def honest_no_dead_zone(problem: TreeProblem, epsilon: float) -> BeliefProver:
    """Eq. (13) on the truth with ε = 0 in A's own decisions: it points whenever p_k differs
    from the truth and stops only where p_d equals its answer (the protocol's ε, in r, stays)."""
    return BeliefProver(problem, problem.truth, 0.0, "honest-no-dead-zone")


def dishonest(problem: TreeProblem, epsilon: float) -> BeliefProver:
    lies = believed_values(problem, 1 - problem.top_truth())
    return BeliefProver(problem, lies, epsilon, "dishonest")
