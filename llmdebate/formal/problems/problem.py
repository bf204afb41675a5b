"""Tree-shaped problem families whose truth is known at every node.

A problem of depth d and width q is a complete q-ary tree of claims: the top claim x sits at
level d, node ``node`` at level k has children ``node*q + c`` (c = 0..q-1) at level k-1, and the
leaves (level 0) are what the judge rules on. Every node at level k >= 1 is decomposed with the
same combination rule M_D (an ``at_least`` threshold rule: AND, OR or MAJORITY), and its truth is
M_D of its children's truths, so the decomposition is valid by construction (Section 5).

Each problem also carries the *prior* over the truth vector of a level-k node's children, i.e.
the distribution over instances that an estimator who cannot solve the hard part knows about;
:mod:`llmdebate.formal.strategies.estimators` builds the calibrated-ignorant estimator from it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from llmdebate.core.rules import CompiledRule, compile_rule, outcome_bits
from llmdebate.core.schemas import Claim, CombinationRule, Decomposition


def threshold_rule(kind: str, q: int) -> tuple[CombinationRule, int]:
    """A counting rule and its threshold t (M_D(z) = 1 iff at least t of the z_i are 1)."""
    if kind == "and":
        return CombinationRule(kind="and"), q
    if kind == "or":
        return CombinationRule(kind="or"), 1
    if kind == "majority":
        return CombinationRule(kind="majority"), q // 2 + 1
    raise ValueError(f"unknown gate kind {kind!r}")


@dataclass
class TreeProblem:
    """A finite distribution of instances (uniform weights) of one tree-shaped problem."""

    name: str
    depth: int
    width: int
    gates: list[str]  # gates[k] for k = 1..d (gates[0] unused: leaves have no rule)
    truth: list[np.ndarray]  # truth[k]: shape (n, q^(d-k)), int8
    prior: list[np.ndarray]  # prior[k]: P(children truths = z) at a level-k node, shape (2^q,)
    prior_top: float  # P(top claim true) over the instance distribution
    judge_noise: float = 0.0  # the judge errs with this probability at the leaves
    instances: list[dict[str, Any]] = field(default_factory=list)
    describe: Callable[[int, int, int], str] | None = None

    def __post_init__(self) -> None:
        q = self.width
        self._rules: list[CompiledRule | None] = [None]
        self._specs: list[CombinationRule | None] = [None]
        self.thresholds: list[int] = [0]
        for k in range(1, self.depth + 1):
            spec, t = threshold_rule(self.gates[k], q)
            self._specs.append(spec)
            self._rules.append(compile_rule(spec, q))
            self.thresholds.append(t)
        for k in range(self.depth + 1):
            assert self.truth[k].shape == (self.n, q ** (self.depth - k)), (k, self.truth[k].shape)

    # ------------------------------------------------------------------ structure
    @property
    def n(self) -> int:
        return int(self.truth[self.depth].shape[0])

    @property
    def weights(self) -> np.ndarray:
        return np.full(self.n, 1.0 / self.n)

    def rule(self, k: int) -> CompiledRule:
        rule = self._rules[k]
        assert rule is not None, "leaves have no combination rule"
        return rule

    def rule_spec(self, k: int) -> CombinationRule:
        spec = self._specs[k]
        assert spec is not None
        return spec

    def top_truth(self) -> np.ndarray:
        return self.truth[self.depth][:, 0]

    def children_of(
        self, values: list[np.ndarray], inst: np.ndarray, k: int, node: np.ndarray
    ) -> np.ndarray:
        """Values (e.g. truths or beliefs) of the children of (k, node): shape (len, q)."""
        level = values[k - 1]
        flat = level.reshape(-1)
        first = inst * level.shape[1] + node * self.width
        out = np.empty((len(first), self.width), dtype=level.dtype)
        for c in range(self.width):  # one gather per child: faster than a 2-D fancy index
            out[:, c] = flat.take(first + c)
        return out

    # ------------------------------------------------------------------ schema objects
    def claim(self, inst: int, k: int, node: int) -> Claim:
        text = self.describe(inst, k, node) if self.describe else f"{self.name} claim {k}:{node}"
        return Claim(
            text=text,
            id=f"{self.name}-{inst}-{k}-{node}",
            data={"instance": inst, "k": k, "node": node},
            truth=int(self.truth[k][inst, node]),
        )

    def decomposition(self, inst: int, k: int, node: int) -> Decomposition:
        subs = [self.claim(inst, k - 1, node * self.width + c) for c in range(self.width)]
        return Decomposition(subclaims=subs, rule=self.rule_spec(k))


def propagate_up(leaves: np.ndarray, gates: list[str], q: int) -> list[np.ndarray]:
    """Truth at every level from the leaves' truths, by the level's counting rule."""
    truth = [leaves.astype(np.int8)]
    for k in range(1, len(gates)):
        _, t = threshold_rule(gates[k], q)
        prev = truth[-1]
        counts = prev.reshape(prev.shape[0], -1, q).sum(axis=2)
        truth.append((counts >= t).astype(np.int8))
    return truth


def believed_values(problem: TreeProblem, top: np.ndarray) -> list[np.ndarray]:
    """Beliefs of a prover who defends ``top`` (per instance) while staying closest to the truth.

    Top-down, each node's believed children are the true children with the fewest flips that
    make the level's counting rule give the believed parent value (earliest children flipped
    first). A node believed at its true value keeps the truth in its whole subtree. For the
    interval problem with a wrong top answer this is "every subinterval is clean".
    """
    d, q = problem.depth, problem.width
    out: list[np.ndarray] = [np.empty(0)] * (d + 1)
    out[d] = top.astype(np.int8).reshape(-1, 1)
    for k in range(d, 0, -1):
        t = problem.thresholds[k]
        parent = out[k]  # (n, q^(d-k))
        child = problem.truth[k - 1].reshape(problem.n, -1, q).copy()  # (n, nodes, q)
        want = parent[:, :, None].astype(bool)
        ones = child.sum(axis=2, keepdims=True)
        # need more ones: flip the earliest zeros; need fewer: flip the earliest ones
        need_up = np.maximum(t - ones, 0) * want
        need_down = np.maximum(ones - t + 1, 0) * (~want)
        zero_rank = np.cumsum(child == 0, axis=2)
        one_rank = np.cumsum(child == 1, axis=2)
        flip_up = (child == 0) & (zero_rank <= need_up)
        flip_down = (child == 1) & (one_rank <= need_down)
        child = np.where(flip_up, 1, np.where(flip_down, 0, child))
        out[k - 1] = child.reshape(problem.n, -1).astype(np.int8)
    return out


def product_prior(pi: float, q: int) -> np.ndarray:
    """Independent children, each true with probability ``pi``."""
    bits = outcome_bits(q).astype(np.float64)
    return np.asarray(np.prod(np.where(bits == 1, pi, 1.0 - pi), axis=1))


def rule_probability(kind: str, pi: float, q: int) -> float:
    """P[M_D = 1] when the q inputs are independent Bernoulli(pi)."""
    spec, _ = threshold_rule(kind, q)
    return float(product_prior(pi, q) @ compile_rule(spec, q).table)
