"""The soundness gap stated exactly (issue: counterexamples, the failing step of Lemma A.4's
proof), protocol variants in both engines, best-response estimators, correlated supports."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from core_agents import ToyEstimator, ToyJudge, ToyProver

from llmdebate.core import scoring
from llmdebate.core.engine import debate_seed, run_prover_estimator, run_sync
from llmdebate.core.rules import CondProbs, compile_rule, stability
from llmdebate.core.schemas import VARIANTS, Claim, CombinationRule, DebateConfig, Transcript
from llmdebate.core.scoring import score_transcript
from llmdebate.formal.best_response import grid_best_response, shrinkage_best_response
from llmdebate.formal.exact import exact_prover_estimator
from llmdebate.formal.game import Game
from llmdebate.formal.montecarlo import monte_carlo
from llmdebate.formal.ogd import algorithm1_estimator
from llmdebate.formal.problems import make_problem
from llmdebate.formal.proof_check import lemma_a4_terms
from llmdebate.formal.reproduce import (
    _rounded,
    breaking_correlation,
    build_table,
    correlated_sensitivity,
)
from llmdebate.formal.strategies import OracleJudge, make_estimator, make_prover
from llmdebate.formal.strategies.agents import FormalEstimator, FormalJudge, FormalProver
from llmdebate.formal.strategies.estimators import EstimatorPolicy, Shrunk
from llmdebate.formal.tables import Levels, independent_levels

EPS, RHO = 0.2, 0.5


def interval_game(
    prover: str,
    estimator: str = "calibrated-ignorant",
    variant: str = "figure2",
    d: int = 1,
    q: int = 2,
    n: int = 16,
    eps: float = EPS,
    rho: float = RHO,
) -> Game:
    prob = make_problem("interval", d, q, n, 0)
    return Game(
        prob,
        make_prover(prover, prob, eps),
        make_estimator(estimator, prob),
        OracleJudge(prob),
        eps,
        rho,
        variant,
    )


# ---------------------------------------------------------------------------- the gap


def test_the_counterexample_pays_exactly_a_quarter_and_every_test_of_the_proof_reads_zero() -> None:
    """Always recurse on y_2; at the leaf +1 iff p_0 < 1/2: E[R_A] = 1/4 (normalized 400)."""
    g = interval_game("last-index")
    ex = exact_prover_estimator(g)
    assert ex.mean(g.problem.weights) == 0.25
    assert scoring.normalized(0.25, g.r, 1) == pytest.approx(400, rel=1e-12)
    (t,) = lemma_a4_terms(g)
    # the tower identity E_h[A_0·z_2] = E[A_0·b_2] holds (both 0); the tests f read 0 ...
    assert t.h_f == 0 and t.mu_A_p == 0 and t.g_f == 0
    # ... but the hybrid E_µ[A_0·g(y_2)] (path drawn from h, truth at the leaf) is 1/4
    assert t.mu_A_g == 0.25 and t.lhs == 0.25 and t.rhs == 0


def test_the_eq13_dishonest_prover_also_breaks_the_tower_identity() -> None:
    (t,) = lemma_a4_terms(interval_game("dishonest"))
    assert t.mu_A_p == 0.25 and t.h_f == 0  # j reads b_2, which depends on z_1 and z_2's draw
    assert t.mu_A_g == 0.5 and t.g_f == 0
    assert t.lhs == 0.25


def test_algorithm1_leaves_the_counterexample_its_quarter_under_figure2_only() -> None:
    prob = make_problem("interval", 1, 2, 16, 0)
    eps, rho = 0.45, 0.1
    pol = make_prover("last-index", prob, eps)
    vals = {}
    for variant in ("figure2", "commit", "commit-marginal"):
        est, rep = algorithm1_estimator(prob, pol, eps, rho, delta=3e-3, variant=variant)
        assert rep.converged
        ex = exact_prover_estimator(Game(prob, pol, est, OracleJudge(prob), eps, rho, variant))
        vals[variant] = ex.mean(prob.weights)
        bound = scoring.soundness_bound(scoring.reward_ratio(eps, rho), 1, 0.0, rep.delta_reached)
        assert (vals[variant] <= bound) == (variant == "commit-marginal"), variant
    assert vals["figure2"] > 0.2 and vals["commit"] > 0.2


def test_under_commit_marginal_both_identities_of_the_proof_hold() -> None:
    for prover in ("last-index", "dishonest"):
        (t,) = lemma_a4_terms(interval_game(prover, variant="commit-marginal"))
        assert t.mu_A_g == pytest.approx(t.g_f, abs=1e-12)
        assert t.mu_A_p == pytest.approx(t.h_f, abs=1e-12)


def test_the_statement_survives_a_best_responding_estimator() -> None:
    g = interval_game("dishonest")
    shrink = shrinkage_best_response(
        g.problem, g.prover, make_estimator("calibrated-ignorant", g.problem), EPS, RHO
    )
    assert shrink.value < 0
    grid = grid_best_response(g.problem, g.prover, EPS, RHO, grid=np.linspace(0, 1, 11))
    assert grid.value <= shrink.value + 1e-15 and grid.value < -0.5


def test_constant_estimator_matches_the_hand_computed_witness() -> None:
    """B = 0.79 everywhere (tests/test_obfuscation_example.py) through the shrinkage class."""
    g = interval_game("dishonest")
    g.estimator = Shrunk(make_estimator("calibrated-ignorant", g.problem), 1.0, 0.79)
    r = g.r
    exact = r**2 * 0.79 + r * (0.79**2 - 0.79) + (0.5 - 0.79)
    assert exact_prover_estimator(g).mean(g.problem.weights) == pytest.approx(exact, abs=1e-12)


class TableEstimator(EstimatorPolicy):
    """Per instance: p_d and one round table (used whatever p_1 is)."""

    name = "table"

    def __init__(self, top: np.ndarray, tables: list[Levels]):
        self._top, self._tables = top, tables

    def top(self, inst: np.ndarray) -> np.ndarray:
        return self._top[inst]

    def levels(self, inst: np.ndarray, k: int, node: np.ndarray, p: np.ndarray) -> Levels:
        return [np.stack([self._tables[i][lv] for i in inst]) for lv in range(2)]


def test_grid_best_response_equals_brute_force_on_a_tiny_grid() -> None:
    prob = make_problem("interval", 1, 2, 2, 0)
    pol = make_prover("dishonest", prob, EPS)
    grid = [0.0, 0.5, 1.0]
    dp = grid_best_response(prob, pol, EPS, RHO, grid=np.array(grid))
    best = np.full(prob.n, np.inf)
    for p_d in grid:
        for b1, b20, b21 in itertools.product(grid, repeat=3):
            table = [np.array([b1]), np.array([b20, b21])]
            est = TableEstimator(np.full(prob.n, p_d), [table] * prob.n)
            ex = exact_prover_estimator(Game(prob, pol, est, OracleJudge(prob), EPS, RHO))
            best = np.minimum(best, ex.payoff)
    assert dp.value == pytest.approx(float(prob.weights @ best), abs=1e-15)


# ---------------------------------------------------------------------------- variants


@pytest.mark.parametrize("variant", VARIANTS)
def test_each_variant_exact_agrees_with_monte_carlo(variant: str) -> None:
    prob = make_problem("circuit", 2, 3, 8, 0)
    g = Game(
        prob,
        make_prover("random", prob, EPS),
        make_estimator("calibrated-ignorant", prob),
        OracleJudge(prob),
        EPS,
        RHO,
        variant,
    )
    exact = exact_prover_estimator(g).mean(prob.weights)
    mc = monte_carlo(g, 40_000, seed=5)
    lo, hi = mc.ci
    assert lo - 1e-15 <= exact <= hi + 1e-15


@pytest.mark.parametrize("variant", VARIANTS)
def test_each_variant_async_engine_agrees_with_exact_and_rescores(variant: str) -> None:
    g = interval_game("dishonest", variant=variant, d=2, q=3, n=6)
    cfg = DebateConfig(epsilon=EPS, rho=RHO, depth=2, width=3, variant=variant)
    agents = (
        FormalProver(g.problem, g.prover),
        FormalEstimator(g.problem, g.estimator),
        FormalJudge(g.problem, g.judge),
    )
    totals = []
    for i in range(120):
        t = run_sync(
            run_prover_estimator(
                g.problem.claim(i % g.problem.n, 2, 0), *agents, cfg, seed=debate_seed(3, i)
            )
        )
        assert t.config.variant == variant
        assert (
            score_transcript(Transcript.model_validate_json(t.model_dump_json())).mismatches == []
        )
        totals.append(t.expected_total)
    arr = np.array(totals)
    exact = exact_prover_estimator(g).mean(g.problem.weights)
    half = 1.96 * arr.std(ddof=1) / np.sqrt(len(arr)) if arr.std() > 0 else 1e-12
    assert abs(arr.mean() - exact) <= half + 1e-12


@pytest.mark.parametrize("variant", VARIANTS)
def test_llm_engine_records_the_variant_and_hands_on_its_probability(variant: str) -> None:
    cfg = DebateConfig(depth=2, width=3, variant=variant, expected_rewards=False)
    t = run_sync(
        run_prover_estimator(
            Claim(text="x", id="x"), ToyProver(q=3), ToyEstimator(), ToyJudge(), cfg, seed=4
        )
    )
    back = Transcript.model_validate_json(t.model_dump_json())
    assert back.config.variant == variant and score_transcript(back).mismatches == []
    first, second = t.rounds[0], t.rounds[1]
    assert second.p == scoring.next_probability(first, variant)
    if variant in ("marginal", "commit-marginal"):
        assert first.table is not None
        assert second.p == scoring.marginals_of(first.table)[first.recurse]  # type: ignore[index]
    if variant == "independent":
        # B was asked with no earlier outcome: b_i does not depend on the draws
        assert first.table == CondProbs.independent(first.b).to_lists()
    tampered = back.model_copy(deep=True)
    tampered.rounds[1].p = 0.123456
    assert any("round 1 p" in m.where for m in score_transcript(tampered).mismatches)


def test_transcripts_without_a_variant_load_as_figure2() -> None:
    cfg = DebateConfig().model_dump()
    del cfg["variant"]
    t = Transcript.model_validate({"id": "old", "config": cfg, "seed": 0})
    assert t.config.variant == "figure2"


def test_independent_variant_states_marginals_and_committing_variants_ignore_draws() -> None:
    g = interval_game("dishonest", variant="independent", d=2, q=3, n=6)
    inst, node, p = np.arange(3), np.zeros(3, dtype=np.int64), np.full(3, 0.4)
    levels = g.estimator.levels(inst, 2, node, p)
    from llmdebate.formal.variants import round_view

    view = round_view(levels, "independent")
    assert all(
        np.allclose(a, b) for a, b in zip(view.levels, independent_levels(view.marg), strict=True)
    )


# ---------------------------------------------------------------------------- correlation


def test_correlated_supports_break_stability_at_a_small_correlation() -> None:
    eta, kappa = 0.1, 9
    rule = compile_rule(CombinationRule(kind="majority"), kappa)
    indep = stability(rule, CondProbs.independent([1 - eta] * kappa), 0.2, 0.5)
    at0 = correlated_sensitivity(kappa, eta, 0.0, 0.2, 0.5)
    assert at0.sensitivity == pytest.approx(indep.sensitivity, abs=1e-12) and at0.stable
    c_star, monotone = breaking_correlation(kappa, eta, 0.2, 0.5)
    assert c_star is not None and 0 < c_star <= 0.05 and monotone
    assert correlated_sensitivity(kappa, eta, c_star, 0.2, 0.5).stable is False
    assert correlated_sensitivity(kappa, eta, c_star - 2e-4, 0.2, 0.5).stable is True


# ---------------------------------------------------------------------------- reproduce


def test_the_table_is_rounded_and_summarised_per_variant() -> None:
    a = build_table(fast=True)
    assert _rounded(a["rows"]) == a["rows"]  # already at the fixed precision: reruns match
    assert set(a["summary"]) == {"figure2"}
    assert a["summary"]["figure2"] == {
        "completeness": True,
        "obfuscation": False,
        "soundness": False,
        "attack: honest": True,
        "attack: honest-no-dead-zone": True,
        "attack: best prover": False,
        "attack: uninformed prover": False,
    }
    assert "seconds" not in a


def test_completeness_needs_stability_a_best_response_shows_it() -> None:
    """q = 2 has no stable decomposition: the exact best response meets (1-ε)·r^(d+1) on the
    interval problem and goes below it on circuits (Lemma A.5 assumes stability)."""
    eps, rho = 0.45, 0.1
    grid = np.linspace(0, 1, 21)
    norms = {}
    for problem in ("interval", "circuit"):
        prob = make_problem(problem, 1, 2, 16, 0)
        br = grid_best_response(prob, make_prover("honest", prob, eps), eps, rho, grid=grid)
        norms[problem] = br.normalized
    assert norms["interval"] == pytest.approx(1 - eps, abs=1e-9)
    assert norms["circuit"] < 1 - eps - 0.1


def test_path_from_joint_is_the_levels_round_trip_to_the_bit() -> None:
    from llmdebate.formal.tables import levels_from_joint, path_from_joint, path_probabilities

    rng = np.random.default_rng(0)
    for q in (1, 2, 3, 4):
        joint = rng.random((20, 1 << q))
        joint[5:10, ::2] = 0.0
        joint /= joint.sum(axis=1, keepdims=True)
        joint[:5] = 0.0
        joint[:5, 0] = 1.0
        fast = path_from_joint(joint)
        assert np.array_equal(fast, path_probabilities(levels_from_joint(joint)))
