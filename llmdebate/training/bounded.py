"""The bounded prover's table, and the claims an estimator learns it on.

A bounded prover (``prover.beliefs.source: table``, :mod:`llmdebate.beliefs`) believes
P(the leaf judge says True | a feature of the claim), estimated from the leaf judge's
verdicts on claims about numbers of its own. :func:`estimation_claims` draws those claims
as the embedded estimator's training claims are drawn (numbers by the dataset's law, half
primes in [100, 3000), half products of two primes in [7, 60); for each number the two
claims a depth-2 debate asks about, the top claim and a part of a random split of it, each
with the parts of a random split of its own), apart from the debate dataset's numbers.

Rebuild the shipped table (``llmdebate/beliefs/tables/divisors-polarity-width.json``)::

    python -m llmdebate.training.bounded --out llmdebate/beliefs/tables/divisors-polarity-width.json

:func:`tabular_check` is the game in miniature, without a language model: claims in buckets
with known rates of truth, an estimator that is one probability per bucket, trained by the
sign of its payoff's gradient against provers of each kind. It shows in seconds what the
language-model experiment should show (benchmarks/bench_estimator_debate_reward.py).
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from llmdebate.beliefs import BeliefTable, build_table
from llmdebate.data.problems import claim_truth
from llmdebate.records.paths import resolve_path
from llmdebate.training.claims import IntervalClaim, dataset_numbers, draw_claims, split_point

TABLE_SEED = 3
"""The seed of the shipped table's estimation claims (the estimator's training claims use 1,
its held-out claims 2)."""
NUMBERS = (100, 3000)
DEBATE_DATASET = "datasets/divisors.jsonl"


def claim_texts(claims: Sequence[IntervalClaim], seed: int) -> list[str]:
    """Each claim and the two parts of a random split of it (drawn from ``seed``), as
    :func:`llmdebate.training.estimate_eval.estimate_cases` asks them (here as bare texts)."""
    from llmdebate.data.problems import divisor_statement

    rng = random.Random(seed)
    out: list[str] = []
    for c in claims:
        out.append(c.text)
        if c.hi - c.lo < 2:
            continue
        k = split_point(c.lo, c.hi, "random", rng)
        out += [divisor_statement(c.n, a, b, c.none) for a, b in ((c.lo, k), (k, c.hi))]
    return out


def estimation_claims(count: int, seed: int, exclude: set[int] | frozenset[int] = frozenset()
                      ) -> list[IntervalClaim]:
    """``count`` numbers' debate-shaped claims by the dataset's law, apart from the debate
    dataset's numbers and ``exclude``."""
    debate = dataset_numbers(resolve_path(DEBATE_DATASET))
    return draw_claims(count, seed, NUMBERS, [2], debate_like=True,
                       exclude=frozenset(debate | set(exclude)), law="dataset",
                       splits="random")


class LeafSplit(NamedTuple):
    """The leaf claims an estimator trains on and is graded on, apart by numbers."""

    train_claims: list[IntervalClaim]
    held_claims: list[IntervalClaim]
    train_texts: list[str]
    held_texts: list[str]
    train_prompts: list[str]
    held_prompts: list[str]


def leaf_split(table: BeliefTable, train_numbers: int, held_numbers: int) -> LeafSplit:
    """Training claims (seed 1) and held-out claims (seed 2) about numbers apart from each
    other, from ``table``'s and from the debate dataset's, each with the estimator's prompt
    for it alone (``estimate.j2``)."""
    from llmdebate.prompts import Prompts
    from llmdebate.training.claims import check_apart
    from llmdebate.training.estimate_eval import estimate_prompt

    apart = table_numbers(table)
    held = estimation_claims(held_numbers, 2, exclude=apart)
    train = estimation_claims(train_numbers, 1, exclude=apart | {c.n for c in held})
    check_apart(train, held, set())
    if apart & ({c.n for c in held} | {c.n for c in train}):
        raise ValueError("the table's numbers overlap the estimator's")
    prompts = Prompts()
    train_texts, held_texts = claim_texts(train, 1), claim_texts(held, 2)
    return LeafSplit(train, held, train_texts, held_texts,
                     [estimate_prompt(prompts, t) for t in train_texts],
                     [estimate_prompt(prompts, t) for t in held_texts])


def leaf_verdicts(texts: Sequence[str]) -> list[int]:
    """The oracle leaf judge's verdict on each claim (its exact truth)."""
    from llmdebate.training.debate_reward import judge_verdicts
    from llmdebate.training.estimate_eval import EstimateCase

    return judge_verdicts([EstimateCase(t, "", -1) for t in texts])


def divisor_table(numbers: int = 60, seed: int = TABLE_SEED,
                  feature: str = "divisors-polarity-width") -> BeliefTable:
    """The bounded prover's table, estimated on ``numbers`` numbers' claims (seed ``seed``)."""
    claims = estimation_claims(numbers, seed)
    texts = claim_texts(claims, seed)
    about = {
        "estimated_on": f"{len(texts)} claims about {numbers} numbers (seed {seed}) by the "
                        "dataset's law in [100, 3000), debate-shaped, random splits, apart "
                        f"from {DEBATE_DATASET}",
        "verdicts": "the oracle leaf judge's (each claim's exact truth)",
        "numbers": sorted({c.n for c in claims}),
        "command": "python -m llmdebate.training.bounded --out <file>",
    }
    return build_table(texts, leaf_verdicts(texts), feature, about)


