"""The plan of a run: its debates, with their seats, as far as they are known.

Without a roster a run's debates are :func:`~llmdebate.experiment.jobs.make_jobs`'s, each
with the seats of the ``seats`` section. With one (``tournament.roster``, two or more
models), the debates of every protocol whose seats the roster fills are handed to the
protocol's seating (:func:`llmdebate.tournament.seating.seating_for`: every combination of
roster models, or a round-robin or Swiss schedule of pairs), and the plan runs what it
returns. Only a Swiss schedule grows as its rounds finish: :meth:`Plan.jobs` reads the run's
transcripts to know how far.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from llmdebate.data.loader import Item
from llmdebate.experiment.config import ExperimentConfig
from llmdebate.experiment.jobs import Job, make_jobs
from llmdebate.protocols.registry import get_protocol
from llmdebate.tournament.roster import static_seats
from llmdebate.tournament.seating import Seating, seating_for


class Plan:
    """The debates of a run, as far as they are known from the transcripts written so far."""

    def __init__(self, items: list[Item], config: ExperimentConfig) -> None:
        self.items = items
        self.config = config
        self.base = make_jobs(items, config)
        static = static_seats(config.seats)
        if static:
            self.base = [j.seated(static) for j in self.base]
        t = config.tournament
        ids = [it.id for it in items]
        self.seatings: dict[str, Seating | None] = {
            name: seating_for(get_protocol(name), t, ids, config.seed) if t.active else None
            for name in config.protocols
        }

    @property
    def grows(self) -> bool:
        """Whether debates are added as earlier ones finish (a Swiss schedule's rounds)."""
        return any(s is not None and s.grows for s in self.seatings.values())

    def jobs(self, transcripts: Path | None = None) -> list[Job]:
        """Every debate known now: all of them, or with a Swiss schedule those of the rounds
        drawn so far (read from ``transcripts``)."""
        if not self.config.tournament.active:
            return list(self.base)
        by_protocol: dict[str, list[Job]] = defaultdict(list)
        for j in self.base:
            by_protocol[j.spec.protocol].append(j)
        out: list[Job] = []
        for name, seating in self.seatings.items():
            base = by_protocol[name]
            out += base if seating is None else seating.debates(base, transcripts)
        return out
