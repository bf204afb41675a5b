"""What a topology is written as: :class:`Topology` (seats, the steps of a round, what the
protocol can do) and its :class:`Step`; :mod:`llmdebate.protocols.topology` runs it."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from llmdebate.errors import FieldError

Visible = Literal["public", "private", "turn"]
JUDGE = "judge"


class Step(BaseModel):
    """One step of a round: a speaker writes one slot."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    speaker: str
    """The seat that speaks (one of the topology's ``seats``)."""
    act: str
    """The template of its prompt (``<act>.j2``: shipped, the run's ``prompts_dir``, or a
    protocol package's)."""
    slot: str = "speech"
    """The name of what it writes (recorded as ``meta.slots``)."""
    visible: Visible = "public"
    """Who reads the slot: ``public`` (the judge and every later step), ``private`` (its
    author's later steps), ``turn`` (the later steps of the same round)."""
    position: Literal["assigned", "other", "none"] = "assigned"
    """The answer it argues for: the debate's assigned one (``pairs``: the first option
    shown), the other option, or none (the reply as written, no speech rules)."""


class Topology(BaseModel):
    """A speech protocol described as data (see :mod:`llmdebate.protocols.topology`)."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    title: str = ""
    """The protocol's name as a person judging is told it."""
    seats: dict[str, Literal["prover", "estimator"]] = Field(default_factory=dict)
    """Seat -> the role section (``prover``, ``estimator``) whose settings and, unless
    ``seats:`` gives it a model, model it plays with (none: the judge alone)."""
    turns: list[Step] = Field(default_factory=list)
    """The steps of one round, in order (none: the judge alone chooses, reading no
    transcript)."""
    judge: str = "consultancy_judge"
    """The template of the judge's choice between the two answers."""
    rank: int = 50
    """Place in a comparison (reports): lower first."""
    can: tuple[Literal["open_roles", "asks_questions", "pairs"], ...] = ()
    """What it can do beyond an assigned answer (capabilities of a speech protocol):
    ``open_roles`` (``prover.assignment: choose``: the first seat's model picks the answer),
    ``asks_questions`` (``judge.interactive``: the judge may ask after every round),
    ``pairs`` (every item in both orders, ``order-0`` / ``order-1``)."""
    audience: str = "the speakers"
    """Whom an interactive judge is told it hears (``a consultant``)."""
    follows_mode: bool = False
    """Whether the run's ``mode`` applies (``simultaneous``: the steps of a round read only
    the rounds before); its transcripts record ``mode``."""
    views: bool = False
    """The judge alone (no turns): on an item with a passage, one debate per judge view a
    run asks for (``judge.direct_passage``: variants ``blind``, the passage hidden, and
    ``expert``, shown)."""

    @model_validator(mode="after")
    def _speakers(self) -> Topology:
        if JUDGE in self.seats:
            raise FieldError(("seats", JUDGE), "the judge is not a seat")
        for i, step in enumerate(self.turns):
            if step.speaker not in self.seats:
                raise FieldError(
                    ("turns", i, "speaker"),
                    f"{step.speaker!r} is not a seat (seats: {', '.join(self.seats)})",
                )
        if "pairs" in self.can and len(self.seats) != 2:
            raise FieldError(("can",), "pairs needs two seats, the first defending the "
                             f"assigned answer and the second the other (seats: {len(self.seats)})")
        if self.turns:
            if self.views:
                raise FieldError(("views",), "only the judge alone (no turns) has views: a "
                                 "speech debate's judge view is judge.passage")
            return self
        speaking = {"seats": bool(self.seats), "can": bool(self.can),
                    "follows_mode": self.follows_mode}
        for field, given in speaking.items():
            if given:
                raise FieldError((field,), "a topology with no turns is the judge alone: "
                                 "no seat speaks")
        return self
