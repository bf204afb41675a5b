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

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

import numpy as np

from llmdebate.core.rules import CondProbs, compile_rule, outcome_bits, probability_true
from llmdebate.core.schemas import (
    DebateConfig,
    Decomposition,
    InitRecord,
    RoundRecord,
    Transcript,
    Verdict,
)

T = TypeVar("T")


def reward_ratio(epsilon: float, rho: float) -> float:
    """r = ε(1-ρ)/4, the factor by which available rewards shrink per round from the leaf."""
    return epsilon * (1.0 - rho) / 4.0


def ratio_for(config: DebateConfig) -> float:
    """The reward ratio r of a debate's configuration."""
    return reward_ratio(config.epsilon, config.rho)


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


def checked_step_m(b_step: Any, expected_m: Any, p: Any) -> Any:
    """E[M'] of a decomposition whose step is itself a claim σ ("the claim holds exactly
    when the rule over these subclaims does"), B's probability of it ``b_step``: with
    probability b_step the step holds and M' = M_D(z); otherwise the decomposition says
    nothing about the claim and M' is a fresh draw from p_k. So E[M'] = b_step · E[M_D] +
    (1 − b_step) · p_k, and E[r_k] = r^k · s_k · b_step · (E[M_D] − p_k)."""
    return b_step * expected_m + (1 - b_step) * p


def total(rewards: Iterable[T]) -> T:
    """R_A: the rewards summed in protocol order (r_init, r_d, ..., r_0)."""
    acc: Any = 0.0
    for v in rewards:
        acc = acc + v
    return cast(T, acc)


def normalized(payoff: Any, r: float, depth: int) -> Any:
    """A payoff in units of r^(d+1), the most the initial reward can give."""
    return payoff / r ** (depth + 1)


def normalizer(config: DebateConfig) -> float:
    """r^(d+1): the unit of normalized payoffs (DebateConfig keeps it >= 1e-300)."""
    return ratio_for(config) ** (config.depth + 1)


def normalized_total(
    t: Transcript, *, expected: bool = False, scheme: str | None = None
) -> float | None:
    """A complete debate's payoff R_A (or its expectation) in the unit a report shows.

    ``scheme`` (the protocol's :func:`reward_scheme`; read from the records when not given):
    ``discounted`` (prover-estimator debate) in units of r^(d+1), ``plus-minus-one`` (naive
    recursive debate) the ±1 payoff as is (it has no r). ``None`` for a debate that is not
    complete or has no such total.
    """
    value = t.expected_total if expected else t.total
    if t.status != "complete" or value is None:
        return None
    scheme = scheme or reward_scheme(t)
    if scheme == PLUS_MINUS_ONE:
        return float(value)
    if scheme != DISCOUNTED:
        return None
    return float(normalized(value, ratio_for(t.config), t.config.depth))


def completeness_bound(epsilon: float, r: float, depth: int) -> float:
    """Lemma A.5: an honest prover on a stable instance earns at least (1-ε)·r^(d+1)."""
    return (1.0 - epsilon) * r ** (depth + 1)


def soundness_bound(r: float, depth: int, p_correct: float, delta: float) -> float:
    """Lemma A.4: E[R_A] < r^(d+1)·P[A(x) = L(x)] + (2d+1)·δ against Algorithm 1."""
    return r ** (depth + 1) * p_correct + (2 * depth + 1) * delta


def normalized_completeness_bound(t: Transcript) -> float | None:
    """Lemma A.5's bound (1-ε)·r^(d+1) in the unit a report shows (1-ε) for a debate with
    discounted rewards; None for any other."""
    if reward_scheme(t) != DISCOUNTED:
        return None
    r = ratio_for(t.config)
    bound = completeness_bound(t.config.epsilon, r, t.config.depth)
    return float(normalized(bound, r, t.config.depth))


def naive_payoff(verdict: Any, claimed: Any) -> Any:
    """Naive recursive debate: +1 if the judge agrees with the prover's leaf claim, else -1."""
    return 2 * (verdict == claimed) - 1


