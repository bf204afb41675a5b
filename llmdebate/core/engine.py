"""The protocol engine: Figure 2 (prover-estimator debate) and naive recursive debate.

One asynchronous loop per protocol over the agent interfaces of :mod:`llmdebate.core.roles`.
Randomness: a debate's seed gives two independent streams (NumPy ``SeedSequence`` spawn keys):
the protocol stream draws ẑ and every z_i (recorded as the uniforms ``u`` with z = 1[u < b]);
the strategy stream is handed to agents. Replaying a debate with the same seed and agents
reproduces it bit for bit. Rewards come only from :mod:`llmdebate.core.scoring`. The engine states
each decision before it asks for it (:func:`llmdebate.core.decisions.deciding`), so every model call
is recorded with the decision, round and, for a b_i, the subclaim and prefix it served.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Coroutine
from typing import Any, Literal, TypeVar

import numpy as np

from llmdebate.core import scoring
from llmdebate.core.decisions import deciding, tagged
from llmdebate.core.roles import (
    AuditedProver,
    Challenger,
    DebateContext,
    DirectionChoice,
    Estimator,
    Judge,
    NaiveProver,
    Prover,
    as_direction,
)
from llmdebate.core.rules import (
    CondProbs,
    compile_rule,
    outcome_bits,
    outcome_index,
    probability_true,
)
from llmdebate.core.schemas import (
    Claim,
    DebateConfig,
    Decomposition,
    Estimate,
    InitRecord,
    ModelCallRecord,
    RoundRecord,
    Transcript,
    Verdict,
)
from llmdebate.errors import ProtocolViolation

T = TypeVar("T")

PROTOCOL_STREAM = 0
STRATEGY_STREAM = 1


def debate_seed(run_seed: int, index: int) -> int:
    """The seed of debate ``index`` in a run seeded with ``run_seed`` (recorded per debate)."""
    return int(np.random.SeedSequence([run_seed, index]).generate_state(1, dtype=np.uint64)[0] >> 1)


def protocol_rng(seed: int) -> np.random.Generator:
    """The trusted randomness of the protocol (ẑ and every z_i)."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(PROTOCOL_STREAM,)))


def strategy_rng(seed: int) -> np.random.Generator:
    """Randomness handed to the agents' strategies."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(STRATEGY_STREAM,)))


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to completion from synchronous code."""
    return asyncio.run(coro)


def _check_decomposition(dec: Decomposition, config: DebateConfig, k: int) -> None:
    if not isinstance(dec, Decomposition):
        raise ProtocolViolation(
            f"round {k}: the prover returned {type(dec).__name__}, not a decomposition"
        )
    if dec.width > config.width:
        raise ProtocolViolation(
            f"round {k}: the prover gave {dec.width} subclaims; width allows at most {config.width}"
        )


async def _estimator_table(
    estimator: Estimator,
    claim: Claim,
    dec: Decomposition,
    ctx: DebateContext,
    k: int = 0,
) -> tuple[CondProbs, list[list[Estimate]]]:
    """B's conditional probabilities at every prefix, asked concurrently, each under its own
    tag (its i and prefix); each ask logs into a list of its own, appended to the debate's log
    in ask order."""
    q = dec.width
    bits = outcome_bits(q)
    asks = []
    index: list[tuple[int, int]] = []
    logs: list[list[ModelCallRecord]] = []
    for i in range(q):
        step = 1 << (q - i)
        for t, row in enumerate(bits[::step, :i]):
            own: list[ModelCallRecord] = []
            prefix = [int(v) for v in row]
            sub = dataclasses.replace(ctx, calls=own)
            ask = estimator.conditional(claim, dec, i, tuple(prefix), sub)
            asks.append(tagged(ask, "estimate", k, index=i, prefix=prefix))
            index.append((i, t))
            logs.append(own)
    got = await asyncio.gather(*asks)
    for own in logs:
        ctx.calls.extend(own)
    levels: list[list[Estimate]] = [[None] * (1 << i) for i in range(q)]  # type: ignore[list-item]
    for (i, t), est in zip(index, got, strict=True):
        levels[i][t] = est
    table = CondProbs.from_levels([[e.value for e in lv] for lv in levels])
    return table, levels


async def _independent_table(
    estimator: Estimator, claim: Claim, dec: Decomposition, ctx: DebateContext, k: int
) -> tuple[CondProbs, list[list[Estimate]]]:
    """The ``independent`` variant: each b_i asked once with no earlier outcome stated,
    concurrently; the table repeats b_i at every prefix of level i."""
    own: list[list[ModelCallRecord]] = [[] for _ in range(dec.width)]
    flat = await asyncio.gather(
        *(
            tagged(
                estimator.conditional(claim, dec, i, (), dataclasses.replace(ctx, calls=own[i])),
                "estimate",
                k,
                index=i,
                prefix=(),
            )
            for i in range(dec.width)
        )
    )
    for calls_i in own:
        ctx.calls.extend(calls_i)
    return CondProbs.independent([e.value for e in flat]), [
        [e] * (1 << i) for i, e in enumerate(flat)
    ]


