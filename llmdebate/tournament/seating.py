"""How a tournament seats its roster: which roster model holds which seat of each debate.

A seating is the strategy the run's plan (:class:`llmdebate.experiment.plan.Plan`) consumes:
given the debates of one protocol before their seats are filled, it returns the debates to
run, each with its seats filled from ``tournament.roster``. Which one a protocol gets is read
from what it declares (:func:`seating_for`), never from its name:

* :class:`EverySeating`: every combination of the roster models that sit in the roster's
  seats of the protocol (:func:`~llmdebate.tournament.roster.roster_seats`): a consultant
  seat gets every model on every variant (so, paired, both sides of every item); a
  recursive protocol every prover model × estimator model (``tournament.provers`` ×
  ``tournament.estimators``);
* :class:`RoundRobin` and :class:`Swiss`, for a protocol that pairs two debaters on opposite
  answers (:attr:`~llmdebate.protocols.interface.Capabilities.pairs`): a
  :func:`~llmdebate.tournament.schedule.round_robin` or Swiss schedule of (correct model,
  incorrect model) pairings; for every pairing the variant in which the first seat defends
  its model's answer (``order-0`` / ``order-1``: the first seat defends ``shown[0]`` /
  ``shown[1]``) is run, and which of the two models speaks first is drawn per item and pair
  from the run seed, each model speaking first in one of the two debates of a pair on an
  item. An open debate (variant ``chosen``) seats the pair as drawn; its first seat picks
  its side as it runs.

A seated debate's id is ``<protocol>/<item>/<variant>/<seat models joined by ~>``. A Swiss
schedule is played round by round inside one run: round r's pairings come from the ratings
of the debates of rounds before r (:func:`llmdebate.tournament.ratings.persuasiveness`,
Bradley–Terry, seeded bootstrap) read back from the run's transcripts, so a resume derives
the same rounds. A round is drawn only once every debate of the rounds before it is
complete; a round with failed debates ends the run, and its resume retries them before
drawing the next.

Nothing here knows how a run is made: a debate is anything with a ``spec`` that can be
:meth:`~Seatable.seated` (the plan's :class:`~llmdebate.experiment.jobs.Job`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar

import numpy as np

from llmdebate.data.loader import item_key
from llmdebate.protocols.interface import Protocol as DebateProtocol
from llmdebate.protocols.spec import DebateSpec
from llmdebate.records.rundir import statuses
from llmdebate.records.transcripts import iter_transcripts
from llmdebate.tournament.ratings import persuasiveness
from llmdebate.tournament.roster import ROSTER_PREFIX, TournamentSettings, roster_seats
from llmdebate.tournament.schedule import Pairing, round_robin, swiss_round, swiss_rounds
from llmdebate.tournament.seat_records import matches_of

SWISS_BOOT = 50
"""Bootstrap resamples of the ratings between Swiss rounds (their sd is the next σ)."""
ORDERS = ("order-0", "order-1")
"""The variants of a paired protocol's debate in which its first seat defends ``shown[0]``
and ``shown[1]``."""
CHOSEN = "chosen"


class Seatable(Protocol):
    """A debate whose seats a seating fills."""

    @property
    def spec(self) -> DebateSpec: ...

    def seated(self: S, seats: Mapping[str, str], suffix: str | None = None) -> S:
        """The same debate with ``seats`` (seat -> model key) and, with ``suffix``, its id
        extended by it."""
        ...


S = TypeVar("S", bound=Seatable)


def roster_key(name: str) -> str:
    """The model key of roster model ``name`` in a run's models."""
    return f"{ROSTER_PREFIX}{name}"


def first_speaker(seed: int, item: str, a: str, b: str) -> str:
    """Which of models ``a`` and ``b`` is the first seat when ``a`` argues the correct answer
    of ``item``: drawn per item and unordered pair, so each speaks first once on an item."""
    lo, hi = sorted((a, b))
    bit = int(np.random.default_rng([seed, item_key(item), item_key(f"{lo}~{hi}")]).integers(2))
    return a if bit == 1 else b  # the same bit for (a, b) and (b, a): each first once


class Seating:
    """A strategy that fills the roster's seats of one protocol's debates."""

    grows = False
    """Whether its debates are known only as earlier ones finish (a Swiss schedule)."""

    def debates(self, base: Sequence[S], transcripts: Path | None = None) -> list[S]:
        """The debates to run (as far as known from ``transcripts``), seats filled; each
        strategy says how."""
        raise NotImplementedError(f"{type(self).__name__}.debates: how the seats are filled")


