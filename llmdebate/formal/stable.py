"""The instances on which Lemma A.5 applies: every decomposition (ε,ρ)-stable at the truth."""

from __future__ import annotations

import numpy as np

from llmdebate.core.rules import CondProbs, stability
from llmdebate.errors import ConfigError
from llmdebate.formal.problems.problem import TreeProblem


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


def stable_problem(problem: TreeProblem, epsilon: float, rho: float) -> TreeProblem:
    """``problem`` restricted to its stable instances; an error if there is none."""
    idx = stable_instances(problem, epsilon, rho)
    if len(idx) == 0:
        raise ConfigError(
            f"no instance of {problem.name} (d={problem.depth}, q={problem.width}) is "
            f"(ε,ρ)-stable at every node for ε={epsilon}, ρ={rho}: drop --stable-only"
        )
    return subset(problem, idx)
