"""Exact expected payoffs by enumerating the protocol's randomness.

Prover-estimator debate: the expectation over ẑ, every z vector (all 2^q outcomes, weighted by
B's joint), the judge's verdict and any randomness of the strategies, computed level by level
over a frontier of distinct states (instance, answer, node, p_k) whose probabilities are merged
(memoised subtrees). Rewards come from :mod:`llmdebate.core.scoring`: E[r_init] by
``expected_init_reward``, E[r_k | state] = ``expected_round_reward`` with E[M_D] from B's joint
(Figure 2 notes), the leaf by ``leaf_reward`` at P[O = 1]. Both this and the Monte Carlo of
:mod:`llmdebate.formal.montecarlo` evaluate the same policies as the async agents.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from llmdebate.core import scoring
from llmdebate.core.rules import outcome_bits
from llmdebate.formal.game import Game, NaiveGame
from llmdebate.formal.tables import expected_rule, fdot
from llmdebate.formal.variants import RoundView, choices, round_view


@dataclass
class ExactResult:
    """Per-instance expected payoffs (and for naive debate the prover's win probability)."""

    payoff: np.ndarray
    accuracy: np.ndarray
    win: np.ndarray | None = None
    states: int = 0
    by_round: np.ndarray | None = None  # (instances, d+2): E[r_init], E[r_d], ..., E[r_0]

    def mean(self, weights: np.ndarray) -> float:
        return math.fsum((weights * self.payoff).tolist())  # correctly rounded: no BLAS

    def round_means(self, weights: np.ndarray) -> list[float]:
        """E[r_init], E[r_d], ..., E[r_0] averaged over instances (they sum to the payoff)."""
        assert self.by_round is not None
        return [fdot(weights, self.by_round[:, i]) for i in range(self.by_round.shape[1])]


def _merge(
    keys: list[np.ndarray], p: np.ndarray, w: np.ndarray
) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """Merge rows with equal (keys..., p), summing their probabilities (memoised subtrees)."""
    cols = [*keys, p.view(np.int64)]
    order = np.lexsort(cols[::-1])
    sorted_cols = [c[order] for c in cols]
    new = np.ones(len(order), dtype=bool)
    if len(order) > 1:
        diff = np.zeros(len(order) - 1, dtype=bool)
        for c in sorted_cols:
            diff |= c[1:] != c[:-1]
        new[1:] = diff
    group = np.cumsum(new) - 1
    w2 = np.bincount(group, weights=w[order], minlength=int(new.sum()))
    firsts = [c[new] for c in sorted_cols]
    return firsts[:-1], firsts[-1].view(np.float64), w2


Observer = Callable[[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray, RoundView], None]


def exact_prover_estimator(game: Game, observe: Observer | None = None) -> ExactResult:
    """E[R_A] per instance, exactly (expectation over the protocol's own randomness).

    ``observe(k, inst, node, p, w, view)``, if given, sees every round k >= 1's distinct
    states (sub-probability weights ``w`` per instance) and B's tables there
    (:mod:`llmdebate.formal.proof_check` audits the proof of Lemma A.4 with it).
    """
    prob, prover, est = game.problem, game.prover, game.estimator
    d, q, r = prob.depth, prob.width, game.r
    n_inst = prob.n
    by_round = np.zeros((n_inst, d + 2))  # column 0: r_init; column d + 1 - k: r_k
    accuracy = np.zeros(n_inst)
    all_inst = np.arange(n_inst)

    inst_l, a_l, w_l = [], [], []
    for a, pa in prover.answer(all_inst):
        inst_l.append(all_inst)
        a_l.append(np.broadcast_to(a, (n_inst,)).astype(np.int64))
        w_l.append(np.broadcast_to(np.asarray(pa, dtype=float), (n_inst,)))
    inst, a, w = np.concatenate(inst_l), np.concatenate(a_l), np.concatenate(w_l)
    p = est.top(inst)
    by_round[:, 0] += np.bincount(
        inst, weights=w * scoring.expected_init_reward(r, d, p, a), minlength=n_inst
    )
    accuracy += np.bincount(inst, weights=w * (a == prob.top_truth()[inst]), minlength=n_inst)
    keep = ~prover.stops(inst, p, a) & (w > 0)
    inst, a, p, w = inst[keep], a[keep], p[keep], w[keep]
    node = np.zeros(len(inst), dtype=np.int64)
    bits = outcome_bits(q).astype(np.int64)
    states = len(inst)

    for k in range(d, 0, -1):
        if len(inst) == 0:
            break
        rule = prob.rule(k)
        view = round_view(est.levels(inst, k, node, p), game.variant)
        if observe is not None:
            observe(k, inst, node, p, w, view)
        em = expected_rule(view.joint, rule.table)
        for s, ps in prover.direction(inst, k, node, p):
            rew = scoring.expected_round_reward(r, k, s, em, p)
            by_round[:, d + 1 - k] += np.bincount(inst, weights=w * ps * rew, minlength=n_inst)
        (inst, a, node), p, w = _next_states(game, k, (inst, a, node), w, view, bits)
        states += len(inst)

    if len(inst):
        po = game.judge.prob_true(inst, node)
        for s, ps in prover.direction(inst, 0, node, p):
            rew = scoring.leaf_reward(r, s, po, p)
            by_round[:, d + 1] += np.bincount(inst, weights=w * ps * rew, minlength=n_inst)
    payoff = scoring.total(by_round[:, i] for i in range(d + 2))
    return ExactResult(payoff=payoff, accuracy=accuracy, states=states, by_round=by_round)


def _next_states(
    game: Game,
    k: int,
    cols: tuple[np.ndarray, np.ndarray, np.ndarray],
    w: np.ndarray,
    view: RoundView,
    bits: np.ndarray,
) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """Round k-1's distinct states from round k's (``cols``: instance, A's answer, node;
    weights ``w``) and B's tables ``view``: over z with positive weight and A's recursion
    index j, the child node, its probability as the variant hands it on, and the weight;
    equal states merged. Returns ([instance, answer, node], p, weight)."""
    inst, a, node = cols
    q = game.problem.width
    n = len(inst)
    nextp = view.nextp.reshape(n * (1 << q), q)
    z = np.tile(bits, (n, 1))
    rep = np.repeat(np.arange(n), 1 << q)
    wz = (w[:, None] * view.joint).reshape(-1)
    nz = np.flatnonzero(wz > 0)
    rep, nextp, z, wz = rep[nz], nextp[nz], z[nz], wz[nz]
    new_inst, new_a, new_node, new_p, new_w = [], [], [], [], []
    for j, pj in choices(game.prover, game.variant, inst, k, node, view, rep, z):
        jj = np.broadcast_to(j, (len(rep),))
        ww = wz * pj
        ok = ww > 0
        new_inst.append(inst[rep][ok])
        new_a.append(a[rep][ok])
        new_node.append(node[rep][ok] * q + jj[ok])
        new_p.append(nextp[np.flatnonzero(ok), jj[ok]])
        new_w.append(ww[ok])
    return _merge(
        [np.concatenate(new_inst), np.concatenate(new_a), np.concatenate(new_node)],
        np.concatenate(new_p),
        np.concatenate(new_w),
    )


def exact_naive(game: NaiveGame) -> ExactResult:
    """Expected naive payoff (±1) and win probability per instance, ties averaged exactly."""
    prob, prover, ch = game.problem, game.prover, game.challenger
    d, q = prob.depth, prob.width
    n_inst = prob.n
    inst = np.arange(n_inst)
    node = np.zeros(n_inst, dtype=np.int64)
    w = np.ones(n_inst)
    p = ch.estimator.top(inst)
    accuracy = (prover.claimed(inst, d, node) == prob.top_truth()).astype(np.float64)
    for k in range(d, 0, -1):
        claimed = prover.children(inst, k, node)
        marg = ch.marginals(inst, k, node, p)
        ni, nn, npp, nw = [], [], [], []
        for j, pj in ch.challenge(claimed, marg):
            ww = w * pj
            ok = ww > 0
            ni.append(inst[ok])
            nn.append(node[ok] * q + j[ok])
            npp.append(marg[np.flatnonzero(ok), j[ok]])
            nw.append(ww[ok])
        (inst, node), p, w = _merge(
            [np.concatenate(ni), np.concatenate(nn)], np.concatenate(npp), np.concatenate(nw)
        )
    c = prover.claimed(inst, 0, node)
    po = game.judge.prob_true(inst, node)
    exp_pay = po * scoring.naive_payoff(1, c) + (1.0 - po) * scoring.naive_payoff(0, c)
    win = po * (c == 1) + (1.0 - po) * (c == 0)
    payoff = np.bincount(inst, weights=w * exp_pay, minlength=n_inst)
    wins = np.bincount(inst, weights=w * win, minlength=n_inst)
    return ExactResult(payoff=payoff, accuracy=accuracy, win=wins)
