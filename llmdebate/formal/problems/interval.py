"""The obfuscated-arguments example of Section 7: "N has no divisor in [lo, hi)".

Instances are semiprimes N = p·p' whose small prime factor p lies in the searched range
[2, 2 + q^d·L) and whose large factor p' lies above it, so exactly one leaf interval (of length
L) contains a divisor. The leaf holding p is spread uniformly over the q^d leaves across
instances (stratified, then shuffled), so an estimator that cannot factor N believes the factor
to be uniform over the leaves: that prior is what :attr:`TreeProblem.prior` records.
The top claim ("N is prime") is false; every claim is checked by trial division.
"""

from __future__ import annotations

import numpy as np

from llmdebate.core.rules import outcome_bits
from llmdebate.errors import ConfigError
from llmdebate.formal.problems.problem import TreeProblem, propagate_up

LOW = 2
MAX_RANGE = 1 << 22


def _primes_below(n: int) -> np.ndarray:
    sieve = np.ones(n, dtype=bool)
    sieve[:2] = False
    for i in range(2, int(n**0.5) + 1):
        if sieve[i]:
            sieve[i * i :: i] = False
    return np.flatnonzero(sieve)


def leaf_size_for(depth: int, width: int) -> int:
    """The smallest power of two (>= 4) such that every leaf interval contains a prime."""
    leaves = width**depth
    size = 4
    while leaves * size <= MAX_RANGE:
        hi = LOW + leaves * size
        primes = _primes_below(hi)
        counts = np.bincount((primes - LOW) // size, minlength=leaves)
        if np.all(counts > 0):
            return size
        size *= 2
    raise ConfigError(
        f"interval problem: width^depth = {leaves} leaves is too many (range too big)"
    )


def interval_prior(depth: int, width: int, k: int) -> np.ndarray:
    """Children truths at a level-k node when the factor's leaf is uniform over all leaves.

    A child is dirty (truth 0) with probability q^(k-1)/q^d; at most one child is dirty.
    """
    q = width
    bits = outcome_bits(q)
    zeros = q - bits.sum(axis=1)
    child_mass = float(q ** (k - 1)) / float(q**depth)
    prior = np.where(zeros == 1, child_mass, 0.0)
    prior[zeros == 0] = 1.0 - q * child_mass
    return prior


def make_interval(
    depth: int, width: int, instances: int, seed: int, leaf_size: int | None = None
) -> TreeProblem:
    """Semiprimes with the small factor in a uniformly spread leaf (Section 7)."""
    if instances < 1:
        raise ConfigError(f"instances must be >= 1 (got {instances})")
    q, d = width, depth
    leaves = q**d
    size = leaf_size or leaf_size_for(d, q)
    hi = LOW + leaves * size
    rng = np.random.default_rng(np.random.SeedSequence([seed, 1]))
    primes = _primes_below(hi)
    big = _primes_below(4 * hi + 1000)
    big = big[big >= hi]
    target = (np.arange(instances) * leaves) // instances + rng.integers(
        0, max(1, leaves // instances), size=instances
    )
    target = rng.permutation(np.minimum(target, leaves - 1))
    ns, info = [], []
    for leaf in target:
        lo_l = LOW + int(leaf) * size
        cands = primes[(primes >= lo_l) & (primes < lo_l + size)]
        p = int(rng.choice(cands))
        p2 = int(rng.choice(big))
        ns.append(p * p2)
        info.append({"N": p * p2, "p": p, "p2": p2, "leaf": int(leaf)})
    nums = np.arange(LOW, hi, dtype=np.int64)
    n_arr = np.asarray(ns, dtype=np.int64)
    divides = (n_arr[:, None] % nums[None, :]) == 0  # trial division by the judge
    leaf_truth = (~divides.reshape(instances, leaves, size).any(axis=2)).astype(np.int8)
    gates = ["", *(["and"] * d)]
    truth = propagate_up(leaf_truth, gates, q)
    prior = [np.empty(0)] + [interval_prior(d, q, k) for k in range(1, d + 1)]

    def describe(inst: int, k: int, node: int) -> str:
        span = size * q**k
        lo = LOW + node * span
        return f"{ns[inst]} has no divisor in [{lo}, {lo + span})"

    return TreeProblem(
        name="interval",
        depth=d,
        width=q,
        gates=gates,
        truth=truth,
        prior=prior,
        prior_top=0.0,
        instances=[{**i, "lo": LOW, "hi": hi, "leaf_size": size} for i in info],
        describe=describe,
    )
