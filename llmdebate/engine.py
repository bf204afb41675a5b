"""The protocol engine: Figure 2 (prover-estimator debate) and naive recursive debate.

One asynchronous loop per protocol over the agent interfaces of :mod:`llmdebate.agents.base`.
Randomness: a debate's seed gives two independent streams (NumPy ``SeedSequence`` spawn keys):
the protocol stream draws ẑ and every z_i (recorded as the uniforms ``u`` with z = 1[u < b]);
the strategy stream is handed to agents. Replaying a debate with the same seed and agents
reproduces it bit for bit. Rewards come only from :mod:`llmdebate.scoring`.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Coroutine
from typing import Any, Literal, TypeVar

import numpy as np

from llmdebate import scoring
from llmdebate.agents.base import (
    Challenger,
    DebateContext,
    Estimator,
    Judge,
    NaiveProver,
    Prover,
    as_direction,
)
from llmdebate.errors import ProtocolViolation
from llmdebate.rules import (
    CondProbs,
    compile_rule,
    outcome_bits,
    outcome_index,
    probability_true,
)
from llmdebate.schemas import (
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


def tag_calls(
    calls: list[ModelCallRecord],
    start: int,
    decision: str,
    k: int | None,
    *,
    index: int | None = None,
    prefix: list[int] | None = None,
) -> None:
    """Mark the calls logged since ``start`` (not yet marked) as serving ``decision`` of round
    ``k``; a batch of ``independent`` asks gets its subclaim indices in order."""
    fresh = [c for c in calls[start:] if c.decision is None]
    batch = [c for c in fresh if c.act == "independent"]
    for c in fresh:
        c.decision, c.round = decision, k
        if index is not None:
            c.index, c.prefix = index, prefix
    for j, c in enumerate(batch):
        c.index, c.prefix = j, []


async def _estimator_table(
    estimator: Estimator,
    claim: Claim,
    dec: Decomposition,
    ctx: DebateContext,
    k: int = 0,
) -> tuple[CondProbs, list[list[Estimate]]]:
    """B's conditional probabilities at every prefix, asked concurrently; each ask logs into a
    list of its own, appended to the debate's log in ask order (marked with its i and prefix)."""
    q = dec.width
    bits = outcome_bits(q)
    asks = []
    index: list[tuple[int, int]] = []
    logs: list[tuple[list[ModelCallRecord], int, list[int]]] = []
    for i in range(q):
        step = 1 << (q - i)
        for t, row in enumerate(bits[::step, :i]):
            own: list[ModelCallRecord] = []
            prefix = [int(v) for v in row]
            sub = dataclasses.replace(ctx, calls=own)
            asks.append(estimator.conditional(claim, dec, i, tuple(prefix), sub))
            index.append((i, t))
            logs.append((own, i, prefix))
    got = await asyncio.gather(*asks)
    for own, i, prefix in logs:
        tag_calls(own, 0, "estimate", k, index=i, prefix=prefix)
        ctx.calls.extend(own)
    levels: list[list[Estimate]] = [[None] * (1 << i) for i in range(q)]  # type: ignore[list-item]
    for (i, t), est in zip(index, got, strict=True):
        levels[i][t] = est
    table = CondProbs.from_levels([[e.value for e in lv] for lv in levels])
    return table, levels


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
    """
    seed = config.seed if seed is None else seed
    r = scoring.ratio_for(config)
    variant = config.variant
    d = config.depth
    draw = protocol_rng(seed)
    roles = {"prover": prover, "estimator": estimator, "judge": judge}
    ctx, t = _start("prover-estimator", claim, roles, config, seed, debate_id, item, calls)
    log = ctx.calls
    tag_calls(log, 0, "answer", None)
    a = ctx.answer = await _answer(prover, claim, ctx)
    tag_calls(log, 0, "answer", None)
    mark = len(log)
    est = await estimator.estimate(claim, ctx)
    tag_calls(log, mark, "estimate", None)
    p = est.value
    u = float(draw.random())
    zhat = int(u < p)
    t.init = InitRecord(
        claim=claim,
        answer=a,
        estimate=est,
        u=u,
        zhat=zhat,
        reward=scoring.init_reward(r, d, zhat, a),
        expected_reward=scoring.expected_init_reward(r, d, p, a),
    )
    rewards: list[float] = [t.init.reward]
    expected: list[float] = [t.init.expected_reward]

    current = claim
    for k in range(d, -1, -1):
        mark = len(log)
        choice = as_direction(await prover.direction(current, p, k, ctx))
        tag_calls(log, mark, "direction", k)
        if config.early_stop and choice.rest_zero and choice.value == 0:
            t.stopped_early, t.stop_round = True, k
            break
        s = choice.value
        if k == 0:
            fresh = ctx.fresh()
            mark = len(log)
            ev = await prover.evidence(current, fresh)
            tag_calls(log, mark, "evidence", 0)
            rec = RoundRecord(k=0, claim=current, p=p, direction=s, evidence=ev)
            t.rounds.append(rec)
            ctx.rounds.append(rec)
            mark = len(log)
            verdict = await judge.verdict(current, ev, fresh)
            tag_calls(log, mark, "verdict", 0)
            if verdict is None:
                t.status = "awaiting_verdict"
                t.calls = ctx.calls
                return t
            rew, exp = _set_leaf(rec, verdict, r)
            rewards.append(rew)
            expected.append(exp)
            break

        mark = len(log)
        dec = await prover.decompose(current, k, ctx)
        tag_calls(log, mark, "decompose", k)
        _check_decomposition(dec, config, k)
        rule = compile_rule(dec.rule, dec.width)
        b: list[float] = []
        us: list[float] = []
        z: list[int] = []
        ests: list[Estimate] = []
        table: CondProbs | None = None
        by_prefix: list[list[Estimate]] = []
        if variant == "independent":
            own: list[list[ModelCallRecord]] = [[] for _ in range(dec.width)]
            flat = await asyncio.gather(
                *(
                    estimator.conditional(
                        current, dec, i, (), dataclasses.replace(ctx, calls=own[i])
                    )
                    for i in range(dec.width)
                )
            )
            for i, calls_i in enumerate(own):
                tag_calls(calls_i, 0, "estimate", k, index=i, prefix=[])
                log.extend(calls_i)
            table = CondProbs.independent([e.value for e in flat])
            by_prefix = [[e] * (1 << i) for i, e in enumerate(flat)]
        elif config.expected_rewards or variant != "figure2":
            table, by_prefix = await _estimator_table(estimator, current, dec, ctx, k)
        committed: int | None = None
        if variant in ("commit", "commit-marginal"):
            assert table is not None
            marg = scoring.marginals_of(table.to_lists())
            mark = len(log)
            committed = await _choose(prover, current, dec, marg, [], ctx, k)
            tag_calls(log, mark, "recurse", k)
        for i in range(dec.width):
            if table is not None:
                e = by_prefix[i][outcome_index(z)]
            else:
                mark = len(log)
                e = await estimator.conditional(current, dec, i, tuple(z), ctx)
                tag_calls(log, mark, "estimate", k, index=i, prefix=list(z))
            ests.append(e)
            b.append(e.value)
            ui = float(draw.random())
            us.append(ui)
            z.append(int(ui < e.value))
        rec = RoundRecord(
            k=k,
            claim=current,
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
        rew, exp = rec.reward, rec.expected_reward = scoring.round_rewards(r, rec)
        t.rounds.append(rec)
        ctx.rounds.append(rec)
        rewards.append(rew)
        expected.append(exp)
        if committed is None:
            mark = len(log)
            committed = await _choose(prover, current, dec, b, z, ctx, k)
            tag_calls(log, mark, "recurse", k)
        j = committed
        rec.recurse = j
        current, p = dec.subclaims[j], scoring.next_probability(rec, variant)

    t.total = scoring.total(rewards)
    t.expected_total = scoring.total(expected)
    t.calls = ctx.calls
    _record_audits(prover, t)
    return t


def _record_audits(prover: Any, t: Transcript) -> None:
    """The prover's grading of its decompositions (LLM provers keep one), into ``t.meta``."""
    audits = getattr(prover, "audits", None)
    if audits:
        t.meta["decompositions"] = list(audits)


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
    log = ctx.calls
    claimed = ctx.answer = await _answer(prover, claim, ctx)
    tag_calls(log, 0, "answer", None)
    current = claim
    for k in range(config.depth, 0, -1):
        mark = len(log)
        dec = await prover.decompose(current, k, ctx)
        tag_calls(log, mark, "decompose", k)
        _check_decomposition(dec, config, k)
        mark = len(log)
        values = [int(v) for v in await prover.claim_values(current, claimed, dec, ctx)]
        tag_calls(log, mark, "value", k)
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
        mark = len(log)
        j = int(await challenger.challenge(current, dec, values, ctx))
        tag_calls(log, mark, "recurse", k)
        if not 0 <= j < dec.width:
            raise ProtocolViolation(f"round {k}: challenge index {j} outside 0..{dec.width - 1}")
        rec.recurse = j
        current, claimed = dec.subclaims[j], values[j]
    fresh = ctx.fresh()
    mark = len(log)
    ev = await prover.evidence(current, fresh)
    tag_calls(log, mark, "evidence", 0)
    leaf = RoundRecord(k=0, claim=current, claimed=claimed, evidence=ev)
    t.rounds.append(leaf)
    mark = len(log)
    verdict = await judge.verdict(current, ev, fresh)
    tag_calls(log, mark, "verdict", 0)
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
