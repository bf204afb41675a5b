"""Evaluate one (problem, protocol, prover, estimator) setting exactly or by Monte Carlo.

Returns the JSON record printed by ``llmdebate formal --json``: expected payoff, its standard
error (0 when exact), the payoff in units of r^(d+1), the completeness bound of Lemma A.5 and
the prover's accuracy; for naive recursive debate also the prover's win rate.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from llmdebate.core import scoring
from llmdebate.core.schemas import DebateConfig
from llmdebate.errors import ConfigError
from llmdebate.formal.exact import exact_naive, exact_prover_estimator
from llmdebate.formal.game import Game, NaiveGame
from llmdebate.formal.montecarlo import monte_carlo, monte_carlo_naive
from llmdebate.formal.ogd import algorithm1_estimator
from llmdebate.formal.problems import PROBLEMS, TreeProblem, make_problem
from llmdebate.formal.stable import stable_problem
from llmdebate.formal.strategies import (
    BASIC_ESTIMATORS,
    ESTIMATORS,
    NAIVE_PROVERS,
    PROVERS,
    EstimatorChallenger,
    EstimatorPolicy,
    OracleJudge,
    ProverPolicy,
    make_estimator,
    make_naive_prover,
    make_prover,
)
from llmdebate.formal.strategy_files import TableProver
from llmdebate.formal.tables import fdot
from llmdebate.records.jsonl import first_error

MAX_EXACT_STATES = 20_000_000


def _naive_states(prover: str, instances: int, depth: int, width: int) -> int:
    return int(instances * width**depth)


def _pe_states(prover: str, instances: int, depth: int, width: int) -> int:
    branch = (1 << width) * (width if prover == "random" else 1)
    return int(instances * branch**depth)


@dataclass
class Strategies:
    """What a setting plays: names, or policies read from strategy files (which win)."""

    prover: str
    estimator: str
    prover_policy: ProverPolicy | None = None
    estimator_policy: EstimatorPolicy | None = None


Runner = Callable[[TreeProblem, Strategies, DebateConfig, str, bool, int], dict[str, Any]]


@dataclass(frozen=True)
class FormalProtocol:
    """One protocol of the formal engine: the names it accepts, a bound on the states exact
    enumeration visits (each round branches over the 2^q outcomes for prover-estimator debate
    and, for a randomising prover, over its q choices) and how it is evaluated."""

    provers: tuple[str, ...]
    estimators: tuple[str, ...]
    states_bound: Callable[[str, int, int, int], int]
    run: Runner
    strategy_files: bool


def exact_states_bound(protocol: str, prover: str, instances: int, depth: int, width: int) -> int:
    return FORMAL_PROTOCOLS[protocol].states_bound(prover, instances, depth, width)


def validated_config(epsilon: float, rho: float, depth: int, width: int, seed: int) -> DebateConfig:
    """DebateConfig's validation, re-raised as one line naming the parameter."""
    try:
        return DebateConfig(epsilon=epsilon, rho=rho, depth=depth, width=width, seed=seed)
    except ValidationError as exc:
        raise ConfigError(first_error(exc).split(": ", 1)[1]) from None


def check_names(protocol: str, problem: str, prover: str, estimator: str) -> None:
    spec = FORMAL_PROTOCOLS.get(protocol)
    if spec is None:
        raise ConfigError(
            f"protocol must be one of {', '.join(FORMAL_PROTOCOLS)} (got {protocol!r})"
        )
    if problem not in PROBLEMS:
        raise ConfigError(f"problem must be one of {', '.join(PROBLEMS)} (got {problem!r})")
    if prover not in spec.provers:
        raise ConfigError(
            f"prover must be one of {', '.join(spec.provers)} for {protocol} (got {prover!r})"
        )
    if estimator not in spec.estimators:
        raise ConfigError(
            f"estimator must be one of {', '.join(spec.estimators)} for {protocol} "
            f"(got {estimator!r})"
        )


def build_estimator(
    name: str, problem: TreeProblem, game_prover: Any, cfg: DebateConfig, variant: str = "figure2"
) -> tuple[EstimatorPolicy, dict[str, Any]]:
    if name != "algorithm1":
        return make_estimator(name, problem), {}
    est, report = algorithm1_estimator(problem, game_prover, cfg.epsilon, cfg.rho, variant=variant)
    return est, report.as_dict()


def _run_naive(
    prob: TreeProblem, st: Strategies, cfg: DebateConfig, variant: str, exact: bool, samples: int
) -> dict[str, Any]:
    ng = NaiveGame(
        prob,
        make_naive_prover(st.prover, prob),
        EstimatorChallenger(make_estimator(st.estimator, prob)),
        OracleJudge(prob),
    )
    out: dict[str, Any] = {}
    if exact:
        ex = exact_naive(ng)
        w = prob.weights
        pay, se, acc = ex.mean(w), 0.0, fdot(w, ex.accuracy)
        assert ex.win is not None
        win: float | None = fdot(w, ex.win)
        win_se: float | None = 0.0
    else:
        mc = monte_carlo_naive(ng, samples, cfg.seed)
        pay, se, acc = mc.mean, mc.stderr, mc.accuracy
        win, win_se = mc.win_rate, mc.win_stderr
        out["samples"] = mc.n
    # the payoff is ±1, not in units of r^(d+1): the prover-estimator fields are null
    out.update(expected_payoff=pay, payoff_stderr=se, prover_accuracy=acc)
    out.update(normalized_payoff=None, completeness_bound=None, normalized_completeness_bound=None)
    out.update(prover_win_rate=win, win_rate_stderr=win_se)
    return out


