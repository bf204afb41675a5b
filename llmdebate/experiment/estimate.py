"""How large a run is before it starts: the model calls its debates will make, from the
protocol, the debate's depth and width and the rounds of speeches.

A recursive debate (prover-estimator, naive) makes about ``2 + depth × (best_of + width + 1)``
calls: the estimate of the claim at the start, then in each round the prover's decomposition
(``best_of`` candidates), the estimator's ``width`` estimates and the prover's direction, and
the judge's verdict on the leaf. A speech protocol makes ``rounds`` speeches per debater seat
and one verdict. The figure is an estimate (a debate that stops early makes fewer; beliefs
and retries add some) that is enough to tell a run of minutes from a run of days.

A run whose debates take more than :data:`LARGE_PER_DEBATE` calls each, or more than
:data:`LARGE_TOTAL` together, is refused with one line giving the estimate, unless
``--allow-large`` says it is meant.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from llmdebate.errors import UserError
from llmdebate.protocols.families import RecursiveProtocol
from llmdebate.protocols.registry import get_protocol

if TYPE_CHECKING:
    from llmdebate.experiment.config import ExperimentConfig
    from llmdebate.experiment.jobs import Job

LARGE_PER_DEBATE = 100
"""Model calls per debate above which a run asks for ``--allow-large``."""
LARGE_TOTAL = 10_000
"""Model calls of a run above which it asks for ``--allow-large``."""


@dataclass(frozen=True)
class Estimate:
    """The model calls a run's debates will make, about."""

    debates: int
    calls: int
    most_per_debate: int
    protocol: str
    """The protocol whose debates make the most calls each."""

    @property
    def large(self) -> bool:
        return self.most_per_debate > LARGE_PER_DEBATE or self.calls > LARGE_TOTAL


def calls_per_debate(protocol: str, config: ExperimentConfig) -> int:
    """About how many model calls one debate of ``protocol`` makes under ``config``."""
    p = get_protocol(protocol)
    if isinstance(p, RecursiveProtocol):
        d = config.debate
        return 2 + d.depth * (config.prover.best_of + d.width + 1)
    return config.rounds * len(p.seats) + 1


def estimate(jobs: Sequence[Job], config: ExperimentConfig) -> Estimate:
    """The estimate for ``jobs`` (a run's debates still to run)."""
    by_protocol = Counter(j.spec.protocol for j in jobs if j.problem is None)
    each = {name: calls_per_debate(name, config) for name in by_protocol}
    top = max(each, key=lambda n: each[n], default="")
    return Estimate(
        debates=sum(by_protocol.values()),
        calls=sum(each[n] * k for n, k in by_protocol.items()),
        most_per_debate=each.get(top, 0),
        protocol=top,
    )


def refuse_large(jobs: Sequence[Job], config: ExperimentConfig) -> None:
    """A :class:`~llmdebate.errors.UserError` giving the estimate when the run is large."""
    e = estimate(jobs, config)
    if not e.large:
        return
    d = config.debate
    shape = (
        f"depth {d.depth}, width {d.width}"
        if isinstance(get_protocol(e.protocol), RecursiveProtocol)
        else f"{config.rounds} rounds"
    )
    raise UserError(
        f"a large run: {e.debates} debates, about {e.calls:,} model calls ({e.protocol}: about "
        f"{e.most_per_debate:,} per debate at {shape}); give --allow-large to run it, or lower "
        "--debate-depth, --debate-width, --rounds or --dataset-limit"
    )