@dataclass(frozen=True)
class EverySeating(Seating):
    """Every debate once per combination of ``models[seat]`` over ``seats``."""

    seats: tuple[str, ...]
    models: Mapping[str, Sequence[str]]

    def debates(self, base: Sequence[S], transcripts: Path | None = None) -> list[S]:
        combos: list[list[str]] = [[]]
        for seat in self.seats:
            combos = [[*c, m] for c in combos for m in self.models[seat]]
        return [
            debate.seated(
                {s: roster_key(m) for s, m in zip(self.seats, combo, strict=True)},
                "~".join(combo),
            )
            for debate in base
            for combo in combos
        ]


def paired(
    base: Sequence[S], seats: tuple[str, str], pairings: Iterable[Pairing], seed: int
) -> list[S]:
    """One debate per pairing: the variant in which the first seat defends its model's
    answer (``base`` holds both orders of every item, or its open debate)."""
    by: dict[tuple[str, str], S] = {(d.spec.item.id, d.spec.variant): d for d in base}
    first_seat, second_seat = seats
    out: list[S] = []
    for p in pairings:
        assert p.correct is not None and p.incorrect is not None
        a = first_speaker(seed, p.item, p.correct, p.incorrect)
        b = p.incorrect if a == p.correct else p.correct
        filled = {first_seat: roster_key(a), second_seat: roster_key(b)}
        chosen = by.get((p.item, CHOSEN))
        if chosen is not None:  # an open debate: the first seat picks its side as it runs
            out.append(chosen.seated(filled, f"{a}~{b}"))
        for k, variant in enumerate(ORDERS):
            debate = by.get((p.item, variant))
            if debate is None:
                continue
            a_correct = debate.spec.shown[k] == debate.spec.gold
            if a_correct == (a == p.correct):
                out.append(debate.seated(filled, f"{a}~{b}"))
    return out


@dataclass(frozen=True)
class RoundRobin(Seating):
    """Every ordered pair of roster models on every item (each model against itself too
    with ``self_play``)."""

    seats: tuple[str, str]
    names: tuple[str, ...]
    items: tuple[str, ...]
    seed: int
    self_play: bool = False

    def debates(self, base: Sequence[S], transcripts: Path | None = None) -> list[S]:
        pairings = round_robin(self.names, self.items, self_play=self.self_play)
        return paired(base, self.seats, pairings, self.seed)


@dataclass(frozen=True)
class Swiss(Seating):
    """Rounds of pairings where the ratings are uncertain, rated between rounds from the
    transcripts written so far."""

    seats: tuple[str, str]
    names: tuple[str, ...]
    items: tuple[str, ...]
    seed: int
    settings: TournamentSettings
    grows = True

    def debates(self, base: Sequence[S], transcripts: Path | None = None) -> list[S]:
        t = self.settings
        done = statuses(transcripts) if transcripts is not None and transcripts.is_file() else {}
        rounds = t.swiss_rounds or swiss_rounds(len(self.names))
        ratings = {n: (0.0, t.swiss_sigma) for n in self.names}
        history: list[Pairing] = []
        out: list[S] = []
        for r in range(rounds):
            pairings = swiss_round(
                ratings, self.items, round_index=r, seed=self.seed, history=history,
                items_per_pair=t.items_per_pair,
            )
            history += pairings
            out += paired(base, self.seats, pairings, self.seed)
            if any(done.get(d.spec.debate_id) != "complete" for d in out):
                break
            assert transcripts is not None
            ratings = self._ratings({d.spec.debate_id for d in out}, transcripts)
        return out

    def _ratings(self, ids: set[str], transcripts: Path) -> dict[str, tuple[float, float]]:
        """(μ, σ) of every model from the finished debates ``ids`` (σ: the bootstrap sd)."""
        played = [x for x in iter_transcripts(transcripts) if x.id in ids]
        matches = matches_of(played)  # the debates of this Swiss schedule's protocol only
        table = persuasiveness(matches, seed=self.seed, n_boot=SWISS_BOOT)
        out: dict[str, tuple[float, float]] = {}
        for n in self.names:
            try:
                r = table.get(n)
                out[n] = (r.value, max(r.sd, 1e-3))
            except KeyError:
                out[n] = (0.0, self.settings.swiss_sigma)
        return out


def seating_for(
    protocol: DebateProtocol, settings: TournamentSettings, items: Sequence[str], seed: int
) -> Seating | None:
    """How the roster of ``settings`` seats the debates of ``protocol`` (None: it fills none
    of its seats)."""
    seats = roster_seats(protocol.name)
    if not seats:
        return None
    if not protocol.can.pairs:
        return EverySeating(seats, {s: settings.sitting(s) for s in seats})
    first, second = seats
    names = tuple(sorted(settings.roster))
    if settings.schedule == "round-robin":
        return RoundRobin((first, second), names, tuple(items), seed, settings.self_play)
    return Swiss((first, second), names, tuple(items), seed, settings)
