"""Formal engine: exact enumeration, vectorised Monte Carlo and the generic async engine agree."""

from __future__ import annotations

import numpy as np
import pytest

from llmdebate.core import scoring
from llmdebate.core.engine import debate_seed, run_naive_recursive, run_prover_estimator, run_sync
from llmdebate.core.schemas import DebateConfig
from llmdebate.core.scoring import score_transcript
from llmdebate.formal.exact import exact_naive, exact_prover_estimator
from llmdebate.formal.game import Game, NaiveGame
from llmdebate.formal.montecarlo import Z95, monte_carlo, simulate_prover_estimator
from llmdebate.formal.problems import make_problem
from llmdebate.formal.strategies import (
    BASIC_ESTIMATORS,
    EstimatorChallenger,
    OracleJudge,
    make_estimator,
    make_naive_prover,
    make_prover,
)
from llmdebate.formal.strategies.agents import (
    FormalChallenger,
    FormalEstimator,
    FormalJudge,
    FormalNaiveProver,
    FormalProver,
)
from llmdebate.formal.strategies.alternatives import deterministic
from llmdebate.formal.strategies.provers import BeliefProver

EPS, RHO = 0.2, 0.5


class SilentProver(BeliefProver):
    """Honest answer, but direction 0 in every round and never rest_zero."""

    def stops(self, inst, p, a):  # type: ignore[no-untyped-def]
        return np.zeros(len(inst), dtype=bool)

    def direction(self, inst, k, node, p):  # type: ignore[no-untyped-def]
        return deterministic(np.zeros(len(inst), dtype=np.int64))


def game(problem: str, prover: str, estimator: str, d: int = 2, q: int = 3, n: int = 12) -> Game:
    prob = make_problem(problem, d, q, n, 0)
    return Game(
        prob,
        make_prover(prover, prob, EPS),
        make_estimator(estimator, prob),
        OracleJudge(prob),
        EPS,
        RHO,
    )


@pytest.mark.parametrize("estimator", BASIC_ESTIMATORS)
def test_direction_zero_gives_init_reward(estimator: str) -> None:
    g = game("circuit", "honest", estimator)
    g.prover = SilentProver(g.problem, g.problem.truth, EPS, "silent")
    ex = exact_prover_estimator(g)
    inst = np.arange(g.problem.n)
    p = g.estimator.top(inst)
    expected = scoring.expected_init_reward(g.r, g.depth, p, g.problem.top_truth())
    assert np.allclose(ex.payoff, expected, rtol=0, atol=1e-18)
    payoffs = simulate_prover_estimator(g, 2000, np.random.default_rng(0))
    assert set(np.unique(payoffs)) <= {0.0, g.r ** (g.depth + 1)}


@pytest.mark.parametrize(
    ("problem", "prover", "estimator"),
    [
        ("interval", "dishonest", "calibrated-ignorant"),
        ("interval", "honest", "adversarial"),
        ("circuit", "random", "calibrated-ignorant"),
        ("majority", "dishonest", "adversarial"),
        ("circuit", "honest", "calibrated-ignorant"),
    ],
)
def test_exact_within_monte_carlo_interval(problem: str, prover: str, estimator: str) -> None:
    g = game(problem, prover, estimator)
    exact = exact_prover_estimator(g).mean(g.problem.weights)
    mc = monte_carlo(g, 60_000, seed=3)
    lo, hi = mc.ci
    assert mc.stderr > 0 or exact == pytest.approx(mc.mean)
    assert lo - 1e-15 <= exact <= hi + 1e-15


def test_honest_completeness_on_stable_instances_for_every_estimator() -> None:
    from llmdebate.formal.reproduce import stable_instances, subset

    full = make_problem("majority", 2, 7, 30, 1, noise=0.05)
    idx = stable_instances(full, EPS, RHO)
    assert len(idx) > 5
    prob = subset(full, idx)
    r = scoring.reward_ratio(EPS, RHO)
    bound = scoring.completeness_bound(EPS, r, 2)
    for name in BASIC_ESTIMATORS:
        g = Game(
            prob,
            make_prover("honest", prob, EPS),
            make_estimator(name, prob),
            OracleJudge(prob),
            EPS,
            RHO,
        )
        assert exact_prover_estimator(g).payoff.min() >= bound, name


