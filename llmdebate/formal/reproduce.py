"""The reproduction table: completeness, obfuscation, soundness, the proof audit of Lemma A.4
and stability (docs/reproduction.*), for Figure 2 and for each protocol variant.

Every number is computed here, exactly unless a row says otherwise; each row states the check
and whether it passed. Nothing is hard-coded but the parameters. The output is deterministic:
no timings, and every float rounded to :data:`DIGITS` significant digits (exact values; the
table has no Monte Carlo row), so a second run writes identical files.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from llmdebate.core import scoring
from llmdebate.core.rules import CondProbs, compile_rule, stability
from llmdebate.core.schemas import VARIANTS, CombinationRule
from llmdebate.formal.algorithm1_check import largest_advantage
from llmdebate.formal.best_response import grid_best_response, shrinkage_best_response
from llmdebate.formal.exact import exact_naive, exact_prover_estimator
from llmdebate.formal.game import Game, NaiveGame
from llmdebate.formal.ogd import algorithm1_estimator
from llmdebate.formal.problems import make_problem
from llmdebate.formal.problems.majority import correlated_support_joint
from llmdebate.formal.problems.problem import TreeProblem
from llmdebate.formal.proof_check import lemma_a4_terms
from llmdebate.formal.reproduce_attack import attack_rows
from llmdebate.formal.stable import stable_instances, subset
from llmdebate.formal.strategies import (
    BASIC_ESTIMATORS,
    EstimatorChallenger,
    EstimatorPolicy,
    OracleJudge,
    make_estimator,
    make_naive_prover,
    make_prover,
)
from llmdebate.formal.tables import fdot

DIGITS = 10
ITERATIVE_DIGITS = 6  # rows whose B comes from Algorithm 1's iterations (or a search)
DELTA = 2e-3  # Algorithm 1's accuracy in the table (benchmarks/ goes further)
GRID_POINTS = 11  # the best-response DP's grid {0, 0.1, ..., 1} (docs quote the 21-point one)
SECTIONS = ("completeness", "obfuscation", "soundness", "attack", "proof", "stability")

Row = dict[str, Any]

NOTES = [
    "- *Figure 2, dishonest vs calibrated-ignorant (obfuscation).* B is consistent",
    "  (E[M_D] = p_k), yet the next round's p_(k-1) = b_j is B's conditional at the prefix",
    "  *B itself drew*, while the next round scores y_j against the truth. The leaf reward",
    "  s_0·(O - p_0) has scale 1 and the unit of the normalized payoff is r^(d+1).",
    "- *Figure 2, soundness vs Algorithm 1.* OGD ends with every test below δ, but the",
    "  proof of Lemma A.4 equates E_µ[A·g(ŷ)] (path drawn from h, truth at the end) with",
    "  E_(z~g)[f] (path drawn from the truth); see the proof-audit section and",
    "  docs/protocol.md. A best-responding B (the best-response column) still exists: the",
    "  statement of the lemma is not contradicted on these families.",
    "- *Attack rows.* The search states any joint over the 2^q outcomes per state. A row's",
    "  value is the strategy found, re-evaluated in rational arithmetic with no tolerance",
    "  (`llmdebate.formal.rational`); the setting says by how much it clears the bound and",
    "  how far A's dead-zone decisions keep from their edge. Against the honest prover of",
    "  eq. (13) under `marginal`, `commit` and `commit-marginal` it finds B whose outcomes",
    "  are correlated while the marginals it hands on stay inside A's ε dead zone (by the",
    "  search's margin, 1/200) or just outside it where that makes A point: E[M_D] is far",
    "  from p_k (stability constrains conditionals, these variants hand on marginals or",
    "  commit to an index from marginals). The best wrong-answer prover against",
    "  Algorithm 1's B is a different prover from the one B was built against: Lemma A.4's B",
    "  depends on A, so that row measures how far B generalises, not the lemma.",
    "- *Variants.* `marginal` and `commit-marginal` hand on B's marginal P(z_j = 1), which",
    "  does not depend on B's own draws; `independent` makes the calibrated B inconsistent",
    "  (a product of calibrated marginals need not give E[M_D] = p_k).",
]


def _game(prob: TreeProblem, prover: str, est: Any, eps: float, rho: float, variant: str) -> Game:
    return Game(prob, make_prover(prover, prob, eps), est, OracleJudge(prob), eps, rho, variant)


def completeness_rows(
    eps: float,
    rho: float,
    depth: int,
    kappa: int,
    n: int,
    seed: int,
    eta: float,
    variants: tuple[str, ...] = VARIANTS,
) -> list[Row]:
    full = make_problem("majority", depth, kappa, n, seed, noise=eta)
    idx = stable_instances(full, eps, rho)
    prob = subset(full, idx)
    r = scoring.reward_ratio(eps, rho)
    bound = scoring.completeness_bound(eps, r, depth)
    setting = (
        f"majority κ=q={kappa}, η={eta}, d={depth}, ε={eps}, ρ={rho}; "
        f"{len(idx)}/{n} instances stable at every node"
    )
    rows = []
    for variant in variants:
        worst_all = np.inf
        for name in BASIC_ESTIMATORS:
            ex = exact_prover_estimator(
                _game(prob, "honest", make_estimator(name, prob), eps, rho, variant)
            )
            worst = float(ex.payoff.min())
            worst_all = min(worst_all, worst)
            rows.append(
                {
                    "section": "completeness",
                    "variant": variant,
                    "check": f"honest vs {name}: min over instances of E[R_A] >= (1-ε)·r^(d+1)",
                    "setting": setting,
                    "value": worst,
                    "normalized": float(scoring.normalized(worst, r, depth)),
                    "mean_normalized": float(scoring.normalized(ex.mean(prob.weights), r, depth)),
                    "bound": bound,
                    "method": "exact",
                    "passed": bool(len(idx) > 0 and worst >= bound),
                }
            )
        br = shrinkage_best_response(
            prob,
            make_prover("honest", prob, eps),
            make_estimator("calibrated-ignorant", prob),
            eps,
            rho,
            variant,
            lams=(0.0, 0.25, 0.5, 0.75, 1.0),
            cs=(0.0, 0.25, 0.5, 0.75, 1.0),
        )
        rows.append(
            {
                "section": "completeness",
                "variant": variant,
                "check": (
                    "honest vs the best constant shrinkage of calibrated-ignorant "
                    f"(λ={br.argmin['lambda']:g}, c={br.argmin['c']:g}): mean E[R_A] >= bound"
                ),
                "setting": setting + "; " + br.method,
                "value": br.value,
                "normalized": br.normalized,
                "bound": bound,
                "method": "exact",
                "passed": bool(br.value >= bound),
            }
        )
    return rows


def obfuscation_rows(
    eps: float,
    rho: float,
    depth: int,
    q: int,
    n: int,
    seed: int,
    variants: tuple[str, ...] = ("figure2",),
    naive: bool = True,
) -> list[Row]:
    prob = make_problem("interval", depth, q, n, seed)
    r = scoring.reward_ratio(eps, rho)
    ign = make_estimator("calibrated-ignorant", prob)
    rows = []
    setting = (
        f"interval, {n} semiprimes, factor leaf spread over {q}^{depth} leaves, "
        f"d={depth}, q={q}, ε={eps}, ρ={rho}"
    )
    for variant in variants:
        for prover, target, lo, hi in (
            ("honest", "≈ 1 (±0.05)", 0.95, 1.05),
            ("dishonest", "≈ 0 (±0.05)", -0.05, 0.05),
            ("last-index", "≈ 0 (±0.05)", -0.05, 0.05),
        ):
            ex = exact_prover_estimator(_game(prob, prover, ign, eps, rho, variant))
            val = ex.mean(prob.weights)
            norm = float(scoring.normalized(val, r, depth))
            parts = ex.round_means(prob.weights)
            rows.append(
                {
                    "section": "obfuscation",
                    "variant": variant,
                    "prover": prover,
                    "by_round": dict(
                        zip(
                            ["r_init", *(f"r_{k}" for k in range(depth, -1, -1))],
                            parts,
                            strict=True,
                        )
                    ),
                    "check": (
                        f"prover-estimator: {prover} vs calibrated-ignorant, "
                        f"normalized payoff {target}"
                    ),
                    "setting": setting,
                    "value": val,
                    "normalized": norm,
                    "bound": None,
                    "method": "exact",
                    "passed": bool(lo <= norm <= hi),
                }
            )
    if naive:
        rows.append(_naive_obfuscation_row(prob, ign, setting))
    return rows


def _naive_obfuscation_row(prob: TreeProblem, ign: EstimatorPolicy, setting: str) -> Row:
    """Naive recursive debate on the same family: the dishonest prover's exact win rate
    against a challenger that answers as ``ign`` does, against 1 - q^-d - 0.05."""
    depth, q = prob.depth, prob.width
    ng = NaiveGame(
        prob, make_naive_prover("dishonest", prob), EstimatorChallenger(ign), OracleJudge(prob)
    )
    ex = exact_naive(ng)
    assert ex.win is not None
    win = fdot(prob.weights, ex.win)
    target = 1 - q ** (-depth) - 0.05
    return {
        "section": "obfuscation",
        "variant": "naive recursive",
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


OBFUSCATION = {"eps": 0.2, "rho": 0.5, "depth": 4, "q": 4, "n": 64, "seed": 0}


def obfuscation_table() -> dict[str, Any]:
    """The obfuscation rows (interval problem) as a caption, a header and cells, for reports."""
    rows = obfuscation_rows(**OBFUSCATION)  # type: ignore[arg-type]
    return {
        "caption": (
            "Formal obfuscation example (exact): prover-estimator debate (Figure 2) against "
            f"naive recursive debate; {rows[0]['setting']}."
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
        "notes": NOTES[:4],
    }


def soundness_rows(
    eps: float,
    rho: float,
    depth: int,
    q: int,
    n: int,
    seed: int,
    delta: float,
    variants: tuple[str, ...] = VARIANTS,
    grid_points: int = 21,
) -> list[Row]:
    rows = []
    r = scoring.reward_ratio(eps, rho)
    for problem in ("interval", "circuit"):
        prob = make_problem(problem, depth, q, n, seed)
        for variant in variants:
            for prover in ("dishonest", "last-index", "honest"):
                pol = make_prover(prover, prob, eps)
                est, rep = algorithm1_estimator(prob, pol, eps, rho, delta=delta, variant=variant)
                game = Game(prob, pol, est, OracleJudge(prob), eps, rho, variant)
                ex = exact_prover_estimator(game)
                val = ex.mean(prob.weights)
                acc = fdot(prob.weights, ex.accuracy)
                bound = scoring.soundness_bound(r, depth, acc, rep.delta_reached)
                recheck, n_tests = largest_advantage(game)  # outside the OGD loop
                row: Row = {
                    "section": "soundness",
                    "variant": variant,
                    "check": (
                        f"{prover} vs Algorithm 1: E[R_A] <= r^(d+1)·P[correct] + (2d+1)·δ "
                        "(δ reached)"
                    ),
                    "setting": (
                        f"{problem}, {n} instances, d={depth}, q={q}, ε={eps}, ρ={rho}; "
                        f"OGD {rep.steps} steps, δ target {delta:g}, "
                        f"δ reached {rep.delta_reached:.2e}"
                        f"{'' if rep.converged else ' (NOT converged)'}; rechecked outside "
                        f"OGD: max |Adv| {recheck:.2e} over {n_tests} tests; P[correct]={acc:.2f}"
                    ),
                    "recheck_max_advantage": recheck,
                    "value": val,
                    "normalized": float(scoring.normalized(val, r, depth)),
                    "bound": bound,
                    "method": "exact (B from Algorithm 1's iterations)",
                    "passed": bool(rep.converged and recheck < delta and val <= bound),
                    "digits": ITERATIVE_DIGITS,
                }
                if prover != "honest":
                    br = grid_best_response(
                        prob, pol, eps, rho, variant, grid=np.linspace(0, 1, grid_points)
                    )
                    row["best_response"] = br.as_dict()
                    row["best_response_value"] = br.value
                rows.append(row)
    return rows


def proof_rows(eps: float, rho: float, n: int, seed: int, delta: float) -> list[Row]:
    """The terms of the step (9)/(10) of Lemma A.4's proof (d=1, q=2: round 1 to the leaf)."""
    rows = []
    prob = make_problem("interval", 1, 2, n, seed)
    cases = [
        ("last-index", "calibrated-ignorant", "figure2"),
        ("dishonest", "calibrated-ignorant", "figure2"),
        ("dishonest", "algorithm1", "figure2"),
        ("last-index", "calibrated-ignorant", "commit-marginal"),
        ("dishonest", "algorithm1", "commit-marginal"),
    ]
    for prover, est_name, variant in cases:
        pol = make_prover(prover, prob, eps)
        est: EstimatorPolicy
        if est_name == "algorithm1":
            est, _ = algorithm1_estimator(prob, pol, eps, rho, delta=delta, variant=variant)
        else:
            est = make_estimator(est_name, prob)
        game = Game(prob, pol, est, OracleJudge(prob), eps, rho, variant)
        (terms,) = lemma_a4_terms(game)
        rows.append(
            {
                "section": "proof",
                "variant": variant,
                "check": (
                    f"{prover} vs {est_name}: E_µ[A·g(ŷ)] = E_(z~g)[f] (path from h vs from the "
                    "truth) and E_µ[A·p] = E_(z~h)[f] (tower)"
                ),
                "setting": f"interval, {n} instances, d=1, q=2, ε={eps}, ρ={rho}",
                "terms": terms.as_dict(),
                "value": terms.lhs,
                "normalized": terms.rhs,
                "bound": None,
                "method": "exact",
                "passed": bool(
                    abs(terms.mu_A_g - terms.g_f) < 1e-12 and abs(terms.mu_A_p - terms.h_f) < 1e-12
                ),
                "digits": ITERATIVE_DIGITS if est_name == "algorithm1" else DIGITS,
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


def correlated_sensitivity(kappa: int, eta: float, c: float, eps: float, rho: float) -> Any:
    """Stability of MAJORITY over κ supports that share a common shock with probability c."""
    rule = compile_rule(CombinationRule(kind="majority"), kappa)
    joint = correlated_support_joint(kappa, eta, c)
    return stability(rule, CondProbs.from_joint(joint), eps, rho)


def breaking_correlation(
    kappa: int, eta: float, eps: float, rho: float, tol: float = 1e-4
) -> tuple[float | None, bool]:
    """The smallest c at which MAJORITY over κ correlated supports stops being stable.

    Scans c on a 0.05 grid for the first unstable point, then bisects to ``tol``. Returns
    (c*, whether the sensitivity was non-decreasing on the scanned grid up to c*), or
    (None, True) when the supports are unstable already at c = 0 or stable up to c = 1.
    """
    grid = np.linspace(0.0, 1.0, 21)
    sens = [correlated_sensitivity(kappa, eta, float(c), eps, rho) for c in grid]
    if not sens[0].stable:
        return None, True
    first = next((i for i, st in enumerate(sens) if not st.stable), None)
    if first is None:
        return None, True
    lo, hi = float(grid[first - 1]), float(grid[first])
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        if correlated_sensitivity(kappa, eta, mid, eps, rho).stable:
            lo = mid
        else:
            hi = mid
    mono = all(sens[i].sensitivity <= sens[i + 1].sensitivity for i in range(first))
    return hi, mono


def correlation_rows(eps: float, rho: float, kappas: list[int], eta: float) -> list[Row]:
    """Definition 8.1 asks for independent supports: where a shared noise source breaks it."""
    rows: list[Row] = []
    for kappa in kappas:
        c_star, mono = breaking_correlation(kappa, eta, eps, rho)
        at0 = correlated_sensitivity(kappa, eta, 0.0, eps, rho)
        rows.append(
            {
                "section": "stability",
                "check": (
                    f"MAJORITY over κ={kappa} supports, each right w.p. {1 - eta:g}, sharing one "
                    "noise source w.p. c (pairwise correlation c): smallest unstable c"
                ),
                "setting": (
                    f"ε={eps}, ρ={rho}; sensitivity at c=0: {at0.sensitivity:.4f}; "
                    f"bisection to 1e-4{'' if mono else ' (sensitivity not monotone below c*)'}"
                ),
                "value": None if c_star is None else round(c_star, 4),
                "normalized": None,
                "bound": at0.bound,
                "method": "exact DP on the correlated joint (rules.stability)",
                "passed": None,
                "verdict": "stable at c=0" if at0.stable else "unstable at c=0",
            }
        )
    return rows


def build_table(
    fast: bool = False, say: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """Every row of the reproduction table (``fast``: Figure 2 only, for tests); ``say``
    hears a line as each of its sections is done (its rows and seconds)."""
    variants: tuple[str, ...] = ("figure2",) if fast else VARIANTS
    sections: list[tuple[str, Callable[[], list[Row]]]] = [
        ("completeness", lambda: completeness_rows(
            eps=0.2, rho=0.5, depth=2, kappa=7, n=40, seed=0, eta=0.05, variants=variants)),
        ("obfuscation", lambda: obfuscation_rows(
            **OBFUSCATION, variants=variants)),  # type: ignore[arg-type]
        ("soundness", lambda: soundness_rows(
            eps=0.45, rho=0.1, depth=1, q=2, n=16, seed=0, delta=DELTA, variants=variants,
            grid_points=GRID_POINTS)),
        ("attacks", lambda: attack_rows(variants)),
        ("proof audit", lambda: proof_rows(eps=0.45, rho=0.1, n=16, seed=0, delta=DELTA)),
        ("stability", lambda: stability_rows(
            eps=0.2, rho=0.5, kappas=list(range(1, 18, 2)), eta=0.1)),
        ("correlation", lambda: correlation_rows(eps=0.2, rho=0.5, kappas=[9, 13, 17], eta=0.1)),
    ]
    rows: list[Row] = []
    began = time.perf_counter()
    for i, (name, make) in enumerate(sections, 1):
        t0 = time.perf_counter()
        part = make()
        rows += part
        if say is not None:
            say(f"[{i}/{len(sections)}] {name}: {len(part)} rows in "
                f"{time.perf_counter() - t0:.1f} s ({time.perf_counter() - began:.0f} s so far)")
    return {"summary": summarize(rows, variants), "rows": [_rounded(r) for r in rows]}


SUMMARY = {
    "completeness": ("completeness", ""),
    "obfuscation": ("obfuscation", ""),
    "soundness": ("soundness", ""),
    "attack: honest": ("attack", "against honest:"),
    "attack: honest-no-dead-zone": ("attack", "against honest-no-dead-zone:"),
    "attack: best prover": ("attack", "best wrong-answer prover"),
    "attack: uninformed prover": ("attack", "best uninformed"),
}


def summarize(rows: list[Row], variants: tuple[str, ...]) -> dict[str, dict[str, bool]]:
    """Per variant: did every completeness, obfuscation, soundness and attack row pass?"""
    out: dict[str, dict[str, bool]] = {}
    for v in variants:
        out[v] = {
            name: all(
                r["passed"]
                for r in rows
                if r["section"] == sec and r.get("variant") == v and marker in r["check"]
            )
            for name, (sec, marker) in SUMMARY.items()
        }
    return out


def _rounded(v: Any, digits: int = DIGITS) -> Any:
    """Floats to ``digits`` significant digits, recursively (deterministic files); a row's
    own ``digits`` (values from iterations or searches) applies to everything in it."""
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, float | np.floating):
        return float(f"{float(v):.{digits}g}")
    if isinstance(v, dict):
        digits = int(v.get("digits", digits))
        return {k: _rounded(x, digits) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_rounded(x, digits) for x in v]
    return v


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


HEAD = {
    "proof": "| variant | check | setting | E_µ[A·g] | E_g[f] | E_µ[A·p] | E_h[f] | result |",
    "soundness": (
        "| variant | check | setting | value | normalized | bound | best response B | result |"
    ),
}


def to_markdown(table: dict[str, Any]) -> str:
    out = [
        "# Reproduction table (formal engine)",
        "",
        "Generated by `llmdebate reproduce`; every value is computed, none is typed in, and every",
        "value is an exact expectation (enumeration of the protocol's randomness), computed in",
        "floating point with eq. (13)'s comparisons at a tolerance of 1e-9 (so that decimal ties",
        "tie), except the attack rows, which are recomputed in rational arithmetic with no",
        f"tolerance; rounded to {DIGITS} significant",
        "digits in reproduction.json and 4 here. Payoffs are E[R_A] averaged over the instances",
        "unless a row says min; *normalized* = E[R_A] / r^(d+1). *variant*: the protocol variant",
        "(`DebateConfig.variant`, docs/protocol.md); figure2 is the paper's protocol. Rows whose",
        "estimator comes from Algorithm 1's iterations, and the attack rows (the exact payoff of",
        f"the strategy a seeded search found), carry {ITERATIVE_DIGITS} significant digits in the",
        "JSON, so that another machine writes the same files. The attacks' times are printed by",
        "the command, not written here.",
        "",
    ]
    out += [
        "## Summary: which variant keeps which guarantee on these families",
        "",
        "| variant | completeness (honest vs 4 named B, stable instances) | obfuscation "
        "(prover-estimator rows) | soundness (vs Algorithm 1) | honest vs searched B | "
        "honest without dead zone vs searched B | best wrong prover vs Algorithm 1's B | "
        "best uninformed wrong prover vs calibrated-ignorant |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for v, res in table["summary"].items():
        cells = [_fmt(res[s]) for s in SUMMARY]
        out.append(f"| {v} | " + " | ".join(cells) + " |")
    out.append("")
    for section in SECTIONS:
        out += _section_markdown(section, [r for r in table["rows"] if r["section"] == section])
    failed = {r["section"] for r in table["rows"] if r["passed"] is False}
    if failed:
        out += ["## Notes on rows not passed", "", *NOTES, ""]
    return "\n".join(out) + "\n"


def _section_markdown(section: str, rows: list[Row]) -> list[str]:
    """The lines of one section of reproduction.md: its title, its table of ``rows``, where
    each payoff comes from round by round, and (soundness) how the best response was found."""
    title = "Proof audit (Lemma A.4, step (9)/(10))" if section == "proof" else section
    head = HEAD.get(section, "| variant | check | setting | value | normalized | bound | result |")
    out = [f"## {title[0].upper()}{title[1:]}", "", head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        result = r["passed"] if r["passed"] is not None else r.get("verdict")
        out.append("| " + " | ".join([*_row_cells(section, r), _fmt(result)]) + " |")
    out.append("")
    for r in rows:
        if r.get("by_round"):
            parts = ", ".join(f"E[{k}] = {_fmt(v)}" for k, v in r["by_round"].items())
            out += [
                f"Where the {r['prover']} prover's payoff comes from ({r['variant']}): {parts}.",
                "",
            ]
    if section == "soundness" and rows:
        br = next((r["best_response"] for r in rows if r.get("best_response")), None)
        if br:
            out += [f"Best response B: {br['method']}.", ""]
    return out


def _row_cells(section: str, r: Row) -> list[str]:
    """A row's cells in its section's table, before the result: the proof audit's four terms,
    or the value, normalized value and bound (and soundness: the best response B's payoff)."""
    if section == "proof":
        t = r["terms"]
        nums = [t["E_mu[A*g]"], t["E_g[f]"], t["E_mu[A*p]"], t["E_h[f]"]]
        return [r["variant"], r["check"], r["setting"], *(_fmt(v) for v in nums)]
    cells = [
        r.get("variant", "–"),
        r["check"],
        r["setting"],
        *(_fmt(r[c]) for c in ("value", "normalized", "bound")),
    ]
    if section == "soundness":
        br = r.get("best_response")
        cells.append(
            "–" if br is None else f"{_fmt(br['value'])} (norm. {_fmt(br['normalized'])})"
        )
    return cells


def write(
    out_dir: Path, fast: bool = False, say: Callable[[str], None] | None = None
) -> tuple[Path, Path, dict[str, Any]]:
    table = build_table(fast=fast, say=say)
    out_dir.mkdir(parents=True, exist_ok=True)
    md, js = out_dir / "reproduction.md", out_dir / "reproduction.json"
    md.write_text(to_markdown(table), encoding="utf-8")
    js.write_text(json.dumps(table, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return md, js, table
