"""Credit assignment: which reward of a debate each decision is credited with.

Every number comes from :mod:`llmdebate.core.scoring`
(:func:`~llmdebate.core.scoring.score_transcript` for the recursive protocols,
:func:`~llmdebate.core.scoring.judged_reward` for the protocols a judge decides);
this module only decides *which* terms a decision is credited with (docs/training.md):

prover-estimator debate, terms r_init, r_d, …, r_0 (the prover's; the estimator gets −):

* prover: the answer → r_init; the direction and the decomposition of round k → r_k; the
  recursion choice of round k → r_(k-1) + … + r_0 (the rounds it decides); the leaf
  evidence → r_0;
* estimator: p_k → −r_k for every k (p_d is the first estimate, which also draws ẑ, so it is
  also credited −r_init; p_(k-1) is the b_j handed on by round k); every b_i of round k →
  −r_k (its draw z_i feeds M_D).

naive recursive debate: every prover decision → the ±1 payoff, every challenger decision → −it.
two-sided debate, consultancy, a topology's seat that argues for an answer: every speech →
1[the judge chose the debater's answer] (expected: the judge's probability of it). A seat
that argues for no answer (a critic) and judges' calls carry no reward.

**Carriers.** For the sum check, one row per reward term and player is its *carrier*
(``credited``; the last such row when a decision was re-asked): the answer row (r_init)
and the direction row of round k (r_k) for the prover; the p-rows (the first estimate as
r_init and as p_d, the handed-on b_j of round k as p_(k-1)) for the estimator; the last
speech of a debater; the last row of a naive debater.
Per debate and player, the carriers' rewards sum to the player's payoff exactly.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from llmdebate.core import scoring
from llmdebate.core.schemas import ModelCallRecord, Transcript

# A call role → the player it trains as (``--role``).
PLAYER_OF_ROLE = {
    "prover": "prover",
    "estimator": "estimator",
    "challenger": "estimator",
    "judge": "judge",
    "debater A": "debater",
    "debater B": "debater",
    "consultant": "debater",
}
SPEAKERS = ("debater A", "debater B", "consultant")
_ARGUE = re.compile(r"argue round (\d+)$")


def speech_round(act: str) -> int | None:
    """The round of a speech call (its act is "argue round r"), else None."""
    m = _ARGUE.match(act or "")
    return int(m.group(1)) if m else None


@dataclass(frozen=True)
class Terms:
    """A debate's reward terms in protocol order, sampled and expected (the prover's sign)."""

    names: list[str]
    sampled: dict[str, float]
    expected: dict[str, float]

    def value(self, term: str, expected: bool = False) -> float:
        """A term's value; 0 for a round the debate never reached (it stopped early)."""
        return (self.expected if expected else self.sampled).get(term, 0.0)

    def after(self, k: int, expected: bool = False) -> float:
        """r_(k-1) + … + r_0: what the recursion choice of round k decides."""
        parts = [n for n in self.names if n.startswith("r_") and n != "r_init" and int(n[2:]) < k]
        return float(scoring.total(self.value(n, expected) for n in parts))

    def to_go(self, term: str, expected: bool = False) -> float:
        """This term plus every later one (the return to go from a decision credited with it)."""
        values = self.expected if expected else self.sampled
        return scoring.decision_return(self.names, values, term)


def pe_terms(t: Transcript) -> Terms:
    """The rewards of a complete prover-estimator debate, recomputed by the scoring module."""
    s = scoring.score_transcript(t)
    if s.mismatches:
        raise ValueError(f"debate {t.id} does not re-score ({s.mismatches[0]})")
    names = ["r_init", *(f"r_{rd.k}" for rd in t.rounds)]
    sampled = dict(zip(names, s.rewards, strict=True))
    return Terms(names, sampled, dict(zip(names, s.expected, strict=True)))


def naive_payoff(t: Transcript) -> float:
    s = scoring.score_transcript(t)
    if s.mismatches or s.total is None:
        raise ValueError(f"debate {t.id} does not re-score")
    return float(s.total)