def judged_reward(p_first: float, first: bool, decision_first: bool) -> tuple[float, float]:
    """A debater's (sampled, expected) reward in a protocol the judge decides between two
    options (two-sided debate, consultancy; Khan et al. 2024): 1[the judge chose the debater's
    answer], and the judge's probability of the debater's answer. ``p_first`` is the judge's
    P(the option shown first is correct); ``first``: the debater's answer was shown first;
    ``decision_first``: the judge chose the option shown first."""
    p = p_first if first else 1.0 - p_first
    return float(first == decision_first), float(p)


# ---------------------------------------------------------------------------- one round


def marginals_of(table: Sequence[Sequence[float]]) -> list[float]:
    """B's marginal P(z_i = 1) for every subclaim, from its conditional table (levels)."""
    probs = CondProbs.from_levels(table)
    return [float(v) for v in probs.joint() @ outcome_bits(probs.q).astype(np.float64)]


VERDICT_STREAM = 2
"""The debate seed's stream of a sampling judge's draw (0: the protocol's, 1: the strategies')."""


def verdict_draw(seed: int) -> float:
    """u of a sampling judge: the first uniform of stream :data:`VERDICT_STREAM` of the
    debate's recorded seed, so that ``llmdebate score`` replays it bit for bit."""
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(VERDICT_STREAM,)))
    return float(rng.random())


def sampled_verdict(u: float, p: float) -> int:
    """A sampling judge's verdict O = 1[u < P[O = 1]] (as z = 1[u < b])."""
    return int(u < p)


def argmax_verdict(p: float) -> int:
    """A deterministic judge's verdict O = 1[P[O = 1] >= 1/2]."""
    return int(p >= 0.5)


def expected_verdict(verdict: Verdict) -> float:
    """E[O] under the judge that ruled: P[O = 1] for a sampling judge, O itself for a
    deterministic one (``argmax``: its P collapsed to 0/1), and P where a verdict records no
    ruling (a person or the oracle: P = O or absent; a transcript written before rulings
    were recorded, re-scored as it was scored)."""
    if verdict.ruling == "argmax" or verdict.probability is None:
        return float(verdict.value)
    return float(verdict.probability)


def reward_inputs(rd: RoundRecord, m: int | None = None) -> tuple[float, float]:
    """The numbers that feed a recorded round's reward: (sampled outcome, expected outcome).

    The leaf: the verdict's bit O, and E[O] under the judge that ruled
    (:func:`expected_verdict`). A round k >= 1: M_D(z) (``m``, the recorded one unless given)
    and E[M_D] where B's whole table was asked (else M_D(z) again). The engine and
    :func:`score_transcript` both call this, so the choice is made once.
    """
    if rd.k == 0:
        if rd.verdict is None:
            raise ValueError("the leaf round has no verdict yet")
        return float(rd.verdict.value), expected_verdict(rd.verdict)
    mm = rd.m if m is None else m
    if mm is None:
        raise ValueError(f"round {rd.k} has no M_D(z)")
    return float(mm), float(rd.expected_m if rd.expected_m is not None else mm)


def round_rewards(r: float, rd: RoundRecord, m: int | None = None) -> tuple[float, float]:
    """(r_k, E[r_k | history]) of a recorded round (Figure 2), from :func:`reward_inputs`."""
    if rd.direction is None or rd.p is None:
        raise ValueError(f"round {rd.k} has no direction or p")
    out, exp = reward_inputs(rd, m)
    return (
        round_reward(r, rd.k, rd.direction, out, rd.p),
        expected_round_reward(r, rd.k, rd.direction, exp, rd.p),
    )


