"""``llmdebate attack``: search for the strategy that breaks a guarantee, and write it to a file.

* ``completeness``: the estimator that minimises a fixed prover's payoff (default the honest
  prover of eq. 13), over every B that states any table of conditionals, instance by instance
  (:mod:`.attack_estimator`: exact DP over (instance, node, σ), seeded evolutionary search for
  each table). Lemma A.5's bound is (1 - ε) in normalised units, on stable instances.
* ``soundness``: the prover that maximises its payoff against a fixed estimator (default
  Algorithm 1's, built against ``prover``), answering wrongly (a dishonest payoff), exactly by
  DP over A's decision tree (:mod:`.attack_prover`). Lemma A.4's bound is
  r^(d+1)·P[A correct] + (2d+1)·δ.

The payoff printed is that of the strategy *file*, evaluated by the exact engine, so
``llmdebate formal --estimator-file`` / ``--prover-file`` replays it to the same number.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from llmdebate.core import scoring
from llmdebate.core.schemas import VARIANTS
from llmdebate.errors import ConfigError
from llmdebate.formal.algorithm1_check import largest_advantage
from llmdebate.formal.attack_estimator import EstimatorSearch, SearchBudget, SigmaEstimator
from llmdebate.formal.attack_prover import ProverSearch
from llmdebate.formal.evaluate import validated_config
from llmdebate.formal.exact import ExactResult, exact_prover_estimator
from llmdebate.formal.game import Game
from llmdebate.formal.ogd import DEFAULT_DELTA, Algorithm1Estimator, algorithm1_estimator
from llmdebate.formal.problems import PROBLEMS, TreeProblem, make_problem
from llmdebate.formal.rational import Fill, decimal, rational_payoffs
from llmdebate.formal.stable import stable_problem
from llmdebate.formal.strategies import (
    BASIC_ESTIMATORS,
    PROVERS,
    EstimatorPolicy,
    OracleJudge,
    ProverPolicy,
    make_estimator,
    make_prover,
)
from llmdebate.formal.strategy_files import (
    TableEstimator,
    estimator_document,
    pbits,
    prover_document,
    write_document,
)
from llmdebate.formal.tables import Levels, fdot, levels_from_joint

TARGETS = ("completeness", "soundness")
UNITS = (
    "expected_payoff and bound_absolute: E[R_A] as is (absolute); every *_normalized key, "
    "bound_normalized and the exact replay's payoffs: divided by r^(d+1), r = ε(1-ρ)/4"
)
ANSWERS = ("wrong", "any")


@dataclass
class AttackSpec:
    """One attack: the setting, the side searched, and the search's budget."""

    target: str = "completeness"
    problem: str = "majority"
    variant: str = "figure2"
    depth: int = 1
    width: int = 5
    epsilon: float = 0.2
    rho: float = 0.5
    instances: int = 40
    seed: int = 0
    noise: float | None = None
    stable_only: bool | None = None  # None: completeness on stable instances, soundness on all
    prover: str | None = None  # completeness: attacked (honest); soundness: Algorithm 1's target
    estimator: str = "algorithm1"  # soundness: the fixed estimator
    answer: str = "wrong"
    uninformed: bool = False  # soundness: A's decisions may not depend on the instance
    delta: float = DEFAULT_DELTA
    budget: SearchBudget = field(default_factory=SearchBudget)

    @property
    def stable(self) -> bool:
        return self.target == "completeness" if self.stable_only is None else self.stable_only

    def setting(self) -> dict[str, Any]:
        """What a strategy file records so that a replay rebuilds the same game."""
        return {
            "problem": self.problem,
            "depth": self.depth,
            "width": self.width,
            "instances": self.instances,
            "seed": self.seed,
            "noise": self.noise,
            "variant": self.variant,
            "epsilon": self.epsilon,
            "rho": self.rho,
            "stable_only": self.stable,
        }

    def check(self) -> None:
        validated_config(self.epsilon, self.rho, self.depth, self.width, self.seed)
        choices = {
            "target": (self.target, TARGETS),
            "problem": (self.problem, PROBLEMS),
            "variant": (self.variant, VARIANTS),
            "answer": (self.answer, ANSWERS),
        }
        for flag, (val, allowed) in choices.items():
            if val not in allowed:
                raise ConfigError(f"--{flag} must be one of {', '.join(allowed)} (got {val!r})")
        if self.prover is not None and self.prover not in PROVERS:
            raise ConfigError(f"--prover must be one of {', '.join(PROVERS)} (got {self.prover!r})")
        ests = (*BASIC_ESTIMATORS, "algorithm1")
        if self.estimator not in ests:
            raise ConfigError(f"--estimator must be one of {', '.join(ests)}")
        if self.instances < 1:
            raise ConfigError(f"--instances must be >= 1 (got {self.instances})")
        if self.budget.evaluations < 1 or self.budget.population < 2:
            raise ConfigError("--budget must be >= 1 and --population >= 2")