def table_numbers(table: BeliefTable) -> set[int]:
    """The numbers a table was estimated on (recorded in it), to keep other claims apart."""
    return {int(n) for n in table.about.get("numbers") or []}


# ------------------------------------------------------------------ the tabular check
def tabular_check(prover: str, *, seeds: Sequence[int] = (0, 1, 2), buckets: int = 9,
                  claims_per_bucket: int = 200, steps: int = 3000, batch: int = 16,
                  lr: float = 0.01, shift: float = 0.25, epsilon: float = 0.0
                  ) -> dict[str, Any]:
    """The estimator B as one probability per bucket, trained on its leaf payoff −s·(O − p),
    the verdict O (drawn with the bucket's rate, 0.1 ... 0.9) the only label, s the prover's
    direction (eq. 13 with threshold ``epsilon``) against p:

    * ``calibrated``: A's belief q is the bucket's rate (a bounded prover that knows the
      bucket, not the claim's verdict);
    * ``noisy``: q = the rate estimated from ``claims_per_bucket`` other claims' verdicts;
    * ``biased``: q = rate + ``shift`` (clipped to [0, 1]);
    * ``shuffled``: q = the rate of a bucket drawn at random for each claim;
    * ``omniscient``: q = the claim's own verdict.

    The gradient of −s·(O − p) in p is s whatever O is, so each step moves a bucket's p by
    lr · (the mean of s over its claims in the batch), with lr decaying linearly to 0, and p
    kept in [0, 1]. Returns per seed the final p per bucket, max |p − q̄| (q̄: A's mean
    belief in the bucket) and the Brier score of the final p in expectation over verdicts
    (the optimum is the rates' own)."""
    rates = [(i + 1) / (buckets + 1) for i in range(buckets)]
    out: dict[str, Any] = {"prover": prover, "rates": rates, "seeds": []}
    for seed in seeds:
        rng = random.Random(seed)
        claims = [(b, int(rng.random() < rates[b])) for b in range(buckets)
                  for _ in range(claims_per_bucket)]
        estimate = [(sum(o for c, o in claims if c == b) + 1) / (claims_per_bucket + 2)
                    for b in range(buckets)]
        # the noisy prover's rates come from other claims: a fresh draw of the same buckets
        other = [sum(rng.random() < r for _ in range(claims_per_bucket)) / claims_per_bucket
                 for r in rates]
        drawn = [rng.randrange(buckets) for _ in claims]
        beliefs = {
            "calibrated": [rates[b] for b, _ in claims],
            "noisy": [other[b] for b, _ in claims],
            "biased": [min(1.0, max(0.0, rates[b] + shift)) for b, _ in claims],
            "shuffled": [rates[d] for d in drawn],
            "omniscient": [float(o) for _, o in claims],
        }
        if prover not in beliefs:
            raise ValueError(f"unknown prover {prover!r}: choose from {', '.join(beliefs)}")
        q = beliefs[prover]
        p = [0.5] * buckets
        for t in range(steps):
            push = [0.0] * buckets
            for _ in range(batch):
                i = rng.randrange(len(claims))
                b = claims[i][0]
                gap = q[i] - p[b]
                push[b] += (1.0 if gap > epsilon else -1.0 if gap < -epsilon else 0.0) / batch
            step = lr * (1 - t / steps)
            p = [min(1.0, max(0.0, x + step * g * buckets)) for x, g in zip(p, push, strict=True)]
        qbar = [sum(q[i] for i, c in enumerate(claims) if c[0] == b) / claims_per_bucket
                for b in range(buckets)]
        brier = sum(r * (1 - x) ** 2 + (1 - r) * x**2 for x, r in zip(p, rates, strict=True))
        out["seeds"].append({
            "seed": seed, "p": [round(x, 4) for x in p],
            "max_abs_p_q": round(max(abs(x - q) for x, q in zip(p, qbar, strict=True)), 4),
            "brier": round(brier / buckets, 4),
            "verdict_share": [round(e, 3) for e in estimate],
        })
    out["brier_optimum"] = round(sum(r * (1 - r) for r in rates) / buckets, 4)
    out["brier_base_rate"] = round(sum(r * 0.25 + (1 - r) * 0.25 for r in rates) / buckets, 4)
    return out


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="Build the bounded prover's belief table.")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--numbers", type=int, default=60)
    ap.add_argument("--seed", type=int, default=TABLE_SEED)
    ap.add_argument("--feature", default="divisors-polarity-width")
    a = ap.parse_args(argv)
    table = divisor_table(a.numbers, a.seed, a.feature)
    table.write(a.out)
    for cell, (t, n) in sorted(table.cells.items()):
        print(f"{cell}: {t}/{n} true, q = {table.rate(cell):.3f}")


def truth_of(text: str) -> int | None:
    return claim_truth(text, {"problem": "divisors"})


if __name__ == "__main__":
    main()
