"""The small interfaces through which agents plug into the engine.

Formal strategies and language-model agents implement the same methods; every method is
``async`` so that model calls are awaited and a human judge may answer hours later. A judge
may also return ``None`` to defer its verdict: the engine then returns a transcript with status
``awaiting_verdict`` that :func:`llmdebate.core.engine.complete_with_verdict` finishes later.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from llmdebate.core.schemas import (
    Claim,
    DebateConfig,
    Decomposition,
    Estimate,
    Evidence,
    ModelCallRecord,
    RoundRecord,
    Verdict,
)


@dataclass
class DebateContext:
    """What an agent may see of the debate so far, and where its model calls are logged.

    ``rng`` is the strategy stream (separate from the protocol's draws, so a random strategy
    never shifts ẑ or z_i); ``item`` is the dataset item (its passage may be shown, its gold
    answer never); ``calls`` is the debate's call log: agents pass it to every model call.
    ``seed`` is the debate's recorded seed (a sampling judge draws its verdict from it; None
    outside a debate).
    """

    config: DebateConfig
    rng: np.random.Generator
    debate_id: str = ""
    item: dict[str, Any] | None = None
    rounds: list[RoundRecord] = field(default_factory=list)
    calls: list[ModelCallRecord] = field(default_factory=list)
    answer: int | None = None
    top_claim: Claim | None = None
    seed: int | None = None

    def fresh(self) -> DebateContext:
        """The context of the leaf acts (Figure 2, step 3(b)): no debate history is shown, but
        the item and the call log stay, so nothing is lost from the record."""
        return DebateContext(
            config=self.config,
            rng=self.rng,
            debate_id=self.debate_id,
            item=self.item,
            calls=self.calls,
            seed=self.seed,
        )


@dataclass(frozen=True)
class DirectionChoice:
    """A direction s_k ∈ {-1, 0, +1}; ``rest_zero`` commits to 0 for every remaining round."""

    value: int
    rest_zero: bool = False


@runtime_checkable
class Prover(Protocol):
    """Debater A: answers, decomposes, points out B's errors, chooses where to recurse."""

    name: str

    async def answer(self, claim: Claim, ctx: DebateContext) -> int:
        """A's bit a = A(x): the claim is true (1) or false (0)."""
        ...

    async def direction(
        self, claim: Claim, p: float, k: int, ctx: DebateContext
    ) -> DirectionChoice | int:
        """s_k: B's p_k is over-estimated (-1), about right (0) or under-estimated (+1)."""
        ...

    async def decompose(self, claim: Claim, k: int, ctx: DebateContext) -> Decomposition:
        """Subclaims and a combination rule such that the claim is true iff M_D(z) = 1."""
        ...

    async def choose(
        self,
        claim: Claim,
        decomposition: Decomposition,
        b: list[float],
        z: list[int],
        ctx: DebateContext,
    ) -> int:
        """The index j (0-based) of the subclaim to recurse on."""
        ...

    async def evidence(self, claim: Claim, ctx: DebateContext) -> Evidence:
        """Evidence for the leaf claim, written in a fresh context (``ctx`` carries no history)."""
        ...


@runtime_checkable
class AuditedProver(Protocol):
    """A prover that grades each decomposition it plays (the LLM prover): the engine records
    the grades in ``Transcript.meta["decompositions"]``."""

    audits: list[dict[str, Any]]
    """One grade per decomposition played, in order."""


@runtime_checkable
class BelievingProver(Protocol):
    """A prover that keeps its own probabilities of the claims it has met (the LLM prover);
    a replay gives it back those of the replayed rounds."""

    beliefs: dict[str, float]
    """Claim text -> the prover's probability that it is true."""


@runtime_checkable
class Estimator(Protocol):
    """Debater B: only assigns probabilities."""

    name: str

    async def estimate(self, claim: Claim, ctx: DebateContext) -> Estimate:
        """p_d: B's probability that the top claim is true."""
        ...

    async def conditional(
        self,
        claim: Claim,
        decomposition: Decomposition,
        i: int,
        prefix: tuple[int, ...],
        ctx: DebateContext,
    ) -> Estimate:
        """b_{i+1} = P(z_{i+1} = 1 | z_1..z_i = prefix) for subclaim i (0-based)."""
        ...


@runtime_checkable
class Judge(Protocol):
    """The judge O at the leaf: a model, a person, or an oracle."""

    name: str

    async def verdict(self, claim: Claim, evidence: Evidence, ctx: DebateContext) -> Verdict | None:
        """O ∈ {0, 1} for the leaf claim, or ``None`` to defer the verdict."""
        ...


@runtime_checkable
class NaiveProver(Protocol):
    """The prover of naive recursive debate: states a truth value for every subclaim."""

    name: str

    async def answer(self, claim: Claim, ctx: DebateContext) -> int: ...

    async def decompose(self, claim: Claim, k: int, ctx: DebateContext) -> Decomposition: ...

    async def claim_values(
        self, claim: Claim, claimed: int, decomposition: Decomposition, ctx: DebateContext
    ) -> list[int]:
        """The prover's stated truth value of each subclaim (M_D of them must equal ``claimed``)."""
        ...

    async def evidence(self, claim: Claim, ctx: DebateContext) -> Evidence: ...


@runtime_checkable
class Challenger(Protocol):
    """The opponent of naive recursive debate: picks which subclaim to challenge."""

    name: str

    async def challenge(
        self,
        claim: Claim,
        decomposition: Decomposition,
        claimed: list[int],
        ctx: DebateContext,
    ) -> int: ...


def as_direction(choice: DirectionChoice | int) -> DirectionChoice:
    """Normalise a prover's direction; anything but -1, 0, +1 is an error of the agent."""
    d = choice if isinstance(choice, DirectionChoice) else DirectionChoice(int(choice))
    if d.value not in (-1, 0, 1):
        raise ValueError(f"a direction is -1, 0 or +1 (got {d.value})")
    return d
