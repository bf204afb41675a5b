"""Best of n: the prover writes n decompositions at a decision and plays the best.

Each candidate is scored by its exact expected reward over the estimator's draws,
E[r_k] = r^k · s_k · (E[M_D] − p_k) (:func:`llmdebate.core.scoring.expected_round_reward`), with
E[M_D] from the estimator's whole table of conditional probabilities for that candidate
(asked of a fresh estimator of the same settings; those calls are logged with decision
``scoring``). The debate goes on with the best candidate (the first on a tie). Every
candidate's call stays in the debate's log with ``notes["best_of"]`` (its index, expected
reward and whether it was played), so that ``llmdebate export --format trl-preference``
pairs them. Candidate 0 uses the prover's own sampling settings; the others sample at the
prover's temperature (1.0 when that is 0), each with a seed derived from the debate, the
round and the candidate, so a replay asks the same. A candidate that gets no valid reply
(every attempt unparseable) drops out: its last call is noted ``notes["best_of"]`` with
``failed: true`` and no expected reward, and the best of the others is played; only when
every candidate fails does the decision fail.

With ``acts`` holding ``direction`` (and the prover's direction asked of its model), the
prover also samples n directions s at every round. The round's decomposition is then written
first (inside the direction decision; its calls keep the decision ``decompose``), its
candidates scored by max over s of E[r_k] = r^k·|E[M_D] − p_k| (the direction will be the
best for it), and each direction candidate is scored by its exact E[r_k] = r^k·s·(E[M_D] −
p_k) for that decomposition.

Speeches (two-sided debate, consultancy; ``acts`` holding ``speech``): :func:`best_of_speech`
writes n candidate speeches, scores each with a scorer the protocol gives (the judge's
probability of the debater's answer after the transcript so far plus the candidate: a one-step
look-ahead, not the expected final reward), and plays the best; the scorer's calls are logged
with decision ``scoring``, the round and ``notes["scoring"]`` (speaker, round, candidate).
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
from collections.abc import Awaitable, Callable

from llmdebate.agents.llm import LLMProver, ask_structured, reply_budget
from llmdebate.agents.parsing import ReplyError, parse_direction
from llmdebate.agents.replies import direction_schema
from llmdebate.core import scoring
from llmdebate.core.decisions import deciding, tagged
from llmdebate.core.roles import DebateContext, DirectionChoice, Estimator
from llmdebate.core.rules import CondProbs, compile_rule, outcome_bits, probability_true
from llmdebate.core.schemas import Claim, Decomposition, ModelCallRecord
from llmdebate.errors import InvalidOutputError, RuleError
from llmdebate.models import Model
from llmdebate.models.interface import GenerateConfig


def candidate_seed(debate_id: str, claim: str, k: int, i: int) -> int:
    blob = f"{debate_id}\n{claim}\n{k}\n{i}".encode()
    return int.from_bytes(hashlib.sha256(blob).digest()[:4], "big")


async def expected_round_reward(
    estimator: Estimator, claim: Claim, dec: Decomposition, k: int, s: int, p: float,
    ctx: DebateContext,
) -> float:
    """E[r_k] of playing ``dec`` in round k with direction s and probability p, over the
    estimator's draws (its whole table asked concurrently)."""
    e_m = await expected_m(estimator, claim, dec, ctx)
    return float(scoring.expected_round_reward(scoring.ratio_for(ctx.config), k, s, e_m, p))


async def expected_m(
    estimator: Estimator, claim: Claim, dec: Decomposition, ctx: DebateContext
) -> float:
    """E[M_D] over the estimator's draws (its whole table of conditionals asked at once)."""
    q = dec.width
    bits = outcome_bits(q)
    asks = []
    for i in range(q):
        step = 1 << (q - i)
        for row in bits[::step, :i]:
            asks.append(estimator.conditional(claim, dec, i, tuple(int(v) for v in row), ctx))
    got = await asyncio.gather(*asks)
    levels: list[list[float]] = []
    it = iter(got)
    for i in range(q):
        levels.append([next(it).value for _ in range(1 << i)])
    return float(probability_true(compile_rule(dec.rule, q), CondProbs.from_levels(levels)))


