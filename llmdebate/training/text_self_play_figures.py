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
* ``consistency``: mean |E[M_D](exact split) − p_1| of B.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

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
    levels, _ = levels_of(b, split, 0)
    t = game.split_terms(r, q_x, p1, split.table, levels, beliefs, verdicts, epsilon=eps)
    return init + float(t["r_1"]) + float(t["r_0"]), t


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
        "payoff", "margin", "exact_minus_own", "brier_p1", "brier_q", "consistency")}
    leaf: dict[str, list[float]] = {k: [] for k in ("b", "q", "judge", "brier_b", "n")}
    at_b = at_q = ex_b = ex_q = 0
    for i, (c, p) in enumerate(zip(held, plays, strict=True)):
        sp, g = p.split, c.exact
        nb_own = len(flat([sp])) if sp is not None else 0
        nq_own = len(sp.subclaims) if sp is not None else 0
        b1, q1 = b_own[at_b : at_b + nb_own], q_own[at_q : at_q + nq_own]
        at_b, at_q = at_b + nb_own, at_q + nq_own
        nb, nq = len(flat([g])), len(g.subclaims)
        b2, q2 = b_ex[ex_b : ex_b + nb], q_ex[ex_q : ex_q + nq]
        ex_b, ex_q = ex_b + nb, ex_q + nq
        r, eps = s.ratio, s.epsilon
        mine, terms = prover_return(r, q_x[i], p1[i], sp, b1, q1, p.verdicts, eps)
        g_y = [int(truth(y) or 0) for y in g.subclaims]
        honest, _ = prover_return(r, c.truth, p1[i], g, b2, [float(v) for v in g_y], g_y, eps)
        liar, _ = prover_return(r, 1 - c.truth, p1[i], g, b2, [1.0 - v for v in g_y], g_y, eps)
        with_exact, _ = prover_return(r, q_x[i], p1[i], g, b2, q2, g_y, eps)
        levels, _ = levels_of(b2, g, 0)
        rows["payoff"].append(mine)
        rows["margin"].append(honest - liar)
        rows["exact_minus_own"].append(with_exact - mine)
        rows["brier_p1"].append((p1[i] - c.truth) ** 2)
        rows["brier_q"].append((q_x[i] - c.truth) ** 2)
        rows["consistency"].append(abs(float(game.expected_m(g.table, levels)) - p1[i]))
        if terms is not None and sp is not None and p.verdicts is not None:
            for w, j, bj in terms["leaf"]:
                t = int(truth(sp.subclaims[j]) or 0)
                leaf["b"].append(w * _right(float(bj), t))
                leaf["q"].append(w * _right(q1[j], t))
                leaf["judge"].append(w * float(p.verdicts[j] == t))
                leaf["brier_b"].append(w * (float(bj) - t) ** 2)
            leaf["n"].append(1.0)
    numbers = [c.number for c in held]
    n, judged = len(held), len(leaf["n"])

    def ci(xs: Sequence[float]) -> dict[str, float]:
        return interval(xs, numbers, s.draws)

    def share(k: str) -> float | None:
        return math.fsum(leaf[k]) / judged if judged else None

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
        "brier_p1": ci(rows["brier_p1"]), "brier_q": ci(rows["brier_q"]),
        "consistency": math.fsum(rows["consistency"]) / n,
        "mean_p1": math.fsum(p1) / n, "mean_q": math.fsum(q_x) / n,
        "replies": [p.grade["reply"] for p in plays[:3]],
    }