def next_probability(rd: RoundRecord, variant: str) -> float:
    """p_(k-1): the probability the round hands to the next claim y_j (j = ``rd.recurse``).

    ``figure2``, ``commit`` and ``independent``: b_j as B stated it along the drawn path
    (in ``independent`` it is unconditional). ``marginal`` and ``commit-marginal``: B's
    marginal P(z_j = 1) under its own joint, from the recorded table.
    """
    if rd.recurse is None:
        raise ValueError(f"round {rd.k} has no recursion index")
    j = rd.recurse
    if variant in ("marginal", "commit-marginal"):
        if rd.table is None:
            raise ValueError(f"round {rd.k}: the {variant} variant needs B's table")
        return marginals_of(rd.table)[j]
    return float(rd.b[j])


def naive_round_payoff(rd: RoundRecord) -> float | None:
    """Naive recursive debate: the payoff a recorded round decides, or None if it goes on.

    A round k >= 1 whose stated subclaim values break the rule (or are not bits, or are too
    few) ends the debate at -1; the leaf pays +1 if the judge agrees with the prover, else -1.
    """
    if rd.k == 0:
        if rd.verdict is None or rd.claimed is None:
            raise ValueError("the leaf round has no verdict or claim")
        return float(naive_payoff(rd.verdict.value, rd.claimed))
    if rd.decomposition is None or rd.claimed_subclaims is None:
        raise ValueError(f"round {rd.k} has no stated subclaim values")
    rule = compile_rule(rd.decomposition.rule, rd.decomposition.width)
    vals = rd.claimed_subclaims
    if len(vals) != rule.q or any(v not in (0, 1) for v in vals) or rule(vals) != rd.claimed:
        return -1.0
    return None


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


DISCOUNTED = "discounted"
PLUS_MINUS_ONE = "plus-minus-one"


def reward_scheme(t: Transcript) -> str | None:
    """Which rewards a transcript records, read from its records (never from its protocol's
    name): ``discounted`` (prover-estimator debate: an initialisation record and
    r-discounted round rewards), ``plus-minus-one`` (naive recursive debate: rounds down to a
    leaf verdict, no initialisation record, a ±1 payoff), or None (a judge's choice between
    two answers: no rewards, only the judgment)."""
    if t.init is not None:
        return DISCOUNTED
    return PLUS_MINUS_ONE if t.rounds else None


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


def score_transcript(t: Transcript, scheme: str | None = None) -> Score:
    """Recompute every reward (and the draws z = 1[u < b], M_D(z), E[M_D], and the chain of
    probabilities p_k of the transcript's protocol variant) from the transcript's records.

    ``scheme``: the transcript's :func:`reward_scheme` (read from its records when not given).
    Protocols without rewards (two-sided, consultancy, direct) have nothing to re-score: their
    Score is empty."""
    s = Score()
    r = ratio_for(t.config)
    _check_judge_scores(s, t)
    scheme = scheme or reward_scheme(t)
    if t.status != "complete" or scheme is None:
        return s
    if scheme == PLUS_MINUS_ONE:
        payoff = _naive_payoff(t, s)
        s.rewards = [payoff]
        s.total = payoff
        _check(s, t.id, "total", t.total, payoff)
        _check(s, t.id, "prover_won", t.prover_won, payoff > 0)
        return s

    if t.init is None:
        s.mismatches.append(Mismatch(t.id, "init", None, "an initialisation record"))
        return s
    p_next: float | None = _score_init(s, t, t.init, r)
    for rd in t.rounds:
        p_next = _score_round(s, t, rd, r, p_next)
    s.total = total(s.rewards)
    s.expected_total = total(s.expected)
    _check(s, t.id, "total", t.total, s.total)
    _check(s, t.id, "expected total", t.expected_total, s.expected_total)
    return s


