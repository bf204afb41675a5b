"""Best-response estimators: for a FIXED prover, the B that minimises E[R_A].

Two classes, so that "some B exists" (the statement of Lemma A.4) becomes a number:

* :func:`shrinkage_best_response`: one constant-shrinkage family, B_(λ,c) = (1-λ)·B_0 + λ·c
  applied to every number a base estimator B_0 states (p_d and every conditional b_i); the
  minimum of the exact E[R_A] over a grid of (λ, c). One B for all instances.
* :func:`grid_best_response`: the exact best response among all estimators whose every number
  lies on a finite grid, by dynamic programming over the finite game. This B may depend on the
  instance (it is a function of x, as Lemma A.4's B is; it is not required to be small).
  State: (instance, round k, node, p_k); at each state B picks its whole round table (every
  conditional on the grid, 2^q - 1 numbers; q numbers for the ``independent`` variant), and

      V_k(s) = min_table [ r^k·E[s_k]·(E[M_D] - p_k) + E_z Σ_j P(j | z)·V_(k-1)(y_j, p_(k-1)) ]
      V_0(s) = E[s_0]·(P[O = 1] - p_0),   E[R_A] = min_(p_d) E_a[E[r_init] + 1[A goes on]·V_d].

  Exact for the finite game (prover policies are Markov in (instance, node, p_k)); feasible
  when |grid|^(2^q - 1) tables fit (q = 2 with 21 values: 9261 tables per state).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from llmdebate.core import scoring
from llmdebate.core.rules import outcome_bits
from llmdebate.formal.exact import exact_prover_estimator
from llmdebate.formal.game import Game
from llmdebate.formal.problems.problem import TreeProblem
from llmdebate.formal.strategies.alternatives import Alternatives
from llmdebate.formal.strategies.estimators import EstimatorPolicy, Shrunk
from llmdebate.formal.strategies.judges import OracleJudge
from llmdebate.formal.strategies.provers import ProverPolicy
from llmdebate.formal.tables import Levels, expected_rule
from llmdebate.formal.variants import choices, round_view

MAX_TABLES = 20_000
CHUNK_ROWS = 1 << 18


@dataclass
class BestResponse:
    """The smallest E[R_A] found in a class of estimators (mean over instances)."""

    value: float
    normalized: float
    method: str
    argmin: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "normalized": self.normalized,
            "method": self.method,
            "argmin": self.argmin,
        }


def _expected(alts: Alternatives, n: int) -> np.ndarray:
    out = np.zeros(n)
    for v, pr in alts:
        out += np.asarray(pr, dtype=float) * np.broadcast_to(v, (n,))
    return out


def shrinkage_best_response(
    problem: TreeProblem,
    prover: ProverPolicy,
    base: EstimatorPolicy,
    epsilon: float,
    rho: float,
    variant: str = "figure2",
    lams: tuple[float, ...] = tuple(np.linspace(0.0, 1.0, 11)),
    cs: tuple[float, ...] = tuple(np.linspace(0.0, 1.0, 21)),
) -> BestResponse:
    """min over (λ, c) of the exact E[R_A] against B_(λ,c) = (1-λ)·base + λ·c."""
    judge = OracleJudge(problem)
    best: tuple[float, float, float] | None = None
    for lam in lams:
        for c in cs if lam > 0 else (0.0,):
            game = Game(
                problem, prover, Shrunk(base, float(lam), float(c)), judge, epsilon, rho, variant
            )
            val = exact_prover_estimator(game).mean(problem.weights)
            if best is None or val < best[0]:
                best = (val, float(lam), float(c))
    assert best is not None
    r = scoring.reward_ratio(epsilon, rho)
    return BestResponse(
        value=best[0],
        normalized=float(scoring.normalized(best[0], r, problem.depth)),
        method=f"constant shrinkage of {base.name}: {len(lams)}×{len(cs)} grid of (λ, c)",
        argmin={"lambda": round(best[1], 6), "c": round(best[2], 6)},
    )


def _tables(grid: np.ndarray, q: int, variant: str) -> Levels:
    """Every round table on the grid: levels[i] has shape (C, 2^i)."""
    if variant == "independent":
        combos = np.array(list(itertools.product(grid, repeat=q)))
        return [np.repeat(combos[:, i : i + 1], 1 << i, axis=1) for i in range(q)]
    n_num = (1 << q) - 1
    combos = np.array(list(itertools.product(grid, repeat=n_num)))
    out, at = [], 0
    for i in range(q):
        out.append(combos[:, at : at + (1 << i)])
        at += 1 << i
    return out


def grid_best_response(
    problem: TreeProblem,
    prover: ProverPolicy,
    epsilon: float,
    rho: float,
    variant: str = "figure2",
    grid: np.ndarray | None = None,
) -> BestResponse:
    """The exact best response among estimators stating numbers on ``grid`` (DP above)."""
    grid = np.linspace(0.0, 1.0, 21) if grid is None else np.asarray(grid, dtype=float)
    d, q = problem.depth, problem.width
    r = scoring.reward_ratio(epsilon, rho)
    tables = _tables(grid, q, variant)
    n_tab = len(tables[0])
    if n_tab > MAX_TABLES:
        raise ValueError(
            f"{n_tab} round tables on a {len(grid)}-point grid at q={q}: too many for the DP"
        )
    judge = OracleJudge(problem)
    bits = outcome_bits(q).astype(np.int64)

    def leaf(inst: np.ndarray, node: np.ndarray, p: np.ndarray) -> np.ndarray:
        s0 = _expected(prover.direction(inst, 0, node, p), len(inst))
        return np.asarray(s0 * (judge.prob_true(inst, node) - p))

    def value(k: int, inst: np.ndarray, node: np.ndarray, p: np.ndarray) -> np.ndarray:
        """V_k at distinct states (k >= 1): min over B's round tables."""
        if k == 0:
            return leaf(inst, node, p)
        rule = problem.rule(k).table.astype(np.float64)
        s_k = _expected(prover.direction(inst, k, node, p), len(inst))
        out = np.empty(len(inst))
        per = max(1, CHUNK_ROWS // (n_tab << q))
        for lo in range(0, len(inst), per):
            sl = slice(lo, lo + per)
            si, sn, sp, ss = inst[sl], node[sl], p[sl], s_k[sl]
            m = len(si)
            rows = m * n_tab
            ri, rn = np.repeat(si, n_tab), np.repeat(sn, n_tab)
            levels = [np.tile(lv, (m, 1)) for lv in tables]
            view = round_view(levels, variant)
            reward = (
                r**k
                * np.repeat(ss, n_tab)
                * (expected_rule(view.joint, rule) - np.repeat(sp, n_tab))
            )
            rep = np.repeat(np.arange(rows), 1 << q)
            z = np.tile(bits, (rows, 1))
            wz = view.joint.reshape(-1)
            nextp = view.nextp.reshape(rows << q, q)
            ar = np.arange(rows << q)
            cont = np.zeros(rows << q)
            for j, pj in choices(prover, variant, ri, k, rn, view, rep, z):
                jj = np.broadcast_to(j, (rows << q,))
                ci, cn, cp = ri[rep], rn[rep] * q + jj, nextp[ar, jj]
                (ui, un), up, inverse = _unique_states(ci, cn, cp)
                cont += np.asarray(pj) * value(k - 1, ui, un, up)[inverse]
            total = reward + (wz * cont).reshape(rows, 1 << q).sum(axis=1)
            out[sl] = total.reshape(m, n_tab).min(axis=1)
        return out

    n_g = len(grid)
    by_inst = _top_values(problem, prover, r, grid, value)
    best_p = grid[np.argmin(by_inst, axis=1)]
    val = math.fsum((problem.weights * by_inst.min(axis=1)).tolist())
    return BestResponse(
        value=val,
        normalized=float(scoring.normalized(val, r, d)),
        method=(
            f"exact best response by DP over every B whose numbers lie on a {n_g}-point grid "
            f"({n_tab} round tables per state; B may depend on the instance)"
        ),
        argmin={"p_d": [float(v) for v in best_p]},
    )


def _top_values(
    problem: TreeProblem,
    prover: ProverPolicy,
    r: float,
    grid: np.ndarray,
    value: Callable[[int, np.ndarray, np.ndarray, np.ndarray], np.ndarray],
) -> np.ndarray:
    """E[R_A] for every instance and every top probability p_d on ``grid`` (shape (n, len
    grid)): the initial reward over A's answers, plus, where A goes on, ``value`` (V_d, B's
    best play below the top)."""
    d, n = problem.depth, problem.n
    inst = np.arange(n)
    n_g = len(grid)
    ti, tp = np.repeat(inst, n_g), np.tile(grid, n)
    top = np.zeros(n * n_g)
    goes = np.zeros(n * n_g)
    for a, pa in prover.answer(ti):
        aa = np.broadcast_to(a, ti.shape)
        pa_arr = np.broadcast_to(np.asarray(pa, dtype=float), ti.shape)
        top += pa_arr * scoring.expected_init_reward(r, d, tp, aa)
        goes += pa_arr * ~prover.stops(ti, tp, aa)
    live = goes > 0
    if live.any():
        top[live] += goes[live] * value(
            d, ti[live], np.zeros(int(live.sum()), dtype=np.int64), tp[live]
        )
    return top.reshape(n, n_g)


def _unique_states(
    inst: np.ndarray, node: np.ndarray, p: np.ndarray
) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """Distinct (inst, node, p) rows and the index of each row among them."""
    pb = p.view(np.int64)
    order = np.lexsort((pb, node, inst))
    sorted_keys = np.stack([inst[order], node[order], pb[order]], axis=1)
    new = np.ones(len(order), dtype=bool)
    new[1:] = np.any(sorted_keys[1:] != sorted_keys[:-1], axis=1)
    inverse = np.empty(len(order), dtype=np.int64)
    inverse[order] = np.cumsum(new) - 1
    firsts = order[new]
    return [inst[firsts], node[firsts]], p[firsts], inverse
