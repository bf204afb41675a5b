"""Problem families with computable truth at every node, and a factory by name."""

from __future__ import annotations

from llmdebate.errors import ConfigError
from llmdebate.formal.problems.circuit import make_circuit
from llmdebate.formal.problems.interval import make_interval
from llmdebate.formal.problems.majority import make_majority
from llmdebate.formal.problems.problem import TreeProblem, believed_values

PROBLEMS = ("interval", "circuit", "majority")

__all__ = ["PROBLEMS", "TreeProblem", "believed_values", "make_problem"]


def make_problem(
    name: str, depth: int, width: int, instances: int, seed: int, noise: float | None = None
) -> TreeProblem:
    """Build a problem by name; ``noise`` is the judge's (circuit) or evidence's (majority) η."""
    if name == "interval":
        if noise:
            raise ConfigError("noise is not defined for the interval problem (trial division)")
        return make_interval(depth, width, instances, seed)
    if name == "circuit":
        return make_circuit(depth, width, instances, seed, noise=noise or 0.0)
    if name == "majority":
        return make_majority(depth, width, instances, seed, noise=0.1 if noise is None else noise)
    raise ConfigError(f"problem must be one of {', '.join(PROBLEMS)} (got {name!r})")
