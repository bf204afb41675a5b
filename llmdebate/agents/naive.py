"""Language-model agents for naive recursive debate (Irving et al. 2018; Barnes 2020).

:class:`LLMNaiveProver` decomposes with the prompted prover of prover-estimator debate (so both
asymmetric protocols see the same decompositions and leaf evidence) and states a truth value
for every subclaim: of all value vectors v with M_D(v) equal to its claim, the one most likely
under its model's probabilities (exhaustive over 2^q vectors). :class:`LLMChallenger` asks its
model how likely each subclaim is and challenges the one whose stated value it doubts most,
argmax_i |P_i - v_i| (first index on ties).
"""

from __future__ import annotations

import itertools
import math
from typing import Any

from llmdebate.agents.llm import LLMProver
from llmdebate.core.roles import DebateContext
from llmdebate.core.rules import compile_rule
from llmdebate.core.schemas import Claim, Decomposition, Evidence
from llmdebate.elicit import estimates
from llmdebate.models import Model
from llmdebate.prompts import Prompts


async def subclaim_probabilities(
    model: Any,
    prompts: Any,
    method: str,
    claim: Claim,
    dec: Decomposition,
    ctx: DebateContext,
    role: str,
) -> list[float]:
    """The model's P(true) for each subclaim, asked independently (``naive_value.j2``)."""
    context = ctx.item.get("context") if ctx.item else None
    batch = [
        prompts.render("naive_value", claim=sub.text, parent=claim.text, context=context)
        for sub in dec.subclaims
    ]
    ests = await estimates(model, batch, method, role=role, act="subclaim value", log=ctx.calls)
    return [float(e.value) for e in ests]


def most_likely_consistent(probs: list[float], dec: Decomposition, claimed: int) -> list[int]:
    """argmax over v in {0,1}^q with M_D(v) = claimed of sum_i log P(z_i = v_i)."""
    rule = compile_rule(dec.rule, dec.width)
    best: tuple[float, list[int]] | None = None
    for bits in itertools.product((1, 0), repeat=dec.width):
        v = list(bits)
        if rule(v) != claimed:
            continue
        ll = sum(math.log(max(p if b else 1 - p, 1e-12)) for p, b in zip(probs, v, strict=True))
        if best is None or ll > best[0]:
            best = (ll, v)
    if best is None:  # no vector gives the claim: state the beliefs and lose at once
        return [int(p >= 0.5) for p in probs]
    return best[1]


class LLMNaiveProver:
    """The naive-debate prover: an assigned answer, an LLM decomposer, LLM-stated values."""

    def __init__(
        self,
        decomposer: LLMProver,
        model: Model,
        prompts: Prompts,
        *,
        answer: int,
        method: str = "logprobs",
        name: str | None = None,
    ) -> None:
        self.decomposer = decomposer
        self.model = model
        self.prompts = prompts
        self.assigned = int(answer)
        self.method = method
        self.name = name or f"naive-prover({model.name}, answer={self.assigned})"

    async def answer(self, claim: Claim, ctx: DebateContext) -> int:
        return self.assigned

    async def decompose(self, claim: Claim, k: int, ctx: DebateContext) -> Decomposition:
        return await self.decomposer.decompose(claim, k, ctx)

    async def claim_values(
        self, claim: Claim, claimed: int, decomposition: Decomposition, ctx: DebateContext
    ) -> list[int]:
        probs = await subclaim_probabilities(
            self.model, self.prompts, self.method, claim, decomposition, ctx, "prover"
        )
        return most_likely_consistent(probs, decomposition, claimed)

    async def evidence(self, claim: Claim, ctx: DebateContext) -> Evidence:
        return await self.decomposer.evidence(claim, ctx)


class LLMChallenger:
    """Challenges the subclaim whose stated value its model doubts most."""

    def __init__(
        self, model: Model, prompts: Prompts, *, method: str = "logprobs", name: str | None = None
    ) -> None:
        self.model = model
        self.prompts = prompts
        self.method = method
        self.name = name or f"challenger({model.name})"

    async def challenge(
        self, claim: Claim, decomposition: Decomposition, claimed: list[int], ctx: DebateContext
    ) -> int:
        probs = await subclaim_probabilities(
            self.model, self.prompts, self.method, claim, decomposition, ctx, "challenger"
        )
        doubt = [abs(p - v) for p, v in zip(probs, claimed, strict=True)]
        return max(range(len(doubt)), key=lambda i: (doubt[i], -i))
