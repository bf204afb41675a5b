"""The prover that maximises its payoff against a fixed estimator (``--target soundness``).

For a fixed B the game is a finite decision tree for A, so A's best response is exact, by
dynamic programming (expectimax) over the states (instance, k, node, p_k) that A can reach:

    V_0(s) = max_(s_0) s_0·(P[O = 1] - p_0) = |P[O = 1] - p_0|,
    V_k(s) = r^k·|E_h[M_D] - p_k| + Σ_z h(z)·max_j V_(k-1)(y_j, p_(k-1)(z, j))       (draws first)
    V_k(s) = r^k·|E_h[M_D] - p_k| + max_j Σ_z h(z)·V_(k-1)(y_j, p_(k-1)(z, j))       (commit),

the direction s_k = sign(E_h[M_D] - p_k) (0 on a tie) and, at the top, the answer fixed to the
wrong one (``answer="wrong"``: a dishonest payoff) or the better of the two (``"any"``). Rounds
read B exactly as :func:`llmdebate.formal.exact.exact_prover_estimator` does, so the decisions
found are keyed by the very numbers a replay meets. Leaves are never materialised (V_0 is
closed form); the states of rounds k >= 1 are, which bounds the space (:data:`MAX_ROWS`).
Beyond it the search is stated and seeded: at a round whose rows would exceed the limit A may
recurse only on a seeded subset of the q indices that fits (the result says which), so the
payoff found is a lower bound on the best response's; it is still replayed exactly.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from llmdebate.core import scoring
from llmdebate.errors import ConfigError
from llmdebate.formal.problems.problem import TreeProblem
from llmdebate.formal.strategies.estimators import EstimatorPolicy
from llmdebate.formal.strategies.judges import OracleJudge
from llmdebate.formal.strategies.provers import first_argmax
from llmdebate.formal.strategy_files import TableProver, _row_key, leaf_direction, pbits
from llmdebate.formal.tables import expected_rule, fdot
from llmdebate.formal.variants import COMMITTING, RoundView, round_view

MAX_ROWS = 40_000_000  # (states of round 1) · 2^q · q


@dataclass
class Level:
    """The distinct states of one round k >= 1 and B's view there."""

    k: int
    inst: np.ndarray
    node: np.ndarray
    p: np.ndarray
    view: RoundView
    em: np.ndarray
    child: np.ndarray | None = None  # (S, 2^q, K): index of (z, jsel[j])'s state one round down
    jsel: np.ndarray | None = None  # the recursion indices A may use here (all q unless capped)


