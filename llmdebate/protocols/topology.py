"""Speech protocols as data: a topology in the config, run by one protocol class.

A run's config may describe speech protocols under ``topologies``, each by name::

    topologies:
      proposer-critic:
        title: Proposer and critic
        seats: {proposer: prover, critic: prover}   # seat -> the role section it plays as
        judge: consultancy_judge                    # the judge's template
        turns:                                      # one round: these steps, in order
          - {speaker: proposer, slot: argument, act: consultancy_consultant}
          - {speaker: critic, slot: critique, act: critic, position: none}

Every round runs the steps in order; a step is one call of its speaker's model (act
``argue round r``) on its template, and writes one slot, recorded as a turn of role =
the speaker. Who reads a slot is its ``visible``:

* ``public``: the judge and every later step;
* ``private``: only its author's later steps (never the judge);
* ``turn``: the later steps of the same round (never the judge, nor a later round).

A step with a ``position`` (``assigned``: the debate's assigned answer; ``other``: the
other option) is a speech under the run's speech rules
(:func:`~llmdebate.protocols.speeches.deliver`: scratchpad, word limits, quotes); with
``position: none`` it is the model's reply as written. Its template gets the variables of
every speech (:func:`~llmdebate.protocols.speeches.speech_prompt`: ``transcript`` is what
this step may read), and ``assigned`` and ``other``.

A topology may declare ``can: [open_roles, asks_questions]``: with variant ``chosen`` its
first seat's model picks the answer it defends; an interactive judge
(:class:`~llmdebate.protocols.interactive.JudgeTurns`, told it hears ``audience``) may ask
after every round, reading what a judge reads. The built-in consultancy ships as such a
topology (``consultancy.yaml`` beside this module).

:func:`register_topology` registers a topology as a
:class:`~llmdebate.protocols.families.SpeechProtocol` under its name (the config does it
when it is read); a config's topology's transcripts record it (``meta.topology``), so a
report or a re-scoring of them needs no config (:func:`adopt`).
"""

from __future__ import annotations

from importlib import resources
from typing import Any, ClassVar, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from llmdebate.agents.factory import SEAT_ROLES, Team
from llmdebate.core.schemas import Transcript, Turn
from llmdebate.errors import FieldError, ProtocolViolation
from llmdebate.protocols.common import (
    decided,
    judge_choice,
    judge_variables,
    view_of,
    with_quote_penalty,
)
from llmdebate.protocols.families import SpeechProtocol
from llmdebate.protocols.interactive import JudgeTurns
from llmdebate.protocols.interface import Additions, Capabilities
from llmdebate.protocols.open_roles import chosen_position
from llmdebate.protocols.registry import PROTOCOLS, RECORDED, register
from llmdebate.protocols.spec import DebateSpec, Log, ProtocolSettings
from llmdebate.protocols.speeches import deliver, speech_prompt
from llmdebate.qa.passage import JudgeView

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
    """The answer it argues for: the debate's assigned one, the other option, or none (the
    reply as written, no speech rules)."""


class Topology(BaseModel):
    """A speech protocol described as data (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    title: str = ""
    """The protocol's name as a person judging is told it."""
    seats: dict[str, Literal["prover", "estimator"]] = Field(min_length=1)
    """Seat -> the role section (``prover``, ``estimator``) whose settings and, unless
    ``seats:`` gives it a model, model it plays with."""
    turns: list[Step] = Field(min_length=1)
    """The steps of one round, in order."""
    judge: str = "consultancy_judge"
    """The template of the judge's choice between the two answers."""
    rank: int = 50
    """Place in a comparison (reports): lower first."""
    can: tuple[Literal["open_roles", "asks_questions"], ...] = ()
    """What it can do beyond an assigned answer (capabilities of a speech protocol):
    ``open_roles`` (``prover.assignment: choose``: the first seat's model picks the answer),
    ``asks_questions`` (``judge.interactive``: the judge may ask after every round)."""
    audience: str = "the speakers"
    """Whom an interactive judge is told it hears (``a consultant``)."""

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
        return self


def _written(steps: list[Step], turns: list[Turn]) -> list[Step | None]:
    """The step that wrote each turn (None: a judge's question after a round)."""
    out: list[Step | None] = []
    n = 0
    for t in turns:
        if t.role == JUDGE:
            out.append(None)
        else:
            out.append(steps[n % len(steps)])
            n += 1
    return out


def readable(step: Step | None, turn: Turn, written: Step | None, rnd: int) -> bool:
    """Whether ``step`` in round ``rnd`` (None: the judge) reads ``turn``, which ``written``
    wrote (None: a judge's question, read by all)."""
    if written is None or written.visible == "public":
        return True
    if step is None:
        return False
    if written.visible == "private":
        return turn.role == step.speaker
    return turn.round == rnd


