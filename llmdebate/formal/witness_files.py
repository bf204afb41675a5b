"""The shipped attack witnesses (``llmdebate/formal/witnesses/*.json``) and their exact check.

Each witness is a strategy file written by ``llmdebate attack`` (the setting is in the file;
the search's budget in :data:`WITNESSES`). :func:`check_witness` rebuilds the game from the
file alone and evaluates it in rational arithmetic with no tolerance (:mod:`.rational`):
the file is a break only if that evaluation is below (completeness) the bound. Regenerate
them with ``python -m llmdebate.formal.witness_files``; the search is seeded, so the files
come out the same on the same NumPy.
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Any

from llmdebate.formal.attack import AttackSpec, build_problem, run_attack
from llmdebate.formal.attack_estimator import SearchBudget
from llmdebate.formal.game import Game
from llmdebate.formal.rational import decimal, rational_payoffs
from llmdebate.formal.strategies import OracleJudge, make_prover
from llmdebate.formal.strategy_files import read_strategy

HERE = Path(__file__).resolve().parent / "witnesses"
BUDGET = SearchBudget(evaluations=1024, population=64, seed=0)
_MAJORITY: dict[str, Any] = {
    "target": "completeness",
    "problem": "majority",
    "epsilon": 0.2,
    "rho": 0.5,
    "instances": 40,
    "seed": 0,
    "prover": "honest",
    "budget": BUDGET,
}
WITNESSES: dict[str, AttackSpec] = {
    "completeness-marginal-d1-k5": AttackSpec(variant="marginal", depth=1, width=5, **_MAJORITY),
    "completeness-marginal-d1-k7": AttackSpec(variant="marginal", depth=1, width=7, **_MAJORITY),
    "completeness-marginal-d2-k5": AttackSpec(
        variant="marginal", depth=2, width=5, noise=0.05, **_MAJORITY
    ),
}


def spec_of(path: Path) -> AttackSpec:
    """The attack setting a strategy file records."""
    st = read_strategy(str(path), "estimator", "witness").setting
    keys = ("problem", "depth", "width", "instances", "seed", "noise", "variant")
    return AttackSpec(
        **{k: st[k] for k in keys},
        epsilon=float(st["epsilon"]),
        rho=float(st["rho"]),
        stable_only=bool(st["stable_only"]),
    )


def check_witness(path: Path, prover: str = "honest") -> dict[str, Any]:
    """A completeness witness re-evaluated in fractions from the file alone: the exact
    per-instance payoffs (normalised, units of r^(d+1)), the bound 1 - ε and the clearance."""
    sf = read_strategy(str(path), "estimator", "witness")
    spec = spec_of(path)
    prob = build_problem(spec)
    game = Game(
        prob,
        make_prover(prover, prob, spec.epsilon),
        sf.policy,  # type: ignore[arg-type]
        OracleJudge(prob),
        spec.epsilon,
        spec.rho,
        spec.variant,
    )
    rat = rational_payoffs(game)
    norm = rat.normalized()
    bound = 1 - decimal(spec.epsilon)
    return {
        "normalized": norm,
        "mean": sum(norm, Fraction(0)) / len(norm),
        "worst": min(norm),
        "bound": bound,
        "breaks": min(norm) < bound,
        "clearance": rat.clearance,
    }


def regenerate(out: Path = HERE) -> dict[str, dict[str, Any]]:
    """Run every witness's attack and write its file under ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    return {name: run_attack(spec, out / f"{name}.json") for name, spec in WITNESSES.items()}


def main() -> None:
    for name, res in regenerate().items():
        ex = res["exact"]
        print(
            f"{name}: mean {ex['normalized_payoff']:.6g}, worst {ex['min_instance_normalized']:.6g}"
            f" (bound {res['bound_normalized']:g}, normalised); breaks: {ex['breaks']}; "
            f"clearance {ex['dead_zone_clearance']:.3g}; search {res['seconds']} s"
        )
        print(json.dumps(res["search"]))


if __name__ == "__main__":
    main()