def score_with_leaf_verdict(t: Transcript, value: int) -> Score:
    """The rewards of ``t`` had its leaf verdict been ``value`` (a judge that rules O =
    ``value`` with certainty), by :func:`score_transcript` on a copy whose leaf verdict is
    replaced: every other record (draws, directions, the path) is the debate's own, as the
    judge acts only after them. A debate without a leaf verdict (stopped early) scores as
    recorded. Its mismatches name what the replacement changed, nothing else."""
    leaf = t.rounds[-1] if t.rounds else None
    if leaf is None or leaf.k != 0 or leaf.verdict is None:
        return score_transcript(t)
    verdict = Verdict(value=int(value), probability=float(value), judge="truth")
    rounds = [*t.rounds[:-1], leaf.model_copy(update={"verdict": verdict})]
    return score_transcript(t.model_copy(update={"rounds": rounds}))


def _check_judge_scores(s: Score, t: Transcript) -> None:
    """The scores a complete debate recorded for its judge: a person's verdict (and the stated
    cost of a stepped reveal), or an interactive judge who asked and stopped."""
    if t.status == "complete" and "judgment" in t.meta:  # a person's verdict: its recorded scores
        recorded = (t.meta["judgment"] or {}).get("scores")
        _check(s, t.id, "judgment scores", recorded, judgment_scores(t))
        reveal = (t.meta["judgment"] or {}).get("reveal")
        if reveal:  # stepped reveal: the stated cost of the turns the judge asked for
            cost = reveal_cost(float(reveal["turn_cost"]), int(reveal["turns"]))
            _check(s, t.id, "reveal cost", reveal.get("cost"), cost)
    turns = t.meta.get("judge_turns")
    if t.status == "complete" and isinstance(turns, dict):  # a judge who asked and stopped
        _check(s, t.id, "interactive judge score", turns.get("score"), judge_turns_score(t))


def _score_init(s: Score, t: Transcript, init: InitRecord, r: float) -> float:
    """Check the initialisation's draw ẑ and reward, add the reward to ``s``; p_d, the
    probability the first round should record."""
    d = t.config.depth
    p_d = init.estimate.value
    _check(s, t.id, "init ẑ", init.zhat, int(init.u < p_d))
    r_init = init_reward(r, d, init.zhat, init.answer)
    e_init = expected_init_reward(r, d, p_d, init.answer)
    _check(s, t.id, "r_init", init.reward, r_init)
    _check(s, t.id, "expected r_init", init.expected_reward, e_init)
    s.rewards.append(r_init)
    s.expected.append(e_init)
    return p_d


def _score_round(
    s: Score, t: Transcript, rd: RoundRecord, r: float, p_next: float | None
) -> float | None:
    """Check round ``rd`` (its p against ``p_next``, its verdict or draws, its rewards) and add
    its rewards to ``s``; the probability the next round should record (``p_next`` unchanged
    when the round lacks what it needs to be scored)."""
    where = f"round {rd.k}"
    if rd.direction is None or rd.p is None:
        s.mismatches.append(Mismatch(t.id, where, None, "direction and p"))
        return p_next
    _check(s, t.id, f"{where} p", rd.p, p_next)
    m: int | None = None
    if rd.k == 0:
        if rd.verdict is None:
            s.mismatches.append(Mismatch(t.id, where, None, "a verdict"))
            return p_next
        _check_verdict(s, t, rd.verdict)
    else:
        if rd.decomposition is None:
            s.mismatches.append(Mismatch(t.id, where, None, "a decomposition"))
            return p_next
        m = _check_draws(s, t, rd, rd.decomposition, where)
    rew, exp = round_rewards(r, rd, m)
    _check(s, t.id, f"{where} reward", rd.reward, rew)
    _check(s, t.id, f"{where} expected reward", rd.expected_reward, exp)
    s.rewards.append(rew)
    s.expected.append(exp)
    try:
        return next_probability(rd, t.config.variant) if rd.k > 0 else None
    except ValueError as exc:
        s.mismatches.append(Mismatch(t.id, f"{where} next p", None, str(exc)))
        return None


