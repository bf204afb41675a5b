"""The reproduction table: completeness, obfuscation, soundness, stability (docs/reproduction.*).

Every number is computed here, exactly unless a row says otherwise; each row states the check
and whether it passed. Nothing is hard-coded but the parameters.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from llmdebate import scoring
from llmdebate.formal.exact import exact_naive, exact_prover_estimator
from llmdebate.formal.game import Game, NaiveGame
from llmdebate.formal.ogd import algorithm1_estimator
from llmdebate.formal.problems import make_problem
from llmdebate.formal.problems.base import TreeProblem
from llmdebate.formal.strategies import (
    BASIC_ESTIMATORS,
    EstimatorChallenger,
    OracleJudge,
    make_estimator,
    make_naive_prover,
    make_prover,
)
from llmdebate.rules import CondProbs, compile_rule, stability
from llmdebate.schemas import CombinationRule

Row = dict[str, Any]

NOTES = [
    "- *Dishonest vs calibrated-ignorant.* B is consistent (E[M_D] = p_k at every round, so every",
    "  intermediate round pays 0 in expectation), but the dishonest prover recurses on the",
    "  subclaim whose conditional b_j is lowest *given B's own draws z_<j* (typically the one",
    "  B's draw declared dirty). At the leaf p_0 is then far below the leaf's real chance of",
    "  being clean (1 - q^-d), and the leaf reward s_0·(O - p_0) has scale 1, while the unit",
    "  of the normalized payoff is r^(d+1) (about 1e-8 here).",
    "- *Soundness vs Algorithm 1.* OGD terminates with every test of the class below δ, yet the",
    "  dishonest prover keeps a large leaf reward. Its recursion index j depends on the whole",
    "  drawn vector z (through b_(i>j), which depend on z_j). The step from eqs. (7)-(8) to",
    "  eqs. (9)-(10)",
    "  in the proof of Lemma A.4 needs E_{z~h}[A_k·z_j] = E[A_k·b_j]. That holds when j depends",
    "  only on (b_<=j, z_<j), but not for this prover. Example (d=1, q=2): B must put almost no",
    "  mass on 'both clean' (so that E[M_D] ~ p_1 ~ 0). After a draw z_1 = 1 it then says",
    "  b_2 ~ 0, A recurses",
    "  on y_2 with p_0 ~ 0, and y_2 is clean on half of the instances. Such a B is",
    "  indistinguishable from the truth for any test that cannot locate the factor, so it is the",
    "  proof's step from indistinguishability to a small reward that fails; a B best-responding",
    "  to this prover (e.g. p = 0.79 everywhere at ε = 0.2) would push its payoff below 0, so the",
    "  statement of the lemma is not contradicted (docs/protocol.md).",
]


def stable_instances(problem: TreeProblem, epsilon: float, rho: float) -> np.ndarray:
    """Instances whose every decomposition is (ε,ρ)-stable at the true 0/1 probabilities."""
    ok = np.ones(problem.n, dtype=bool)
    q = problem.width
    for k in range(1, problem.depth + 1):
        rule = problem.rule(k)
        kids = problem.truth[k - 1].reshape(problem.n, -1, q)
        cache: dict[tuple[int, ...], bool] = {}
        for i in range(problem.n):
            for row in kids[i]:
                key = tuple(int(v) for v in row)
                if key not in cache:
                    st = stability(rule, CondProbs.independent(key), epsilon, rho)
                    cache[key] = st.stable
                ok[i] &= cache[key]
    return np.flatnonzero(ok)


def subset(problem: TreeProblem, idx: np.ndarray) -> TreeProblem:
    return TreeProblem(
        name=problem.name,
        depth=problem.depth,
        width=problem.width,
        gates=problem.gates,
        truth=[t[idx] for t in problem.truth],
        prior=problem.prior,
        prior_top=problem.prior_top,
        judge_noise=problem.judge_noise,
        instances=[problem.instances[i] for i in idx],
        describe=None,
    )


def completeness_rows(
    eps: float, rho: float, depth: int, kappa: int, n: int, seed: int, eta: float
) -> list[Row]:
    full = make_problem("majority", depth, kappa, n, seed, noise=eta)
    idx = stable_instances(full, eps, rho)
    prob = subset(full, idx)
    r = scoring.reward_ratio(eps, rho)
    bound = scoring.completeness_bound(eps, r, depth)
    rows = []
    ests = [(name, make_estimator(name, prob)) for name in BASIC_ESTIMATORS]
    for name, est in ests:
        game = Game(prob, make_prover("honest", prob, eps), est, OracleJudge(prob), eps, rho)
        ex = exact_prover_estimator(game)
        worst = float(ex.payoff.min())
        rows.append(
            {
                "section": "completeness",
                "check": f"honest vs {name}: min over instances of E[R_A] >= (1-ε)·r^(d+1)",
                "setting": (
                    f"majority κ=q={kappa}, η={eta}, d={depth}, ε={eps}, ρ={rho}; "
                    f"{len(idx)}/{n} instances stable at every node"
                ),
                "value": worst,
                "normalized": float(scoring.normalized(worst, r, depth)),
                "mean_normalized": float(scoring.normalized(ex.mean(prob.weights), r, depth)),
                "bound": bound,
                "method": "exact",
                "passed": bool(len(idx) > 0 and worst >= bound),
            }
        )
    return rows


def obfuscation_rows(eps: float, rho: float, depth: int, q: int, n: int, seed: int) -> list[Row]:
    prob = make_problem("interval", depth, q, n, seed)
    r = scoring.reward_ratio(eps, rho)
    ign = make_estimator("calibrated-ignorant", prob)
    rows = []
    setting = (
        f"interval, {n} semiprimes, factor leaf spread over {q}^{depth} leaves, "
        f"d={depth}, q={q}, ε={eps}, ρ={rho}"
    )
    for prover, target, lo, hi in (
        ("honest", "≈ 1 (±0.05)", 0.95, 1.05),
        ("dishonest", "≈ 0 (±0.05)", -0.05, 0.05),
    ):
        game = Game(prob, make_prover(prover, prob, eps), ign, OracleJudge(prob), eps, rho)
        ex = exact_prover_estimator(game)
        val = ex.mean(prob.weights)
        norm = float(scoring.normalized(val, r, depth))
        parts = ex.round_means(prob.weights)
        rows.append(
            {
                "section": "obfuscation",
                "prover": prover,
                "by_round": dict(
                    zip(["r_init", *(f"r_{k}" for k in range(depth, -1, -1))], parts, strict=True)
                ),
                "check": (
                    f"prover-estimator: {prover} vs calibrated-ignorant, normalized payoff {target}"
                ),
                "setting": setting,
                "value": val,
                "normalized": norm,
                "bound": None,
                "method": "exact",
                "passed": bool(lo <= norm <= hi),
            }
        )
    ng = NaiveGame(
        prob, make_naive_prover("dishonest", prob), EstimatorChallenger(ign), OracleJudge(prob)
    )
    ex = exact_naive(ng)
    win = float(prob.weights @ ex.win)  # type: ignore[operator]
    target = 1 - q ** (-depth) - 0.05
    rows.append(
        {
            "section": "obfuscation",
            "check": (
                "naive recursive: dishonest win rate vs blind challenger "
                f">= 1 - q^-d - 0.05 = {target:.4f}"
            ),
            "setting": setting,
            "value": win,
            "normalized": None,
            "bound": target,
            "method": "exact (ties averaged)",
            "passed": bool(win >= target),
        }
    )
    return rows


OBFUSCATION = {"eps": 0.2, "rho": 0.5, "depth": 4, "q": 4, "n": 64, "seed": 0}


def obfuscation_table() -> dict[str, Any]:
    """The obfuscation rows (interval problem) as a caption, a header and cells, for reports."""
    rows = obfuscation_rows(**OBFUSCATION)
    return {
        "caption": (
            "Formal obfuscation example (exact): prover-estimator debate against naive "
            f"recursive debate; {rows[0]['setting']}."
        ),
        "head": ["check", "value", "normalized", "bound", "result"],
        "rows": [
            [
                r["check"],
                *(_fmt(r[c]) for c in ("value", "normalized", "bound")),
                "pass" if r["passed"] else "FAIL",
            ]
            for r in rows
        ],
        "notes": NOTES[:6],
    }


def soundness_rows(
    eps: float, rho: float, depth: int, q: int, n: int, seed: int, delta: float
) -> list[Row]:
    rows = []
    r = scoring.reward_ratio(eps, rho)
    for problem in ("interval", "circuit"):
        prob = make_problem(problem, depth, q, n, seed)
        for prover in ("dishonest", "honest"):
            pol = make_prover(prover, prob, eps)
            est, rep = algorithm1_estimator(prob, pol, eps, rho, delta=delta)
            game = Game(prob, pol, est, OracleJudge(prob), eps, rho)
            ex = exact_prover_estimator(game)
            val = ex.mean(prob.weights)
            acc = float(prob.weights @ ex.accuracy)
            bound = scoring.soundness_bound(r, depth, acc, rep.delta_reached)
            rows.append(
                {
                    "section": "soundness",
                    "check": f"{prover} vs Algorithm 1: E[R_A] <= r^(d+1)·P[correct] + (2d+1)·δ",
                    "setting": (
                        f"{problem}, {n} instances, d={depth}, q={q}, ε={eps}, ρ={rho}; "
                        f"OGD {rep.steps} steps, δ target {delta:g}, "
                        f"δ reached {rep.delta_reached:.2e}"
                        f"{'' if rep.converged else ' (NOT converged)'}; P[correct]={acc:.2f}"
                    ),
                    "value": val,
                    "normalized": float(scoring.normalized(val, r, depth)),
                    "bound": bound,
                    "method": "exact",
                    "passed": bool(rep.converged and val <= bound),
                }
            )
    return rows


def stability_rows(eps: float, rho: float, kappas: list[int], eta: float) -> list[Row]:
    """Sensitivity (Definition 5.3, exact DP) of AND over q claims vs MAJORITY over κ supports.

    The per-κ rows report the verdict; the summary row checks the Section 8 prediction: AND is
    never (ε,ρ)-stable at true probabilities, and MAJORITY is stable for every κ from some κ* on.
    """
    rows: list[Row] = []
    verdicts: dict[str, list[bool]] = {"and": [], "majority": []}
    for kappa in kappas:
        for kind, desc in (
            ("and", f"AND over q={kappa} true claims"),
            ("majority", f"MAJORITY over κ={kappa} supports"),
        ):
            rule = compile_rule(CombinationRule(kind=kind), kappa)  # type: ignore[arg-type]
            at_truth = stability(rule, CondProbs.independent([1.0] * kappa), eps, rho)
            noisy = stability(rule, CondProbs.independent([1.0 - eta] * kappa), eps, rho)
            verdicts[kind].append(at_truth.stable)
            rows.append(
                {
                    "section": "stability",
                    "check": f"{desc}: sensitivity at true 0/1 probabilities vs ρε = {rho * eps:g}",
                    "setting": (
                        f"ε={eps}, ρ={rho}; at noisy supports (each right w.p. {1 - eta:g}): "
                        f"sensitivity {noisy.sensitivity:.4f}, "
                        f"{'stable' if noisy.stable else 'unstable'}"
                    ),
                    "value": at_truth.sensitivity,
                    "normalized": None,
                    "bound": at_truth.bound,
                    "method": "exact DP (rules.stability)",
                    "passed": None,
                    "verdict": "stable" if at_truth.stable else "unstable",
                }
            )
    maj = verdicts["majority"]
    first = next((i for i in range(len(maj)) if all(maj[i:])), None)
    ok = first is not None and not any(verdicts["and"])
    rows.append(
        {
            "section": "stability",
            "check": "Section 8 prediction: AND never stable; MAJORITY stable for all κ >= κ*",
            "setting": f"κ in {kappas}, ε={eps}, ρ={rho}",
            "value": None if first is None else kappas[first],
            "normalized": None,
            "bound": None,
            "method": "from the rows above (κ* shown as value)",
            "passed": ok,
        }
    )
    return rows


def build_table(fast: bool = False) -> dict[str, Any]:
    t0 = time.perf_counter()
    rows: list[Row] = []
    rows += completeness_rows(eps=0.2, rho=0.5, depth=2, kappa=7, n=40, seed=0, eta=0.05)
    rows += obfuscation_rows(**OBFUSCATION)
    rows += soundness_rows(
        eps=0.45, rho=0.1, depth=1, q=2, n=16, seed=0, delta=2e-3 if fast else 1e-3
    )
    rows += stability_rows(eps=0.2, rho=0.5, kappas=list(range(1, 18, 2)), eta=0.1)
    return {"rows": rows, "seconds": time.perf_counter() - t0}


def _fmt(v: Any) -> str:
    if v is None:
        return "–"
    if isinstance(v, bool):
        return "pass" if v else "**FAIL**"
    if isinstance(v, str):
        return v
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def to_markdown(table: dict[str, Any]) -> str:
    out = [
        "# Reproduction table (formal engine)",
        "",
        "Generated by `llmdebate reproduce`; every value is computed, none is typed in.",
        "Payoffs are E[R_A] (exact expectation over the protocol's randomness, averaged over the",
        "instances unless a row says min); *normalized* = E[R_A] / r^(d+1).",
        "",
    ]
    for section in ("completeness", "obfuscation", "soundness", "stability"):
        rows = [r for r in table["rows"] if r["section"] == section]
        out += [
            f"## {section.capitalize()}",
            "",
            "| check | setting | value | normalized | bound | result |",
            "|---|---|---|---|---|---|",
        ]
        for r in rows:
            result = r["passed"] if r["passed"] is not None else r.get("verdict")
            cells = [
                r["check"],
                r["setting"],
                *(_fmt(r[c]) for c in ("value", "normalized", "bound")),
            ]
            out.append("| " + " | ".join([*cells, _fmt(result)]) + " |")
        out.append("")
        for r in rows:
            if r.get("by_round"):
                parts = ", ".join(f"E[{k}] = {_fmt(v)}" for k, v in r["by_round"].items())
                out += [f"Where the {r['prover']} prover's payoff comes from: {parts}.", ""]
    failed = {r["section"] for r in table["rows"] if r["passed"] is False}
    if failed & {"obfuscation", "soundness"}:
        out += ["## Notes on rows not passed", "", *NOTES, ""]
    out.append(f"Generated in {table['seconds']:.1f} s.")
    return "\n".join(out) + "\n"


def write(out_dir: Path, fast: bool = False) -> tuple[Path, Path, dict[str, Any]]:
    table = build_table(fast=fast)
    out_dir.mkdir(parents=True, exist_ok=True)
    md, js = out_dir / "reproduction.md", out_dir / "reproduction.json"
    md.write_text(to_markdown(table), encoding="utf-8")
    js.write_text(json.dumps(table, indent=1) + "\n", encoding="utf-8")
    return md, js, table
