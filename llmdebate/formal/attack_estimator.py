"""The estimator that minimises a fixed prover's payoff (``attack --target completeness``).

B may state any table of conditionals at every state, i.e. any joint h over the 2^q outcomes
(correlated outcomes included), and it may depend on the instance. For a fixed prover A whose
recursion index depends on (instance, node, b, z) but not on p_k (every built-in prover), the
value of a round-k state under B's best reply splits as

    V_k(x, node, p) = -r^k·σ_k(p)·p + W_k(x, node, σ_k(p)),   σ_k(p) = E[s_k | p],
    W_k(x, node, σ) = min_h [ r^k·σ·E_h[M_D] + Σ_z h(z)·Σ_j P(j | z)·V_(k-1)(y_j, p_(k-1)) ],
    V_0(x, leaf, p) = σ_0(p)·(P[O = 1] - p),

because B's table at a state is free whatever p_k is. So the search is a dynamic programme over
(instance, node, σ) from the leaves up, and only the inner minimisation over h is a search: a
seeded evolutionary search (structured proposals: point masses, shifted products, exchangeable
mixtures around the truth, sparse Dirichlet draws; then mutations of the elite), with a budget
of candidate tables per state. At the top B picks p_d from a 201-point grid plus the points
where σ_d changes (bisected to 1e-7). The result is an exact payoff: the tables found are
replayed through :func:`llmdebate.formal.exact.exact_prover_estimator`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from llmdebate.core import scoring
from llmdebate.core.rules import outcome_bits
from llmdebate.formal.problems.problem import TreeProblem
from llmdebate.formal.strategies.alternatives import Alternatives
from llmdebate.formal.strategies.estimators import EstimatorPolicy
from llmdebate.formal.strategies.judges import OracleJudge
from llmdebate.formal.strategies.provers import BeliefProver, ProverPolicy
from llmdebate.formal.tables import Levels, expected_rule, levels_from_joint
from llmdebate.formal.variants import choices, joint_view

CHUNK_ROWS = 1 << 19
SIGMA_DIGITS = 12
ELITE = 8
GUARD = 1e-7  # B's numbers keep this far from the edges of A's dead zone
EDGE_PENALTY = 1e6  # added to a table that hands on a probability on such an edge
TOP_MARGIN = 1e-6  # p_d candidates this far on each side of a change of A's decisions


@dataclass
class SearchBudget:
    """Candidate tables evaluated per state, in generations of ``population``; seeded."""

    evaluations: int = 1024
    population: int = 64
    seed: int = 0
    # how far inside (and, for the ladder's shifted tables, outside) A's dead zone the
    # structured tables stay. The first margin seeds the evolutionary search; then every rung
    # is proposed (:meth:`EstimatorSearch.ladder`, on top of ``evaluations``) and the search
    # keeps whichever table pays B most. B's payoff improves as the margin shrinks (E[M_D]
    # falls with the marginals' shift) down to where the guard band (GUARD) would reject a
    # table; 1e-6 keeps A's decisions 10·GUARD clear of their edges.
    margins: tuple[float, ...] = (5e-3, 1e-4, 1e-6)


def expect(alts: Alternatives, n: int) -> np.ndarray:
    out = np.zeros(n)
    for v, pr in alts:
        out += np.asarray(pr, dtype=float) * np.broadcast_to(v, (n,))
    return out


class SigmaEstimator(EstimatorPolicy):
    """B playing the tables found: at a state it reads σ_k(p) off A and states W's argmin."""

    name = "attack"

    def __init__(
        self,
        prover: ProverPolicy,
        q: int,
        p_top: np.ndarray,
        signature: Callable[[int, int, int], bytes],
    ):
        self.prover, self.q, self.p_top, self.signature = prover, q, p_top, signature
        self.best: dict[tuple[int, bytes, float], np.ndarray] = {}

    def top(self, inst: np.ndarray) -> np.ndarray:
        return np.asarray(self.p_top[inst])

    def joint_for(self, inst: np.ndarray, k: int, node: np.ndarray, p: np.ndarray) -> np.ndarray:
        sig = np.round(expect(self.prover.direction(inst, k, node, p), len(inst)), SIGMA_DIGITS)
        uniform = np.full(1 << self.q, 1.0 / (1 << self.q))
        rows = [
            self.best.get((k, self.signature(i, k, nd), float(s)), uniform)
            for i, nd, s in zip(inst.tolist(), node.tolist(), sig.tolist(), strict=True)
        ]
        return np.stack(rows) if rows else np.empty((0, 1 << self.q))

    def levels(self, inst: np.ndarray, k: int, node: np.ndarray, p: np.ndarray) -> Levels:
        return levels_from_joint(self.joint_for(inst, k, node, p))