def _check_draws(s: Score, t: Transcript, rd: RoundRecord, dec: Decomposition, where: str) -> int:
    """Check a round k >= 1's draws z = 1[u < b], its M_D(z) and E[M_D]; the M_D its reward
    uses (0 when the recorded z does not fit the rule)."""
    rule = compile_rule(dec.rule, dec.width)
    zs = [int(u < b) for u, b in zip(rd.u, rd.b, strict=False)]
    _check(s, t.id, f"{where} z", rd.z, zs)
    m = rule(rd.z) if len(rd.z) == rule.q else None
    _check(s, t.id, f"{where} M_D", rd.m, m)
    if rd.table is not None:
        expected_m = probability_true(rule, CondProbs.from_levels(rd.table))
        _check(s, t.id, f"{where} E[M_D]", rd.expected_m, expected_m)
    return 0 if m is None else m


def _check_verdict(s: Score, t: Transcript, v: Verdict) -> None:
    """The leaf verdict against its ruling: a sampling judge's u is the debate seed's verdict
    draw and O = 1[u < P]; a deterministic judge's O = 1[P >= 1/2]."""
    if v.ruling == "sample" and v.u is not None and v.probability is not None:
        _check(s, t.id, "leaf verdict u", v.u, verdict_draw(t.seed))
        _check(s, t.id, "leaf verdict O", v.value, sampled_verdict(v.u, v.probability))
    elif v.ruling == "argmax" and v.probability is not None:
        _check(s, t.id, "leaf verdict O", v.value, argmax_verdict(v.probability))


def _naive_payoff(t: Transcript, s: Score) -> float:
    """-1 at the first round whose stated values break the rule, else ±1 by the leaf verdict."""
    for rd in t.rounds:
        where = f"round {rd.k}"
        try:
            payoff = naive_round_payoff(rd)
        except ValueError:
            what = "a verdict and a claim" if rd.k == 0 else "stated subclaim values"
            s.mismatches.append(Mismatch(t.id, where, None, what))
            return -1.0
        if payoff is not None:
            if rd.k == 0 and rd.verdict is not None:
                _check_verdict(s, t, rd.verdict)
            _check(s, t.id, f"{where} reward", rd.reward, payoff)
            return payoff
    s.mismatches.append(Mismatch(t.id, "naive debate", "no leaf", "a leaf round"))
    return -1.0


# ---------------------------------------------------------------------------- judges' verdicts


def log_score(p: float, outcome: int) -> float:
    """ln of the probability a judge gave to what is true (0 is best; p in (0, 1))."""
    return float(np.log(p if outcome else 1.0 - p))


def brier(p: float, outcome: int) -> float:
    """(p - outcome)^2 for a probability p that the outcome is 1."""
    return float((p - outcome) ** 2)


def reveal_cost(turn_cost: float, turns: int) -> float:
    """The stated cost of a stepped reveal: the first turn is free, each further one costs
    ``turn_cost``."""
    return round(turn_cost * max(0, turns - 1), 10)


def _same(a: Any, b: Any) -> bool:
    return str(a).strip().lower() == str(b).strip().lower()


def judgment_scores(t: Transcript) -> dict[str, float | None]:
    """How well the judge of a complete debate did against the gold truth.

    Leaf protocols: the verdict O against the leaf claim's truth, with the verdict's P[O = 1].
    Speech protocols: the chosen answer against the gold answer (``meta.gold``), with
    P(first option) from ``meta.judge.p_first``. ``correct`` is 1.0 / 0.0; ``p_correct``,
    ``log_score`` and ``brier`` are None where no probability (or no truth) is known.
    """
    out: dict[str, float | None] = {
        "correct": None, "p_correct": None, "log_score": None, "brier": None
    }
    p_true: float | None = None
    truth: int | None = None
    if reward_scheme(t) is not None:  # a leaf verdict
        leaf = t.rounds[-1] if t.rounds else None
        if leaf is None or leaf.k != 0 or leaf.verdict is None or leaf.claim.truth is None:
            return out
        truth = int(leaf.claim.truth)
        out["correct"] = float(leaf.verdict.value == truth)
        p_true = leaf.verdict.probability
    else:
        options, gold = t.meta.get("options"), t.meta.get("gold")
        raw = t.meta.get("judge") or {}
        if not options or gold is None or "decision" not in t.meta:
            return out
        truth = int(_same(options[0], gold))
        out["correct"] = float(_same(t.meta["decision"], gold))
        p_true = raw.get("p_first")
    if p_true is not None:
        p = float(p_true)
        out["p_correct"] = p if truth else 1.0 - p
        out["log_score"] = log_score(p, truth) if 0.0 < p < 1.0 else None
        out["brier"] = brier(p, truth)
    return out


