"""Batched outcome tables: B's conditional probabilities for many debates at once.

The layout is that of :class:`llmdebate.core.rules.CondProbs`, with a leading batch axis:
``levels[i]`` has shape (n, 2^i) and entry ``[row, t]`` is b_{i+1} given the prefix
z_1..z_i of index t (z_1 most significant). A joint distribution has shape (n, 2^q).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from llmdebate.core.rules import outcome_bits

Levels = list[np.ndarray]


@lru_cache(maxsize=32)
def prefix_index(q: int) -> tuple[np.ndarray, ...]:
    """``prefix_index(q)[i][t]``: the index of the length-i prefix of outcome t."""
    t = np.arange(1 << q, dtype=np.int64)
    return tuple(t >> (q - i) for i in range(q))


def joint_from_levels(levels: Levels) -> np.ndarray:
    """P(z) for every outcome index, shape (n, 2^q) (batched ``CondProbs.joint``)."""
    n = levels[0].shape[0]
    prob = np.ones((n, 1))
    for b in levels:
        nxt = np.empty((n, 2 * prob.shape[1]))
        np.multiply(prob, 1.0 - b, out=nxt[:, 0::2])
        np.multiply(prob, b, out=nxt[:, 1::2])
        prob = nxt
    return prob


def levels_from_joint(joint: np.ndarray) -> Levels:
    """Conditionals of a batch of joints (batched ``CondProbs.from_joint``; 0/0 read as 1/2)."""
    n, size = joint.shape
    q = size.bit_length() - 1
    marg = [joint]
    mass = joint
    for _ in range(q):
        mass = mass.reshape(n, -1, 2).sum(axis=2)
        marg.append(mass)
    levels: Levels = []
    for i in range(q):
        child = marg[q - i - 1].reshape(n, -1, 2)
        tot = child.sum(axis=2)
        with np.errstate(invalid="ignore", divide="ignore"):
            b = np.where(tot > 0, child[:, :, 1] / np.where(tot > 0, tot, 1.0), 0.5)
        levels.append(np.clip(b, 0.0, 1.0))
    return levels


def independent_levels(p: np.ndarray) -> Levels:
    """Levels of independent subclaims: ``p`` has shape (n, q); b_i ignores the prefix."""
    _n, q = p.shape
    return [np.repeat(p[:, i : i + 1], 1 << i, axis=1) for i in range(q)]


def path_probabilities(levels: Levels) -> np.ndarray:
    """b_i along every outcome's own path, shape (n, 2^q, q): [row, t, i] = b_{i+1}(z_<i(t))."""
    q = len(levels)
    idx = prefix_index(q)
    out = np.empty((levels[0].shape[0], 1 << q, q))
    for i in range(q):
        out[:, :, i] = levels[i][:, idx[i]]
    return out


def marginals(joint: np.ndarray) -> np.ndarray:
    """P(z_i = 1) for every subclaim, shape (n, q)."""
    q = joint.shape[1].bit_length() - 1
    # a plain reduction, not BLAS: a row's marginals do not depend on the batch it is in.
    # Reducing over the leading axis adds the outcomes one by one in index order (no pairwise
    # blocks), so each marginal is the sequential sum of the P(z) with z_i = 1.
    bits = outcome_bits(q).astype(bool)
    by_outcome = np.ascontiguousarray(joint.T)
    out = np.empty((joint.shape[0], q))
    for i in range(q):
        out[:, i] = np.add.reduce(by_outcome[bits[:, i]], axis=0)
    return out


def expected_rule(joint: np.ndarray, table: np.ndarray) -> np.ndarray:
    """E[M_D(z)] under every row's joint, shape (n,): a plain reduction, not BLAS, so the
    value of a row depends neither on the batch it is in nor on the BLAS library's threads."""
    return np.asarray((joint * np.asarray(table, dtype=np.float64)[None, :]).sum(axis=1))


def fdot(a: np.ndarray, b: np.ndarray) -> float:
    """Σ a·b, correctly rounded (math.fsum): the same on every machine."""
    return math.fsum((np.asarray(a, dtype=np.float64) * b).tolist())


def index_of(bits: np.ndarray) -> np.ndarray:
    """Outcome indices of rows of bits (n, q), z_1 most significant."""
    q = bits.shape[1]
    weights = 1 << np.arange(q - 1, -1, -1, dtype=np.int64)
    return bits.astype(np.int64) @ weights


def path_from_joint(joint: np.ndarray) -> np.ndarray:
    """b_i along every outcome's path straight from a batch of joints, shape (n, 2^q, q)
    (``path_probabilities(levels_from_joint(joint))`` in fewer steps; 0/0 read as 1/2)."""
    n, size = joint.shape
    q = size.bit_length() - 1
    out = np.empty((n, size, q))
    child = joint
    for i in range(q - 1, -1, -1):
        pair = child.reshape(n, -1, 2)
        parent = pair[:, :, 0] + pair[:, :, 1]
        empty = parent <= 0
        b = pair[:, :, 1] / np.where(empty, 1.0, parent)  # <= 1: parent is the sum
        b[empty] = 0.5
        out.reshape(n, 1 << i, size >> i, q)[:, :, :, i] = b[:, :, None]
        child = parent
    return out
