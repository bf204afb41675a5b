"""The estimator's probabilities on interval subclaims, scored against their exact truth.

The prompt is the one the estimator renders for a probability (``prompts/estimate.j2``
through :class:`llmdebate.prompts.Prompts`, with the True/False instruction of the
``logprobs`` method, as plain text the way the local backend sends it); the probability is
the ``logprobs`` method's P(True) / (P(True) + P(False)) at the answer token
(:func:`llmdebate.elicit.estimate_from_logprobs`). The cases are those a debate asks about an
interval claim: the claim alone, and each subclaim of its exact split with the earlier
subclaims' outcomes stated (drawn at random from a recorded seed). Every case's truth is
computed (:func:`llmdebate.data.problems.claim_truth`), so each probability has a Brier
score; the constant base rate of the same cases is the baseline it must beat.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any

from llmdebate.core.schemas import Claim, CombinationRule
from llmdebate.data.problems import claim_truth, divisor_statement, formal_decomposition
from llmdebate.elicit import estimate_from_logprobs
from llmdebate.elicit.prompts import ANSWER_VARIANTS, TF_INSTRUCTION, with_instruction
from llmdebate.models.interface import GenerateConfig
from llmdebate.models.text_prompt import format_prompt
from llmdebate.prompts import Prompts, rule_text
from llmdebate.training.claims import IntervalClaim, SplitPoints, split_point

ANSWERS = (" False", " True")
"""The answer word trained for a false (0) and a true (1) case: the word the ``Answer:`` cue
is followed by (one token each in the Gemma vocabulary)."""


@dataclass(frozen=True)
class EstimateCase:
    """One probability the estimator is asked for: the prompt text and the exact truth."""

    claim: str
    prompt: str
    truth: int


def estimate_prompt(prompts: Prompts, claim: str, parent: IntervalClaim | None = None,
                    subclaims: list[str] | None = None, rule: str | None = None,
                    index: int | None = None, outcomes: list[int] | None = None) -> str:
    """The text the local backend sends for an estimator's ``logprobs`` probability."""
    messages = prompts.render(
        "estimate", claim=claim, parent=parent.text if parent else None, rule=rule,
        subclaims=subclaims, index=index,
        outcomes=[{"index": j + 1, "text": (subclaims or [])[j], "value": v}
                  for j, v in enumerate(outcomes or [])],
        context=None,
    )
    return format_prompt(with_instruction(messages, TF_INSTRUCTION))


def estimate_cases(prompts: Prompts, claims: list[IntervalClaim], seed: int,
                   splits: SplitPoints = "midpoint") -> list[EstimateCase]:
    """For each claim: the claim alone, then (unless it is about a single d) every subclaim
    of its exact split (at the
    midpoint, or with ``splits="random"`` in two at a point drawn from ``random.Random(seed)``)
    with the earlier subclaims' outcomes stated (each a fair coin of the same generator)."""
    rng = random.Random(seed)
    out: list[EstimateCase] = []
    for c in claims:
        out.append(EstimateCase(c.text, estimate_prompt(prompts, c.text), _truth(c.text)))
        if c.hi - c.lo < 2:  # a single divisor: a leaf, nothing to split
            continue
        if splits == "random":
            k = split_point(c.lo, c.hi, splits, rng)
            parts = [(c.lo, k), (k, c.hi)]
            subs = [divisor_statement(c.n, a, b, c.none) for a, b in parts]
            rule = rule_text(CombinationRule(kind="and" if c.none else "or"), len(subs))
        else:
            dec = formal_decomposition(Claim(id="c", text=c.text), {"problem": "divisors"},
                                       c.width)
            if dec is None:  # pragma: no cover - every IntervalClaim parses
                continue
            subs = [s.text for s in dec.subclaims]
            rule = rule_text(dec.rule, len(subs))
        for i, s in enumerate(subs):
            given = [rng.randrange(2) for _ in range(i)]
            out.append(EstimateCase(
                s, estimate_prompt(prompts, s, c, subs, rule, i + 1, given), _truth(s)))
    return out


def _truth(text: str) -> int:
    truth = claim_truth(text, {"problem": "divisors"})
    if truth is None:  # pragma: no cover - the problem code writes parseable claims
        raise ValueError(f"no truth for {text!r}")
    return truth


def pairs(cases: list[EstimateCase]) -> list[tuple[str, str]]:
    """(prompt, answer word) pairs for supervised training on the exact truth."""
    return [(c.prompt, ANSWERS[c.truth]) for c in cases]


def brier_scores(probs: list[float], truths: list[int]) -> dict[str, Any]:
    """Brier score and log loss of ``probs``, beside those of the constant base rate (the
    share of true cases among these very cases: the best constant in hindsight)."""
    n = len(truths)
    base = sum(truths) / n
    clamp = [min(1 - 1e-6, max(1e-6, p)) for p in probs]
    return {
        "cases": n,
        "true_share": round(base, 4),
        "brier": sum((p - t) ** 2 for p, t in zip(probs, truths, strict=True)) / n,
        "brier_base_rate": sum((base - t) ** 2 for t in truths) / n,
        "log_loss": -sum(math.log(p if t else 1 - p)
                         for p, t in zip(clamp, truths, strict=True)) / n,
        "accuracy": sum((p > 0.5) == bool(t) for p, t in zip(probs, truths, strict=True)) / n,
        "mean_probability": sum(probs) / n,
    }


def evaluate_estimates(backend: Any, cases: list[EstimateCase], batch: int = 8) -> dict[str, Any]:
    """The ``logprobs`` probability of every case by an :class:`HFBackend`, scored."""
    cfg = GenerateConfig(temperature=0.0, max_tokens=1, top_logprobs=20,
                         logprob_tokens=ANSWER_VARIANTS)
    probs: list[float] = []
    for start in range(0, len(cases), batch):
        part = cases[start : start + batch]
        outs = backend.run_batch([(c.prompt, cfg, 0) for c in part])
        probs.extend(estimate_from_logprobs(o).value for o in outs)
    rows = [{"claim": c.claim, "truth": c.truth, "p": round(p, 5)}
            for c, p in zip(cases, probs, strict=True)]
    return {**brier_scores(probs, [c.truth for c in cases]), "rows": rows}