def _run_prover_estimator(
    prob: TreeProblem, st: Strategies, cfg: DebateConfig, variant: str, exact: bool, samples: int
) -> dict[str, Any]:
    eps, rho, depth = cfg.epsilon, cfg.rho, cfg.depth
    r = scoring.ratio_for(cfg)
    pol = st.prover_policy or make_prover(st.prover, prob, eps)
    if isinstance(pol, TableProver):
        pol.bind_judge(OracleJudge(prob))
    out: dict[str, Any] = {}
    if st.estimator_policy is not None:
        est: EstimatorPolicy = st.estimator_policy
    else:
        est, ogd_report = build_estimator(st.estimator, prob, pol, cfg, variant)
        if ogd_report:
            out["algorithm1"] = ogd_report
    game = Game(prob, pol, est, OracleJudge(prob), eps, rho, variant)
    if exact:
        ex = exact_prover_estimator(game)
        w = prob.weights
        pay, se, acc = ex.mean(w), 0.0, fdot(w, ex.accuracy)
        out["min_instance_normalized"] = float(scoring.normalized(ex.payoff.min(), r, depth))
    else:
        mc = monte_carlo(game, samples, cfg.seed)
        pay, se, acc = mc.mean, mc.stderr, mc.accuracy
        out["samples"] = mc.n
    out.update(
        expected_payoff=pay,
        payoff_stderr=se,
        normalized_payoff=float(scoring.normalized(pay, r, depth)),
        normalized_stderr=float(scoring.normalized(se, r, depth)),
        completeness_bound=scoring.completeness_bound(eps, r, depth),
        # in normalized_payoff's unit (r^(d+1)): 1 - epsilon
        normalized_completeness_bound=float(
            scoring.normalized(scoring.completeness_bound(eps, r, depth), r, depth)
        ),
        prover_accuracy=acc,
    )
    if "algorithm1" in out:
        out["soundness_bound"] = scoring.soundness_bound(r, depth, acc, out["algorithm1"]["delta"])
    return out


FORMAL_PROTOCOLS: dict[str, FormalProtocol] = {
    "prover-estimator": FormalProtocol(
        PROVERS, ESTIMATORS, _pe_states, _run_prover_estimator, strategy_files=True
    ),
    "naive-recursive": FormalProtocol(
        NAIVE_PROVERS, BASIC_ESTIMATORS, _naive_states, _run_naive, strategy_files=False
    ),
}
PROTOCOLS = tuple(FORMAL_PROTOCOLS)


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
    stable_only: bool = False,
    prover_policy: ProverPolicy | None = None,
    estimator_policy: EstimatorPolicy | None = None,
) -> dict[str, Any]:
    """One evaluation; ``prover_policy``/``estimator_policy`` (strategy files) replace the
    named strategies; ``stable_only`` keeps the instances stable at every node (Lemma A.5)."""
    cfg = validated_config(epsilon, rho, depth, width, seed)
    check_names(protocol, problem, prover, estimator)
    spec = FORMAL_PROTOCOLS[protocol]
    if (prover_policy or estimator_policy) and not spec.strategy_files:
        raise ConfigError(f"strategy files are read for prover-estimator debate, not {protocol}")
    if instances < 1:
        raise ConfigError(f"instances must be >= 1 (got {instances})")
    if exact:
        bound = spec.states_bound(prover, instances, depth, width)
        if bound > MAX_EXACT_STATES:
            raise ConfigError(
                f"exact enumeration is infeasible here: up to {bound:.3g} states "
                f"(instances·(2^q)^d; the limit is {MAX_EXACT_STATES:.0e}); use --samples N"
            )
    if not exact and samples < 2:
        raise ConfigError(f"samples must be >= 2 (got {samples})")
    prob = make_problem(problem, depth, width, instances, seed, noise)
    if stable_only:
        prob = stable_problem(prob, epsilon, rho)
    out: dict[str, Any] = {
        "protocol": protocol,
        "problem": problem,
        "prover": prover if prover_policy is None else prover_policy.name,
        "estimator": estimator if estimator_policy is None else estimator_policy.name,
        "epsilon": epsilon,
        "rho": rho,
        "depth": depth,
        "width": width,
        "instances": prob.n,
        "seed": seed,
        "method": "exact" if exact else "monte-carlo",
        "variant": variant,
        "reward_ratio": scoring.ratio_for(cfg),
        "judge": OracleJudge(prob).name,
    }
    st = Strategies(prover, estimator, prover_policy, estimator_policy)
    out.update(spec.run(prob, st, cfg, variant, exact, samples))
    return out