@dataclasses.dataclass
class _ProverEstimatorDebate:
    """One prover-estimator debate in progress: its agents, the protocol's draws, the
    transcript being written and the rewards so far."""

    prover: Prover
    estimator: Estimator
    judge: Judge
    config: DebateConfig
    ctx: DebateContext
    t: Transcript
    draw: np.random.Generator
    r: float
    rewards: list[float] = dataclasses.field(default_factory=list)
    expected: list[float] = dataclasses.field(default_factory=list)

    def _played(self, rec: RoundRecord, reward: float, expected: float) -> None:
        self.t.rounds.append(rec)
        self.ctx.rounds.append(rec)
        self.rewards.append(reward)
        self.expected.append(expected)

    async def init(self, claim: Claim) -> float:
        """A's answer a, B's p_d and the draw ẑ (the initialisation record); returns p_d."""
        d = self.config.depth
        with deciding("answer"):
            a = self.ctx.answer = await _answer(self.prover, claim, self.ctx)
        with deciding("estimate"):
            est = await self.estimator.estimate(claim, self.ctx)
        p = est.value
        u = float(self.draw.random())
        zhat = int(u < p)
        init = self.t.init = InitRecord(
            claim=claim,
            answer=a,
            estimate=est,
            u=u,
            zhat=zhat,
            reward=scoring.init_reward(self.r, d, zhat, a),
            expected_reward=scoring.expected_init_reward(self.r, d, p, a),
        )
        self.rewards.append(init.reward)
        self.expected.append(init.expected_reward)
        return p

    async def direction(self, claim: Claim, p: float, k: int) -> DirectionChoice:
        with deciding("direction", k):
            return as_direction(await self.prover.direction(claim, p, k, self.ctx))

    async def leaf(self, claim: Claim, p: float, s: int) -> bool:
        """Evidence in a fresh context and the judge's verdict (round 0); False when the judge
        defers its verdict."""
        fresh = self.ctx.fresh()
        with deciding("evidence", 0):
            ev = await self.prover.evidence(claim, fresh)
        rec = RoundRecord(k=0, claim=claim, p=p, direction=s, evidence=ev)
        self.t.rounds.append(rec)
        self.ctx.rounds.append(rec)
        with deciding("verdict", 0):
            verdict = await self.judge.verdict(claim, ev, fresh)
        if verdict is None:
            return False
        rew, exp = _set_leaf(rec, verdict, self.r)
        self.rewards.append(rew)
        self.expected.append(exp)
        return True

    async def _table(
        self, claim: Claim, dec: Decomposition, k: int
    ) -> tuple[CondProbs | None, list[list[Estimate]]]:
        """B's whole table of conditionals where the variant or the expected rewards need it
        (None: asked along the drawn path only)."""
        variant = self.config.variant
        if variant == "independent":
            return await _independent_table(self.estimator, claim, dec, self.ctx, k)
        if self.config.expected_rewards or variant != "figure2":
            return await _estimator_table(self.estimator, claim, dec, self.ctx, k)
        return None, []

    async def _draw(
        self, claim: Claim, dec: Decomposition, k: int, by_prefix: list[list[Estimate]]
    ) -> tuple[list[Estimate], list[float], list[int]]:
        """B's b_i along the drawn path (from the table, or asked in order) and the draws
        z_i = 1[u_i < b_i]."""
        ests: list[Estimate] = []
        us: list[float] = []
        z: list[int] = []
        for i in range(dec.width):
            if by_prefix:
                e = by_prefix[i][outcome_index(z)]
            else:
                with deciding("estimate", k, index=i, prefix=z):
                    e = await self.estimator.conditional(claim, dec, i, tuple(z), self.ctx)
            ests.append(e)
            u = float(self.draw.random())
            us.append(u)
            z.append(int(u < e.value))
        return ests, us, z

    async def _recurse(
        self, claim: Claim, dec: Decomposition, b: list[float], z: list[int], k: int
    ) -> int:
        with deciding("recurse", k):
            return await _choose(self.prover, claim, dec, b, z, self.ctx, k)

    async def round(self, claim: Claim, p: float, s: int, k: int) -> tuple[Claim, float]:
        """Round k > 0 after A's direction s: decomposition, B's b_i, the draws, A's recursion
        index j; returns the subclaim y_j and the probability handed on."""
        with deciding("decompose", k):
            dec = await self.prover.decompose(claim, k, self.ctx)
        _check_decomposition(dec, self.config, k)
        rule = compile_rule(dec.rule, dec.width)
        table, by_prefix = await self._table(claim, dec, k)
        committed: int | None = None
        if self.config.variant in ("commit", "commit-marginal"):
            assert table is not None
            marg = scoring.marginals_of(table.to_lists())
            committed = await self._recurse(claim, dec, marg, [], k)
        ests, us, z = await self._draw(claim, dec, k, by_prefix)
        b = [e.value for e in ests]
        rec = RoundRecord(
            k=k,
            claim=claim,
            p=p,
            direction=s,
            decomposition=dec,
            estimates=ests,
            b=b,
            u=us,
            z=z,
            m=rule(z),
            table=table.to_lists() if table is not None else None,
            expected_m=probability_true(rule, table) if table is not None else None,
        )
        rew, exp = rec.reward, rec.expected_reward = scoring.round_rewards(self.r, rec)
        self._played(rec, rew, exp)
        j = committed if committed is not None else await self._recurse(claim, dec, b, z, k)
        rec.recurse = j
        return dec.subclaims[j], scoring.next_probability(rec, self.config.variant)


