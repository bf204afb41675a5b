"""Checking the prover's decompositions where the truth is computable at every node.

For the bundled formal problems (:mod:`llmdebate.data.problems`: divisor intervals, circuits)
the truth of any subclaim written in a recognised form is known, so a model's decomposition
can be graded: were its subclaims true, does its rule give the parent's truth on the
subclaims' true values (``rule_right``), and, for an interval claim, is it an exact split
(the same number and polarity, consecutive subintervals covering the parent's interval, AND
for "no divisor" and OR for "a divisor": right for every number, not only this one).

:func:`audit_decomposition` grades one decomposition (the prover stores the result in the
transcript's ``meta["decompositions"]``); :func:`decomposition_summary` sums up a run for
``summary.json``, from the transcripts alone, and says plainly when most are wrong.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Any

from llmdebate.core.rules import compile_rule
from llmdebate.core.schemas import Claim, Decomposition, Transcript
from llmdebate.data.problems import claim_truth, parse_divisor_claim

MOSTLY = 0.5


def _truth(claim: Claim, meta: dict[str, Any] | None) -> int | None:
    return claim.truth if claim.truth is not None else claim_truth(claim.text, meta)


def exact_split(parent: Claim, dec: Decomposition) -> bool | None:
    """Whether ``dec`` splits an interval claim exactly (None: not an interval claim)."""
    top = parse_divisor_claim(parent.text)
    if top is None:
        return None
    n, lo, hi, none = top
    parts = [parse_divisor_claim(s.text) for s in dec.subclaims]
    if any(p is None or p[0] != n or p[3] != none for p in parts):
        return False
    edges = sorted((p[1], p[2]) for p in parts if p is not None)
    joined = edges[0][0] == lo and edges[-1][1] == hi
    contiguous = all(a[1] == b[0] for a, b in itertools.pairwise(edges))
    return joined and contiguous and dec.rule.kind == ("and" if none else "or")


def audit_decomposition(
    parent: Claim, dec: Decomposition, meta: dict[str, Any] | None
) -> dict[str, Any]:
    """The truth of the parent and of each subclaim (None: not computable), whether the rule
    maps the subclaims' truths to the parent's, and whether an interval split is exact."""
    parent_truth = _truth(parent, meta)
    truths = [_truth(s, meta) for s in dec.subclaims]
    known = parent_truth is not None and all(t is not None for t in truths)
    rule_right = None
    if known:
        rule = compile_rule(dec.rule, dec.width)
        rule_right = bool(rule([int(t) for t in truths if t is not None]) == parent_truth)
    return {
        "claim": parent.id,
        "parent_truth": parent_truth,
        "subclaim_truth": truths,
        "rule": dec.rule.describe(),
        "rule_right": rule_right,
        "exact_split": exact_split(parent, dec) if meta else None,
    }


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


class DecompositionTally:
    """The counts behind :func:`decomposition_summary`, folded one transcript at a time (so a
    run's summary keeps counters, not transcripts)."""

    __slots__ = (
        "asked",
        "attempts",
        "constrained",
        "failed",
        "first_error",
        "first_valid",
        "graded",
        "invalid",
        "played_invalid",
        "right",
        "splits",
        "splits_exact",
        "subs_known",
        "subs_true",
        "unknown",
    )

    def __init__(self) -> None:
        self.attempts = self.invalid = self.constrained = self.asked = self.first_valid = 0
        self.played_invalid = self.graded = self.right = self.subs_true = self.subs_known = 0
        self.unknown = self.splits = self.splits_exact = 0
        self.failed = 0  # calls the model never answered (the request failed)
        self.first_error: str | None = None

    def add(self, t: Transcript) -> None:
        for c in t.calls:
            if c.role == "prover" and c.act == "decompose":
                self.attempts += 1
                self.invalid += c.invalid is not None or c.error is not None
                self.constrained += bool(c.constrained)
                if c.error is not None and c.completion is None:
                    self.failed += 1
                    self.first_error = self.first_error or c.error
        for a in t.meta.get("decompositions", []):
            if a.get("source") != "model":
                continue
            self.asked += 1
            self.first_valid += a.get("attempts") == 1 and a.get("valid", True)
            self.played_invalid += not a.get("valid", True)
            if a.get("rule_right") is not None:
                self.graded += 1
                self.right += bool(a["rule_right"])
            for v in a.get("subclaim_truth", []):
                if v is None:
                    self.unknown += 1
                else:
                    self.subs_known += 1
                    self.subs_true += v
            if a.get("exact_split") is not None:
                self.splits += 1
                self.splits_exact += a["exact_split"]

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "model_decompositions": self.asked,
            "calls": self.attempts,
            "invalid_replies": self.invalid,
            "unanswered_calls": self.failed,
            "constrained_calls": self.constrained,
            "valid_at_first_attempt": _share(self.first_valid, self.asked),
            "played_invalid": self.played_invalid,
            "graded": self.graded,
            "rule_right": _share(self.right, self.graded),
            "exact_splits": _share(self.splits_exact, self.splits),
            "subclaims_true": _share(self.subs_true, self.subs_known),
            "subclaims_ungradable": self.unknown,
        }
        out["assessment"] = _assessment(out, self.splits, self.splits_exact, self.first_error)
        return out


def decomposition_summary(transcripts: Iterable[Transcript]) -> dict[str, Any]:
    """How the prover's model-written decompositions fared over a run.

    Counts the decomposition calls (attempts), those whose reply was invalid, those made
    with a constrained backend, the decompositions played (``played_invalid``: those kept
    although invalid, see ``keep_invalid``), and, where the truth is
    computable, the subclaims that were true, the rules that were right and the exact
    interval splits; ``assessment`` is one plain sentence.
    """
    tally = DecompositionTally()
    for t in transcripts:
        tally.add(t)
    return tally.summary()


def _assessment(
    s: dict[str, Any], n_splits: int, n_exact: int, first_error: str | None = None
) -> str:
    if not s["model_decompositions"] and not s["calls"]:
        return "the model wrote no decomposition in this run"
    if not s["model_decompositions"] and s["unanswered_calls"] == s["calls"]:
        return (
            f"no decomposition was ever answered: all {s['calls']} calls failed before a "
            f"reply (first: {first_error})"
        )
    if not s["model_decompositions"]:
        answered, failed = s["calls"] - s["unanswered_calls"], s["unanswered_calls"]
        text = f"the model produced no valid decomposition in {answered} " + (
            "answered attempt" if answered == 1 else "answered attempts"
        )
        if failed:
            text += f" ({failed} more {'call' if failed == 1 else 'calls'} failed before a reply)"
        return text
    parts = [f"{s['model_decompositions']} decompositions by the model"]
    if s["played_invalid"]:
        parts.append(
            f"{s['played_invalid']} played although invalid (a subclaim repeats its claim)"
        )
    if n_splits:
        parts.append(f"{n_exact} of {n_splits} are exact interval splits")
    if s["graded"]:
        parts.append(f"the rule gives the right truth in {s['rule_right']:.0%} of {s['graded']}")
    if not n_splits and not s["graded"]:  # nothing to grade them against
        return "not graded (no decomposition's truth is computable): " + "; ".join(parts)
    wrong = (n_splits and n_exact / n_splits < MOSTLY) or (s["graded"] and s["rule_right"] < MOSTLY)
    verdict = "MOSTLY WRONG" if wrong else "mostly right"
    return f"{verdict}: " + "; ".join(parts)
