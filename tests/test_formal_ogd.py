"""Algorithm 1 (Appendix A.1): projection and termination with every |Adv_f| below δ."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llmdebate.formal.ogd import algorithm1_estimator, project_simplex
from llmdebate.formal.problems import make_problem
from llmdebate.formal.strategies import make_prover


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.floats(-3, 3), min_size=2, max_size=8))
def test_projection_is_the_closest_simplex_point(v: list[float]) -> None:
    x = np.array([v])
    p = project_simplex(x)[0]
    assert abs(p.sum() - 1) < 1e-9 and p.min() >= 0
    rng = np.random.default_rng(0)
    for other in rng.dirichlet(np.ones(len(v)), size=50):
        assert np.sum((x[0] - p) ** 2) <= np.sum((x[0] - other) ** 2) + 1e-9


def test_algorithm1_terminates_below_delta() -> None:
    prob = make_problem("interval", 1, 2, 8, 0)
    delta = 3e-3
    est, rep = algorithm1_estimator(
        prob, make_prover("dishonest", prob, 0.45), 0.45, 0.1, delta=delta
    )
    assert rep.converged and rep.steps > 0
    assert rep.delta_reached < delta
    p = est.top(np.arange(prob.n))
    assert np.all((p >= 0) & (p <= 1))
