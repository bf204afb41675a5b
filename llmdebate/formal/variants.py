"""Protocol variants in the formal engine (``DebateConfig.variant``; docs/protocol.md).

One round, batched over debates, as each variant defines it: which conditional tables B's
numbers amount to, what A sees when it picks the recursion index j, and which probability
the next round receives. The exact enumeration, the Monte Carlo and Algorithm 1 all read a
round through :func:`round_view` and :func:`choices`, so a variant means one thing everywhere;
the generic engine (:mod:`llmdebate.core.engine`) implements the same definitions and
:func:`llmdebate.core.scoring.next_probability` re-checks them on transcripts.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from llmdebate.core.schemas import VARIANTS
from llmdebate.formal.strategies.alternatives import Alternatives
from llmdebate.formal.strategies.provers import ProverPolicy
from llmdebate.formal.tables import (
    Levels,
    independent_levels,
    joint_from_levels,
    levels_from_joint,
    marginals,
    path_from_joint,
    path_probabilities,
)

COMMITTING = ("commit", "commit-marginal")
MARGINAL_NEXT = ("marginal", "commit-marginal")

__all__ = ["COMMITTING", "MARGINAL_NEXT", "VARIANTS", "RoundView", "choices", "round_view"]


@dataclass
class RoundView:
    """One round of n debates under a variant.

    ``levels``/``joint``: B's stated tables and the joint the draws follow; ``marg`` (n, q):
    B's marginals; ``path`` (n, 2^q, q): b_i along each outcome's path; ``nextp``
    (n, 2^q, q): the probability the next round receives if A recurses on y_i after outcome t.
    """

    levels: Levels
    joint: np.ndarray
    marg: np.ndarray
    path: np.ndarray
    nextp: np.ndarray


def stated_levels(levels: Levels, variant: str) -> Levels:
    """B's tables as the variant lets it state them (``independent``: its marginals only)."""
    if variant == "independent":
        return independent_levels(marginals(joint_from_levels(levels)))
    return levels


def round_view(levels: Levels, variant: str) -> RoundView:
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {', '.join(VARIANTS)} (got {variant!r})")
    levels = stated_levels(levels, variant)
    joint = joint_from_levels(levels)
    marg = marginals(joint)
    path = path_probabilities(levels)
    nextp = np.broadcast_to(marg[:, None, :], path.shape) if variant in MARGINAL_NEXT else path
    return RoundView(levels, joint, marg, path, nextp)


def joint_view(joint: np.ndarray, variant: str) -> RoundView:
    """The view of a round whose B plays ``joint`` (Algorithm 1's h), in fewer steps.

    Only ``path``, ``marg`` and ``nextp`` are filled (``levels`` is empty); for the
    ``independent`` variant the full :func:`round_view` is used.
    """
    if variant == "independent":
        return round_view(levels_from_joint(joint), variant)
    path = path_from_joint(joint)
    marg = marginals(joint) if variant in COMMITTING or variant in MARGINAL_NEXT else path[:, 0]
    nextp = np.broadcast_to(marg[:, None, :], path.shape) if variant in MARGINAL_NEXT else path
    return RoundView([], joint, marg, path, nextp)


def choices(
    prover: ProverPolicy,
    variant: str,
    inst: np.ndarray,
    k: int,
    node: np.ndarray,
    view: RoundView,
    rep: np.ndarray,
    z: np.ndarray,
) -> Alternatives:
    """A's recursion index for every (debate, outcome) row ``rep`` (debate index) with draws z.

    Committing variants ask A once per debate, seeing B's marginals and no draw; the others
    ask after the draws, seeing b along the drawn path (eq. 13's argmax reads every b_i).
    """
    if variant in COMMITTING:
        alts = prover.commit(inst, k, node, view.marg)
        out: Alternatives = []
        for v, pr in alts:
            vv = np.broadcast_to(np.asarray(v), (len(inst),))[rep]
            pp = pr if np.ndim(pr) == 0 else np.asarray(pr)[rep]
            out.append((vv, pp))
        return out
    return prover.choose_rows(inst, k, node, view, rep, z)
