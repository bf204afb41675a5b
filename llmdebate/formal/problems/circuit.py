"""Layered boolean circuits (Section 5): a tree of fan-in-q gates over oracle inputs.

Level k's gate is ``gates[k]`` (cycling AND, OR, MAJORITY by default); the 2^... leaves are
input bits drawn uniformly at random per instance, and the judge reads an input bit from the
oracle, erring with probability η (``noise``). Children of a gate use disjoint inputs, so the
prior over a gate's children truths is a product of Bernoulli(π_{k-1}) with π computed exactly.
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

DEFAULT_CYCLE = ("and", "or", "majority")


def make_circuit(
    depth: int,
    width: int,
    instances: int,
    seed: int,
    noise: float = 0.0,
    cycle: tuple[str, ...] = DEFAULT_CYCLE,
) -> TreeProblem:
    """Random input bits under a fixed layered circuit of depth d and fan-in q."""
    if not 0.0 <= noise < 0.5:
        raise ConfigError(f"noise must satisfy 0 <= noise < 1/2 (got {noise})")
    if instances < 1:
        raise ConfigError(f"instances must be >= 1 (got {instances})")
    q, d = width, depth
    gates = ["", *(cycle[(k - 1) % len(cycle)] for k in range(1, d + 1))]
    rng = np.random.default_rng(np.random.SeedSequence([seed, 2]))
    leaves = rng.integers(0, 2, size=(instances, q**d)).astype(np.int8)
    truth = propagate_up(leaves, gates, q)
    pi = [0.5]
    for k in range(1, d + 1):
        pi.append(rule_probability(gates[k], pi[-1], q))
    prior = [np.empty(0)] + [product_prior(pi[k - 1], q) for k in range(1, d + 1)]

    def describe(inst: int, k: int, node: int) -> str:
        if k == 0:
            return f"input bit {node} of circuit instance {inst} is 1"
        return f"gate {node} at layer {k} ({gates[k].upper()}) of circuit instance {inst} outputs 1"

    return TreeProblem(
        name="circuit",
        depth=d,
        width=q,
        gates=gates,
        truth=truth,
        prior=prior,
        prior_top=pi[d],
        judge_noise=noise,
        instances=[{"inputs": "".join(map(str, row[:64]))} for row in leaves],
        describe=describe,
    )
