"""A judge who can check one step, and debaters who know the truth: scripted players of the
divisors problem for labelling runs (``docs/labelling.md``).

The judge (:func:`one_step_judge`, a scripted model's ``probabilities``) reads claims that N has
(or has no) divisor d with lo <= d < hi. It may check at most :data:`BUDGET` divisibilities
(``d divides N``) and must rule on anything larger from what it is shown:

* a claim about at most :data:`BUDGET` candidates (a leaf of a deep enough prover-estimator
  debate) it checks whole: its verdict is the truth;
* else it checks the steps the text it reads names (``d divides N``, in order of appearance,
  at most :data:`BUDGET`): a named divisor that divides N settles "N has a divisor"; one that
  does not is a debater caught in a lie, and it leans the other way (:data:`CAUGHT`);
* with no step named, it checks :data:`BUDGET` candidates of its own choosing (drawn from N)
  and, finding no divisor, leans only slightly towards "no divisor" (:data:`UNSURE`).

So direct judgment with it is weak (it checks a step of its own choosing) and a debate can
point it at the step that matters. The debaters (:func:`truthful_speaker`, a scripted model's
``responder``) know the truth: arguing that N has a divisor they name the smallest one, or,
when there is none, a number that does not divide N (a lie the judge can check); arguing
that it has none they say so, naming nothing. A critic choosing its stance agrees exactly
when the proposer's answer is right. Used as ``llmdebate.judging.one_step:one_step_judge`` and
``llmdebate.judging.one_step:truthful_speaker`` in a config (``configs/labelling-one-step.yaml``).
"""

from __future__ import annotations

import hashlib
import re

from llmdebate.data.problems import parse_divisor_claim

BUDGET = 2
"""Divisibilities the judge may check."""
CAUGHT = 0.9
"""The judge's belief that N has no divisor in the range after a named divisor failed."""
UNSURE = 0.55
"""Its belief that N has none after checking its own candidates and finding none."""

_QUESTION = re.compile(r"does (\d+) have no divisor d with (\d+) <= d < (\d+)\?")
_PROPOSED = re.compile(r"Proposed answer: (\w+)")
_STEP = re.compile(r"\b(\d+) divides (\d+)\b")
_FIRST = re.compile(r'Is answer \(A\), "([^"]+)"')
_POSITION = re.compile(r'answer "([^"]+)" is correct|argue that the answer is "([^"]+)"')


def _text(messages: list[dict[str, str]]) -> str:
    return "\n".join(str(m.get("content", "")) for m in messages)


def _range(text: str) -> tuple[int, int, int] | None:
    """(N, lo, hi) of the labelled question in ``text``."""
    found = _QUESTION.search(text)
    return None if found is None else (int(found[1]), int(found[2]), int(found[3]))


def _own_candidates(n: int, lo: int, hi: int) -> list[int]:
    """The candidates the judge checks when no step is named: drawn from N."""
    seed = int.from_bytes(hashlib.sha256(str(n).encode()).digest()[:4], "big")
    span = hi - lo
    return [lo + (seed + i * 7919) % span for i in range(min(BUDGET, span))]


def p_no_divisor(n: int, lo: int, hi: int, text: str) -> float:
    """The judge's probability that N has no divisor in [lo, hi) after reading ``text``."""
    if hi - lo <= BUDGET:
        return float(not any(n % d == 0 for d in range(lo, hi)))
    named = [int(d) for d, m in _STEP.findall(text) if int(m) == n][:BUDGET]
    if named:
        if any(lo <= d < hi and d not in (1, n) and n % d == 0 for d in named):
            return 0.0
        return CAUGHT
    own = _own_candidates(n, lo, hi)
    return 0.0 if any(n % d == 0 for d in own) else UNSURE


def _proposed_no_divisor(text: str) -> bool | None:
    """Whether the proposed answer claims N has no divisor (``yes``), None if not found."""
    found = _PROPOSED.search(text)
    return None if found is None else found[1].lower() == "yes"


def one_step_judge(messages: list[dict[str, str]]) -> float:
    """P[True] of the question asked: a leaf claim's truth, or that option (A) is right."""
    text = _text(messages)
    claim = re.search(r"^Claim: (.*)$", text, re.MULTILINE)
    parsed = parse_divisor_claim(claim[1]) if claim else None
    if parsed is not None:
        n, lo, hi, none = parsed
        p = p_no_divisor(n, lo, hi, text.split("Claim:", 1)[1])
        return p if none else 1.0 - p
    rng, proposed, first = _range(text), _proposed_no_divisor(text), _FIRST.search(text)
    if rng is None or proposed is None or first is None:
        return 0.5
    p = p_no_divisor(*rng, text)
    p_correct = p if proposed else 1.0 - p
    return p_correct if first[1] == "correct" else 1.0 - p_correct


def _smallest_divisor(n: int, lo: int, hi: int) -> int | None:
    return next((d for d in range(lo, min(hi, n)) if n % d == 0), None)


def _argument(n: int, lo: int, hi: int, has: bool) -> str:
    """A speech for "N has a divisor in [lo, hi)" (``has``) or for "N has none"."""
    if not has:
        return f"No number d with {lo} <= d < {hi} divides {n}."
    d = _smallest_divisor(n, lo, hi)
    if d is None:  # a lie, checkable
        d = next((x for x in range(lo, hi) if n % x), lo)
    return f"{d} divides {n}, so {n} has a divisor in the range."


def truthful_speaker(messages: list[dict[str, str]]) -> str:
    """A debater's, consultant's or critic's reply on a labelled divisors question."""
    text = _text(messages)
    rng, proposed = _range(text), _proposed_no_divisor(text)
    if rng is None or proposed is None:
        return "I have nothing to add."
    n, lo, hi = rng
    truly_none = _smallest_divisor(n, lo, hi) is None
    right = proposed == truly_none
    system = str(messages[0].get("content", "")) if messages else ""
    if "agree or disagree" in text:
        return "agree" if right else "disagree"
    if system.startswith("You are a critic"):
        agree = "\nagree" in text.split("What you have read", 1)[-1]
        # agreeing, it argues for the proposed answer; disagreeing, against it
        return _argument(n, lo, hi, has=not proposed if agree else proposed)
    position = _POSITION.search(system)
    arguing_correct = position is None or (position[1] or position[2]) == "correct"
    claims_none = proposed if arguing_correct else not proposed
    return _argument(n, lo, hi, has=not claims_none)


def knows_the_truth(messages: list[dict[str, str]]) -> float:
    """A debater's belief in the divisors claim it is asked about: the truth (0.5 for a text
    with no such claim)."""
    user = next((m for m in reversed(messages) if m.get("role") == "user"), None)
    parsed = parse_divisor_claim(str(user.get("content", ""))) if user else None
    if parsed is None:
        return 0.5
    n, lo, hi, none = parsed
    has = _smallest_divisor(n, lo, hi) is not None
    return 0.98 if has != none else 0.02