class BestOfNProver(LLMProver):
    """An :class:`LLMProver` that writes ``n`` decompositions per round and plays the best."""

    def __init__(
        self, prover: LLMProver, n: int, estimator: Callable[[], Estimator],
        acts: tuple[str, ...] = ("decompose",),
    ) -> None:
        self.__dict__.update(prover.__dict__)  # the same model, prompts, settings and beliefs
        self.n = n
        self.acts = tuple(acts)
        self.scorer = estimator
        self.name = f"best-of-{n}:{prover.name}"
        self._round: dict[int, tuple[int, float]] = {}
        self._planned: dict[int, Decomposition] = {}

    def _directions(self, claim: Claim, k: int, ctx: DebateContext) -> bool:
        return (self.n > 1 and "direction" in self.acts and self.direction_mode == "model"
                and k > 0)

    async def direction(
        self, claim: Claim, p: float, k: int, ctx: DebateContext
    ) -> DirectionChoice | int:
        if self._directions(claim, k, ctx):
            return await self._best_direction(claim, p, k, ctx)
        choice = await super().direction(claim, p, k, ctx)
        s = choice.value if isinstance(choice, DirectionChoice) else int(choice)
        self._round[k] = (s, p)
        return choice

    async def _best_direction(self, claim: Claim, p: float, k: int, ctx: DebateContext) -> int:
        """n sampled directions, each scored by its exact E[r_k] for the round's decomposition
        (written first, and kept for :meth:`decompose`)."""
        eps = ctx.config.epsilon
        messages = self.prompts.render("direction", claim=claim.text, p=p, epsilon=eps, k=k)
        candidates: list[tuple[int, list[ModelCallRecord]]] = []
        indices: list[int] = []
        failures: list[Exception] = []
        for i in range(self.n):
            cap = reply_budget(self.model, direction_schema())
            config = GenerateConfig(temperature=0.0, max_tokens=cap) if i == 0 else GenerateConfig(
                temperature=max(self.gen.temperature, 1.0), max_tokens=cap,
                seed=candidate_seed(ctx.debate_id, "direction\n" + claim.text, k, i),
            )
            mark = len(ctx.calls)
            try:
                s = int(await ask_structured(
                    self.model, messages, parse_direction, role="prover", act="direction",
                    config=config, max_attempts=self.max_attempts, calls=ctx.calls,
                ))
            except PLAYABLE_FAILURES as exc:
                _mark_failed(ctx.calls[mark:], i, failures, exc)
                continue
            candidates.append((s, ctx.calls[mark:]))
            indices.append(i)
        if not candidates:
            raise failures[0]
        self._round[k] = (0, p)  # decompositions scored by max over s (see the module doc)
        with deciding("decompose", k):
            dec = await self.decompose(claim, k, ctx)
        self._planned[k] = dec
        own: list[ModelCallRecord] = []
        with deciding("scoring", k):
            e_m = await expected_m(self.scorer(), claim, dec, dataclasses.replace(ctx, calls=own))
        ctx.calls.extend(own)
        r = scoring.ratio_for(ctx.config)
        scores = [float(scoring.expected_round_reward(r, k, s, e_m, p)) for s, _ in candidates]
        best = max(range(len(candidates)), key=lambda i: (scores[i], -i))
        _mark_candidates([calls for _, calls in candidates], scores, best, indices)
        self._round[k] = (candidates[best][0], p)
        return candidates[best][0]

    async def decompose(self, claim: Claim, k: int, ctx: DebateContext) -> Decomposition:
        planned = self._planned.pop(k, None)
        if planned is not None:
            return planned
        if self.n <= 1 or "decompose" not in self.acts or (
                self.decomposer == "formal" and ctx.item is not None
                           and self.formal is not None
                           and self.formal(claim, ctx.item, ctx.config.width) is not None):
            return await super().decompose(claim, k, ctx)
        s, p = self._round.get(k, (0, 0.5))
        base = self.gen
        temperature = base.temperature if base.temperature > 0 else 1.0
        candidates: list[tuple[Decomposition, list[ModelCallRecord]]] = []
        indices: list[int] = []
        failures: list[Exception] = []
        try:
            for i in range(self.n):
                seed = candidate_seed(ctx.debate_id, claim.text, k, i)
                self.gen = base if i == 0 else dataclasses.replace(
                    base, temperature=temperature, seed=seed
                )
                mark = len(ctx.calls)
                try:
                    dec = await super().decompose(claim, k, ctx)
                except PLAYABLE_FAILURES as exc:
                    _mark_failed(ctx.calls[mark:], i, failures, exc)
                    continue
                candidates.append((dec, ctx.calls[mark:]))
                indices.append(i)
        finally:
            self.gen = base
        if not candidates:
            raise failures[0]
        scores = []
        for dec, _ in candidates:
            own: list[ModelCallRecord] = []
            with deciding("scoring", k):
                scores.append(await self._score(claim, dec, k, s, p, ctx, own))
            ctx.calls.extend(own)
        best = max(range(len(candidates)), key=lambda i: (scores[i], -i))
        _mark_candidates([calls for _, calls in candidates], scores, best, indices)
        return candidates[best][0]

    async def _score(
        self, claim: Claim, dec: Decomposition, k: int, s: int, p: float,
        ctx: DebateContext, own: list[ModelCallRecord],
    ) -> float:
        """A candidate decomposition's expected reward (its calls logged in ``own``): with
        direction s, or, before the direction is chosen, the best over s."""
        sub = dataclasses.replace(ctx, calls=own)
        if s == 0 and k in self._round and self._directions(claim, k, ctx):
            e_m = await expected_m(self.scorer(), claim, dec, sub)  # the best s follows
            r = scoring.ratio_for(ctx.config)
            return float(abs(scoring.expected_round_reward(r, k, 1, e_m, p)))
        return await expected_round_reward(self.scorer(), claim, dec, k, s, p, sub)