def judged(t: Transcript, speaker: str) -> tuple[float, float] | None:
    """(sampled, expected) reward of a debater of a judged protocol (None: no judge yet)."""
    judge = t.meta.get("judge") or {}
    options = t.meta.get("options") or t.meta.get("order") or t.meta.get("shown")
    decision = t.meta.get("decision")
    position = next((tn.position for tn in t.turns if tn.role == speaker), None)
    if "p_first" not in judge or not options or position is None or decision is None:
        return None
    return scoring.judged_reward(
        float(judge["p_first"]), position == options[0], decision == options[0]
    )


@dataclass
class Credit:
    """What one decision is credited with (the player's sign)."""

    term: str
    reward: float | None
    expected_reward: float | None
    return_to_go: float | None
    expected_return_to_go: float | None
    eligible: bool = False
    """May carry ``term`` in the sum check (the first eligible row per term and player does)."""
    decision_term: str = ""
    """The decision's first term (its level, :func:`llmdebate.core.scoring.decision_level`);
    empty: ``term`` itself."""


def term_credit(terms: Terms, term: str, sign: float, eligible: bool) -> Credit:
    return Credit(
        term,
        sign * terms.value(term),
        sign * terms.value(term, True),
        sign * terms.to_go(term),
        sign * terms.to_go(term, True),
        eligible,
    )


def recurse_credit(terms: Terms, k: int, sign: float) -> Credit:
    s, e = sign * terms.after(k), sign * terms.after(k, True)
    return Credit(f"after_{k}", s, e, s, e)


def handed_on(t: Transcript, call: ModelCallRecord) -> bool:
    """Whether an estimator call gave the b_j its round handed on as the next p."""
    rd = next((r for r in t.rounds if r.k == call.round), None)
    if rd is None or rd.recurse is None or call.index != rd.recurse:
        return False
    if call.act == "independent" or t.config.variant == "independent":
        return True  # asked with no earlier outcome: the same b_j on every path
    return list(call.prefix or []) == rd.z[: rd.recurse]


def pe_call_credits(t: Transcript, terms: Terms, call: ModelCallRecord) -> list[tuple[str, Credit]]:
    """(act, credit) of every decision a prover-estimator call served (a p-row may be two),
    the earliest term first. Every row of one decision carries the decision's return to go
    from that earliest term: its effect on the player's payoff (the online reward)."""
    out = _pe_call_credits(t, terms, call)
    if out:
        first = out[0][1]
        out = [(a, replace(c, return_to_go=first.return_to_go,
                           expected_return_to_go=first.expected_return_to_go,
                           decision_term=first.term))
               for a, c in out]
    return out


def _pe_call_credits(
    t: Transcript, terms: Terms, call: ModelCallRecord
) -> list[tuple[str, Credit]]:
    d, k = call.decision, call.round
    if call.role == "prover":
        if d == "answer":
            return [("answer", term_credit(terms, "r_init", 1.0, True))]
        if d in ("direction", "decompose") and k is not None:
            return [(d, term_credit(terms, f"r_{k}", 1.0, d == "direction"))]
        if d == "recurse" and k is not None:
            return [("recurse", recurse_credit(terms, k, 1.0))]
        if d == "evidence":
            return [("evidence", term_credit(terms, "r_0", 1.0, False))]
        return []
    if call.role == "estimator" and d == "estimate":
        if k is None:  # p_d: draws ẑ (r_init) and is the p of round d
            out = [("estimate", term_credit(terms, "r_init", -1.0, True))]
            if f"r_{t.config.depth}" in terms.names:
                out.append(("estimate", term_credit(terms, f"r_{t.config.depth}", -1.0, True)))
            return out
        out = [("estimate", term_credit(terms, f"r_{k}", -1.0, False))]
        if handed_on(t, call) and f"r_{k - 1}" in terms.names:
            out.append(("estimate", term_credit(terms, f"r_{k - 1}", -1.0, True)))
        return out
    return []
