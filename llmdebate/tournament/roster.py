"""The seats and the debater roster of a run's config: which model holds which seat.

``seats`` gives a seat of every debate its own model (``seats: {debater_b: {model: ...}}``);
``tournament.roster`` names debater models, and its ``schedule`` says who debates whom
(:mod:`llmdebate.tournament.seating` seats it in the debates of the run). A seat's
name in the config is its transcript role with ``_`` for spaces, lower case: ``debater_a``,
``debater_b``, ``consultant``, ``prover``, ``estimator``. A seat plays with the settings of
its role's section (debaters and consultants speak as the ``prover``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from llmdebate.agents.factory import SEAT_ROLES, Team, seat_key
from llmdebate.agents.settings import ModelSettings
from llmdebate.core.schemas import Transcript
from llmdebate.protocols.families import RecursiveProtocol
from llmdebate.protocols.registry import get_protocol

ROSTER_NAME = re.compile(r"[A-Za-z0-9_.-]+")
ROSTER_PREFIX = "roster/"
SEAT_PREFIX = "seat/"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class TournamentSettings(_Section):
    roster: dict[str, ModelSettings] = Field(default_factory=dict)
    """Debater models by name (letters, digits, '.', '_', '-'), as JSON: {"a": {"model":
    "openai/gpt-4o"}, "b": {...}}. With two or more, every debater seat is filled from it:
    two-sided debate by the schedule, consultancy with every model on both sides of every
    item, prover-estimator and naive debate with every prover x estimator model."""
    schedule: Literal["round-robin", "swiss"] = "round-robin"
    """Two-sided debate: round-robin (every ordered pair on every item) or swiss (rounds of
    pairings where the ratings are uncertain, rated between rounds)."""
    self_play: bool = False
    """Round-robin: each model also debates itself."""
    swiss_rounds: int | None = Field(default=None, ge=1, le=64)
    """Swiss rounds (default: ceil(log2 of the roster size))."""
    items_per_pair: int = Field(default=1, ge=1)
    """Swiss: items each pair debates per round (each with the sides swapped)."""
    swiss_sigma: float = Field(default=1.0, gt=0.0)
    """Swiss: the rating uncertainty (logits) of every model before any debate."""
    provers: list[str] | None = None
    """Prover-estimator and naive debate: the roster models that sit as prover (default: all)."""
    estimators: list[str] | None = None
    """Prover-estimator and naive debate: the roster models that sit as estimator (default:
    all)."""

    @field_validator("roster")
    @classmethod
    def _names(cls, v: dict[str, ModelSettings]) -> dict[str, ModelSettings]:
        for name in v:
            if not ROSTER_NAME.fullmatch(name):
                raise ValueError(
                    f"roster name {name!r}: use letters, digits, '.', '_' and '-' only"
                )
        if len(v) == 1:
            raise ValueError("a roster needs at least two models (or none)")
        return v

    @property
    def active(self) -> bool:
        return len(self.roster) >= 2

    def sitting(self, seat: str) -> list[str]:
        """The roster models that take ``seat`` (every one, unless provers / estimators
        restrict the recursive protocols' seats)."""
        chosen = {"prover": self.provers, "estimator": self.estimators}.get(seat)
        return sorted(self.roster) if chosen is None else list(chosen)


def protocol_seats(protocols: Sequence[str]) -> dict[str, list[str]]:
    """Config seat key -> the run's protocols that have that seat."""
    out: dict[str, list[str]] = {}
    for name in protocols:
        for seat in get_protocol(name).seats:
            out.setdefault(seat_key(seat), []).append(name)
    return out


def _error(loc: tuple[str, ...], value: object, message: str) -> ValidationError:
    """An error located at ``loc`` under the field being validated (so that a config error
    names the key's line)."""
    detail = InitErrorDetails(type=PydanticCustomError("seat", message), loc=loc, input=value)
    return ValidationError.from_exception_data("seats", [detail])


def check_seats(protocols: Sequence[str], seats: Mapping[str, ModelSettings]) -> None:
    """A located error when a seat is none of the run's protocols' seats."""
    have = protocol_seats(protocols)
    for key in seats:
        if key not in have:
            known = ", ".join(sorted(have)) or "none"
            raise _error(
                (key,), key, f"no such seat in {', '.join(protocols)} (seats: {known})"
            )


def check_roster(
    protocols: Sequence[str], seats: Mapping[str, ModelSettings], tournament: TournamentSettings
) -> None:
    """A located error when the roster's provers / estimators are not in it, or a seat it
    fills is also given in ``seats``."""
    if not tournament.active:
        return
    for field in ("provers", "estimators"):
        for name in getattr(tournament, field) or []:
            if name not in tournament.roster:
                raise _error(
                    (field,), name,
                    f"{name!r} is not in the roster ({', '.join(sorted(tournament.roster))})",
                )
    filled = [seat_key(s) for p in protocols for s in roster_seats(p)]
    for key in seats:
        if key in filled:
            raise _error(
                ("roster",), key,
                f"the roster fills seat {key}, which seats also gives: remove one of the two",
            )


def roster_seats(protocol: str) -> tuple[str, ...]:
    """The seats of ``protocol`` a roster fills: a recursive protocol's every seat, a
    two-answer protocol's debaters (seats that play as the prover); a seat a protocol adds
    for another part (a critic) keeps the model the config gives it."""
    p = get_protocol(protocol)
    if isinstance(p, RecursiveProtocol):
        return p.seats
    return tuple(s for s in p.seats if SEAT_ROLES.get(s) == "prover")


def rostered(protocol: str) -> bool:
    """Whether a roster fills seats of ``protocol`` (:func:`roster_seats`)."""
    return bool(roster_seats(protocol))


def seat_models(
    seats: Mapping[str, ModelSettings], tournament: TournamentSettings
) -> dict[str, ModelSettings]:
    """The model settings of every seat and roster model, by their key in the run's models
    (``seat/<key>``, ``roster/<name>``)."""
    out = {f"{SEAT_PREFIX}{k}": s for k, s in seats.items()}
    if tournament.active:
        out.update({f"{ROSTER_PREFIX}{n}": s for n, s in tournament.roster.items()})
    return out


def static_seats(seats: Mapping[str, ModelSettings]) -> dict[str, str]:
    """Seat (transcript role) -> model key of the ``seats`` section."""
    by_key = {seat_key(s): s for s in SEAT_ROLES}
    return {by_key[k]: f"{SEAT_PREFIX}{k}" for k in seats if k in by_key}


def _side(t: Transcript, seat: str, gold: str, distractor: str) -> str | None:
    """``correct`` / ``incorrect``: the answer ``seat`` defended in ``t`` (None: none)."""
    if seat == "prover":
        claimed = t.meta.get("claimed_answer")
        positions = {str(claimed)} if claimed is not None else set()
    else:
        positions = {x.position for x in t.turns if x.role == seat and x.position}
    if len(positions) != 1:
        return None
    (answer,) = positions
    norm = answer.strip().lower()
    if norm == gold.strip().lower():
        return "correct"
    return "incorrect" if norm == distractor.strip().lower() else None


def record_seats(t: Transcript, team: Team, gold: str, distractor: str) -> None:
    """Record in ``t.meta["seats"]`` the model that held every debater seat
    of its protocol, its name (the roster's, else the model string) and the side it argued."""
    seats: dict[str, dict[str, str | None]] = {}
    for seat in get_protocol(t.protocol).seats:
        key = team.key_of(seat)
        model = team.models.get(key)
        if model is None:
            continue
        name = key.removeprefix(ROSTER_PREFIX) if key.startswith(ROSTER_PREFIX) else model.name
        seats[seat] = {"model": model.name, "name": name, "side": _side(t, seat, gold, distractor)}
    if seats:
        t.meta["seats"] = seats