# ---------------------------------------------------------------------------- interactive judges


def interactive_judge_score(
    p_correct: float, turns: int, turn_cost: float, *, log_base: float = float(np.e)
) -> float:
    """The score of a judge who may ask the debaters questions and end the debate when it
    chooses (Michael et al. 2023, "Debate Helps Supervise Unreliable Experts"): the log score
    of its final probability on the correct answer minus a linear penalty for the turns it
    let the debate run, log_b(p_correct) - turn_cost · turns.

    ``turns``: the debate turns the judge asked for (0 if it decided before any); with
    ``turn_cost`` > 0 a judge gains by asking only while a turn is expected to raise its log
    score by more than ``turn_cost``. ``log_base`` e (the default) gives nats, as
    :func:`log_score`; their study scored in bits (base 2) with a cost of 0.05 a turn. A
    probability of 0 on the truth scores -inf.
    """
    if not 0.0 <= p_correct <= 1.0:
        raise ValueError(f"p_correct must lie in [0, 1], got {p_correct!r}")
    if turns < 0:
        raise ValueError(f"turns must be >= 0, got {turns!r}")
    if turn_cost < 0:
        raise ValueError(f"turn_cost must be >= 0, got {turn_cost!r}")
    if log_base <= 1.0:
        raise ValueError(f"log_base must be > 1, got {log_base!r}")
    base = -np.inf if p_correct == 0.0 else np.log(p_correct) / np.log(log_base)
    return float(base - turn_cost * turns)


def judge_turns_score(t: Transcript) -> float | None:
    """:func:`interactive_judge_score` of a debate whose judge asked and stopped, from its
    record (``meta.judge_turns``: the rounds it asked for, the cost, the log base; its final
    probability on the first of ``meta.options``); None where the record is incomplete."""
    turns = t.meta.get("judge_turns") or {}
    options, gold = t.meta.get("options"), t.meta.get("gold")
    p_first = (t.meta.get("judge") or {}).get("p_first")
    if not options or gold is None or p_first is None:
        return None
    first = str(options[0]).strip().lower() == str(gold).strip().lower()
    p = float(p_first) if first else 1.0 - float(p_first)
    return finite(
        interactive_judge_score(
            p, int(turns["asked"]), float(turns["turn_cost"]), log_base=float(turns["log_base"])
        )
    )


def finite(x: float) -> float | None:
    """``x``, or None where it is infinite (a log score of a probability 0 on the truth), as a
    transcript records it."""
    return x if np.isfinite(x) else None


# ---------------------------------------------------------------------------- training rewards
# What a trainer sees (docs/training.md, "Reward scale"): a decision's effect on the player's
# payoff in the game's own units (its return to go), divided by ONE constant per debate,
# :func:`reward_scale`, the most |R_A| can be; so the r^k weights of the rounds, the growth
# towards the leaf that makes honesty pay, are kept, and every valid reward lies in [-1, 1];
# an invalid reply (of any act) gets a reward below all of them.

VALID_FLOOR = -1.0
"""The lowest reward a valid reply can get on the scaled scale."""
FREE_TEXT_ACTS = ("evidence", "speech")
"""Acts whose reply is free text: an empty reply gets the invalid reward."""
JUDGED = "judged"
"""The reward scheme of the protocols a judge decides between two answers."""


