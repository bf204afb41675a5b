"""The one place a reward is computed (Figure 2), sampled and in expectation.

Every function is plain arithmetic on its arguments, so it gives the same IEEE results on
Python floats and element-wise on NumPy arrays: the formal engine's vectorised Monte Carlo,
the exact enumeration, the LLM orchestrator and ``llmdebate score`` all call these functions,
and a transcript re-scored here matches the rewards recorded in it to the last bit.

Payoff of the prover: R_A = r_init + sum_{k=d..0} r_k, and R_B = -R_A. (Figure 2, step 3(d),
writes the final payoff as sum_k r_k; the proofs of Lemmas A.4 and A.5 count r_init in V^{A,B},
e.g. eq. (12) E[V] = E[r_init] when every direction is 0. We follow the proofs.)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from llmdebate.schemas import Transcript

T = TypeVar("T")


def reward_ratio(epsilon: float, rho: float) -> float:
    """r = ε(1-ρ)/4, the factor by which available rewards shrink per round from the leaf."""
    return epsilon * (1.0 - rho) / 4.0


def init_reward(r: float, depth: int, zhat: Any, answer: Any) -> Any:
    """r_init = r^(d+1) · 1[ẑ = a]."""
    return r ** (depth + 1) * (zhat == answer)


def expected_init_reward(r: float, depth: int, p: Any, answer: Any) -> Any:
    """E[r_init] = r^(d+1) · P[ẑ = a] with ẑ ~ Bernoulli(p_d)."""
    return r ** (depth + 1) * (answer * p + (1 - answer) * (1.0 - p))


def round_reward(r: float, k: int, direction: Any, m: Any, p: Any) -> Any:
    """r_k = r^k · s_k · (M_D(z) - p_k); with k = 0 and m = O this is the leaf reward r_0."""
    return r**k * direction * (m - p)


def leaf_reward(r: float, direction: Any, verdict: Any, p: Any) -> Any:
    """r_0 = s_0 · (O - p_0)."""
    return round_reward(r, 0, direction, verdict, p)


def expected_round_reward(r: float, k: int, direction: Any, expected_m: Any, p: Any) -> Any:
    """E[r_k | history] = r^k · s_k · (E[M_D(z)] - p_k), E over B's conditional probabilities."""
    return round_reward(r, k, direction, expected_m, p)


def total(rewards: Iterable[T]) -> T:
    """R_A: the rewards summed in protocol order (r_init, r_d, ..., r_0)."""
    acc: Any = 0.0
    for v in rewards:
        acc = acc + v
    return acc


def normalized(payoff: Any, r: float, depth: int) -> Any:
    """A payoff in units of r^(d+1), the most the initial reward can give."""
    return payoff / r ** (depth + 1)


def completeness_bound(epsilon: float, r: float, depth: int) -> float:
    """Lemma A.5: an honest prover on a stable instance earns at least (1-ε)·r^(d+1)."""
    return (1.0 - epsilon) * r ** (depth + 1)


def soundness_bound(r: float, depth: int, p_correct: float, delta: float) -> float:
    """Lemma A.4: E[R_A] < r^(d+1)·P[A(x) = L(x)] + (2d+1)·δ against Algorithm 1."""
    return r ** (depth + 1) * p_correct + (2 * depth + 1) * delta


def naive_payoff(verdict: Any, claimed: Any) -> Any:
    """Naive recursive debate: +1 if the judge agrees with the prover's leaf claim, else -1."""
    return 2 * (verdict == claimed) - 1


# ---------------------------------------------------------------------------- transcripts


@dataclass
class Mismatch:
    """One recorded value that differs from its recomputation."""

    transcript: str
    where: str
    recorded: Any
    recomputed: Any

    def __str__(self) -> str:
        return (
            f"{self.transcript}: {self.where}: recorded {self.recorded!r}, "
            f"recomputed {self.recomputed!r}"
        )


@dataclass
class Score:
    """Rewards recomputed from a transcript's own records, and every mismatch found."""

    rewards: list[float] = field(default_factory=list)
    expected: list[float] = field(default_factory=list)
    total: float | None = None
    expected_total: float | None = None
    mismatches: list[Mismatch] = field(default_factory=list)


def _check(score: Score, tid: str, where: str, recorded: Any, recomputed: Any) -> None:
    if recorded != recomputed:
        score.mismatches.append(Mismatch(tid, where, recorded, recomputed))