def build_problem(spec: AttackSpec) -> TreeProblem:
    prob = make_problem(spec.problem, spec.depth, spec.width, spec.instances, spec.seed, spec.noise)
    return stable_problem(prob, spec.epsilon, spec.rho) if spec.stable else prob


class _Recorder(EstimatorPolicy):
    """Plays a :class:`SigmaEstimator` and writes every table it states into a table B."""

    def __init__(self, base: SigmaEstimator, table: TableEstimator):
        self.base, self.table, self.name = base, table, base.name

    def top(self, inst: np.ndarray) -> np.ndarray:
        return self.base.top(inst)

    def levels(self, inst: np.ndarray, k: int, node: np.ndarray, p: np.ndarray) -> Levels:
        joints = self.base.joint_for(inst, k, node, p)
        for i, nd, pp, row in zip(inst.tolist(), node.tolist(), p.tolist(), joints, strict=True):
            self.table.joints[(i, k, nd, pbits(pp))] = row
        return levels_from_joint(joints)


def _filler(found: SigmaEstimator) -> Fill:
    def fill(inst: int, k: int, node: int, p: float) -> np.ndarray:
        return np.asarray(found.joint_for(np.array([inst]), k, np.array([node]), np.array([p]))[0])

    return fill


def _exact(
    prob: TreeProblem, pr: ProverPolicy, est: EstimatorPolicy, spec: AttackSpec
) -> ExactResult:
    game = Game(prob, pr, est, OracleJudge(prob), spec.epsilon, spec.rho, spec.variant)
    return exact_prover_estimator(game)


def _summary(spec: AttackSpec, prob: TreeProblem, ex: ExactResult) -> dict[str, Any]:
    r = scoring.reward_ratio(spec.epsilon, spec.rho)
    pay = ex.mean(prob.weights)
    return {
        "target": spec.target,
        **spec.setting(),
        "instances_used": prob.n,
        "units": UNITS,
        "expected_payoff": pay,
        "normalized_payoff": float(scoring.normalized(pay, r, spec.depth)),
        "min_instance_normalized": float(scoring.normalized(ex.payoff.min(), r, spec.depth)),
        "max_instance_normalized": float(scoring.normalized(ex.payoff.max(), r, spec.depth)),
        "prover_accuracy": fdot(prob.weights, ex.accuracy),
    }


def rational_check(
    prob: TreeProblem,
    pr: ProverPolicy,
    est: EstimatorPolicy,
    spec: AttackSpec,
    bound: Fraction,
    below: bool,
    fill: Fill | None = None,
) -> dict[str, Any]:
    """The game re-evaluated in exact rational arithmetic, no tolerance (:mod:`.rational`):
    whether the found strategy breaks the bound (normalised units; ``below``: the break is
    a payoff below it, else above it), by how much, and how far A's decisions keep from the
    edges of its dead zone."""
    game = Game(prob, pr, est, OracleJudge(prob), spec.epsilon, spec.rho, spec.variant)
    rat = rational_payoffs(game, fill)
    norm = rat.normalized()
    value = min(norm) if below else rat.mean() / rat.unit
    gap = bound - value if below else value - bound
    return {
        "method": "fractions.Fraction, no tolerance (parameters and stated numbers read as "
        "the decimals they are written as)",
        "normalized_payoff": float(rat.mean() / rat.unit),
        "min_instance_normalized": float(min(norm)),
        "max_instance_normalized": float(max(norm)),
        "breaks": bool(gap > 0),
        "clears_bound_by": float(gap),
        "dead_zone_clearance": None if rat.clearance is None else float(rat.clearance),
        "first_index_ties": rat.ties,
        "unlisted_states": rat.unlisted,
    }


