"""One formal game: a problem, the strategies, and the protocol parameters."""

from __future__ import annotations

from dataclasses import dataclass

from llmdebate.core import scoring
from llmdebate.formal.problems.problem import TreeProblem
from llmdebate.formal.strategies import (
    EstimatorChallenger,
    EstimatorPolicy,
    NaiveProverPolicy,
    OracleJudge,
    ProverPolicy,
)


@dataclass
class Game:
    """Prover-estimator debate (Figure 2, or ``variant``) on every instance of ``problem``."""

    problem: TreeProblem
    prover: ProverPolicy
    estimator: EstimatorPolicy
    judge: OracleJudge
    epsilon: float
    rho: float
    variant: str = "figure2"

    @property
    def r(self) -> float:
        return scoring.reward_ratio(self.epsilon, self.rho)

    @property
    def depth(self) -> int:
        return self.problem.depth


@dataclass
class NaiveGame:
    """Naive recursive debate on every instance of ``problem``."""

    problem: TreeProblem
    prover: NaiveProverPolicy
    challenger: EstimatorChallenger
    judge: OracleJudge
