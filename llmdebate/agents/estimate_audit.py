"""Grading the estimator's probabilities where the truth of every claim is computable.

For the bundled formal problems (:mod:`llmdebate.data.problems`) the truth of the top claim
and of every subclaim a prover writes in a recognised form is known, so each probability a
model estimator gave can be scored: its p_d of the top claim (initialisation) and its b_i of
each subclaim (every prefix of B's table where the debate asked for it, else the drawn path;
the truth of subclaim i does not depend on the earlier outcomes stated). ``summary.json``
"estimates" gives their Brier score beside that of the constant base rate of the same
probabilities' claims (the share of true ones: the best constant in hindsight), so a run says
whether its estimator knows more than how often claims are true. Estimates by a formal
strategy or an oracle are not counted.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from llmdebate.core.schemas import Claim, Transcript
from llmdebate.data.problems import claim_truth

NOT_A_MODEL = frozenset({"strategy", "oracle"})


def _truth(claim: Claim, meta: dict[str, Any] | None) -> int | None:
    return claim.truth if claim.truth is not None else claim_truth(claim.text, meta)


def graded_estimates(t: Transcript) -> list[tuple[float, int]]:
    """(probability, truth) of every model estimate in ``t`` whose claim's truth is known."""
    if t.init is None or t.init.estimate.method in NOT_A_MODEL:
        return []
    meta = (t.item or {}).get("meta")
    out: list[tuple[float, int]] = []
    top = _truth(t.init.claim, meta)
    if top is not None:
        out.append((t.init.estimate.value, top))
    for rd in t.rounds:
        if rd.decomposition is None:
            continue
        truths = [_truth(s, meta) for s in rd.decomposition.subclaims]
        if rd.table is not None:
            probs = [(p, i) for i, level in enumerate(rd.table) for p in level]
        else:
            probs = [(p, i) for i, p in enumerate(rd.b)]
        out.extend((p, v) for p, i in probs if (v := truths[i]) is not None)
    return out


class EstimateTally:
    """The counts behind ``summary.json`` "estimates", folded one transcript at a time."""

    __slots__ = ("n", "sq", "true")

    def __init__(self) -> None:
        self.n = self.true = 0
        self.sq = 0.0

    def add(self, t: Transcript) -> None:
        for p, v in graded_estimates(t):
            self.n += 1
            self.true += v
            self.sq += (p - v) ** 2

    def summary(self) -> dict[str, Any]:
        if not self.n:
            return {"graded": 0, "assessment": "no model estimate of a claim with a known truth"}
        share = self.true / self.n
        base = share * (1 - share)  # the Brier score of the constant `share` on these claims
        brier = self.sq / self.n
        verdict = "beats" if brier < base else "does not beat"
        return {
            "graded": self.n,
            "true_share": share,
            "brier": brier,
            "brier_base_rate": base,
            "assessment": f"{verdict} the base rate: Brier {brier:.4f} against {base:.4f} for "
                          f"the constant {share:.2f} over {self.n} probabilities",
        }


def estimate_summary(transcripts: Iterable[Transcript]) -> dict[str, Any]:
    """``summary.json`` "estimates" of ``transcripts``: how the model estimator's probabilities
    fared against the claims' computable truth."""
    tally = EstimateTally()
    for t in transcripts:
        tally.add(t)
    return tally.summary()