class TopologyProtocol(SpeechProtocol):
    """A speech protocol run from its :attr:`topology`."""

    topology: ClassVar[Topology]
    records_topology: ClassVar[bool] = True
    """Whether its transcripts record the topology (a shipped one's need not)."""
    can = Capabilities(assigned=True)

    def seen(self, step: Step | None, turns: list[Turn], rnd: int = 0) -> list[Turn]:
        """The turns ``step`` in round ``rnd`` reads (``step`` None: what the judge reads,
        the public slots and its own questions)."""
        steps = _written(self.topology.turns, turns)
        return [t for t, w in zip(turns, steps, strict=True) if readable(step, t, w, rnd)]

    def judge_reads(self, turns: list[Turn]) -> list[Turn]:
        return self.seen(None, turns)

    async def _step(
        self,
        step: Step,
        spec: DebateSpec,
        team: Team,
        view: JudgeView,
        rounds: tuple[int, int],
        turns: list[Turn],
        sides: tuple[str, str],
        log: Log,
    ) -> Turn:
        rnd, total = rounds
        seen = self.seen(step, turns, rnd)
        position = {"assigned": sides[0], "other": sides[1]}.get(step.position)
        msgs = speech_prompt(
            team, spec, view, step.act, options=spec.shown, position=position or "",
            rnd=rnd, rounds=total, seen=seen, assigned=sides[0], other=sides[1],
        )
        if position is not None:
            return await deliver(
                team, spec, view, msgs, role=step.speaker, position=position, rnd=rnd,
                seen=seen, options=spec.shown, judge_act=self.judge_act, log=log,
            )
        out = await team.model_for(step.speaker).generate(
            msgs, team.speech_config(), role=step.speaker, act=f"argue round {rnd}", log=log
        )
        return Turn(role=step.speaker, round=rnd, text=out.text.strip())

    async def _sides(self, spec: DebateSpec, team: Team, log: Log) -> tuple[str, str]:
        """(the assigned answer, the other option); with variant ``chosen`` the first seat's
        model picks the answer."""
        position = spec.answer
        if position is None:
            if spec.variant != "chosen":
                raise ProtocolViolation(f"{self.name} needs an assigned answer")
            position = await chosen_position(team, spec, self.seats[0], log)
        return position, spec.shown[1] if position == spec.shown[0] else spec.shown[0]

    async def run(
        self, spec: DebateSpec, team: Team, settings: ProtocolSettings, log: Log
    ) -> Transcript:
        sides = await self._sides(spec, team, log)
        agents = {s: team.model_for(s).name for s in self.seats}
        view = view_of(spec, team)
        turns: list[Turn] = []
        asks = JudgeTurns(team, spec, spec.shown, settings.rounds, self.topology.audience)
        for rnd in range(1, settings.rounds + 1):
            for step in self.topology.turns:
                turns.append(
                    await self._step(
                        step, spec, team, view, (rnd, settings.rounds), turns, sides, log
                    )
                )
            shown = judge_variables(spec.item.question, view, self.judge_reads(turns))
            if not await asks.goes_on(rnd, turns, log, shown):
                break
        decision = asks.decision() or await judge_choice(
            team, self.judge_act, spec.shown, log,
            **judge_variables(spec.item.question, view, self.judge_reads(turns)),
        )
        extra: dict[str, Any] = {}
        if self.records_topology:
            extra = {
                "slots": [s.slot for s in self.topology.turns],
                "topology": {"name": self.name, **self.topology.model_dump(mode="json")},
            }
        t = decided(
            spec,
            settings,
            agents={**agents, "judge": team.judge_name()},
            turns=turns,
            log=log,
            decision=decision,
            judge_round=asks.judge_round(),
            options=spec.shown,
            rounds=settings.rounds,
            passage=view.mode,
            **asks.meta(),
            **extra,
        )
        return with_quote_penalty(t, team)


def register_topology(name: str, topology: Topology, *, shipped: bool = False) -> None:
    """Register ``topology`` as speech protocol ``name`` (``shipped``: the package's own,
    whose transcripts need not record it): a ValueError if a protocol of that name is
    registered that is not the same topology (a built-in, a plugin's)."""
    if name in PROTOCOLS:
        held = PROTOCOLS.get(name)
        if not isinstance(held, TopologyProtocol) or held.records_topology == shipped:
            raise ValueError("a protocol of that name is registered already (a built-in or a "
                             "plugin's)")
        if held.topology == topology:
            return
    new = {s: r for s, r in topology.seats.items() if s not in SEAT_ROLES}
    flags = {flag: True for flag in topology.can}
    attrs: dict[str, Any] = {
        "topology": topology,
        "records_topology": not shipped,
        "title": topology.title or name,
        "rank": topology.rank,
        "seats": tuple(topology.seats),
        "judge_act": topology.judge,
        "can": Capabilities(assigned=True, **flags),
        "adds": Additions(seats=new, roles={s: s for s in new}, models=frozenset()),
        "__doc__": f"Speech protocol {name}, from a topology.",
        "__module__": __name__,
    }
    cls = type(f"Topology[{name}]", (TopologyProtocol,), attrs)
    register(name, replace=True)(cls)


def load_shipped(name: str) -> Topology:
    """The topology the package ships as ``protocols/<name>.yaml``."""
    text = (resources.files(__package__ or "llmdebate.protocols") / f"{name}.yaml").read_text(
        encoding="utf-8"
    )
    return Topology.model_validate(yaml.safe_load(text))


def adopt(t: Transcript) -> None:
    """Register the topology a transcript records (``meta.topology``) if its protocol is
    not registered: a report or a re-scoring reads it without the run's config."""
    recorded = t.meta.get("topology")
    if str(t.protocol) in PROTOCOLS or not isinstance(recorded, dict):
        return
    spec = {k: v for k, v in recorded.items() if k != "name"}
    try:
        register_topology(str(t.protocol), Topology.model_validate(spec))
    except (ValidationError, ValueError) as exc:
        raise ProtocolViolation(f"debate {t.id}: its recorded topology: {exc}") from None


RECORDED.append(adopt)
