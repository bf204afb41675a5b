"""Grading the probabilities the debaters state: are they beliefs at all, and are they right?

A ``logprobs`` probability is P(True) / (P(True) + P(False)) at the answer position: it reads
as a belief only when the model's reply there *is* True or False. Every such call's record
holds its answer masses (``notes["masses"]``: p_true_mass, p_false_mass, neither_mass;
:data:`~llmdebate.elicit.methods.MASSES`); the *answer mass* of a call is
p_true_mass + p_false_mass. ``summary.json`` "beliefs" gives, for the prover's belief calls
(act ``belief``) and the estimator's calls, how many there were, their mean and least
answer mass, and ``noise``: the mean answer mass is below one half (most of the model's
reply was something else, and the ratio is mostly noise). Where the claims' truth is
recorded (the bundled formal problems), the beliefs are graded as the estimates are
(:mod:`llmdebate.agents.estimate_audit`): Brier score beside the constant base rate of the
same claims; the prover's are its stated beliefs (``meta["prover_beliefs"]``), the
estimator's its graded estimates. For the prover, ``directions`` says whether the directions
that come from its beliefs (every round below the top claim) follow B's errors: a direction
is *toward the truth* when it equals sign(truth - p), p being B's probability of the round's
claim, and *as the oracle* when it equals the honest oracle's direction (sign(truth - p) if
|truth - p| > epsilon, else 0). docs/metrics.md defines each figure.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from llmdebate.agents.estimate_audit import graded_estimates
from llmdebate.core.schemas import ModelCallRecord, Transcript

NOISE_BELOW = 0.5
"""A role's beliefs are noise when its mean answer mass is below this."""
ROLES = ("prover", "estimator")


def belief_role(call: ModelCallRecord) -> str | None:
    """The role whose beliefs ``call`` states: the prover's ``belief`` calls and every
    probability call of the estimator; None for other calls."""
    if call.role == "prover" and call.act == "belief":
        return "prover"
    if call.role == "estimator":
        return "estimator"
    return None


def answer_mass(call: ModelCallRecord) -> float | None:
    """p_true_mass + p_false_mass of a ``logprobs`` probability call (None: no masses)."""
    masses = (call.notes or {}).get("masses")
    if not masses or "p_true_mass" not in masses or "p_false_mass" not in masses:
        return None
    return float(masses["p_true_mass"]) + float(masses["p_false_mass"])


def recorded_truths(t: Transcript) -> dict[str, int]:
    """Claim text -> the truth the transcript records for it (the top claim, every round's
    claim and subclaim; a debate on a formal problem records every truth it can compute)."""
    out: dict[str, int] = {}
    claims = [t.init.claim] if t.init is not None else []
    for rd in t.rounds:
        claims += [rd.claim, *(rd.decomposition.subclaims if rd.decomposition else [])]
    for c in claims:
        if c.truth is not None:
            out.setdefault(c.text, int(c.truth))
    return out


def _sign(x: float) -> int:
    return (x > 0) - (x < 0)


class _Role:
    __slots__ = ("graded", "least", "mass", "n", "sq", "true")

    def __init__(self) -> None:
        self.n = self.graded = self.true = 0
        self.mass = self.sq = 0.0
        self.least: float | None = None

    def call(self, mass: float) -> None:
        self.n += 1
        self.mass += mass
        self.least = mass if self.least is None else min(self.least, mass)

    def grade(self, p: float, truth: int) -> None:
        self.graded += 1
        self.true += truth
        self.sq += (p - truth) ** 2

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {"calls": self.n}
        if self.n:
            mean = self.mass / self.n
            out.update(mean_answer_mass=mean, min_answer_mass=self.least,
                       noise=mean < NOISE_BELOW)
        else:
            out.update(mean_answer_mass=None, min_answer_mass=None, noise=None)
        out["graded"] = self.graded
        if self.graded:
            share = self.true / self.graded
            out.update(true_share=share, brier=self.sq / self.graded,
                       brier_base_rate=share * (1 - share))
        return out


class BeliefTally:
    """The counts behind ``summary.json`` "beliefs", folded one transcript at a time."""

    def __init__(self) -> None:
        self.roles = {r: _Role() for r in ROLES}
        self.rounds = self.nonzero = self.toward = self.as_oracle = 0

    def add(self, t: Transcript) -> None:
        for call in t.calls:
            role = belief_role(call)
            mass = answer_mass(call) if role is not None else None
            if role is not None and mass is not None:
                self.roles[role].call(mass)
        beliefs = t.meta.get("prover_beliefs") or {}
        truths = recorded_truths(t)
        for text, p in beliefs.items():
            truth = truths.get(text)
            if truth is not None:
                self.roles["prover"].grade(float(p), truth)
        for p, truth in graded_estimates(t):
            self.roles["estimator"].grade(p, truth)
        eps = t.config.epsilon
        for rd in t.rounds:
            if rd.k >= t.config.depth or rd.direction is None or rd.p is None:
                continue
            truth = rd.claim.truth
            if rd.claim.text not in beliefs or truth is None:
                continue
            error = truth - rd.p
            self.rounds += 1
            self.nonzero += rd.direction != 0
            self.toward += rd.direction != 0 and rd.direction == _sign(error)
            self.as_oracle += rd.direction == (_sign(error) if abs(error) > eps else 0)

    def summary(self) -> dict[str, Any]:
        out = {r: self.roles[r].summary() for r in ROLES}
        out["prover"]["directions"] = {
            "rounds": self.rounds,
            "nonzero": self.nonzero,
            "toward_truth": self.toward,
            "toward_truth_share": self.toward / self.nonzero if self.nonzero else None,
            "as_oracle": self.as_oracle,
            "as_oracle_share": self.as_oracle / self.rounds if self.rounds else None,
        }
        for r in ROLES:
            out[r]["assessment"] = assessment(r, out[r])
        return out


def assessment(role: str, s: dict[str, Any]) -> str:
    """One sentence on a role's beliefs (``summary.json`` "beliefs".<role>."assessment")."""
    if not s["calls"]:
        return f"no {role} probability call with True/False masses (method logprobs)"
    mass = (f"True/False hold {s['mean_answer_mass']:.1%} of the answer position's mass on "
            f"average (least {s['min_answer_mass']:.1%}) over {s['calls']} calls")
    head = f"noise: {mass}" if s["noise"] else f"beliefs: {mass}"
    if s["graded"]:
        verdict = "beats" if s["brier"] < s["brier_base_rate"] else "does not beat"
        head += (f"; {verdict} the base rate: Brier {s['brier']:.4f} against "
                 f"{s['brier_base_rate']:.4f} over {s['graded']} claims")
    d = s.get("directions")
    if d and d["rounds"]:
        toward = (f"{d['toward_truth']} of {d['nonzero']} nonzero directions point toward the "
                  f"truth" if d["nonzero"] else "every direction is 0")
        head += (f"; directions: {toward}, {d['as_oracle']} of {d['rounds']} are the "
                 f"oracle's")
    return head


def belief_summary(transcripts: Iterable[Transcript]) -> dict[str, Any]:
    """``summary.json`` "beliefs" of ``transcripts``."""
    tally = BeliefTally()
    for t in transcripts:
        tally.add(t)
    return tally.summary()