async def run_prover_estimator(
    claim: Claim,
    prover: Prover,
    estimator: Estimator,
    judge: Judge,
    config: DebateConfig,
    *,
    seed: int | None = None,
    debate_id: str = "debate-0",
    item: dict[str, Any] | None = None,
    calls: list[ModelCallRecord] | None = None,
) -> Transcript:
    """One prover-estimator debate (Figure 2, or ``config.variant``) on ``claim``.

    With ``config.expected_rewards`` the estimator is asked b_i at every prefix (2^q - 1 asks,
    concurrently), so that E[M_D] and the expected reward of the round are exact; the draws use
    the same numbers. Otherwise it is asked only along the drawn path, in order. The variants
    ``marginal``, ``commit`` and ``commit-marginal`` always ask the whole table (they need B's
    marginals); ``independent`` asks each b_i once with no earlier outcome stated (an empty
    prefix) and draws the z_i independently.

    Every model call is recorded with the decision it served (:mod:`llmdebate.core.decisions`).
    """
    seed = config.seed if seed is None else seed
    roles = {"prover": prover, "estimator": estimator, "judge": judge}
    ctx, t = _start("prover-estimator", claim, roles, config, seed, debate_id, item, calls)
    debate = _ProverEstimatorDebate(
        prover, estimator, judge, config, ctx, t, protocol_rng(seed), scoring.ratio_for(config)
    )
    p = await debate.init(claim)
    current = claim
    for k in range(config.depth, -1, -1):
        choice = await debate.direction(current, p, k)
        if config.early_stop and choice.rest_zero and choice.value == 0:
            t.stopped_early, t.stop_round = True, k
            break
        if k == 0:
            if not await debate.leaf(current, p, choice.value):
                t.status = "awaiting_verdict"
                t.calls = ctx.calls
                return t
            break
        current, p = await debate.round(current, p, choice.value, k)
    t.total = scoring.total(debate.rewards)
    t.expected_total = scoring.total(debate.expected)
    t.calls = ctx.calls
    _record_audits(prover, t)
    return t


def _record_audits(prover: Prover, t: Transcript) -> None:
    """The prover's grading of its decompositions (an :class:`AuditedProver` keeps one), into
    ``t.meta``."""
    if isinstance(prover, AuditedProver) and prover.audits:
        t.meta["decompositions"] = list(prover.audits)


def _start(
    protocol: Literal["prover-estimator", "naive-recursive"],
    claim: Claim,
    roles: dict[str, Any],
    config: DebateConfig,
    seed: int,
    debate_id: str,
    item: dict[str, Any] | None,
    calls: list[ModelCallRecord] | None,
) -> tuple[DebateContext, Transcript]:
    """The agents' context (strategy stream of ``seed``) and the empty transcript.

    ``calls`` is the debate's call log: the context appends every model call to it (a new list
    when None), and the transcript keeps it.
    """
    ctx = DebateContext(
        config=config,
        rng=strategy_rng(seed),
        debate_id=debate_id,
        item=item,
        top_claim=claim,
        calls=calls if calls is not None else [],
        seed=seed,
    )
    t = Transcript(
        id=debate_id,
        protocol=protocol,
        config=config,
        seed=seed,
        agents={role: agent.name for role, agent in roles.items()},
        item=item,
    )
    return ctx, t