def completeness_attack(
    spec: AttackSpec, out: Path, on_step: Callable[[int, int], None] | None = None
) -> dict[str, Any]:
    prob = build_problem(spec)
    name = spec.prover or "honest"
    prover = make_prover(name, prob, spec.epsilon)
    t0 = time.perf_counter()
    search = EstimatorSearch(prob, prover, spec.epsilon, spec.rho, spec.variant, spec.budget)
    search.on_step = on_step
    found = search.run()
    table = TableEstimator(prob.width, found.p_top, name=f"attack[{out.name}]")
    _exact(prob, prover, _Recorder(found, table), spec)
    seconds = time.perf_counter() - t0
    ex = _exact(prob, prover, table, spec)
    res = _summary(spec, prob, ex)
    bound = 1.0 - spec.epsilon  # normalised
    r = scoring.reward_ratio(spec.epsilon, spec.rho)
    # near-ties of A's argmax may lead the exact evaluation to states the floats never
    # reached: B's tables there come from the same search and are added to the file
    exact = rational_check(
        prob, prover, table, spec, 1 - decimal(spec.epsilon), below=True, fill=_filler(found)
    )
    res.update(
        prover=name,
        estimator="searched",
        bound_normalized=bound,
        bound_absolute=scoring.completeness_bound(spec.epsilon, r, spec.depth),
        bound_statement="Lemma A.5: E[R_A] >= (1-ε)·r^(d+1) for every B, on stable instances",
        below_bound=exact["breaks"],
        exact=exact,
        search={
            "method": (
                "exact DP over (instance, node, σ_k) with a seeded evolutionary search for B's "
                "joint over the 2^q outcomes at each (structured proposals + mutations of the "
                "elite; correlated group laws whose marginals stay a margin inside A's dead "
                "zone, and shifted products just outside it, at every margin of a ladder, the "
                "search keeping the best); p_d from a 201-point grid and both sides of A's "
                "decision changes; "
                "a break is reported only if the exact rational re-evaluation confirms it"
            ),
            "margins": list(spec.budget.margins),
            "evaluations_per_state": spec.budget.evaluations,
            "population": spec.budget.population,
            "seed": spec.budget.seed,
            "states_searched": len(search.W),
            "tables_evaluated": search.evaluated,
        },
        seconds=round(seconds, 3),
    )
    meta = {
        "target": "completeness",
        "prover": name,
        "normalized_payoff": res["normalized_payoff"],
        "exact": exact,
    }
    write_document(out, estimator_document(table, spec.setting(), meta))
    res["strategy_file"] = str(out)
    res["replay"] = f"llmdebate formal --estimator-file {out} --prover {name} --json"
    return res


def fixed_estimator(
    spec: AttackSpec, prob: TreeProblem, given: EstimatorPolicy | None
) -> tuple[EstimatorPolicy, dict[str, Any]]:
    """The estimator a soundness attack plays against, and what it is."""
    if given is not None:
        return given, {"estimator": given.name}
    if spec.estimator != "algorithm1":
        return make_estimator(spec.estimator, prob), {"estimator": spec.estimator}
    target = spec.prover or "dishonest"
    pol = make_prover(target, prob, spec.epsilon)
    est, rep = algorithm1_estimator(
        prob, pol, spec.epsilon, spec.rho, delta=spec.delta, variant=spec.variant
    )
    game = Game(prob, pol, est, OracleJudge(prob), spec.epsilon, spec.rho, spec.variant)
    recheck, n_tests = largest_advantage(game)  # every test, outside the OGD loop
    info = {
        "estimator": f"algorithm1 (built against {target})",
        "algorithm1": {
            "delta": spec.delta,
            "delta_reached": rep.delta_reached,
            "steps": rep.steps,
            "converged": rep.converged,
            "recheck_max_advantage": recheck,
            "recheck_tests": n_tests,
        },
    }
    return est, info


def _as_table(est: Algorithm1Estimator, q: int) -> TableEstimator:
    table = TableEstimator(q, est.p_top, name="algorithm1")
    for (i, k, nd, pb), row in est.tables.items():
        table.joints[(i, k, nd, pb)] = np.asarray(row, dtype=np.float64)
    return table


