"""Combination rules M_D: evaluation, exact probability, and the stability programme.

The grammar and the truth tables live in :mod:`llmdebate.core.rule_grammar` (below the schemas);
this module compiles a :class:`~llmdebate.core.schemas.CombinationRule` with it and adds B's
conditional probabilities, the exact P[M_D = 1] and the worst adaptive ε-perturbation
(Definition 5.3).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from llmdebate.core.rule_grammar import (
    MAX_WIDTH,
    CompiledRule,
    compile_table,
    outcome_bits,
    outcome_index,
)
from llmdebate.core.schemas import CombinationRule
from llmdebate.errors import RuleError

__all__ = [
    "MAX_WIDTH",
    "CompiledRule",
    "CondProbs",
    "Stability",
    "compile_rule",
    "outcome_bits",
    "outcome_index",
    "probability_true",
    "stability",
]


def compile_rule(rule: CombinationRule, q: int) -> CompiledRule:
    """Compile a rule for q subclaims; a bad rule raises :class:`RuleError` with one line."""
    return compile_table(rule.kind, rule.k, rule.expr, q)


# ---------------------------------------------------------------------------- conditional probs


@dataclass(frozen=True)
class CondProbs:
    """B's sequential conditional probabilities b_i(z_<i) at every prefix.

    ``levels[i]`` has shape (2^i,): entry t is b_{i+1} given the prefix z_1..z_i of index t.
    """

    levels: tuple[np.ndarray, ...]

    @property
    def q(self) -> int:
        return len(self.levels)

    @staticmethod
    def from_levels(levels: Sequence[Sequence[float]]) -> CondProbs:
        arrs = []
        for i, lv in enumerate(levels):
            a = np.asarray(lv, dtype=np.float64)
            if a.shape != (1 << i,):
                raise RuleError(f"level {i} of a probability table needs {1 << i} entries")
            # in Python: numpy's reductions cost more than the few entries they check (NaN
            # fails the comparison)
            if not all(0.0 <= v <= 1.0 for v in a.tolist()):
                raise RuleError(f"level {i} of a probability table has a value outside [0, 1]")
            arrs.append(a)
        return CondProbs(tuple(arrs))

    @staticmethod
    def independent(p: Sequence[float]) -> CondProbs:
        """b_i does not depend on earlier outcomes."""
        return CondProbs.from_levels([[float(v)] * (1 << i) for i, v in enumerate(p)])

    @staticmethod
    def from_function(q: int, fn: Callable[[int, tuple[int, ...]], float]) -> CondProbs:
        """``fn(i, prefix)`` gives b_{i+1} for a prefix of length i (0-based i)."""
        bits = outcome_bits(q) if q else np.zeros((1, 0), dtype=np.int8)
        levels = []
        for i in range(q):
            # prefixes of length i are the leading i bits of every (2^(q-i))-th outcome
            rows = bits[:: 1 << (q - i), :i] if i else np.zeros((1, 0), dtype=np.int8)
            levels.append([fn(i, tuple(int(v) for v in row)) for row in rows])
        return CondProbs.from_levels(levels)

    @staticmethod
    def from_joint(joint: np.ndarray) -> CondProbs:
        """Conditionals of a distribution over the 2^q outcomes (0/0 read as 1/2)."""
        joint = np.asarray(joint, dtype=np.float64)
        q = int(joint.size).bit_length() - 1
        if joint.size != 1 << q:
            raise RuleError("a joint distribution needs 2^q entries")
        levels: list[np.ndarray] = []
        mass = joint
        marg = [mass]
        for _ in range(q):
            mass = mass.reshape(-1, 2).sum(axis=1)
            marg.append(mass)
        # marg[j] has 2^(q-j) entries: the mass of every prefix of length q-j
        for i in range(q):
            child = marg[q - i - 1].reshape(-1, 2)  # prefixes of length i+1, grouped by parent
            tot = child.sum(axis=1)
            with np.errstate(invalid="ignore", divide="ignore"):
                b = np.where(tot > 0, child[:, 1] / np.where(tot > 0, tot, 1.0), 0.5)
            levels.append(np.clip(b, 0.0, 1.0))
        return CondProbs(tuple(levels))

    def at(self, prefix: Sequence[int]) -> float:
        """b_{i+1} for the given prefix of length i."""
        return float(self.levels[len(prefix)][outcome_index(prefix)])

    def joint(self) -> np.ndarray:
        """P(z) for every outcome index, shape (2^q,)."""
        prob = np.ones(1)
        for b in self.levels:
            prob = np.stack([prob * (1.0 - b), prob * b], axis=1).reshape(-1)
        return prob

    def to_lists(self) -> list[list[float]]:
        return [[float(v) for v in lv] for lv in self.levels]


def probability_true(rule: CompiledRule, probs: CondProbs) -> float:
    """Exact P[M_D(z) = 1] with z_i ~ Bernoulli(b_i(z_<i)) drawn in order."""
    if probs.q != rule.q:
        raise RuleError(f"rule over {rule.q} subclaims given probabilities for {probs.q}")
    return float(np.dot(probs.joint(), rule.table))


# ---------------------------------------------------------------------------- stability


@dataclass(frozen=True)
class Stability:
    """The worst adaptive ε-perturbation of the conditional probabilities (Definition 5.3)."""

    probability: float  # P[M_D = 1] at the given probabilities
    highest: float  # sup over perturbations of P[M_D = 1]
    lowest: float  # inf over perturbations
    sensitivity: float  # max(highest - probability, probability - lowest)
    epsilon: float
    rho: float

    @property
    def bound(self) -> float:
        return self.rho * self.epsilon

    @property
    def stable(self) -> bool:
        """(ε,ρ)-stable: every perturbation moves P[M_D = 1] by less than ρ·ε.

        ``sensitivity`` is the supremum over the closed ball |q_i - b_i| <= ε; the definition
        uses the open ball, whose changes stay below that supremum, so ``sensitivity < ρε``
        is a sufficient test (exact unless the supremum equals ρε to the last bit).
        """
        return self.sensitivity < self.bound


def stability(rule: CompiledRule, probs: CondProbs, epsilon: float, rho: float) -> Stability:
    """Exact worst-case perturbation by dynamic programming over outcome prefixes, O(2^q).

    At each prefix the adversary picks q_i in [b_i - ε, b_i + ε] ∩ [0, 1]; the value is linear
    in q_i, so an endpoint is optimal, and the choice may depend on the prefix (adaptive).
    """
    if probs.q != rule.q:
        raise RuleError(f"rule over {rule.q} subclaims given probabilities for {probs.q}")
    hi = rule.table.astype(np.float64)
    lo = hi.copy()
    for b in reversed(probs.levels):
        up = np.minimum(b + epsilon, 1.0)
        down = np.maximum(b - epsilon, 0.0)
        h0, h1 = hi[0::2], hi[1::2]
        l0, l1 = lo[0::2], lo[1::2]
        hi = np.maximum(h0 + up * (h1 - h0), h0 + down * (h1 - h0))
        lo = np.minimum(l0 + up * (l1 - l0), l0 + down * (l1 - l0))
    p = probability_true(rule, probs)
    high, low = float(hi[0]), float(lo[0])
    return Stability(
        probability=p,
        highest=high,
        lowest=low,
        sensitivity=max(high - p, p - low, 0.0),
        epsilon=epsilon,
        rho=rho,
    )
