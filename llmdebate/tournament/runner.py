"""The debates of a run with seats: the ``seats`` section and a roster's schedule, as jobs.

Without a roster a run's debates are :func:`~llmdebate.experiment.jobs.make_jobs`'s, each
with the seats of the ``seats`` section. With one (``tournament.roster``, two or more
models), every debate of a protocol with debater seats becomes one debate per seating:

* two-sided debate: a :func:`~llmdebate.tournament.schedule.round_robin` or Swiss schedule of
  (correct model, incorrect model) pairings; for every pairing the variant (``order-0`` /
  ``order-1``) is the one in which debater A defends its model's answer, and which of the two
  models speaks first (seat A) is drawn per item and pair from the run seed, each model
  speaking first in one of the two debates of a pair on an item;
* consultancy: every roster model as the consultant of every variant (so, paired, on both
  sides of every item);
* prover-estimator and naive debate: every prover model × estimator model
  (``tournament.provers`` × ``tournament.estimators``) on every variant.

The debate id is ``<protocol>/<item>/<variant>/<seat models joined by ~>``. A Swiss schedule is
played round by round inside one run: round r's pairings come from the ratings of the
debates of rounds before r
(:func:`llmdebate.tournament.ratings.persuasiveness`, Bradley–Terry, seeded bootstrap) read
back from the run's transcripts, so a resume derives the same rounds. A round is drawn
only once every debate of the rounds before it is complete; a round with failed debates ends
the run, and its resume retries them before drawing the next.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from llmdebate.data.loader import Item
from llmdebate.experiment.config import ExperimentConfig
from llmdebate.experiment.jobs import Job, item_key, make_jobs
from llmdebate.protocols.registry import get_protocol
from llmdebate.records.rundir import statuses
from llmdebate.records.transcripts import iter_transcripts
from llmdebate.tournament.ratings import persuasiveness
from llmdebate.tournament.roster import ROSTER_PREFIX, roster_seats, rostered, static_seats
from llmdebate.tournament.schedule import Pairing, round_robin, swiss_round, swiss_rounds
from llmdebate.tournament.seat_records import matches_of

SWISS_BOOT = 50
"""Bootstrap resamples of the ratings between Swiss rounds (their sd is the next σ)."""


def _seated(job: Job, seats: dict[str, str], suffix: str | None = None) -> Job:
    """``job`` with ``seats`` (seat -> model key) and, with ``suffix``, its id extended."""
    spec = job.spec
    if suffix is not None:
        spec = dataclasses.replace(spec, debate_id=f"{spec.debate_id}/{suffix}")
    merged = {**dict(job.seats), **seats}
    return Job(spec, job.problem, tuple(sorted(merged.items())))


def _key(name: str) -> str:
    return f"{ROSTER_PREFIX}{name}"


def first_speaker(seed: int, item: str, a: str, b: str) -> str:
    """Which of models ``a`` and ``b`` is debater A when ``a`` argues the correct answer of
    ``item``: drawn per item and unordered pair, so each speaks first once on an item."""
    lo, hi = sorted((a, b))
    bit = int(np.random.default_rng([seed, item_key(item), item_key(f"{lo}~{hi}")]).integers(2))
    return a if bit == 1 else b  # the same bit for (a, b) and (b, a): each first once


def two_sided_jobs(base: Sequence[Job], pairings: Iterable[Pairing], seed: int) -> list[Job]:
    """One two-sided debate per pairing: the variant in which debater A defends its model's
    answer (``base`` holds both variants of every item)."""
    by: dict[tuple[str, str], Job] = {(j.spec.item.id, j.spec.variant): j for j in base}
    out: list[Job] = []
    for p in pairings:
        assert p.correct is not None and p.incorrect is not None
        a = first_speaker(seed, p.item, p.correct, p.incorrect)
        b = p.incorrect if a == p.correct else p.correct
        chosen = by.get((p.item, "chosen"))
        if chosen is not None:  # an open debate: A picks its side as it runs
            out.append(_seated(chosen, {"debater A": _key(a), "debater B": _key(b)}, f"{a}~{b}"))
        for variant in ("order-0", "order-1"):
            job = by.get((p.item, variant))
            if job is None:
                continue
            spec = job.spec
            first = spec.shown[0] if variant == "order-0" else spec.shown[1]
            a_correct = first == spec.gold
            if a_correct == (a == p.correct):
                seats = {"debater A": _key(a), "debater B": _key(b)}
                out.append(_seated(job, seats, f"{a}~{b}"))
    return out


def seated_jobs(
    base: Sequence[Job], seats: Sequence[str], models: dict[str, list[str]]
) -> list[Job]:
    """Every job of ``base`` once per combination of ``models[seat]`` over ``seats``."""
    combos: list[list[str]] = [[]]
    for seat in seats:
        combos = [[*c, m] for c in combos for m in models[seat]]
    return [
        _seated(job, {s: _key(m) for s, m in zip(seats, combo, strict=True)}, "~".join(combo))
        for job in base
        for combo in combos
    ]


class Plan:
    """The debates of a run, as far as they are known from the transcripts written so far
    (only a Swiss schedule grows as its rounds finish)."""

    def __init__(self, items: list[Item], config: ExperimentConfig) -> None:
        self.items = items
        self.config = config
        self.base = make_jobs(items, config)
        static = static_seats(config.seats)
        if static:
            self.base = [_seated(j, static) for j in self.base]

    @property
    def swiss(self) -> bool:
        t = self.config.tournament
        return t.active and t.schedule == "swiss" and "two-sided" in self.config.protocols

    def jobs(self, transcripts: Path | None = None) -> list[Job]:
        """Every debate known now: all of them, or with a Swiss schedule those of the rounds
        drawn so far (read from ``transcripts``)."""
        t = self.config.tournament
        if not t.active:
            return list(self.base)
        by_protocol: dict[str, list[Job]] = defaultdict(list)
        for j in self.base:
            by_protocol[j.spec.protocol].append(j)
        out: list[Job] = []
        for protocol in self.config.protocols:
            out += self._protocol_jobs(protocol, by_protocol[protocol], transcripts)
        return out

    def _protocol_jobs(
        self, protocol: str, base: list[Job], transcripts: Path | None
    ) -> list[Job]:
        t = self.config.tournament
        if not rostered(protocol):
            return base
        seats = list(roster_seats(protocol))
        if get_protocol(protocol).recursive:
            return seated_jobs(base, seats, {s: t.sitting(s) for s in seats})
        if len(seats) == 1:
            return seated_jobs(base, seats, {seats[0]: t.sitting(seats[0])})
        names = sorted(t.roster)
        items = [it.id for it in self.items]
        if t.schedule == "round-robin":
            return two_sided_jobs(base, round_robin(names, items, self_play=t.self_play),
                                  self.config.seed)
        return self._swiss(base, names, items, transcripts)

    def _swiss(
        self, base: list[Job], names: list[str], items: list[str], transcripts: Path | None
    ) -> list[Job]:
        t = self.config.tournament
        done = statuses(transcripts) if transcripts is not None and transcripts.is_file() else {}
        rounds = t.swiss_rounds or swiss_rounds(len(names))
        ratings = {n: (0.0, t.swiss_sigma) for n in names}
        history: list[Pairing] = []
        out: list[Job] = []
        for r in range(rounds):
            pairings = swiss_round(
                ratings, items, round_index=r, seed=self.config.seed, history=history,
                items_per_pair=t.items_per_pair,
            )
            history += pairings
            out += two_sided_jobs(base, pairings, self.config.seed)
            if any(done.get(j.spec.debate_id) != "complete" for j in out):
                break
            ratings = self._ratings(names, {j.spec.debate_id for j in out}, transcripts)
        return out

    def _ratings(
        self, names: list[str], ids: set[str], transcripts: Path | None
    ) -> dict[str, tuple[float, float]]:
        """(μ, σ) of every model from the finished debates ``ids`` (σ: the bootstrap sd)."""
        assert transcripts is not None
        played = [x for x in iter_transcripts(transcripts) if x.id in ids]
        matches = matches_of(played)  # the debates of this Swiss schedule's protocol only
        table = persuasiveness(matches, seed=self.config.seed, n_boot=SWISS_BOOT)
        sigma = self.config.tournament.swiss_sigma
        out: dict[str, tuple[float, float]] = {}
        for n in names:
            try:
                r = table.get(n)
                out[n] = (r.value, max(r.sd, 1e-3))
            except KeyError:
                out[n] = (0.0, sigma)
        return out