@pytest.mark.parametrize("p", [0.0, 0.1, 0.5, 0.93, 1.0])
@pytest.mark.parametrize("k", [1, 2, 3])
def test_calibrated_ignorant_is_bayesian_posterior(p: float, k: int) -> None:
    """Brute force: factor in the claim w.p. 1 - p, uniform over its leaves; count outcomes."""
    d, q = 3, 3
    prob = make_problem("interval", d, q, 4, 0)
    est = make_estimator("calibrated-ignorant", prob)
    leaves_per_child = q ** (k - 1)
    joint = np.zeros(1 << q)
    joint[(1 << q) - 1] += p  # clean claim: every child clean
    for leaf in range(q**k):  # factor at this leaf of the claim
        child = leaf // leaves_per_child
        z = [int(c != child) for c in range(q)]
        joint[int("".join(map(str, z)), 2)] += (1 - p) / q**k
    levels = est.levels(np.array([0]), k, np.array([0]), np.array([p]))
    for i in range(q):
        for t in range(1 << i):
            prefix = [(t >> (i - 1 - s)) & 1 for s in range(i)]
            mask = np.array(
                [
                    all(((o >> (q - 1 - s)) & 1) == prefix[s] for s in range(i))
                    for o in range(1 << q)
                ]
            )
            num = sum(joint[o] for o in range(1 << q) if mask[o] and (o >> (q - 1 - i)) & 1)
            den = joint[mask].sum()
            want = num / den if den > 0 else 0.5
            assert levels[i][0, t] == pytest.approx(want, abs=1e-12)


def test_interval_truth_is_trial_division() -> None:
    prob = make_problem("interval", 2, 3, 6, 5)
    for i, info in enumerate(prob.instances):
        for k in range(3):
            span = info["leaf_size"] * 3**k
            for node in range(3 ** (2 - k)):
                lo = 2 + node * span
                clean = all(info["N"] % m for m in range(lo, lo + span))
                assert prob.truth[k][i, node] == int(clean)
    assert prob.top_truth().sum() == 0 and prob.truth[0].sum(axis=1).tolist() == [8] * 6


def _engine_totals(g: Game, n: int) -> tuple[np.ndarray, int]:
    cfg = DebateConfig(epsilon=EPS, rho=RHO, depth=g.depth, width=g.problem.width, seed=11)
    agents = (
        FormalProver(g.problem, g.prover),
        FormalEstimator(g.problem, g.estimator),
        FormalJudge(g.problem, g.judge),
    )
    totals, mismatches = [], 0
    for i in range(n):
        inst = i % g.problem.n
        t = run_sync(
            run_prover_estimator(
                g.problem.claim(inst, g.depth, 0),
                *agents,
                cfg,
                seed=debate_seed(11, i),
                debate_id=f"d{i}",
            )
        )
        totals.append(t.total)
        mismatches += len(score_transcript(t).mismatches)
    return np.array(totals), mismatches


@pytest.mark.parametrize(
    ("problem", "prover", "estimator"),
    [
        ("interval", "dishonest", "calibrated-ignorant"),
        ("circuit", "random", "adversarial"),
        ("majority", "honest", "calibrated-ignorant"),
    ],
)
def test_async_engine_agrees_with_exact_and_rescoring(
    problem: str, prover: str, estimator: str
) -> None:
    g = game(problem, prover, estimator, d=2, q=3, n=6)
    totals, mismatches = _engine_totals(g, 300)
    assert mismatches == 0
    exact = exact_prover_estimator(g).mean(g.problem.weights)
    half = Z95 * totals.std(ddof=1) / np.sqrt(len(totals))
    assert abs(totals.mean() - exact) <= half + 1e-15


def test_naive_engine_agrees_with_exact() -> None:
    prob = make_problem("interval", 2, 3, 9, 0)
    ch = EstimatorChallenger(make_estimator("calibrated-ignorant", prob))
    ng = NaiveGame(prob, make_naive_prover("dishonest", prob), ch, OracleJudge(prob))
    ex = exact_naive(ng)
    win = float(prob.weights @ ex.win)
    assert win == pytest.approx(1 - 3**-2)
    cfg = DebateConfig(epsilon=EPS, rho=RHO, depth=2, width=3)
    agents = (
        FormalNaiveProver(prob, ng.prover),
        FormalChallenger(prob, ch),
        FormalJudge(prob, ng.judge),
    )
    wins = []
    for i in range(360):
        t = run_sync(
            run_naive_recursive(prob.claim(i % 9, 2, 0), *agents, cfg, seed=debate_seed(7, i))
        )
        assert not score_transcript(t).mismatches
        wins.append(float(bool(t.prover_won)))
    w = np.array(wins)
    assert abs(w.mean() - win) <= Z95 * w.std(ddof=1) / np.sqrt(len(w)) + 1e-12
    omni = NaiveGame(
        prob, ng.prover, EstimatorChallenger(make_estimator("omniscient", prob)), ng.judge
    )
    assert float(prob.weights @ exact_naive(omni).win) == 0.0


def test_the_minimal_obfuscation_example_pays_a_quarter_at_the_leaf() -> None:
    """d=1, q=2 (docs/protocol.md): B's draw z_1 = 1 forces b_2 = 0; A recurses there."""
    g = game("interval", "dishonest", "calibrated-ignorant", d=1, q=2, n=16)
    ex = exact_prover_estimator(g)
    w = g.problem.weights
    assert ex.round_means(w) == pytest.approx([0.0, 0.0, 0.25])
    assert sum(ex.round_means(w)) == pytest.approx(ex.mean(w))
