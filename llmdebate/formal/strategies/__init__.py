"""Built-in formal strategies (vectorised policies) and their async agent adapters."""

from __future__ import annotations

from llmdebate.errors import ConfigError
from llmdebate.formal.problems.problem import TreeProblem
from llmdebate.formal.strategies.estimators import (
    Adversarial,
    CalibratedIgnorant,
    EstimatorPolicy,
    Omniscient,
)
from llmdebate.formal.strategies.judges import OracleJudge
from llmdebate.formal.strategies.naive import (
    EstimatorChallenger,
    NaiveProverPolicy,
    naive_dishonest,
    naive_honest,
)
from llmdebate.formal.strategies.provers import (
    LastIndexProver,
    ProverPolicy,
    RandomProver,
    dishonest,
    honest,
    honest_no_dead_zone,
)

PROVERS = ("honest", "dishonest", "random", "last-index", "honest-no-dead-zone")
NAIVE_PROVERS = ("honest", "dishonest")
ESTIMATORS = ("omniscient", "calibrated-ignorant", "adversarial", "algorithm1")
BASIC_ESTIMATORS = ESTIMATORS[:3]

__all__ = [
    "BASIC_ESTIMATORS",
    "ESTIMATORS",
    "NAIVE_PROVERS",
    "PROVERS",
    "EstimatorChallenger",
    "EstimatorPolicy",
    "NaiveProverPolicy",
    "OracleJudge",
    "ProverPolicy",
    "make_estimator",
    "make_naive_prover",
    "make_prover",
]


def make_prover(name: str, problem: TreeProblem, epsilon: float) -> ProverPolicy:
    if name == "honest":
        return honest(problem, epsilon)
    if name == "dishonest":
        return dishonest(problem, epsilon)
    if name == "honest-no-dead-zone":
        return honest_no_dead_zone(problem, epsilon)
    if name == "random":
        return RandomProver(problem)
    if name == "last-index":
        return LastIndexProver(problem)
    raise ConfigError(f"prover must be one of {', '.join(PROVERS)} (got {name!r})")


def make_naive_prover(name: str, problem: TreeProblem) -> NaiveProverPolicy:
    if name == "honest":
        return naive_honest(problem)
    if name == "dishonest":
        return naive_dishonest(problem)
    raise ConfigError(
        f"prover for naive-recursive debate must be one of {', '.join(NAIVE_PROVERS)} "
        f"(got {name!r})"
    )


def make_estimator(name: str, problem: TreeProblem) -> EstimatorPolicy:
    """A built-in estimator (``algorithm1`` is built against a prover: see formal.ogd)."""
    if name == "omniscient":
        return Omniscient(problem)
    if name == "calibrated-ignorant":
        return CalibratedIgnorant(problem)
    if name == "adversarial":
        return Adversarial(problem)
    raise ConfigError(f"estimator must be one of {', '.join(ESTIMATORS)} (got {name!r})")