def payoff_bound(r: float, depth: int) -> float:
    """The most |R_A| can be in prover-estimator debate: r^(d+1) + r^d + ... + r^0
    (r_init ∈ [0, r^(d+1)], |r_k| ≤ r^k)."""
    return float(total([r ** (depth + 1), *(r**k for k in range(depth, -1, -1))]))


def reward_scale(scheme: str, r: float, depth: int) -> float:
    """The one constant every training reward of a debate is divided by.

    ``discounted`` (prover-estimator debate): :func:`payoff_bound` (it depends only on the
    debate's ε, ρ and d, never on the term a decision is credited with);
    ``plus-minus-one`` (naive debate) and ``judged`` (two-sided debate, consultancy): 1.
    """
    if scheme == DISCOUNTED:
        return payoff_bound(r, depth)
    if scheme in (PLUS_MINUS_ONE, JUDGED):
        return 1.0
    raise ValueError(f"no reward scale for the reward scheme {scheme!r}")


def decision_return(terms: Sequence[str], values: dict[str, float], first: str) -> float:
    """A decision's return to go: the term ``first`` (the earliest reward the decision
    changes) and every later one, summed in protocol order; 0 when the debate never reached
    ``first`` (it stopped early)."""
    names = list(terms)
    if first not in names:
        return 0.0
    return float(total(values.get(n, 0.0) for n in names[names.index(first) :]))


def decision_level(term: str, depth: int) -> int:
    """The level of a decision's first reward term (its weight is r^level): ``r_init`` d + 1,
    ``r_k`` k, ``after_k`` k - 1 (the recursion of round k decides r_(k-1), …, r_0)."""
    if term == "r_init":
        return depth + 1
    if term.startswith("after_"):
        return max(int(term[len("after_"):]) - 1, 0)
    if term.startswith("r_"):
        return int(term[2:])
    raise ValueError(f"no level for the reward term {term!r}")


def decision_unit(r: float, term: str, depth: int) -> float:
    """r^level of a decision whose first term is ``term`` (:func:`decision_level`): the size
    of what the decision itself is paid, the unit of its relative reward."""
    return float(r ** decision_level(term, depth))


@dataclass(frozen=True)
class RewardFrame:
    """One decision's map from a return in the game's units to the number a trainer is given:
    (value - baseline) / unit, the same for every completion of the decision (a GRPO group),
    so that it never changes their ranking. ``relative`` (prover-estimator debate): the
    baseline is the recorded reply's return to go and the unit the decision's own r^level
    (:func:`decision_unit`); else the baseline is 0 and the unit the debate's
    :func:`reward_scale` (or 1: the game's units)."""

    baseline: float = 0.0
    unit: float = 1.0

    def __call__(self, value: float) -> float:
        return float((value - self.baseline) / self.unit)


@dataclass(frozen=True)
class RewardOptions:
    """How a reward is handed to a trainer.

    ``normalize``: each reward divided by the debate's :func:`reward_scale` (in [-1, 1]); off:
    in the debate's own units. ``relative`` (with ``normalize``; prover-estimator debate only):
    each reward given relative to its decision instead, (return - the recorded reply's return)
    / the decision's r^level (:class:`RewardFrame`), so that a decision near the top, whose
    completions differ by r^level, is not lost below float32 resolution or GRPO's 1e-4.
    ``margin``: how far below the lowest valid reward (-1) an
    invalid reply lands. ``invalid_reward``: that value itself, on the scaled scale (default
    -1 - margin; it must be below -1). ``max_reply_chars``: the longest reply of any act that
    is scored (each act's own cap, ``llmdebate.agents.parsing.REPLY_CAPS``, is tighter for
    the short acts); a longer or an empty one gets the invalid reward.
    """

    normalize: bool = True
    relative: bool = True
    margin: float = 0.5
    invalid_reward: float | None = None
    max_reply_chars: int = 16_000

    def __post_init__(self) -> None:
        if not self.margin > 0.0:
            raise ValueError(f"margin: must be > 0 (got {self.margin})")
        if self.invalid_reward is not None and not self.invalid_reward < VALID_FLOOR:
            raise ValueError(
                f"invalid_reward: must be below {VALID_FLOOR}, the lowest reward of a valid "
                f"reply on the scaled scale (got {self.invalid_reward})"
            )
        if self.max_reply_chars < 1:
            raise ValueError(f"max_reply_chars: must be >= 1 (got {self.max_reply_chars})")

    @property
    def invalid(self) -> float:
        """The invalid reward on the scaled scale."""
        if self.invalid_reward is not None:
            return float(self.invalid_reward)
        return VALID_FLOOR - self.margin