SpeechScorer = Callable[[str, list[ModelCallRecord]], Awaitable[float]]
"""(candidate speech, a log for the scorer's own calls) -> the candidate's score."""


async def best_of_speech(
    model: Model,
    messages: list[dict[str, str]],
    config: GenerateConfig,
    n: int,
    *,
    role: str,
    act: str,
    rnd: int,
    seed_key: str,
    score: SpeechScorer,
    log: list[ModelCallRecord],
) -> str:
    """n candidate speeches for one turn, each scored by ``score``; returns the best (the
    first on a tie).

    Candidate 0 is asked with ``config`` (the speech a debater without best of n would give);
    the others at ``config``'s temperature (1.0 when that is 0), each with a seed derived from
    ``seed_key``, the speaker, the round and the candidate, so a replay asks the same. The
    candidates are written one after the other, then scored concurrently; every candidate's
    call gets ``notes["best_of"]`` and the scorer's calls follow them in the log, in candidate
    order.
    """
    temperature = config.temperature if config.temperature > 0 else 1.0
    candidates: list[tuple[str, list[ModelCallRecord]]] = []
    for i in range(n):
        cfg = config if i == 0 else dataclasses.replace(
            config, temperature=temperature,
            seed=candidate_seed(seed_key, f"speech\n{role}", rnd, i),
        )
        mark = len(log)
        out = await model.generate(messages, cfg, role=role, act=act, log=log)
        candidates.append((out.text, log[mark:]))
    owns: list[list[ModelCallRecord]] = [[] for _ in candidates]
    scores = [
        float(v) for v in await asyncio.gather(
            *(
                tagged(score(text, own), "scoring", rnd)
                for (text, _), own in zip(candidates, owns, strict=True)
            )
        )
    ]
    for i, own in enumerate(owns):
        for c in own:
            c.notes["scoring"] = {"speaker": role, "round": rnd, "candidate": i}
        log.extend(own)
    best = max(range(len(candidates)), key=lambda i: (scores[i], -i))
    _mark_candidates([calls for _, calls in candidates], scores, best)
    return candidates[best][0]


PLAYABLE_FAILURES = (InvalidOutputError, ReplyError, RuleError)
"""A candidate's failures that leave the other candidates playable: its replies did not
parse or break the protocol's rules (a model's transport errors still fail the debate)."""


def _mark_failed(
    own: list[ModelCallRecord], i: int, failures: list[Exception], exc: Exception
) -> None:
    """Note a candidate that got no valid reply on its last call, and keep its error."""
    failures.append(exc)
    if own:
        own[-1].notes["best_of"] = {
            "candidate": i, "expected_reward": None, "chosen": False, "failed": True,
        }


def _mark_candidates(
    calls: list[list[ModelCallRecord]], scores: list[float], best: int,
    indices: list[int] | None = None,
) -> None:
    """Note on each candidate's last call its index (``indices``: the candidates' numbers
    when failed ones dropped out), expected reward and whether it played."""
    for i, own in enumerate(calls):
        if own:
            own[-1].notes["best_of"] = {
                "candidate": indices[i] if indices is not None else i,
                "expected_reward": scores[i], "chosen": i == best,
            }