class EstimatorSearch:
    """The DP over (instance, node, σ) with an evolutionary inner search (module docstring)."""

    on_step: Callable[[int, int], None] | None = None
    """Told the instances solved so far and their number, after each instance."""

    def __init__(
        self,
        problem: TreeProblem,
        prover: ProverPolicy,
        epsilon: float,
        rho: float,
        variant: str,
        budget: SearchBudget,
    ):
        self.problem, self.prover, self.variant, self.budget = problem, prover, variant, budget
        self.bands = _bands(prover)
        self.r = scoring.reward_ratio(epsilon, rho)
        self.q = problem.width
        self.judge = OracleJudge(problem)
        self.bits = outcome_bits(self.q).astype(np.int64)
        self.rng = np.random.default_rng(np.random.SeedSequence([budget.seed, 11]))
        self.W: dict[tuple[int, bytes, float], float] = {}
        self.sigs: dict[tuple[int, int, int], bytes] = {}
        self.est = SigmaEstimator(prover, self.q, np.zeros(problem.n), self.signature)
        self.evaluated = 0
        self._zones: dict[tuple[int, bytes, bytes], np.ndarray] = {}

    # ------------------------------------------------------------------ values
    def sigma(self, inst: np.ndarray, k: int, node: np.ndarray, p: np.ndarray) -> np.ndarray:
        s = expect(self.prover.direction(inst, k, node, p), len(inst))
        return np.asarray(np.round(s, SIGMA_DIGITS))

    def signature(self, inst: int, k: int, node: int) -> bytes:
        """What a state's value depends on besides σ: the truths (and A's beliefs, if it has
        any) of every claim below it. States with equal signatures share W and B's table."""
        key = (inst, k, node)
        got = self.sigs.get(key)
        if got is None:
            parts = []
            beliefs = getattr(self.prover, "values", None)
            for lv in range(k, -1, -1):
                span = self.q ** (k - lv)
                cols = slice(node * span, (node + 1) * span)
                parts.append(self.problem.truth[lv][inst, cols].tobytes())
                if isinstance(beliefs, list):
                    parts.append(np.asarray(beliefs[lv])[inst, cols].tobytes())
            got = b"|".join(parts)
            self.sigs[key] = got
        return got

    def value(self, k: int, inst: np.ndarray, node: np.ndarray, p: np.ndarray) -> np.ndarray:
        """V_k at rows (instance, node, p) under B's best tables found so far (filled lazily)."""
        sig = self.sigma(inst, k, node, p)
        if k == 0:
            return np.asarray(sig * (self.judge.prob_true(inst, node) - p))
        rows = list(zip(inst.tolist(), node.tolist(), sig.tolist(), strict=True))
        keys = [(k, self.signature(i, k, nd), s) for i, nd, s in rows]
        todo: dict[tuple[int, bytes, float], tuple[int, int, float]] = {}
        for key, row in zip(keys, rows, strict=True):
            if key not in self.W and key not in todo:
                todo[key] = row
        if todo:
            arr = np.array(list(todo.values()), dtype=np.float64)
            self.solve(k, arr[:, 0].astype(np.int64), arr[:, 1].astype(np.int64), arr[:, 2])
        w = np.array([self.W[key] for key in keys])
        return np.asarray(-(self.r**k) * sig * p + w)

    def objective(
        self, k: int, inst: np.ndarray, node: np.ndarray, sig: np.ndarray, h: np.ndarray
    ) -> np.ndarray:
        """W's objective for candidate joints h (S, C, 2^q) at S states: shape (S, C)."""
        s_n, c_n, size = h.shape
        n = s_n * c_n
        ri, rn = np.repeat(inst, c_n), np.repeat(node, c_n)
        view = joint_view(h.reshape(n, size), self.variant)
        em = expected_rule(view.joint, self.problem.rule(k).table)
        reward = self.r**k * np.repeat(sig, c_n) * em
        rep = np.repeat(np.arange(n), size)
        z = np.tile(self.bits, (n, 1))
        nextp = view.nextp.reshape(n * size, self.q)
        ar = np.arange(n * size)
        cont = np.zeros(n * size)
        edge = np.zeros(n * size, dtype=bool)
        for j, pj in choices(self.prover, self.variant, ri, k, rn, view, rep, z):
            jj = np.broadcast_to(j, (n * size,))
            child = rn[rep] * self.q + jj
            cp = nextp[ar, jj]
            cont += np.asarray(pj) * self.value(k - 1, ri[rep], child, cp)
            edge |= self.on_edge(ri[rep], k - 1, child, cp) & (np.asarray(pj) > 0)
        total = reward + (view.joint.reshape(-1) * cont).reshape(n, size).sum(axis=1)
        reached = (edge & (view.joint.reshape(-1) > 0)).reshape(n, size).any(axis=1)
        total = total + EDGE_PENALTY * reached
        self.evaluated += n
        return np.asarray(total.reshape(s_n, c_n))

    def on_edge(self, inst: np.ndarray, k: int, node: np.ndarray, p: np.ndarray) -> np.ndarray:
        """Where A's direction at p differs between its dead zone narrowed and widened by
        :data:`GUARD`: p on an edge, where rounding rather than B decides A's move. B does
        not hand such a p on (the tolerance would read it one way, exact arithmetic may read
        it the other)."""
        if self.bands is None:
            return np.zeros(len(inst), dtype=bool)
        narrow, wide = self.bands
        a = expect(narrow.direction(inst, k, node, p), len(inst))
        b = expect(wide.direction(inst, k, node, p), len(inst))
        return np.asarray(a != b)

    # ------------------------------------------------------------------ search
    def proposals(self, k: int, inst: np.ndarray, node: np.ndarray) -> np.ndarray:
        """Structured first-generation tables per state, shape (S, C0, 2^q)."""
        q, size, rng = self.q, 1 << self.q, self.rng
        g = self.problem.children_of(self.problem.truth, inst, k, node).astype(np.float64)
        s_n = len(inst)
        cands = [np.full((s_n, 1, size), 1.0 / size)]
        truth_idx = (g.astype(np.int64) @ (1 << np.arange(q - 1, -1, -1))).astype(np.int64)
        for t in np.linspace(0.0, 1.0, 11):  # products, every marginal shifted by t
            m = np.abs(g - t)
            cands.append(_product(m, self.bits)[:, None, :])
        flips = np.abs(self.bits[None, :, :] - g[:, None, :]).sum(axis=2).astype(np.int64)
        for _ in range(24):  # exchangeable mixtures: a law of the number of flipped claims
            law = rng.dirichlet(np.full(q + 1, 0.3), size=s_n)
            counts = np.stack([(flips == c).sum(axis=1) for c in range(q + 1)], axis=1)
            per = law / np.maximum(counts, 1)
            cands.append(np.take_along_axis(per, flips, axis=1)[:, None, :])
        inside = np.maximum(self.dead_zone(k, inst, node, g) - self.budget.margins[0], 0.0)
        law = self.flip_laws(inside)  # (S, L, q + 1)
        counts = np.stack([(flips == c).sum(axis=1) for c in range(q + 1)], axis=1)
        per = law / np.maximum(counts, 1)[:, None, :]
        cands.append(np.take_along_axis(per, np.repeat(flips[:, None, :], law.shape[1], 1), 2))
        cands.append(self.group_laws(g, inside))
        point = np.zeros((s_n, 1, size))
        point[np.arange(s_n), 0, truth_idx] = 1.0
        cands.append(point)
        n_left = max(self.budget.population - sum(c.shape[1] for c in cands), 8)
        cands.append(rng.dirichlet(np.full(size, 0.2), size=(s_n, n_left)))
        return np.concatenate(cands, axis=1)

    def ladder(self, k: int, inst: np.ndarray, node: np.ndarray) -> np.ndarray:
        """The margin searched: at every rung of :attr:`SearchBudget.margins`, laws over the
        number of flipped claims and correlated group laws whose marginals stay that margin
        inside A's dead zone, and a product and group laws with every child that margin
        outside it (A points), all rungs at once; repeats removed. Shape (S, C, 2^q). It
        draws nothing from the search's generator."""
        q, size = self.q, 1 << self.q
        g = self.problem.children_of(self.problem.truth, inst, k, node).astype(np.float64)
        s_n = len(inst)
        flips = np.abs(self.bits[None, :, :] - g[:, None, :]).sum(axis=2).astype(np.int64)
        cands = []  # rows margin-major
        zone = self.dead_zone(k, inst, node, g)
        counts = np.stack([(flips == c).sum(axis=1) for c in range(q + 1)], axis=1)
        ladder = np.asarray(self.budget.margins, dtype=np.float64)
        m_n = len(ladder)
        inside = np.maximum(zone[None, :] - ladder[:, None], 0.0).reshape(-1)
        outside = np.minimum(zone[None, :] + ladder[:, None], 1.0).reshape(-1)
        gg = np.tile(g, (m_n, 1))
        law = self.flip_laws(inside)  # (M·S, L, q + 1)
        per = law / np.maximum(np.tile(counts, (m_n, 1)), 1)[:, None, :]
        rep = np.repeat(np.tile(flips, (m_n, 1))[:, None, :], law.shape[1], 1)
        for block in (
            np.take_along_axis(per, rep, 2),
            self.group_laws(gg, inside),
            # every child just outside, so that A points (a product, and correlated)
            _product(np.abs(gg - outside[:, None]), self.bits)[:, None, :],
            self.group_laws(gg, outside),
        ):
            by_state = block.reshape(m_n, s_n, block.shape[1], size).transpose(1, 0, 2, 3)
            cands.append(by_state.reshape(s_n, m_n * block.shape[1], size))
        return _distinct(np.concatenate(cands, axis=1))

    def dead_zone(self, k: int, inst: np.ndarray, node: np.ndarray, g: np.ndarray) -> np.ndarray:
        """Per state, how far every child's probability may move from its truth towards the
        other side before A's next direction changes (the smallest over the children)."""
        key = (k, inst.tobytes(), node.tobytes())
        if key not in self._zones:
            self._zones = {key: self._dead_zone(k, inst, node, g)}  # the chunk being solved
        return self._zones[key]

    def _dead_zone(self, k: int, inst: np.ndarray, node: np.ndarray, g: np.ndarray) -> np.ndarray:
        q = self.q
        s_n = len(inst)
        ci = np.repeat(inst, q)
        cn = (node[:, None] * q + np.arange(q)[None, :]).reshape(-1)
        gg = g.reshape(-1)
        base = self.sigma(ci, k - 1, cn, gg)
        grid = np.linspace(0.0, 1.0, 201)
        differs = np.stack([self.sigma(ci, k - 1, cn, np.abs(gg - t)) != base for t in grid[1:]])
        first = np.argmax(differs, axis=0)  # index into grid[1:] of the first change
        found = differs.any(axis=0)
        lo = np.where(found, grid[first], 1.0)  # the last grid step with the same σ
        hi = np.where(found, grid[first + 1], 1.0)
        for _ in range(40):
            mid = 0.5 * (lo + hi)
            same = self.sigma(ci, k - 1, cn, np.abs(gg - mid)) == base
            lo, hi = np.where(same, mid, lo), np.where(same, hi, mid)
        return np.asarray(lo.reshape(s_n, q).min(axis=1))

    def flip_laws(self, c: np.ndarray) -> np.ndarray:
        """Laws over the number of flipped claims whose mean flip rate is c (vertices of that
        polytope: one count, or two counts mixed so that the rate is exactly c): (S, L, q+1)."""
        q = self.q
        laws = []
        for f1 in range(q + 1):
            for f2 in range(f1 + 1, q + 1):
                a = (f2 / q - c) / ((f2 - f1) / q)  # weight on f1
                ok = (a >= 0) & (a <= 1)
                law = np.zeros((len(c), q + 1))
                law[:, f1], law[:, f2] = np.where(ok, a, 0.0), np.where(ok, 1 - a, 0.0)
                law[~ok, 0] = 1.0  # no such mixture: the truth itself
                laws.append(law)
        return np.stack(laws, axis=1)

    def group_laws(self, g: np.ndarray, c: np.ndarray) -> np.ndarray:
        """Correlated tables that keep every marginal at distance c from its truth: within the
        true children (and within the false ones) the number flipped follows a law of mean
        c·(group size), two counts mixed, uniform over which children; the other group kept
        at its truth, or flipped the same way. Outcomes move together, so E[M_D] moves far
        while no handed-on marginal leaves A's dead zone. Shape (S, L, 2^q)."""
        q, bits = self.q, self.bits
        s_n = len(g)
        true_child = g[:, None, :] == 1  # (S, 1, q)
        flipped = bits[None, :, :] != g[:, None, :]  # (S, 2^q, q)
        f_t = (flipped & true_child).sum(axis=2)  # flipped true children per outcome
        f_f = (flipped & ~true_child).sum(axis=2)
        n_t = true_child.sum(axis=2)[:, 0]
        n_f = q - n_t
        law_t = self._two_point(c * n_t, n_t)  # (S, L, q + 1)
        law_f = self._two_point(c * n_f, n_f)
        keep = np.zeros((s_n, 1, q + 1))
        keep[:, :, 0] = 1.0
        pairs = [
            (law_t, np.repeat(keep, law_t.shape[1], 1)),
            (np.repeat(keep, law_f.shape[1], 1), law_f),
            (law_t, law_f),
        ]
        choose = np.array([[math.comb(n, m) for m in range(q + 1)] for n in range(q + 1)])
        ct, cf = choose[n_t], choose[n_f]  # (S, q + 1): ways to flip m children of a group
        out = []
        for lt, lf in pairs:
            pt = lt / np.maximum(ct, 1)[:, None, :]
            pf = lf / np.maximum(cf, 1)[:, None, :]
            ft = np.repeat(f_t[:, None, :], lt.shape[1], 1)
            ff = np.repeat(f_f[:, None, :], lf.shape[1], 1)
            out.append(np.take_along_axis(pt, ft, 2) * np.take_along_axis(pf, ff, 2))
        return np.concatenate(out, axis=1)

    def _two_point(self, mean: np.ndarray, size: np.ndarray) -> np.ndarray:
        """Laws over 0..size (padded to q + 1) with the given mean: every two-count mixture
        (f1 < f2) that has it, else the point at round(mean). Shape (S, L, q + 1)."""
        q = self.q
        laws = []
        for f1 in range(q + 1):
            for f2 in range(f1 + 1, q + 1):
                ok = (f2 <= size) & (f1 <= mean) & (mean <= f2)
                a = np.where(ok, (f2 - mean) / (f2 - f1), 0.0)  # weight on f1
                law = np.zeros((len(mean), q + 1))
                law[:, f1], law[:, f2] = a, np.where(ok, 1 - a, 0.0)
                law[~ok, 0] = 1.0  # no such mixture: the group at its truth
                laws.append(law)
        return np.stack(laws, axis=1)

    def mutate(self, elite: np.ndarray, n: int) -> np.ndarray:
        """n children per state from the elite (S, E, 2^q): four seeded mutations."""
        rng = self.rng
        s_n, e_n, size = elite.shape
        parent = elite[np.arange(s_n)[:, None], rng.integers(0, e_n, size=(s_n, n))]
        other = elite[np.arange(s_n)[:, None], rng.integers(0, e_n, size=(s_n, n))]
        lam = rng.uniform(0.0, 0.6, size=(s_n, n, 1)) ** 2
        kind = rng.integers(0, 4, size=(s_n, n, 1))
        point = np.zeros((s_n, n, size))
        np.put_along_axis(point, rng.integers(0, size, size=(s_n, n, 1)), 1.0, axis=2)
        noise = rng.dirichlet(np.full(size, 0.3), size=(s_n, n))
        moved = parent.copy()  # move a share of one outcome's mass to another
        src = rng.integers(0, size, size=(s_n, n, 1))
        share = np.take_along_axis(parent, src, axis=2) * lam
        np.put_along_axis(moved, src, np.take_along_axis(parent, src, axis=2) - share, axis=2)
        moved += point * share
        child = np.where(
            kind == 0,
            (1 - lam) * parent + lam * point,
            np.where(
                kind == 1,
                moved,
                np.where(
                    kind == 2, (1 - lam) * parent + lam * other, (1 - lam) * parent + lam * noise
                ),
            ),
        )
        child = np.maximum(child, 0.0)
        return np.asarray(child / child.sum(axis=2, keepdims=True))

    def solve(self, k: int, inst: np.ndarray, node: np.ndarray, sig: np.ndarray) -> None:
        """W_k at the given (instance, node, σ) states; stores values and argmin tables."""
        size = 1 << self.q
        per = max(1, CHUNK_ROWS // (self.budget.population * size))
        for lo in range(0, len(inst), per):
            si, sn, ss = inst[lo : lo + per], node[lo : lo + per], sig[lo : lo + per]
            pool = self.proposals(k, si, sn)
            vals = self.objective(k, si, sn, ss, pool)
            spent = pool.shape[1]
            while spent < self.budget.evaluations:
                order = np.argsort(vals, axis=1, kind="stable")[:, :ELITE]
                elite = np.take_along_axis(pool, order[:, :, None], axis=1)
                ev = np.take_along_axis(vals, order, axis=1)
                n_new = min(self.budget.population, self.budget.evaluations - spent)
                kids = self.mutate(elite, n_new)
                pool = np.concatenate([elite, kids], axis=1)
                vals = np.concatenate([ev, self.objective(k, si, sn, ss, kids)], axis=1)
                spent += n_new
            rungs = self.ladder(k, si, sn)  # the margin ladder, after the seeded search
            pool = np.concatenate([pool, rungs], axis=1)
            vals = np.concatenate([vals, self.objective(k, si, sn, ss, rungs)], axis=1)
            best = np.argmin(vals, axis=1)
            for t, (i, nd, s) in enumerate(zip(si.tolist(), sn.tolist(), ss.tolist(), strict=True)):
                key = (k, self.signature(i, k, nd), s)
                self.W[key] = float(vals[t, best[t]])
                self.est.best[key] = pool[t, best[t]]

    # ------------------------------------------------------------------ the top
    def top_grid(self, inst: int, answer: int) -> np.ndarray:
        """p_d candidates: a 201-point grid and both sides of every change of A's decisions."""
        grid = np.linspace(0.0, 1.0, 201)
        d = self.problem.depth
        ii = np.full(len(grid), inst)
        aa = np.full(len(grid), answer)
        code = self._top_code(ii, aa, grid, d)
        extra: list[float] = []
        for t in np.flatnonzero(code[1:] != code[:-1]).tolist():
            lo, hi = float(grid[t]), float(grid[t + 1])
            c_lo = code[t]
            while hi - lo > 1e-7:
                mid = 0.5 * (lo + hi)
                c = self._top_code(np.array([inst]), np.array([answer]), np.array([mid]), d)[0]
                lo, hi = (mid, hi) if c == c_lo else (lo, mid)
            extra += [lo - TOP_MARGIN, hi + TOP_MARGIN]  # clear of the change, both sides
        return np.unique(np.clip(np.concatenate([grid, np.array(extra)]), 0.0, 1.0))

    def top_on_edge(self, inst: int, answers: list[int], grid: np.ndarray) -> np.ndarray:
        """p_d candidates on an edge of A's decision to stop or of its direction."""
        out = np.zeros(len(grid), dtype=bool)
        if self.bands is None:
            return out
        ii = np.full(len(grid), inst)
        d = self.problem.depth
        for a in answers:
            aa = np.full(len(grid), a)
            codes = [self._code_of(pr, ii, aa, grid, d) for pr in self.bands]
            out |= codes[0] != codes[1]
        return out

    def _code_of(
        self, pr: ProverPolicy, inst: np.ndarray, a: np.ndarray, p: np.ndarray, d: int
    ) -> np.ndarray:
        stop = pr.stops(inst, p, a).astype(float)
        sig = expect(pr.direction(inst, d, np.zeros_like(inst), p), len(inst))
        return np.asarray(stop * 10 + sig)

    def _top_code(self, inst: np.ndarray, a: np.ndarray, p: np.ndarray, d: int) -> np.ndarray:
        stop = self.prover.stops(inst, p, a)
        if d == 0:
            return np.asarray(stop.astype(float) * 10 + self.sigma(inst, 0, np.zeros_like(inst), p))
        sig = self.sigma(inst, d, np.zeros_like(inst), p)
        return np.asarray(stop.astype(float) * 10 + sig)

    def run(self) -> SigmaEstimator:
        """Solve every instance; returns B (p_d and the tables at each (instance, node, σ))."""
        prob, d, r = self.problem, self.problem.depth, self.r
        p_top = np.zeros(prob.n)
        for i in range(prob.n):
            best_val, best_p = np.inf, 0.5
            alts = self.prover.answer(np.array([i]))
            answers = [
                (int(np.asarray(a).reshape(-1)[0]), float(np.asarray(pa).reshape(-1)[0]))
                for a, pa in alts
            ]
            grid = np.unique(np.concatenate([self.top_grid(i, a) for a, _ in answers]))
            grid = grid[~self.top_on_edge(i, [a for a, _ in answers], grid)]
            ii = np.full(len(grid), i)
            tot = np.zeros(len(grid))
            for a, pa in answers:
                aa = np.full(len(grid), a)
                go = ~self.prover.stops(ii, grid, aa)
                tot += pa * scoring.expected_init_reward(r, d, grid, aa)
                if go.any():
                    v = np.zeros(len(grid))
                    v[go] = self.value(d, ii[go], np.zeros(int(go.sum()), dtype=np.int64), grid[go])
                    tot += pa * v
            t = int(np.argmin(tot))
            if tot[t] < best_val:
                best_val, best_p = float(tot[t]), float(grid[t])
            p_top[i] = best_p
            if self.on_step is not None:
                self.on_step(i + 1, prob.n)
        self.est.p_top = p_top
        return self.est


def _bands(prover: ProverPolicy) -> tuple[BeliefProver, BeliefProver] | None:
    """An eq. (13) prover with its dead zone narrowed and widened by :data:`GUARD` (none for
    other provers, or with no dead zone: p = g is then exact)."""
    if not isinstance(prover, BeliefProver) or prover.epsilon <= GUARD:
        return None
    pr, eps = prover, prover.epsilon
    return (
        BeliefProver(pr.problem, pr.values, eps - GUARD, pr.name),
        BeliefProver(pr.problem, pr.values, eps + GUARD, pr.name),
    )


def _distinct(pool: np.ndarray) -> np.ndarray:
    """The candidate tables (S, C, 2^q) without the columns that repeat an earlier one at
    every state (a law with no valid mixture falls back to the truth), in their first order."""
    seen: set[bytes] = set()
    keep = []
    for c in range(pool.shape[1]):
        key = pool[:, c, :].tobytes()
        if key not in seen:
            seen.add(key)
            keep.append(c)
    return pool[:, keep, :]


def _product(m: np.ndarray, bits: np.ndarray) -> np.ndarray:
    """Independent joints with marginals m (S, q): shape (S, 2^q)."""
    return np.asarray(
        np.prod(np.where(bits[None, :, :] == 1, m[:, None, :], 1.0 - m[:, None, :]), axis=2)
    )