def score_transcript(t: Transcript) -> Score:
    """Recompute every reward (and the draws z = 1[u < b], M_D(z)) from the transcript's records."""
    from llmdebate.rules import compile_rule

    s = Score()
    cfg = t.config
    r = reward_ratio(cfg.epsilon, cfg.rho)
    d = cfg.depth
    if t.status != "complete":
        return s
    if t.protocol == "naive-recursive":
        payoff = _naive_payoff(t, s)
        s.rewards = [payoff]
        s.total = payoff
        _check(s, t.id, "total", t.total, payoff)
        _check(s, t.id, "prover_won", t.prover_won, payoff > 0)
        return s

    if t.init is None:
        s.mismatches.append(Mismatch(t.id, "init", None, "an initialisation record"))
        return s
    init = t.init
    p_d = init.estimate.value
    _check(s, t.id, "init ẑ", init.zhat, int(init.u < p_d))
    r_init = init_reward(r, d, init.zhat, init.answer)
    e_init = expected_init_reward(r, d, p_d, init.answer)
    _check(s, t.id, "r_init", init.reward, r_init)
    _check(s, t.id, "expected r_init", init.expected_reward, e_init)
    s.rewards.append(r_init)
    s.expected.append(e_init)
    for rd in t.rounds:
        where = f"round {rd.k}"
        if rd.direction is None or rd.p is None:
            s.mismatches.append(Mismatch(t.id, where, None, "direction and p"))
            continue
        if rd.k == 0:
            if rd.verdict is None:
                s.mismatches.append(Mismatch(t.id, where, None, "a verdict"))
                continue
            rew = leaf_reward(r, rd.direction, rd.verdict.value, rd.p)
            o = rd.verdict.probability if rd.verdict.probability is not None else rd.verdict.value
            exp = leaf_reward(r, rd.direction, o, rd.p)
        else:
            if rd.decomposition is None:
                s.mismatches.append(Mismatch(t.id, where, None, "a decomposition"))
                continue
            rule = compile_rule(rd.decomposition.rule, rd.decomposition.width)
            zs = [int(u < b) for u, b in zip(rd.u, rd.b, strict=False)]
            _check(s, t.id, f"{where} z", rd.z, zs)
            m = rule(rd.z) if len(rd.z) == rule.q else None
            _check(s, t.id, f"{where} M_D", rd.m, m)
            rew = round_reward(r, rd.k, rd.direction, m if m is not None else 0, rd.p)
            exp = expected_round_reward(
                r, rd.k, rd.direction, rd.expected_m if rd.expected_m is not None else m, rd.p
            )
            if rd.table is not None:
                from llmdebate.rules import CondProbs, probability_true

                _check(
                    s,
                    t.id,
                    f"{where} E[M_D]",
                    rd.expected_m,
                    probability_true(rule, CondProbs.from_levels(rd.table)),
                )
        _check(s, t.id, f"{where} reward", rd.reward, rew)
        _check(s, t.id, f"{where} expected reward", rd.expected_reward, exp)
        s.rewards.append(rew)
        s.expected.append(exp)
    s.total = total(s.rewards)
    s.expected_total = total(s.expected)
    _check(s, t.id, "total", t.total, s.total)
    _check(s, t.id, "expected total", t.expected_total, s.expected_total)
    return s


def _naive_payoff(t: Transcript, s: Score) -> float:
    """-1 at the first round whose stated values break the rule, else ±1 by the leaf verdict."""
    from llmdebate.rules import compile_rule

    for rd in t.rounds:
        if rd.k == 0:
            if rd.verdict is None or rd.claimed is None:
                s.mismatches.append(Mismatch(t.id, "round 0", None, "a verdict and a claim"))
                return -1.0
            payoff = float(naive_payoff(rd.verdict.value, rd.claimed))
            _check(s, t.id, "round 0 reward", rd.reward, payoff)
            return payoff
        if rd.decomposition is None or rd.claimed_subclaims is None:
            s.mismatches.append(Mismatch(t.id, f"round {rd.k}", None, "stated subclaim values"))
            return -1.0
        rule = compile_rule(rd.decomposition.rule, rd.decomposition.width)
        vals = rd.claimed_subclaims
        if len(vals) != rule.q or any(v not in (0, 1) for v in vals) or rule(vals) != rd.claimed:
            _check(s, t.id, f"round {rd.k} reward", rd.reward, -1.0)
            return -1.0
    s.mismatches.append(Mismatch(t.id, "naive debate", "no leaf", "a leaf round"))
    return -1.0
