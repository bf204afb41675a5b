"""Async agents (agents/base.py interfaces) that run the vectorised policies on one debate.

Each method calls the very policy the exact enumeration and the Monte Carlo use, on arrays of
length 1, so the generic engine plays the same strategies. Claims carry their node in
``claim.data`` ({"instance", "k", "node"}). The current p_k is recovered from the debate so far
(p_d from B's own estimate; afterwards what the previous round handed on under the debate's
variant, :func:`llmdebate.core.scoring.next_probability`). Protocol variants: an estimator asked
with a prefix shorter than i (``independent``) states its marginal; a prover asked to choose
with no draws (``z == []``, the committing variants) commits with :meth:`ProverPolicy.commit`.
"""

from __future__ import annotations

import numpy as np

from llmdebate.core.roles import DebateContext, DirectionChoice
from llmdebate.core.rules import outcome_index
from llmdebate.core.schemas import Claim, Decomposition, Estimate, Evidence, Verdict
from llmdebate.core.scoring import next_probability
from llmdebate.formal.problems.problem import TreeProblem
from llmdebate.formal.strategies.alternatives import sample_one
from llmdebate.formal.strategies.estimators import EstimatorPolicy
from llmdebate.formal.strategies.judges import OracleJudge
from llmdebate.formal.strategies.naive import EstimatorChallenger, NaiveProverPolicy
from llmdebate.formal.strategies.provers import ProverPolicy
from llmdebate.formal.tables import joint_from_levels, marginals


def _node(claim: Claim) -> tuple[np.ndarray, int, np.ndarray]:
    d = claim.data
    return np.array([int(d["instance"])]), int(d["k"]), np.array([int(d["node"])])


def current_p(estimator: EstimatorPolicy, claim: Claim, ctx: DebateContext) -> float:
    """B's probability p_k for the current claim, read off the debate so far."""
    for rd in reversed(ctx.rounds):
        if rd.recurse is not None and rd.b:
            return next_probability(rd, ctx.config.variant)
    inst = np.array([int((ctx.top_claim or claim).data["instance"])])
    return float(estimator.top(inst)[0])


class FormalProver:
    def __init__(self, problem: TreeProblem, policy: ProverPolicy):
        self.problem, self.policy, self.name = problem, policy, policy.name

    async def answer(self, claim: Claim, ctx: DebateContext) -> int:
        inst, _, _ = _node(claim)
        return sample_one(self.policy.answer(inst), ctx.rng)

    async def direction(
        self, claim: Claim, p: float, k: int, ctx: DebateContext
    ) -> DirectionChoice:
        inst, _, node = _node(claim)
        parr = np.array([p])
        top = k == self.problem.depth and ctx.answer is not None
        if top and bool(self.policy.stops(inst, parr, np.array([ctx.answer]))[0]):
            return DirectionChoice(0, rest_zero=True)
        return DirectionChoice(sample_one(self.policy.direction(inst, k, node, parr), ctx.rng))

    async def decompose(self, claim: Claim, k: int, ctx: DebateContext) -> Decomposition:
        inst, _, node = _node(claim)
        return self.problem.decomposition(int(inst[0]), k, int(node[0]))

    async def choose(
        self,
        claim: Claim,
        decomposition: Decomposition,
        b: list[float],
        z: list[int],
        ctx: DebateContext,
    ) -> int:
        inst, k, node = _node(claim)
        if not z:  # a committing variant: before the draws, b holds B's marginals
            return sample_one(self.policy.commit(inst, k, node, np.array([b])), ctx.rng)
        alts = self.policy.choose(inst, k, node, np.array([b]), np.array([z], dtype=np.int64))
        return sample_one(alts, ctx.rng)

    async def evidence(self, claim: Claim, ctx: DebateContext) -> Evidence:
        return Evidence(text=claim.text, data=dict(claim.data))


class FormalEstimator:
    def __init__(self, problem: TreeProblem, policy: EstimatorPolicy):
        self.problem, self.policy, self.name = problem, policy, policy.name

    async def estimate(self, claim: Claim, ctx: DebateContext) -> Estimate:
        inst, _, _ = _node(claim)
        return Estimate(value=float(self.policy.top(inst)[0]), method="strategy")

    async def conditional(
        self,
        claim: Claim,
        decomposition: Decomposition,
        i: int,
        prefix: tuple[int, ...],
        ctx: DebateContext,
    ) -> Estimate:
        inst, k, node = _node(claim)
        p = current_p(self.policy, claim, ctx)
        levels = self.policy.levels(inst, k, node, np.array([p]))
        if len(prefix) < i:  # asked with no earlier outcome stated: the marginal
            value = float(marginals(joint_from_levels(levels))[0, i])
        else:
            value = float(levels[i][0, outcome_index(prefix)])
        return Estimate(value=value, method="strategy", evidence={"p_k": p})


class FormalJudge:
    def __init__(self, problem: TreeProblem, policy: OracleJudge):
        self.problem, self.policy, self.name = problem, policy, policy.name

    async def verdict(self, claim: Claim, evidence: Evidence, ctx: DebateContext) -> Verdict:
        inst, _, node = _node(claim)
        prob = float(self.policy.prob_true(inst, node)[0])
        value = int(ctx.rng.random() < prob)
        return Verdict(value=value, probability=prob, judge=self.name)


class FormalNaiveProver:
    def __init__(self, problem: TreeProblem, policy: NaiveProverPolicy):
        self.problem, self.policy, self.name = problem, policy, policy.name

    async def answer(self, claim: Claim, ctx: DebateContext) -> int:
        inst, k, node = _node(claim)
        return int(self.policy.claimed(inst, k, node)[0])

    async def decompose(self, claim: Claim, k: int, ctx: DebateContext) -> Decomposition:
        inst, _, node = _node(claim)
        return self.problem.decomposition(int(inst[0]), k, int(node[0]))

    async def claim_values(
        self, claim: Claim, claimed: int, decomposition: Decomposition, ctx: DebateContext
    ) -> list[int]:
        inst, k, node = _node(claim)
        return [int(v) for v in self.policy.children(inst, k, node)[0]]

    async def evidence(self, claim: Claim, ctx: DebateContext) -> Evidence:
        return Evidence(text=claim.text, data=dict(claim.data))


class FormalChallenger:
    def __init__(self, problem: TreeProblem, policy: EstimatorChallenger):
        self.problem, self.policy, self.name = problem, policy, policy.name

    def _p(self, claim: Claim, ctx: DebateContext) -> float:
        """B's probability for the current claim: replay the challenged path from the top."""
        top = ctx.top_claim or claim
        inst = np.array([int(top.data["instance"])])
        p = float(self.policy.estimator.top(inst)[0])
        for rd in ctx.rounds:
            if rd.recurse is None:
                continue
            _, k, node = _node(rd.claim)
            p = float(self.policy.marginals(inst, k, node, np.array([p]))[0, rd.recurse])
        return p

    async def challenge(
        self, claim: Claim, decomposition: Decomposition, claimed: list[int], ctx: DebateContext
    ) -> int:
        inst, k, node = _node(claim)
        marg = self.policy.marginals(inst, k, node, np.array([self._p(claim, ctx)]))
        return sample_one(self.policy.challenge(np.array([claimed]), marg), ctx.rng)
