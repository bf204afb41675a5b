"""Majority over independent support (Definition 8.2, Theorem 8.3, Appendix C).

An instance is a pair (x, r): the hidden answer X* ~ Bernoulli(1/2) and the oracle randomness r,
which fixes each of the κ^d pieces of supporting evidence to X* flipped independently with
probability η (``noise``). Every claim is answered by MAJORITY over κ = q independent copies one
level down, so the leaf judgements are the (deterministic, given r) evidence bits and the judge
is exact on L'. With κ large enough the decomposition is (ε,ρ)-stable at the true probabilities.
"""

from __future__ import annotations

import numpy as np

from llmdebate.errors import ConfigError
from llmdebate.formal.problems.problem import (
    TreeProblem,
    product_prior,
    propagate_up,
    rule_probability,
)


def make_majority(
    depth: int, width: int, instances: int, seed: int, noise: float = 0.1
) -> TreeProblem:
    """Majority-of-κ supports at every level, evidence correct with probability 1 - η."""
    if not 0.0 <= noise < 0.5:
        raise ConfigError(f"noise must satisfy 0 <= noise < 1/2 (got {noise})")
    if instances < 1:
        raise ConfigError(f"instances must be >= 1 (got {instances})")
    q, d = width, depth
    gates = ["", *(["majority"] * d)]
    rng = np.random.default_rng(np.random.SeedSequence([seed, 3]))
    answer = rng.integers(0, 2, size=instances).astype(np.int8)
    flips = (rng.random((instances, q**d)) < noise).astype(np.int8)
    leaves = answer[:, None] ^ flips
    truth = propagate_up(leaves, gates, q)
    correct = [1.0 - noise]  # P(a level-k majority equals X*)
    for _k in range(1, d + 1):
        correct.append(rule_probability("majority", correct[-1], q))
    prior = [np.empty(0)] + [
        0.5 * product_prior(correct[k - 1], q) + 0.5 * product_prior(1.0 - correct[k - 1], q)
        for k in range(1, d + 1)
    ]

    def describe(inst: int, k: int, node: int) -> str:
        if k == 0:
            return f"support {node} of instance {inst} says the answer is yes"
        return f"the majority of supports in block {node} at level {k} of instance {inst} says yes"

    return TreeProblem(
        name="majority",
        depth=d,
        width=q,
        gates=gates,
        truth=truth,
        prior=prior,
        prior_top=0.5,
        instances=[{"answer": int(a)} for a in answer],
        describe=describe,
    )


def correlated_support_joint(kappa: int, eta: float, c: float) -> np.ndarray:
    """P(which of κ supports are right) when they share one noise source (Definition 8.1's
    independence caveat): with probability c every support copies one shared draw (right
    w.p. 1 - η), otherwise each is right independently w.p. 1 - η. Any two supports then
    have correlation c. Shape (2^κ,), outcome indices as in :mod:`llmdebate.core.rules`."""
    if not 0.0 <= c <= 1.0:
        raise ConfigError(f"correlation must satisfy 0 <= c <= 1 (got {c})")
    joint = (1.0 - c) * product_prior(1.0 - eta, kappa)
    joint[-1] += c * (1.0 - eta)
    joint[0] += c * eta
    return joint