def _unique(inst: np.ndarray, node: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    keys = np.stack([inst, node, p.view(np.int64)], axis=1)
    uniq, inverse = np.unique(keys, axis=0, return_inverse=True)
    return uniq, inverse.reshape(-1)


class ProverSearch:
    """Exact best response of A to a fixed B (module docstring)."""

    on_step: Callable[[int, int], None] | None = None
    """Told the rounds backed up so far and their number, after each round."""

    def __init__(
        self,
        problem: TreeProblem,
        estimator: EstimatorPolicy,
        epsilon: float,
        rho: float,
        variant: str,
        answer: str = "wrong",
        uninformed: bool = False,
        seed: int = 0,
    ):
        self.problem, self.est, self.variant, self.answer_mode = problem, estimator, variant, answer
        self.r = scoring.reward_ratio(epsilon, rho)
        self.q = problem.width
        self.pooled = uninformed
        self.judge: OracleJudge = PooledJudge(problem) if uninformed else OracleJudge(problem)
        self.n = 1 if uninformed else problem.n
        self.rng = np.random.default_rng(np.random.SeedSequence([seed, 13]))
        self.restricted: list[tuple[int, int]] = []  # (round k, indices kept) where capped

    def forward(self) -> list[Level]:
        prob, q = self.problem, self.q
        inst = np.arange(self.n)
        node = np.zeros(self.n, dtype=np.int64)
        p = np.asarray(self.est.top(inst), dtype=np.float64)
        levels: list[Level] = []
        for k in range(prob.depth, 0, -1):
            view = round_view(self.est.levels(inst, k, node, p), self.variant)
            if self.pooled:
                self._same_for_every_instance(k, node, p, view.joint)
            em = expected_rule(view.joint, prob.rule(k).table)
            lv = Level(k, inst, node, p, view, em)
            levels.append(lv)
            if k == 1:
                break
            s_n = len(inst)
            lv.jsel = self._indices(k, s_n)
            m = len(lv.jsel)
            ci = np.repeat(inst, m << q)
            cn = (np.repeat(node, m << q) * q + np.tile(lv.jsel, s_n << q)).astype(np.int64)
            cp = view.nextp[:, :, lv.jsel].reshape(-1)
            uniq, inverse = _unique(ci, cn, cp)
            lv.child = inverse.reshape(s_n, 1 << q, m)
            inst, node = uniq[:, 0], uniq[:, 1]
            p = uniq[:, 2].copy().view(np.float64)
        if levels:
            levels[-1].jsel = self._indices(1, len(levels[-1].inst))
        return levels

    def _indices(self, k: int, states: int) -> np.ndarray:
        """All q recursion indices, or, where the rows they make exceed :data:`MAX_ROWS`
        (states·2^q·q here, and each child's own 2^q·q one round down), a seeded subset of
        them that fits: the stated search beyond the exact DP."""
        q = self.q
        below = (q << q) if k > 1 else 1
        keep = min(q, max(1, MAX_ROWS // max(1, (states << q) * below)))
        if keep == q:
            return np.arange(q)
        self.restricted.append((k, keep))
        return np.sort(self.rng.choice(q, size=keep, replace=False)).astype(np.int64)

    def leaf_values(self, lv: Level) -> np.ndarray:
        """V_0 of every (state, z, jsel[j]) below round-1 states: shape (S, 2^q, K)."""
        q, s_n = self.q, len(lv.inst)
        jsel = np.arange(q) if lv.jsel is None else lv.jsel
        kk = len(jsel)
        out = np.empty((s_n, 1 << q, kk))
        per = max(1, (1 << 20) // (kk << q))
        for lo in range(0, s_n, per):
            sl = slice(lo, lo + per)
            m = len(lv.inst[sl])
            ci = np.repeat(lv.inst[sl], kk << q)
            cn = np.repeat(lv.node[sl], kk << q) * q + np.tile(jsel, m << q)
            cp = lv.view.nextp[sl][:, :, jsel].reshape(-1)
            out[sl] = np.abs(self.judge.prob_true(ci, cn) - cp).reshape(m, 1 << q, kk)
        return out

    def solve(self) -> tuple[TableProver, float, np.ndarray]:
        """Best response: the prover's table, its DP value (mean) and the value per instance."""
        prob, q, r = self.problem, self.q, self.r
        d = prob.depth
        truth = prob.top_truth().astype(np.int64)
        if self.pooled:
            if self.answer_mode == "wrong" and (truth != truth[0]).any():
                raise ConfigError(
                    "an uninformed prover cannot always answer wrongly: the instances' answers "
                    "differ (use --answer any)"
                )
            if np.unique(self.est.top(np.arange(prob.n))).size > 1:
                raise ConfigError(
                    "--uninformed needs an estimator whose p_d is the same everywhere"
                )
            truth = truth[:1]
        inst = np.arange(self.n)
        p_top = np.asarray(self.est.top(inst), dtype=np.float64)
        p_right = np.where(truth == 1, p_top, 1.0 - p_top)  # P[ẑ = truth]
        if self.answer_mode == "wrong":
            answers = 1 - truth
        else:
            answers = np.where(p_right >= 1.0 - p_right, truth, 1 - truth)
        greedy = None if self.pooled else self.judge
        pr = TableProver(q, answers, name="best-response", judge=greedy)
        init = scoring.expected_init_reward(r, d, p_top, answers)
        if d == 0:
            po = self.judge.prob_true(inst, np.zeros(self.n, dtype=np.int64))
            vals = init + np.abs(po - p_top)
            self._record_leaf(pr, inst, np.zeros(self.n, dtype=np.int64), p_top)
            return self._finish(pr, vals)
        levels = self.forward()
        below: np.ndarray | None = None
        for done, lv in enumerate(reversed(levels), start=1):
            child_v = self.leaf_values(lv) if below is None else below[lv.child]
            below = self._back_up(pr, lv, child_v)
            if self.on_step is not None:
                self.on_step(done, len(levels))
        assert below is not None
        return self._finish(pr, init + below)

    def _finish(self, pr: TableProver, vals: np.ndarray) -> tuple[TableProver, float, np.ndarray]:
        if not self.pooled:
            return pr, fdot(self.problem.weights, vals), vals
        return expand(pr, self.problem.n), float(vals[0]), np.full(self.problem.n, vals[0])

    def _same_for_every_instance(
        self, k: int, node: np.ndarray, p: np.ndarray, joint: np.ndarray
    ) -> None:
        n = self.problem.n
        s_n = len(node)
        inst = np.repeat(np.arange(n), s_n)
        other = round_view(
            self.est.levels(inst, k, np.tile(node, n), np.tile(p, n)), self.variant
        ).joint
        if not np.array_equal(other, np.tile(joint, (n, 1))):
            raise ConfigError(
                "--uninformed needs an estimator whose numbers do not depend on the instance"
            )

    def _record_leaf(
        self, pr: TableProver, inst: np.ndarray, node: np.ndarray, p: np.ndarray
    ) -> None:
        s = leaf_direction(self.judge.prob_true(inst, node), p)
        for i, nd, pp, ss in zip(inst.tolist(), node.tolist(), p.tolist(), s.tolist(), strict=True):
            pr.directions[(i, 0, nd, pbits(pp))] = int(ss)

    def _back_up(self, pr: TableProver, lv: Level, child_v: np.ndarray) -> np.ndarray:
        """V_k of round lv's states from the (state, z, j) values below; records decisions."""
        q, k = self.q, lv.k
        gap = lv.em - lv.p
        s = leaf_direction(lv.em, lv.p)  # sign(E[M_D] - p_k), 0 within the tolerance
        joint = lv.view.joint
        jsel = np.arange(q) if lv.jsel is None else lv.jsel
        kk = len(jsel)
        if self.variant in COMMITTING:
            per_j = (joint[:, :, None] * child_v).sum(axis=1)  # (S, K)
            local = first_argmax(per_j)
            cont = per_j[np.arange(len(s)), local]
            j_best = jsel[local]
            for t in range(len(s)):
                ckey = (int(lv.inst[t]), k, int(lv.node[t]), _row_key(lv.view.marg[t]))
                pr.committed[ckey] = int(j_best[t])
        else:
            s_n, size = joint.shape
            local2 = first_argmax(child_v.reshape(s_n * size, kk)).reshape(s_n, size)
            best_v = np.take_along_axis(child_v, local2[:, :, None], axis=2)[:, :, 0]
            j_best = jsel[local2]
            cont = (joint * best_v).sum(axis=1)
            tabulated = k > 1 or self.pooled
            reached = zip(*np.nonzero(joint > 0), strict=True) if tabulated else iter(())
            for t, zz in reached:  # round 1: the greedy rule (TableProver) decides
                key = (int(lv.inst[t]), k, int(lv.node[t]), int(zz), _row_key(lv.view.path[t, zz]))
                pr.after_draw[key] = int(j_best[t, zz])
        for t in range(len(s)):
            pr.directions[(int(lv.inst[t]), k, int(lv.node[t]), pbits(lv.p[t]))] = int(s[t])
        if k == 1 and self.pooled:  # the leaf's direction, from the pooled P[O = 1]
            m = len(lv.inst)
            ci = np.repeat(lv.inst, q << q)
            cn = np.repeat(lv.node, q << q) * q + np.tile(np.arange(q), m << q)
            self._record_leaf(pr, ci, cn, lv.view.nextp.reshape(-1))
        return np.asarray(self.r**k * np.abs(gap) + cont)


class PooledJudge(OracleJudge):
    """P[O = 1] at a leaf averaged over the instances: what a prover that does not know the
    instance faces (the rows all read instance 0)."""

    def __init__(self, problem: TreeProblem):
        super().__init__(problem)
        base = OracleJudge(problem)
        leaves = problem.truth[0].shape[1]
        n = problem.n
        probs = base.prob_true(np.repeat(np.arange(n), leaves), np.tile(np.arange(leaves), n))
        self.pooled = (problem.weights[:, None] * probs.reshape(n, leaves)).sum(axis=0)
        self.name = f"pooled {base.name}"

    def prob_true(self, inst: np.ndarray, node: np.ndarray) -> np.ndarray:
        return np.asarray(self.pooled[node])


def expand(pr: TableProver, n: int) -> TableProver:
    """The pooled (instance 0) decisions played on every instance alike."""
    out = TableProver(pr.q, np.full(n, pr.answers[0]), name=pr.name)
    for i in range(n):
        for (_, k, nd, pb), s in pr.directions.items():
            out.directions[(i, k, nd, pb)] = s
        for (_, k, nd, t, bb), j in pr.after_draw.items():
            out.after_draw[(i, k, nd, t, bb)] = j
        for (_, k, nd, mm), j in pr.committed.items():
            out.committed[(i, k, nd, mm)] = j
    return out
