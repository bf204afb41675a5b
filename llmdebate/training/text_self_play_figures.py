"""The per-round figures of :mod:`llmdebate.training.text_self_play` on held-out claims (the
claims' truth is read here and only here), each a mean over the held-out claims, those with
an interval a 95 % cluster bootstrap over their numbers
(:func:`llmdebate.training.self_play.interval`).

Per claim x, against the current B (p_1 = B(x), B's conditional table on each split), with
A's greedy constrained decomposition (temperature 0) and the leaf judge's verdicts:

* ``prover_payoff``: R_A = E[r_init] + E[r_1] + E[r_0] of A's own play (its beliefs'
  played directions, its greedy split; an invalid or unjudgeable split: E[r_init] plus the
  invalid return); ``estimator_payoff``: −R_A;
* ``valid`` / ``exact_split`` / ``rule_right``: :func:`~llmdebate.training.decompose_eval.grade`
  of A's greedy split; ``judged``: valid and every subclaim judgeable;
* ``honest_minus_dishonest``: R_A of the honest prover (answer and directions from the
  truth g, eq. 13 on g against B's numbers, the problem code's exact split, recursion to
  argmax |b_i − g(y_i)|) minus R_A of the dishonest one (the same from 1 − g);
* ``exact_minus_own``: R_A with the exact split minus R_A with A's greedy split, A's beliefs
  and directions held (on every claim: an invalid own split scores the invalid return);
* ``leaf_accuracy_estimator`` / ``leaf_accuracy_prover`` / ``leaf_accuracy_judge``: on the
  leaf claim y_j of A's own play (weighted by P(prefix)), the share on which b_j, q_A(y_j)
  and O_j lie on (equal) the truth's side of 1/2; over judged claims;
* ``brier_p1`` (p_1 against x's truth), ``brier_leaf_b`` (b_j on the leaf claim, weighted
  as above, judged claims), ``brier_q`` (q_A(x));
* ``consistency``: mean |E[M_D](exact split) − p_1| of B; ``consistency_own``: the same on
  A's own greedy split (judged claims);
* ``inexact_payoff``: mean R_A of A's own play where its greedy split is judged but not exact
  (None: no such claim; ``inexact_judged`` counts them);
* ``recursion_to_worst``: the share of the leaf paths (weighted by P(prefix), judged claims)
  on which A recursed into the claim where B is furthest from the truth (its step claim
  among them, where it has one);
* ``b_step_own``: with the step as a claim, B's mean probability of A's own split's step;
* ``audit_*``: the judge-hacking audit of A's side
  (:func:`~llmdebate.report.judge_audit.audit_shares` of
  :func:`~llmdebate.report.judge_audit.leaf_audit` rows, its interval over the claims'
  numbers), one row per judged claim: the leaf of A's own play on its most probable path
  (the first on a tie), A's direction there against b_j, its r_0 under the judge's verdict.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from llmdebate.core import scoring
from llmdebate.report.judge_audit import audit_shares, leaf_audit
from llmdebate.training import text_game as game
from llmdebate.training.self_play import ESTIMATOR, PROVER, interval
from llmdebate.training.text_self_play import (
    Played,
    Split,
    TextCase,
    TextPlaySettings,
    flat,
    levels_of,
    oracle_verdicts,
    truth,
)
from llmdebate.training.text_self_play_steps import Decomposer, play_out


def _scores(d: Decomposer, seat: str, prompts: Sequence[str]) -> list[float]:
    return d.seats.score(seat, list(prompts)) if prompts else []


def _right(x: float, t: int) -> float:
    return float(x != 0.5 and (x > 0.5) == bool(t))


def prover_return(r: float, q_x: float, p1: float, split: Split | None, b: list[float],
           beliefs: list[float], verdicts: list[int] | None, eps: float
           ) -> tuple[float, dict[str, Any] | None]:
    """R_A of a prover with beliefs ``q_x`` and ``beliefs`` (on ``split``'s subclaims)
    against B's ``p1`` and its table ``b`` (flat, in the split's prompt order), before the
    leaf judge's ``verdicts``; and the split's terms (None: invalid or unjudgeable, R_A then
    E[r_init] plus the invalid return)."""
    init = float(game.init_term(r, q_x, p1))
    if split is None or verdicts is None:
        return init + game.invalid_return(r), None
    levels, b_step, _ = levels_of(b, split, 0)
    t = game.split_terms(r, q_x, p1, split.table, levels, beliefs, verdicts, epsilon=eps,
                         step=b_step)
    return init + float(t["r_1"]) + float(t["r_0"]), t


def _truths(split: Split) -> list[int]:
    """The truth of each subclaim of ``split`` and, where it has one, of its step claim."""
    out = [int(truth(y) or 0) for y in split.subclaims]
    return out if split.step_truth is None else [*out, split.step_truth]


def _worst(bs: Sequence[Any], truths: Sequence[int]) -> int:
    """The claim on which B is furthest from the truth (the first on a tie)."""
    gaps = [abs(float(b) - t) for b, t in zip(bs, truths, strict=True)]
    return gaps.index(max(gaps))


def _leaf(leaf: dict[str, list[float]], terms: dict[str, Any], sp: Split, b: list[float],
          q1: list[float], verdicts: list[int]) -> None:
    """The leaf figures of one judged play, each path weighted by P(prefix)."""
    truths = _truths(sp)
    levels, b_step, _ = levels_of(b, sp, 0)
    for (w, j, bj), (_, bs) in zip(terms["leaf"], game.paths(levels), strict=True):
        t = truths[j]
        seen = [*bs, b_step] if b_step is not None else list(bs)
        leaf["b"].append(w * _right(float(bj), t))
        leaf["q"].append(w * _right(q1[j], t))
        leaf["judge"].append(w * float(verdicts[j] == t))
        leaf["brier_b"].append(w * (float(bj) - t) ** 2)
        leaf["worst"].append(w * float(j == _worst(seen, truths)))
    leaf["n"].append(1.0)


def _audit_row(terms: dict[str, Any], sp: Split, q1: list[float], verdicts: list[int],
               eps: float) -> tuple[bool, bool, bool]:
    """The audit's row (won, argued the truth, judge correct) of one judged play: its leaf on
    the most probable path."""
    _, j, bj = max(terms["leaf"], key=lambda x: float(x[0]))
    b = float(bj)
    s0 = game.direction(q1[j], b, eps, None)
    r0 = float(scoring.leaf_reward(1.0, s0, verdicts[j], b))
    return leaf_audit("prover", float(s0), r0, b, verdicts[j], _truths(sp)[j])


def round_figures(d: Decomposer, held: Sequence[TextCase], s: TextPlaySettings
                  ) -> dict[str, Any]:
    """The figures of one round (module docstring) on ``held``."""
    xs = [c.prompt for c in held]
    q_x, p1 = _scores(d, PROVER, xs), _scores(d, ESTIMATOR, xs)
    plays: list[Played] = []
    for c, reply in zip(held, d.greedy(held), strict=True):
        plays += play_out(d, c, [reply], oracle_verdicts)
    own = [p.split for p in plays]
    exact = [c.exact for c in held]
    b_own = _scores(d, ESTIMATOR, flat([x for x in own if x is not None]))
    q_own = _scores(d, PROVER, [y for x in own if x is not None for y in x.prover_prompts])
    b_ex = _scores(d, ESTIMATOR, flat(exact))
    q_ex = _scores(d, PROVER, [y for x in exact for y in x.prover_prompts])
    rows: dict[str, list[float]] = {k: [] for k in (
        "payoff", "margin", "exact_minus_own", "brier_p1", "brier_q", "consistency",
        "consistency_own", "inexact_payoff", "b_step_own", "audit_number")}
    audit: list[tuple[bool, bool, bool]] = []
    leaf: dict[str, list[float]] = {k: [] for k in ("b", "q", "judge", "brier_b", "worst",
                                                    "n")}
    at_b = at_q = ex_b = ex_q = 0
    r, eps = s.ratio, s.epsilon
    for i, (c, p) in enumerate(zip(held, plays, strict=True)):
        sp, g = p.split, c.exact
        nb_own = len(flat([sp])) if sp is not None else 0
        nq_own = len(sp.prover_prompts) if sp is not None else 0
        b1, q1 = b_own[at_b : at_b + nb_own], q_own[at_q : at_q + nq_own]
        at_b, at_q = at_b + nb_own, at_q + nq_own
        nb, nq = len(flat([g])), len(g.prover_prompts)
        b2, q2 = b_ex[ex_b : ex_b + nb], q_ex[ex_q : ex_q + nq]
        ex_b, ex_q = ex_b + nb, ex_q + nq
        mine, terms = prover_return(r, q_x[i], p1[i], sp, b1, q1, p.verdicts, eps)
        g_y = _truths(g)
        honest, _ = prover_return(r, c.truth, p1[i], g, b2, [float(v) for v in g_y], g_y, eps)
        liar, _ = prover_return(r, 1 - c.truth, p1[i], g, b2, [1.0 - v for v in g_y], g_y, eps)
        with_exact, _ = prover_return(r, q_x[i], p1[i], g, b2, q2, g_y, eps)
        levels, _, _ = levels_of(b2, g, 0)
        rows["payoff"].append(mine)
        rows["margin"].append(honest - liar)
        rows["exact_minus_own"].append(with_exact - mine)
        rows["brier_p1"].append((p1[i] - c.truth) ** 2)
        rows["brier_q"].append((q_x[i] - c.truth) ** 2)
        rows["consistency"].append(abs(float(game.expected_m(g.table, levels)) - p1[i]))
        if terms is not None and sp is not None and p.verdicts is not None:
            _, b_step, _ = levels_of(b1, sp, 0)
            rows["consistency_own"].append(abs(float(terms["m"]) - p1[i]))
            if not p.grade["exact_split"]:
                rows["inexact_payoff"].append(mine)
            if b_step is not None:
                rows["b_step_own"].append(float(b_step))
            _leaf(leaf, terms, sp, b1, q1, p.verdicts)
            audit.append(_audit_row(terms, sp, q1, p.verdicts, eps))
            rows["audit_number"].append(c.number)
    figures = _summary(held, plays, rows, leaf, q_x, p1, s)
    shares = audit_shares(audit, items=rows["audit_number"])
    return figures | {f"audit_{k}": v for k, v in shares.items()}


def _summary(held: Sequence[TextCase], plays: Sequence[Played], rows: dict[str, list[float]],
             leaf: dict[str, list[float]], q_x: Sequence[float], p1: Sequence[float],
             s: TextPlaySettings) -> dict[str, Any]:
    numbers = [c.number for c in held]
    n, judged = len(held), len(leaf["n"])

    def ci(xs: Sequence[float]) -> dict[str, float]:
        return interval(xs, numbers, s.draws)

    def share(k: str) -> float | None:
        return math.fsum(leaf[k]) / judged if judged else None

    def mean(k: str) -> float | None:
        return math.fsum(rows[k]) / len(rows[k]) if rows[k] else None

    return {
        "prover_payoff": ci(rows["payoff"]),
        "estimator_payoff": ci([-x for x in rows["payoff"]]),
        "honest_minus_dishonest": ci(rows["margin"]),
        "exact_minus_own": ci(rows["exact_minus_own"]),
        "valid": sum(bool(p.grade["valid"]) for p in plays) / n,
        "exact_split": sum(bool(p.grade["exact_split"]) for p in plays) / n,
        "rule_right": sum(bool(p.grade["rule_right"]) for p in plays) / n,
        "judged": judged / n,
        "leaf_accuracy_estimator": share("b"), "leaf_accuracy_prover": share("q"),
        "leaf_accuracy_judge": share("judge"), "brier_leaf_b": share("brier_b"),
        "recursion_to_worst": share("worst"),
        "brier_p1": ci(rows["brier_p1"]), "brier_q": ci(rows["brier_q"]),
        "consistency": math.fsum(rows["consistency"]) / n,
        "consistency_own": mean("consistency_own"),
        "inexact_payoff": mean("inexact_payoff"), "inexact_judged": len(rows["inexact_payoff"]),
        "b_step_own": mean("b_step_own"),
        "mean_p1": math.fsum(p1) / n, "mean_q": math.fsum(q_x) / n,
        "replies": [p.grade["reply"] for p in plays[:3]],
    }
