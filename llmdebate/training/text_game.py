"""One debate of depth 1, width 2 on an interval claim, scored by the protocol (Figure 2).

Every reward is :mod:`llmdebate.core.scoring`'s; this module only chooses which numbers feed
it, in expectation over B's draws, on Python floats or torch tensors alike (so that the same
function gives the figures and, on tensors, each seat's training objective):

* r_init = ``expected_init_reward(r, 1, p_1, a)``, A's answer a = 1[q_A(x) ≥ 1/2];
* r_1 = ``expected_round_reward(r, 1, s_1, E[M_D], p_1)``, s_1 eq. 13 on q_A(x) against p_1,
  E[M_D] = Σ_z P(z)·M_D(z) exactly under B's conditional table (:func:`expected_m`: the
  product of :meth:`llmdebate.core.rules.CondProbs.joint` against the compiled rule's
  table, written so that it also runs on tensors);
* r_0 = ``leaf_reward(1, s_0, O_j, b_j)`` in expectation over B's draws z_<q (the b_j A
  recurses on is B's b_j along the drawn path, Figure 2's default): on each prefix, A
  recurses to j = argmax_i |b_i − q_A(y_i)| (the first on a tie) and plays s_0 = eq. 13 on
  q_A(y_j) against b_j before the leaf judge's verdict O_j.

With ``temperature`` A's directions are the leaf self-play's mixed ones (2π − 1,
π = σ((q − p)/τ), :func:`llmdebate.training.self_play.mixed_direction`): A's learning
objective; without it, eq. 13's played directions. Decisions (answer, directions, the
recursion) are read from the numbers' values, never differentiated.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llmdebate.beliefs import belief_direction
from llmdebate.core import scoring
from llmdebate.training.self_play import mixed_direction

DEPTH = 1
"""The debate's depth: one decomposition, then the leaf."""


def value(x: Any) -> float:
    """A float of a float or a one-element tensor (without its gradient)."""
    return float(x.detach()) if hasattr(x, "detach") else float(x)


def joint(levels: Sequence[Sequence[Any]]) -> list[Any]:
    """P(z) of every outcome index (z_1 most significant), as CondProbs.joint builds it."""
    prob: list[Any] = [1.0]
    for lv in levels:
        prob = [x for t, pt in enumerate(prob) for x in (pt * (1 - lv[t]), pt * lv[t])]
    return prob


def expected_m(table: Sequence[int], levels: Sequence[Sequence[Any]]) -> Any:
    """E[M_D] = Σ_z P(z)·M_D(z) (``table``: the compiled rule's M_D of every outcome)."""
    return scoring.total(pz * int(m) for pz, m in zip(joint(levels), table, strict=True))


def paths(levels: Sequence[Sequence[Any]]) -> list[tuple[Any, list[Any]]]:
    """(P(prefix), [b_1, ..., b_q] along it) for every prefix z_1..z_(q−1): the b's A sees
    when it recurses."""
    q = len(levels)
    mass = joint(levels[: q - 1])
    out = []
    for t, w in enumerate(mass):
        bits = [(t >> (q - 2 - i)) & 1 for i in range(q - 1)]
        bs = []
        for i in range(q):
            prefix = 0
            for bit in bits[:i]:
                prefix = (prefix << 1) | bit
            bs.append(levels[i][prefix])
        out.append((w, bs))
    return out


def recursion(bs: Sequence[Any], beliefs: Sequence[Any]) -> int:
    """j = argmax_i |b_i − q_A(y_i)| (the first on a tie)."""
    gaps = [abs(value(b) - value(q)) for b, q in zip(bs, beliefs, strict=True)]
    return gaps.index(max(gaps))


def direction(q: Any, p: Any, epsilon: float, temperature: float | None) -> Any:
    """A's direction: eq. 13 on the values (played), or the mixed one (``temperature``)."""
    if temperature is None:
        return belief_direction(value(q), value(p), epsilon)
    return mixed_direction(q, p, temperature)


def init_term(r: float, q_x: Any, p1: Any) -> Any:
    """E[r_init] with A's answer a = 1[q_A(x) ≥ 1/2]."""
    return scoring.expected_init_reward(r, DEPTH, p1, int(value(q_x) >= 0.5))


def split_terms(r: float, q_x: Any, p1: Any, table: Sequence[int],
                levels: Sequence[Sequence[Any]], beliefs: Sequence[Any],
                verdicts: Sequence[int], *, epsilon: float = 0.0,
                temperature: float | None = None, step: Any = None) -> dict[str, Any]:
    """E[r_1] and E[r_0] of a valid split (its rule's ``table``, B's conditional ``levels``,
    A's ``beliefs`` q_A(y_i) and the leaf judge's ``verdicts`` O_i on its subclaims), with the
    leaf claim's figures: ``leaf`` a list of (P(prefix), j, b_j) per prefix.

    ``step``: B's probability b_σ of the split's step claim σ (docs/protocol.md, "The step
    as a claim"); then ``beliefs`` and ``verdicts`` have one more entry, A's q_A(σ) and the
    judge's O_σ, E[r_1] is :func:`scoring.checked_step_m`'s and the recursion may choose σ
    (index q) as the leaf, at every prefix, with b_σ."""
    m = expected_m(table, levels)
    m_used = m if step is None else scoring.checked_step_m(step, m, p1)
    r1 = scoring.expected_round_reward(r, DEPTH, direction(q_x, p1, epsilon, temperature),
                                       m_used, p1)
    r0: Any = 0.0
    leaf = []
    for w, bs in paths(levels):
        if step is not None:
            bs = [*bs, step]
        j = recursion(bs, beliefs)
        s0 = direction(beliefs[j], bs[j], epsilon, temperature)
        r0 = r0 + w * scoring.leaf_reward(1.0, s0, verdicts[j], bs[j])
        leaf.append((w, j, bs[j]))
    return {"m": m, "m_used": m_used, "r_1": r1, "r_0": r0, "leaf": leaf}


def invalid_return(r: float) -> float:
    """The return to go of an invalid decomposition, in the game's units: the invalid reward
    (−1.5 on the debate's scale) times the debate's scale (:func:`scoring.reward_scale`)."""
    scale = scoring.reward_scale(scoring.DISCOUNTED, r, DEPTH)
    return scoring.invalid_training_reward(scale, scoring.RewardOptions(normalize=False))


def decision_frame(r: float, baseline: float) -> scoring.RewardFrame:
    """The decompose act's frame (docs/training.md "Reward scale"): its first term is r_1,
    so (return to go − ``baseline``) / r^1."""
    return scoring.RewardFrame(baseline, scoring.decision_unit(r, "r_1", DEPTH))


def group_advantages(rewards: Sequence[float]) -> list[float]:
    """TRL's GRPO advantages of one group: (reward − mean) / (std + 1e-4), std with Bessel's
    correction (torch's ``std``)."""
    n = len(rewards)
    mean = sum(rewards) / n
    std = (sum((x - mean) ** 2 for x in rewards) / (n - 1)) ** 0.5 if n > 1 else 0.0
    return [(x - mean) / (std + 1e-4) for x in rewards]