def reward_frame(
    options: RewardOptions, scale: float, relative_to: RewardFrame | None = None
) -> RewardFrame:
    """The frame a decision's rewards are given in: ``relative_to`` (the decision's own,
    prover-estimator debate) when ``options.relative``, else the debate's ``scale``
    (:func:`reward_scale`), or the game's units without ``options.normalize``."""
    if not options.normalize:
        return RewardFrame()
    if options.relative and relative_to is not None:
        return relative_to
    return RewardFrame(0.0, scale)


def training_reward(
    value: float, scale: float, options: RewardOptions, relative_to: RewardFrame | None = None
) -> float:
    """A valid reply's reward as a trainer sees it (``scale``: the debate's
    :func:`reward_scale`; ``relative_to``: the decision's own frame, :func:`reward_frame`)."""
    return reward_frame(options, scale, relative_to)(value)


def invalid_training_reward(
    scale: float, options: RewardOptions, relative_to: RewardFrame | None = None
) -> float:
    """An invalid reply's reward as a trainer sees it: ``options.invalid`` times the debate's
    ``scale`` (below every valid return of the debate, -scale), in the decision's frame like
    any return, so below every valid reply of the decision in every frame."""
    if not options.normalize:
        return float(options.invalid * scale)
    if options.relative and relative_to is not None:
        return relative_to(options.invalid * scale)
    return float(options.invalid)  # on the debate's scale: the option's value as given


def reply_ok(text: str, options: RewardOptions) -> bool:
    """Whether a reply is scored at all: not empty (free text), not over the size limit."""
    return bool(text.strip()) and len(text) <= options.max_reply_chars


# ---------------------------------------------------------------------------- quotes


def quote_penalty(statuses: Iterable[str], weight: float) -> float:
    """The optional training term of one speech's quotes of a hidden passage: ``-weight`` per
    quote that is not verified (unverified or over the quote budget)."""
    return -weight * sum(1 for s in statuses if s != "verified")


def quote_penalties(t: Transcript, weight: float) -> dict[str, float]:
    """:func:`quote_penalty` summed per speaker of ``t`` over its speeches (``Turn.quotes``)
    and, for the prover, the leaf evidence (``Evidence.data["quotes"]``)."""
    out: dict[str, float] = {}
    for turn in t.turns:
        if turn.quotes is not None:
            statuses = [str(q.get("status")) for q in turn.quotes]
            out[turn.role] = out.get(turn.role, 0.0) + quote_penalty(statuses, weight)
    for rd in t.rounds:
        quotes = rd.evidence.data.get("quotes") if rd.evidence is not None else None
        if isinstance(quotes, list):
            statuses = [str(q.get("status")) for q in quotes]
            out["prover"] = out.get("prover", 0.0) + quote_penalty(statuses, weight)
    return out


def check_quote_penalties(t: Transcript, score: Score) -> None:
    """Recompute the recorded quote penalties (``meta.quote_penalty``: ``weight`` and
    ``by_role``) into ``score``'s mismatches."""
    recorded = t.meta.get("quote_penalty")
    if not isinstance(recorded, dict):
        return
    again = quote_penalties(t, float(recorded.get("weight", 0.0)))
    _check(score, t.id, "meta.quote_penalty.by_role", recorded.get("by_role"), again)
