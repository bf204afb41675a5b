"""Algorithm 1 (Appendix A.1) and the soundness estimator of Lemma A.4.

Against a FIXED prover A and a finite input distribution, B is built round by round from the
top down (the distribution of round-k inputs depends on A and on B's earlier rounds):

* initialisation: X = instances, Z = {0,1}; tests r_init/r^(d+1) = 1[ẑ = A(x)], the next
  round's test f_(d+1) = A_d(x, p_d)·ẑ (eq. 7, base case) and the coordinate ẑ;
* round k: X = reachable states x^k = (instance, ŷ_k, p_k) with their probabilities,
  Z = {0,1}^q; tests r_k/r^k = A_k(x, p_k)·(M_D(z) - p_k), f_k = A_(k-1)(y_j, b_j)·z_j with j
  A's recursion index given (b(h), z) (eq. 7), the coordinates z_i and M_D(z).

g(x) puts mass 1 on the true answers. Starting from h uniform over Z, while some test f has
|Adv_f| = |E_{z~g}[f] - E_{z~h}[f]| >= its threshold, step h <- Proj_Δ(h + η_t·sign(Adv_f)·f)
with η_t = D/(G√t), D = 2, G = 2√|Z| (Theorem A.2) and the simplex projection of Duchi et al.
(2008). A test whose protocol reward is scaled by r^k gets the threshold δ/r^k, so every
*unscaled* advantage ends below δ, as Lemma A.4 needs for E[R_A] < r^(d+1)·P[A correct] + (2d+1)δ.
B's numbers are then B_i = P_{z~h}[z_i = 1 | z_<i].
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from llmdebate.core import scoring
from llmdebate.core.rules import outcome_bits
from llmdebate.formal.exact import _merge
from llmdebate.formal.problems.problem import TreeProblem
from llmdebate.formal.strategies.estimators import EstimatorPolicy
from llmdebate.formal.strategies.provers import ProverPolicy
from llmdebate.formal.tables import Levels, index_of, levels_from_joint
from llmdebate.formal.variants import choices, joint_view, round_view

DEFAULT_DELTA = 5e-4
MAX_STEPS = 200_000


def project_simplex(v: np.ndarray) -> np.ndarray:
    """Euclidean projection of every row onto the probability simplex (Duchi et al. 2008)."""
    n, m = v.shape
    u = -np.sort(-v, axis=1)
    css = np.cumsum(u, axis=1) - 1.0
    ind = np.arange(1, m + 1)
    cond = u - css / ind > 0
    rho = m - 1 - np.argmax(cond[:, ::-1], axis=1)
    theta = css[np.arange(n), rho] / (rho + 1)
    return np.asarray(np.maximum(v - theta[:, None], 0.0))


def _expect(alts: list[tuple[np.ndarray, Any]], n: int) -> np.ndarray:
    out = np.zeros(n)
    for v, pr in alts:
        out += np.asarray(pr, dtype=float) * np.broadcast_to(v, (n,))
    return out


@dataclass
class LevelReport:
    level: str
    inputs: int
    steps: int
    max_adv: float  # largest unscaled |Adv_f| over the class at termination
    converged: bool


@dataclass
class OGDReport:
    delta: float
    levels: list[LevelReport] = field(default_factory=list)

    @property
    def steps(self) -> int:
        return sum(lv.steps for lv in self.levels)

    @property
    def delta_reached(self) -> float:
        return max((lv.max_adv for lv in self.levels), default=0.0)

    @property
    def converged(self) -> bool:
        return all(lv.converged for lv in self.levels)

    def as_dict(self) -> dict[str, Any]:
        return {
            "delta": self.delta,
            "steps": self.steps,
            "delta_reached": self.delta_reached,
            "converged": self.converged,
            "levels": [lv.__dict__ for lv in self.levels],
        }


Dynamic = Callable[[np.ndarray], np.ndarray]  # h (|X|, |Z|) -> tests at h, (T_d, |X|, |Z|)


@dataclass
class TestClass:
    """A finite test class on one domain: ``static`` tests (fixed arrays) and ``dynamic``
    ones that depend on h (eq. (7)'s test reads B's own numbers). ``scale[t]`` turns test
    t's advantage into the protocol's unscaled one; the static tests come first."""

    static: np.ndarray  # (T_s, |X|, |Z|)
    dynamic: Dynamic
    scale: np.ndarray  # (T_s + T_d,)
    delta: float

    @property
    def threshold(self) -> np.ndarray:
        return self.delta / self.scale


def run_ogd(
    weights: np.ndarray,
    truth_index: np.ndarray,
    size: int,
    tests: TestClass,
    max_steps: int = MAX_STEPS,
    played: Callable[[np.ndarray], np.ndarray] | None = None,
) -> tuple[np.ndarray, int, float, bool]:
    """Algorithm 1 on one finite domain (vectorised over the whole test class).

    The static tests' advantages are one matrix-vector product per step (their values at the
    truth are computed once); only the dynamic tests are re-evaluated at each h. ``played(h)``,
    if given, is the distribution B actually plays (the ``independent`` variant states only
    h's marginals): the largest advantage and convergence are reported for it. Returns h, the
    number of steps, the largest unscaled |Adv| at the end, and whether every test ended below
    its threshold.
    """
    n = len(weights)
    rows = np.arange(n)
    n_static = len(tests.static)
    flat_static = (tests.static * weights[None, :, None]).reshape(n_static, -1)
    # plain reductions, not BLAS: the steps do not depend on the BLAS library or its threads
    truth_static = (tests.static[:, rows, truth_index] * weights[None, :]).sum(axis=1)
    thr = tests.threshold
    h = np.full((n, size), 1.0 / size)
    eta0 = 2.0 / (2.0 * np.sqrt(size))

    def advantages(hh: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        dyn = tests.dynamic(hh)
        adv_s = truth_static - (flat_static * hh.reshape(-1)[None, :]).sum(axis=1)
        at_truth = (dyn[:, rows, truth_index] * weights[None, :]).sum(axis=1)
        adv_d = at_truth - ((dyn * hh).sum(axis=2) * weights[None, :]).sum(axis=1)
        return np.concatenate([adv_s, adv_d]), dyn

    t = 0
    while True:
        adv, dyn = advantages(h)
        ratio = np.abs(adv) / thr
        worst = int(np.argmax(ratio))
        if ratio[worst] < 1.0 or t >= max_steps:
            break
        t += 1
        f = tests.static[worst] if worst < n_static else dyn[worst - n_static]
        h = project_simplex(h + (eta0 / np.sqrt(t)) * np.sign(adv[worst]) * f)
    if played is not None:
        adv, _ = advantages(played(h))
        ratio = np.abs(adv) / thr
    return h, t, float(np.max(np.abs(adv) * tests.scale)), bool(np.max(ratio) < 1.0)


def _next_test(
    prover: ProverPolicy,
    variant: str,
    k: int,
    q: int,
    s_inst: np.ndarray,
    s_node: np.ndarray,
    bits: np.ndarray,
) -> Dynamic:
    """Eq. (7)'s test f_k = A_(k-1)(y_j, p_(k-1))·z_j at h, with j and p_(k-1) as the variant
    defines them (B's numbers are read off h, so the test moves with h)."""
    m = len(s_inst)
    rep = np.repeat(np.arange(m), 1 << q)
    zz = np.tile(bits, (m, 1))
    rows = np.arange(m << q)
    inst_rep, node_rep = s_inst[rep], s_node[rep]

    def dynamic(h: np.ndarray) -> np.ndarray:
        view = joint_view(h, variant)
        nextp = view.nextp.reshape(m << q, q)
        nxt = np.zeros(m << q)
        for j, pj in choices(prover, variant, s_inst, k, s_node, view, rep, zz):
            jj = np.broadcast_to(j, (m << q,))
            child = node_rep * q + jj
            s_next = _expect(prover.direction(inst_rep, k - 1, child, nextp[rows, jj]), m << q)
            nxt += np.asarray(pj) * s_next * zz[rows, jj]
        return nxt.reshape(1, m, 1 << q)

    return dynamic


class Algorithm1Estimator(EstimatorPolicy):
    """B of Lemma A.4: looks up h at (instance, node, p_k); unreached inputs get 1/2."""

    name = "algorithm1"

    def __init__(self, q: int):
        self.q = q
        self.p_top: np.ndarray = np.empty(0)
        self.tables: dict[tuple[int, int, int, int], np.ndarray] = {}

    def top(self, inst: np.ndarray) -> np.ndarray:
        return np.asarray(self.p_top[inst])

    def levels(self, inst: np.ndarray, k: int, node: np.ndarray, p: np.ndarray) -> Levels:
        uniform = np.full(1 << self.q, 1.0 / (1 << self.q))
        keys = zip(inst.tolist(), node.tolist(), p.view(np.int64).tolist(), strict=True)
        joint = np.stack([self.tables.get((i, k, nd, pb), uniform) for i, nd, pb in keys])
        return levels_from_joint(joint)


def algorithm1_estimator(
    problem: TreeProblem,
    prover: ProverPolicy,
    epsilon: float,
    rho: float,
    delta: float = DEFAULT_DELTA,
    max_steps: int = MAX_STEPS,
    variant: str = "figure2",
) -> tuple[Algorithm1Estimator, OGDReport]:
    """Build Lemma A.4's estimator against ``prover`` by Algorithm 1, top down.

    Under a protocol variant the eq. (7) test uses the variant's recursion index and next
    probability, and the next round's inputs follow the variant (:mod:`.variants`).
    """
    d, q = problem.depth, problem.width
    r = scoring.reward_ratio(epsilon, rho)
    est = Algorithm1Estimator(q)
    report = OGDReport(delta=delta)
    n = problem.n
    inst = np.arange(n)
    h, level = _init_level(problem, prover, r, delta, max_steps)
    report.levels.append(level)
    est.p_top = h[:, 1].copy()
    p = est.p_top.copy()
    # debates that go on past initialisation (sub-probability weights)
    go = _goes_on(prover, inst, p)
    keep = go > 0
    s_inst, s_node, s_p, s_w = (
        inst[keep],
        np.zeros(int(keep.sum()), dtype=np.int64),
        p[keep],
        (problem.weights * go)[keep],
    )
    bits = outcome_bits(q).astype(np.int64)
    for k in range(d, 0, -1):
        if len(s_inst) == 0:
            break
        tests, true_idx = _round_tests(
            problem, prover, variant, k, r, delta, (s_inst, s_node, s_p), bits
        )
        h, steps, adv, ok = run_ogd(s_w, true_idx, 1 << q, tests, max_steps, _played(variant))
        report.levels.append(LevelReport(f"round {k}", len(s_inst), steps, adv, ok))
        keys = zip(s_inst.tolist(), s_node.tolist(), s_p.view(np.int64).tolist(), strict=True)
        for (i, nd, pb), row in zip(keys, h, strict=True):
            est.tables[(i, k, nd, pb)] = row
        s_inst, s_node, s_p, s_w = _next_inputs(prover, variant, k, q, (s_inst, s_node, s_w), h)
    return est, report


def _goes_on(prover: ProverPolicy, inst: np.ndarray, p: np.ndarray) -> np.ndarray:
    """P[the debate goes on past initialisation] per instance, given B's top numbers ``p``:
    over A's answers, the probability A does not stop."""
    n = len(inst)
    go = np.zeros(n)
    for a, pa in prover.answer(inst):
        go += np.asarray(pa) * ~prover.stops(inst, p, np.broadcast_to(a, (n,)))
    return go


def _init_level(
    problem: TreeProblem, prover: ProverPolicy, r: float, delta: float, max_steps: int
) -> tuple[np.ndarray, LevelReport]:
    """Algorithm 1 on the initialisation (X = instances, Z = {0, 1}): h, and its report."""
    d, n = problem.depth, problem.n
    inst = np.arange(n)
    answer = _expect(prover.answer(inst), n)  # P[A(x) = 1]
    truth = problem.top_truth().astype(np.int64)

    def init_next(h: np.ndarray) -> np.ndarray:
        p = h[:, 1]
        go = _goes_on(prover, inst, p)
        s_d = (
            go * _expect(prover.direction(inst, d, np.zeros(n, dtype=np.int64), p), n)
            if d > 0
            else go * 0
        )
        return np.stack([np.zeros(n), s_d], axis=1)[None]  # A_d(x, p_d)·ẑ

    f_init = np.stack([1.0 - answer, answer], axis=1)  # 1[ẑ = a], expected over A's answer
    f_coord = np.tile([0.0, 1.0], (n, 1))
    init_tests = TestClass(
        static=np.stack([f_init, f_coord]),
        dynamic=init_next,
        scale=np.array([r ** (d + 1), 1.0, r**d]),
        delta=delta,
    )
    h, steps, adv, ok = run_ogd(problem.weights, truth, 2, init_tests, max_steps)
    return h, LevelReport("init", n, steps, adv, ok)


def _round_tests(
    problem: TreeProblem,
    prover: ProverPolicy,
    variant: str,
    k: int,
    r: float,
    delta: float,
    states: tuple[np.ndarray, np.ndarray, np.ndarray],
    bits: np.ndarray,
) -> tuple[TestClass, np.ndarray]:
    """Round k's test class on its reachable ``states`` (instance, node, p_k): the reward
    test, M_D, the coordinates z_i and eq. (7)'s test; and the index of each state's true z."""
    s_inst, s_node, s_p = states
    q = problem.width
    m = len(s_inst)
    table = problem.rule(k).table.astype(np.float64)
    true_idx = index_of(problem.children_of(problem.truth, s_inst, k, s_node))
    s_k = _expect(prover.direction(s_inst, k, s_node, s_p), m)
    f_reward = s_k[:, None] * (table[None, :] - s_p[:, None])
    f_coords = [np.tile(bits[:, i].astype(float), (m, 1)) for i in range(q)]
    f_m = np.tile(table, (m, 1))
    tests = TestClass(
        static=np.stack([f_reward, f_m, *f_coords]),
        dynamic=_next_test(prover, variant, k, q, s_inst, s_node, bits),
        scale=np.array([r**k] + [1.0] * (q + 1) + [r ** (k - 1)]),
        delta=delta,
    )
    return tests, true_idx


def _played(variant: str) -> Callable[[np.ndarray], np.ndarray] | None:
    """The joint B plays from h under ``variant`` (``independent``: the product of h's
    marginals), for :func:`run_ogd`; None where B plays h itself."""
    if variant != "independent":
        return None

    def played(hh: np.ndarray) -> np.ndarray:
        return round_view(levels_from_joint(hh), variant).joint

    return played


def _next_inputs(
    prover: ProverPolicy,
    variant: str,
    k: int,
    q: int,
    states: tuple[np.ndarray, np.ndarray, np.ndarray],
    h: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Round k-1's states (instance, node, p) and their weights, from round k's ``states``
    (instance, node, weight) and B's ``h``: z drawn from B's played joint, A's recursion
    index, and p as the variant says; equal states merged."""
    s_inst, s_node, s_w = states
    m = len(s_inst)
    rep = np.repeat(np.arange(m), 1 << q)
    zz = np.tile(outcome_bits(q).astype(np.int64), (m, 1))
    view = round_view(levels_from_joint(h), variant)
    nextp = view.nextp.reshape(m << q, q)
    wz = (s_w[:, None] * view.joint).reshape(-1)
    ni, nn, npp, nw = [], [], [], []
    for j, pj in choices(prover, variant, s_inst, k, s_node, view, rep, zz):
        jj = np.broadcast_to(j, (m << q,))
        ww = wz * pj
        ok_ = ww > 1e-15
        ni.append(s_inst[rep][ok_])
        nn.append(s_node[rep][ok_] * q + jj[ok_])
        npp.append(nextp[np.flatnonzero(ok_), jj[ok_]])
        nw.append(ww[ok_])
    (s_inst, s_node), s_p, s_w = _merge(
        [np.concatenate(ni), np.concatenate(nn)], np.concatenate(npp), np.concatenate(nw)
    )
    return s_inst, s_node, s_p, s_w
