"""The smallest obfuscation example (docs/protocol.md), run through the generic async engine.

A semiprime's factor lies in one of two halves; d = 1, q = 2, ε = 0.2, ρ = 0.5. The prover
claims N is prime and points B's errors out from its (false) belief that every half is clean.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from llmdebate.core import scoring
from llmdebate.core.engine import debate_seed, run_prover_estimator, run_sync
from llmdebate.core.roles import DebateContext, DirectionChoice
from llmdebate.core.schemas import (
    Claim,
    CombinationRule,
    DebateConfig,
    Decomposition,
    Estimate,
    Evidence,
    Verdict,
)

CFG = DebateConfig(epsilon=0.2, rho=0.5, depth=1, width=2)


class ObfuscatingProver:
    name = "dishonest"

    async def answer(self, claim: Claim, ctx: DebateContext) -> int:
        return 1

    async def direction(
        self, claim: Claim, p: float, k: int, ctx: DebateContext
    ) -> DirectionChoice:
        if k == ctx.config.depth and abs(p - 1) <= ctx.config.epsilon:
            return DirectionChoice(0, rest_zero=True)
        return DirectionChoice(1 if 1 - p > ctx.config.epsilon else 0)

    async def decompose(self, claim: Claim, k: int, ctx: DebateContext) -> Decomposition:
        halves = [
            Claim(
                text=f"no divisor in half {i}",
                id=f"h{i}",
                data={"clean": int(i != claim.data["factor"])},
            )
            for i in range(2)
        ]
        return Decomposition(subclaims=halves, rule=CombinationRule(kind="and"))

    async def choose(self, claim, dec, b, z, ctx) -> int:  # type: ignore[no-untyped-def]
        return max(range(2), key=lambda i: (abs(b[i] - 1), -i))

    async def evidence(self, claim: Claim, ctx: DebateContext) -> Evidence:
        return Evidence()


class CalibratedIgnorant:
    """Knows N is composite, not where the factor is: exactly one half has it, uniformly."""

    name = "calibrated-ignorant"

    async def estimate(self, claim: Claim, ctx: DebateContext) -> Estimate:
        return Estimate(value=0.0, method="strategy")

    async def conditional(self, claim, dec, i, prefix, ctx) -> Estimate:  # type: ignore[no-untyped-def]
        value = 0.5 if i == 0 else float(prefix[0] == 0)
        return Estimate(value=value, method="strategy")


class Overstating:
    """Best-responds to this prover: 0.79 everywhere, just outside its ε band."""

    name = "overstating"

    async def estimate(self, claim: Claim, ctx: DebateContext) -> Estimate:
        return Estimate(value=0.79, method="strategy")

    async def conditional(self, claim, dec, i, prefix, ctx) -> Estimate:  # type: ignore[no-untyped-def]
        return Estimate(value=0.79, method="strategy")


class Oracle:
    name = "oracle"

    async def verdict(self, claim: Claim, evidence: Evidence, ctx: DebateContext) -> Verdict:
        return Verdict(value=claim.data["clean"])


def mean_payoff(estimator: object, n: int = 2000) -> tuple[float, float]:
    vals = [
        run_sync(
            run_prover_estimator(
                Claim(text="N is prime", data={"factor": i % 2}),
                ObfuscatingProver(),
                estimator,  # type: ignore[arg-type]
                Oracle(),
                CFG,
                seed=debate_seed(7, i),
            )
        ).expected_total
        for i in range(n)
    ]
    arr = np.array(vals, dtype=float)
    return float(arr.mean()), float(arr.std(ddof=1) / math.sqrt(n))


def test_the_calibrated_ignorant_estimator_leaves_the_liar_a_quarter() -> None:
    mean, se = mean_payoff(CalibratedIgnorant())
    assert mean == pytest.approx(0.25, abs=4 * se + 1e-12)
    assert se > 0


def test_a_best_responding_estimator_makes_the_lie_cost() -> None:
    r = scoring.ratio_for(CFG)
    # r_init = r²·0.79; r_1 = r·(0.79² − 0.79); r_0 = ½ − 0.79 (s = +1 throughout)
    exact = r**2 * 0.79 + r * (0.79**2 - 0.79) + (0.5 - 0.79)
    # equal b's: A always recurses on y_1, clean on exactly half of the (alternating) instances
    mean, _ = mean_payoff(Overstating(), n=400)
    assert mean == pytest.approx(exact, abs=1e-12) and exact < 0
