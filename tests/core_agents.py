"""Small deterministic agents for testing the engine and the scoring (not a test module)."""

from __future__ import annotations

from dataclasses import dataclass, field

from llmdebate.core.roles import DebateContext, DirectionChoice
from llmdebate.core.schemas import (
    Claim,
    CombinationRule,
    Decomposition,
    Estimate,
    Evidence,
    Verdict,
)


def split(claim: Claim, q: int, rule: CombinationRule) -> Decomposition:
    return Decomposition(
        subclaims=[Claim(text=f"{claim.text}/{i}", id=f"{claim.id}.{i}") for i in range(q)],
        rule=rule,
    )


@dataclass
class ToyProver:
    """Answers 1, points in a fixed or random direction, recurses at random."""

    q: int = 3
    rule: CombinationRule = field(default_factory=lambda: CombinationRule(kind="and"))
    directions: int | None = None  # None: random in {-1, 0, 1}
    rest_zero: bool = False
    answer_bit: int = 1
    name: str = "toy-prover"

    async def answer(self, claim: Claim, ctx: DebateContext) -> int:
        return self.answer_bit

    async def direction(
        self, claim: Claim, p: float, k: int, ctx: DebateContext
    ) -> DirectionChoice:
        if self.directions is None:
            return DirectionChoice(int(ctx.rng.integers(-1, 2)))
        return DirectionChoice(self.directions, rest_zero=self.rest_zero)

    async def decompose(self, claim: Claim, k: int, ctx: DebateContext) -> Decomposition:
        return split(claim, self.q, self.rule)

    async def choose(
        self, claim: Claim, dec: Decomposition, b: list[float], z: list[int], ctx: DebateContext
    ) -> int:
        return int(ctx.rng.integers(dec.width))

    async def evidence(self, claim: Claim, ctx: DebateContext) -> Evidence:
        assert not ctx.rounds, "the leaf evidence must be written with no debate history"
        return Evidence(text=f"evidence for {claim.text}")

    async def claim_values(
        self, claim: Claim, claimed: int, dec: Decomposition, ctx: DebateContext
    ) -> list[int]:
        return [claimed] * dec.width


@dataclass
class ToyEstimator:
    """Conditional probabilities that depend on the subclaim index and the prefix."""

    top: float = 0.3
    name: str = "toy-estimator"

    async def estimate(self, claim: Claim, ctx: DebateContext) -> Estimate:
        return Estimate(value=self.top, method="strategy")

    async def conditional(
        self,
        claim: Claim,
        dec: Decomposition,
        i: int,
        prefix: tuple[int, ...],
        ctx: DebateContext,
    ) -> Estimate:
        v = 0.15 + 0.2 * i + 0.25 * sum(prefix) - 0.05 * len(claim.id)
        return Estimate(value=min(max(v, 0.0), 1.0), method="strategy")


@dataclass
class ToyJudge:
    """Rules 1 on every leaf whose id ends in an even digit; ``defer`` returns no verdict."""

    defer: bool = False
    name: str = "toy-judge"

    async def verdict(self, claim: Claim, evidence: Evidence, ctx: DebateContext) -> Verdict | None:
        if self.defer:
            return None
        return Verdict(value=int(int(claim.id[-1]) % 2 == 0) if claim.id[-1].isdigit() else 1)


@dataclass
class FirstChallenger:
    name: str = "first"

    async def challenge(
        self, claim: Claim, dec: Decomposition, claimed: list[int], ctx: DebateContext
    ) -> int:
        return 0
