"""Decisions as finite distributions, so one strategy serves sampling and exact enumeration.

A strategy's decision for a batch of n debates is a list of alternatives ``(values, prob)``:
``values`` has shape (n,), ``prob`` is a scalar or an (n,) array, and the probabilities of a
row sum to 1. A deterministic strategy returns one alternative with probability 1.
"""

from __future__ import annotations

import numpy as np

Alternatives = list[tuple[np.ndarray, np.ndarray | float]]


def deterministic(values: np.ndarray) -> Alternatives:
    return [(np.asarray(values), 1.0)]


def uniform(options: list[int], n: int) -> Alternatives:
    return [(np.full(n, v, dtype=np.int64), 1.0 / len(options)) for v in options]


def sample(alts: Alternatives, rng: np.random.Generator, n: int) -> np.ndarray:
    """Draw one alternative per row."""
    if len(alts) == 1:
        return np.asarray(np.broadcast_to(alts[0][0], (n,)).copy())
    probs = np.stack([np.broadcast_to(np.asarray(pr, dtype=float), (n,)) for _, pr in alts], axis=1)
    vals = np.stack([np.broadcast_to(v, (n,)) for v, _ in alts], axis=1)
    u = rng.random(n)
    idx = np.minimum((np.cumsum(probs, axis=1) <= u[:, None]).sum(axis=1), len(alts) - 1)
    return np.asarray(vals[np.arange(n), idx])


def sample_one(alts: Alternatives, rng: np.random.Generator) -> int:
    """Draw one alternative for a single debate (the async adapters); no draw if deterministic."""
    if len(alts) == 1:
        return int(np.asarray(alts[0][0]).reshape(-1)[0])
    probs = np.array([float(np.asarray(pr).reshape(-1)[0]) for _, pr in alts])
    k = int(rng.choice(len(alts), p=probs / probs.sum()))
    return int(np.asarray(alts[k][0]).reshape(-1)[0])