async def _answer(prover: Prover | NaiveProver, claim: Claim, ctx: DebateContext) -> int:
    a = int(await prover.answer(claim, ctx))
    if a not in (0, 1):
        raise ProtocolViolation(f"the prover's answer is 0 or 1 (got {a})")
    return a


async def _choose(
    prover: Prover,
    claim: Claim,
    dec: Decomposition,
    b: list[float],
    z: list[int],
    ctx: DebateContext,
    k: int,
) -> int:
    """A's recursion index; ``z == []`` asks A to commit before the draws (b: B's marginals)."""
    j = int(await prover.choose(claim, dec, b, z, ctx))
    if not 0 <= j < dec.width:
        raise ProtocolViolation(f"round {k}: recursion index {j} outside 0..{dec.width - 1}")
    return j


def _set_leaf(rec: RoundRecord, verdict: Verdict, r: float) -> tuple[float, float]:
    rec.verdict = verdict
    rec.reward, rec.expected_reward = scoring.round_rewards(r, rec)
    return rec.reward, rec.expected_reward


def complete_with_verdict(transcript: Transcript, verdict: Verdict) -> Transcript:
    """Finish a debate whose judge deferred its verdict (status ``awaiting_verdict``)."""
    if transcript.status != "awaiting_verdict" or not transcript.rounds:
        raise ProtocolViolation(f"debate {transcript.id} is not awaiting a verdict")
    t = transcript.model_copy(deep=True)
    leaf = t.rounds[-1]
    r = scoring.ratio_for(t.config)
    if scoring.reward_scheme(t) == scoring.PLUS_MINUS_ONE:  # naive recursive debate
        leaf.verdict = verdict
        payoff = scoring.naive_round_payoff(leaf)
        assert payoff is not None
        leaf.reward = t.total = payoff
        t.prover_won = payoff > 0
    else:
        assert t.init is not None
        _set_leaf(leaf, verdict, r)
        t.total = scoring.total([t.init.reward, *(rd.reward for rd in t.rounds)])
        t.expected_total = scoring.total(
            [t.init.expected_reward, *(rd.expected_reward for rd in t.rounds)]
        )
    t.status = "complete"
    return t


async def run_naive_recursive(
    claim: Claim,
    prover: NaiveProver,
    challenger: Challenger,
    judge: Judge,
    config: DebateConfig,
    *,
    seed: int | None = None,
    debate_id: str = "debate-0",
    item: dict[str, Any] | None = None,
    calls: list[ModelCallRecord] | None = None,
) -> Transcript:
    """Naive recursive debate: A states the truth of every subclaim, the opponent challenges one.

    A's stated values must satisfy the rule (M_D(values) = A's value of the parent); otherwise
    A loses at once. At the leaf the judge rules; A's payoff is +1 iff the judge agrees with A.
    """
    seed = config.seed if seed is None else seed
    roles = {"prover": prover, "challenger": challenger, "judge": judge}
    ctx, t = _start("naive-recursive", claim, roles, config, seed, debate_id, item, calls)
    with deciding("answer"):
        claimed = ctx.answer = await _answer(prover, claim, ctx)
    current = claim
    for k in range(config.depth, 0, -1):
        with deciding("decompose", k):
            dec = await prover.decompose(current, k, ctx)
        _check_decomposition(dec, config, k)
        with deciding("value", k):
            values = [int(v) for v in await prover.claim_values(current, claimed, dec, ctx)]
        rec = RoundRecord(
            k=k, claim=current, decomposition=dec, claimed=claimed, claimed_subclaims=values
        )
        t.rounds.append(rec)
        ctx.rounds.append(rec)
        payoff = scoring.naive_round_payoff(rec)
        if payoff is not None:
            rec.reward = t.total = payoff
            t.prover_won = False
            t.meta["inconsistent_round"] = k
            t.calls = ctx.calls
            return t
        with deciding("recurse", k):
            j = int(await challenger.challenge(current, dec, values, ctx))
        if not 0 <= j < dec.width:
            raise ProtocolViolation(f"round {k}: challenge index {j} outside 0..{dec.width - 1}")
        rec.recurse = j
        current, claimed = dec.subclaims[j], values[j]
    fresh = ctx.fresh()
    with deciding("evidence", 0):
        ev = await prover.evidence(current, fresh)
    leaf = RoundRecord(k=0, claim=current, claimed=claimed, evidence=ev)
    t.rounds.append(leaf)
    with deciding("verdict", 0):
        verdict = await judge.verdict(current, ev, fresh)
    t.calls = ctx.calls
    if verdict is None:
        t.status = "awaiting_verdict"
        return t
    leaf.verdict = verdict
    payoff = scoring.naive_round_payoff(leaf)
    assert payoff is not None
    leaf.reward = t.total = payoff
    t.prover_won = payoff > 0
    return t
