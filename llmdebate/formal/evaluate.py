"""Evaluate one (problem, protocol, prover, estimator) setting exactly or by Monte Carlo.

Returns the JSON record printed by ``llmdebate formal --json``: expected payoff, its standard
error (0 when exact), the payoff in units of r^(d+1), the completeness bound of Lemma A.5 and
the prover's accuracy; for naive recursive debate also the prover's win rate.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from llmdebate import scoring
from llmdebate.errors import ConfigError
from llmdebate.formal.exact import exact_naive, exact_prover_estimator
from llmdebate.formal.game import Game, NaiveGame
from llmdebate.formal.montecarlo import monte_carlo, monte_carlo_naive
from llmdebate.formal.ogd import algorithm1_estimator
from llmdebate.formal.problems import PROBLEMS, TreeProblem, make_problem
from llmdebate.formal.strategies import (
    BASIC_ESTIMATORS,
    ESTIMATORS,
    NAIVE_PROVERS,
    PROVERS,
    EstimatorChallenger,
    EstimatorPolicy,
    OracleJudge,
    make_estimator,
    make_naive_prover,
    make_prover,
)
from llmdebate.jsonl import first_error
from llmdebate.schemas import DebateConfig

PROTOCOLS = ("prover-estimator", "naive-recursive")
MAX_EXACT_STATES = 20_000_000


def exact_states_bound(protocol: str, prover: str, instances: int, depth: int, width: int) -> int:
    """An upper bound on the states exact enumeration visits: each round branches over the
    2^q outcomes (prover-estimator) and, for a randomising prover, over its q choices."""
    if protocol == "naive-recursive":
        return instances * width**depth
    branch = (1 << width) * (width if prover == "random" else 1)
    return instances * branch**depth


def validated_config(epsilon: float, rho: float, depth: int, width: int, seed: int) -> DebateConfig:
    """DebateConfig's validation, re-raised as one line naming the parameter."""
    try:
        return DebateConfig(epsilon=epsilon, rho=rho, depth=depth, width=width, seed=seed)
    except ValidationError as exc:
        raise ConfigError(first_error(exc).split(": ", 1)[1]) from None


def check_names(protocol: str, problem: str, prover: str, estimator: str) -> None:
    if protocol not in PROTOCOLS:
        raise ConfigError(f"protocol must be one of {', '.join(PROTOCOLS)} (got {protocol!r})")
    if problem not in PROBLEMS:
        raise ConfigError(f"problem must be one of {', '.join(PROBLEMS)} (got {problem!r})")
    provers = PROVERS if protocol == "prover-estimator" else NAIVE_PROVERS
    if prover not in provers:
        raise ConfigError(
            f"prover must be one of {', '.join(provers)} for {protocol} (got {prover!r})"
        )
    ests = ESTIMATORS if protocol == "prover-estimator" else BASIC_ESTIMATORS
    if estimator not in ests:
        raise ConfigError(
            f"estimator must be one of {', '.join(ests)} for {protocol} (got {estimator!r})"
        )


def build_estimator(
    name: str, problem: TreeProblem, game_prover: Any, cfg: DebateConfig, variant: str = "figure2"
) -> tuple[EstimatorPolicy, dict[str, Any]]:
    if name != "algorithm1":
        return make_estimator(name, problem), {}
    est, report = algorithm1_estimator(problem, game_prover, cfg.epsilon, cfg.rho, variant=variant)
    return est, report.as_dict()


def evaluate(
    *,
    protocol: str,
    problem: str,
    prover: str,
    estimator: str,
    epsilon: float,
    rho: float,
    depth: int,
    width: int,
    instances: int,
    seed: int,
    exact: bool = True,
    samples: int = 100_000,
    noise: float | None = None,
    variant: str = "figure2",
) -> dict[str, Any]:
    cfg = validated_config(epsilon, rho, depth, width, seed)
    check_names(protocol, problem, prover, estimator)
    if instances < 1:
        raise ConfigError(f"instances must be >= 1 (got {instances})")
    if exact:
        bound = exact_states_bound(protocol, prover, instances, depth, width)
        if bound > MAX_EXACT_STATES:
            raise ConfigError(
                f"exact enumeration is infeasible here: up to {bound:.3g} states "
                f"(instances·(2^q)^d; the limit is {MAX_EXACT_STATES:.0e}); use --samples N"
            )
    if not exact and samples < 2:
        raise ConfigError(f"samples must be >= 2 (got {samples})")
    prob = make_problem(problem, depth, width, instances, seed, noise)
    r = scoring.ratio_for(cfg)
    out: dict[str, Any] = {
        "protocol": protocol,
        "problem": problem,
        "prover": prover,
        "estimator": estimator,
        "epsilon": epsilon,
        "rho": rho,
        "depth": depth,
        "width": width,
        "instances": instances,
        "seed": seed,
        "method": "exact" if exact else "monte-carlo",
        "variant": variant,
        "reward_ratio": r,
    }
    judge = OracleJudge(prob)
    out["judge"] = judge.name
    if protocol == "naive-recursive":
        ng = NaiveGame(
            prob,
            make_naive_prover(prover, prob),
            EstimatorChallenger(make_estimator(estimator, prob)),
            judge,
        )
        if exact:
            ex = exact_naive(ng)
            w = prob.weights
            pay, se, acc = ex.mean(w), 0.0, float(w @ ex.accuracy)
            win: float | None = float(w @ ex.win)
            win_se: float | None = 0.0
        else:
            mc = monte_carlo_naive(ng, samples, seed)
            pay, se, acc = mc.mean, mc.stderr, mc.accuracy
            win, win_se = mc.win_rate, mc.win_stderr
            out["samples"] = mc.n
        # the payoff is ±1, not in units of r^(d+1): the prover-estimator fields are null
        out.update(expected_payoff=pay, payoff_stderr=se, prover_accuracy=acc)
        out.update(normalized_payoff=None, completeness_bound=None)
        out.update(prover_win_rate=win, win_rate_stderr=win_se)
        return out
    pol = make_prover(prover, prob, epsilon)
    est, ogd_report = build_estimator(estimator, prob, pol, cfg, variant)
    if ogd_report:
        out["algorithm1"] = ogd_report
    game = Game(prob, pol, est, judge, epsilon, rho, variant)
    if exact:
        ex = exact_prover_estimator(game)
        w = prob.weights
        pay, se, acc = ex.mean(w), 0.0, float(w @ ex.accuracy)
    else:
        mc = monte_carlo(game, samples, seed)
        pay, se, acc = mc.mean, mc.stderr, mc.accuracy
        out["samples"] = mc.n
    out.update(
        expected_payoff=pay,
        payoff_stderr=se,
        normalized_payoff=float(scoring.normalized(pay, r, depth)),
        normalized_stderr=float(scoring.normalized(se, r, depth)),
        completeness_bound=scoring.completeness_bound(epsilon, r, depth),
        prover_accuracy=acc,
    )
    if ogd_report:
        out["soundness_bound"] = scoring.soundness_bound(r, depth, acc, ogd_report["delta"])
    return out