def soundness_attack(
    spec: AttackSpec,
    out: Path,
    given: EstimatorPolicy | None = None,
    on_step: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """The best wrong-answer prover (uninformed with ``spec.uninformed``) against the fixed
    estimator of ``spec`` (or ``given``): its exact payoff against the soundness bound,
    rechecked in rational arithmetic; the prover written to ``out`` (and an estimator built
    here beside it), with the command that replays them."""
    prob = build_problem(spec)
    est, info = fixed_estimator(spec, prob, given)
    t0 = time.perf_counter()
    if isinstance(est, Algorithm1Estimator):
        est = _as_table(est, prob.width)
    search = ProverSearch(
        prob,
        est,
        spec.epsilon,
        spec.rho,
        spec.variant,
        spec.answer,
        uninformed=spec.uninformed,
        seed=spec.budget.seed,
    )
    search.on_step = on_step
    prover, dp_value, _ = search.solve()
    seconds = time.perf_counter() - t0
    ex = _exact(prob, prover, est, spec)
    res = _summary(spec, prob, ex)
    r = scoring.reward_ratio(spec.epsilon, spec.rho)
    delta = info.get("algorithm1", {}).get("delta_reached", 0.0)
    bound = scoring.soundness_bound(r, spec.depth, res["prover_accuracy"], delta)
    exact_bound = _exact_soundness_bound(spec, prob, ex, delta)
    exact = rational_check(prob, prover, est, spec, exact_bound, below=False)
    res.update(
        prover="best uninformed response" if spec.uninformed else "best response",
        answer=spec.answer,
        **info,
        bound_normalized=float(scoring.normalized(bound, r, spec.depth)),
        bound_absolute=bound,
        delta_in_bound=delta,
        bound_statement=(
            "Lemma A.4: E[R_A] < r^(d+1)·P[A correct] + (2d+1)·δ against Algorithm 1's B, "
            "δ = the δ it reached (delta_in_bound)"
            if "algorithm1" in info
            else "r^(d+1)·P[A correct] (what an indistinguishable B would hold A to; δ = 0)"
        ),
        above_bound=exact["breaks"],
        exact=exact,
        search=_search_record(spec, search, dp_value, r),
        seconds=round(seconds, 3),
    )
    meta = {"target": "soundness", "normalized_payoff": res["normalized_payoff"], "exact": exact}
    write_document(out, prover_document(prover, spec.setting(), meta))
    res["strategy_file"] = str(out)
    est_flag = f"--estimator {spec.estimator}"
    if isinstance(est, TableEstimator) and given is None:
        est_path = out.with_name(out.stem + ".estimator.json")
        write_document(est_path, estimator_document(est, spec.setting(), {"source": info}))
        res["estimator_file"] = str(est_path)
        est_flag = f"--estimator-file {est_path}"
    elif given is not None:
        est_flag = f"--estimator-file {given.name.split(' ')[0]}"
    res["replay"] = f"llmdebate formal --prover-file {out} {est_flag} --json"
    return res


def _exact_soundness_bound(
    spec: AttackSpec, prob: TreeProblem, ex: ExactResult, delta: float
) -> Fraction:
    """The soundness bound in rational arithmetic, normalised: P[A correct] + (2d+1)·δ /
    r^(d+1), every parameter read as the decimal it is written as."""
    r_exact = decimal(spec.epsilon) * (1 - decimal(spec.rho)) / 4
    acc = sum((decimal(a) for a in ex.accuracy.tolist()), Fraction(0)) / prob.n
    unit = r_exact ** (spec.depth + 1)
    return acc + (2 * spec.depth + 1) * decimal(delta) / unit  # normalised


def _search_record(
    spec: AttackSpec, search: ProverSearch, dp_value: float, r: float
) -> dict[str, Any]:
    """How the attacking prover was found: the method, its own (DP) payoff normalised, and
    whether it was exact or searched over fewer recursion indices (which, per round)."""
    return {
        "method": (
            "exact best response by dynamic programming over A's decision tree"
            + (
                " (decisions shared by every instance; leaves at the pooled P[O = 1])"
                if spec.uninformed
                else ""
            )
        ),
        "dp_normalized": float(scoring.normalized(dp_value, r, spec.depth)),
        "exact": not search.restricted,
        "restricted": [
            f"round {k}: {kept} of {spec.width} recursion indices (seed {spec.budget.seed})"
            for k, kept in search.restricted
        ],
    }


def run_attack(
    spec: AttackSpec,
    out: Path,
    estimator: EstimatorPolicy | None = None,
    on_step: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """The attack of ``spec``, its strategy written to ``out``; ``on_step`` is told the
    search's steps done and their number (instances solved, or rounds backed up)."""
    spec.check()
    if spec.target == "completeness":
        return completeness_attack(spec, out, on_step)
    return soundness_attack(spec, out, estimator, on_step)


def spec_dict(spec: AttackSpec) -> dict[str, Any]:
    return asdict(spec)
