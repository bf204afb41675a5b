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

:func:`register_topology` registers a topology as a
:class:`~llmdebate.protocols.families.SpeechProtocol` under its name (the config does it
when it is read); its transcripts record the topology (``meta.topology``), so a report or
a re-scoring of them needs no config (:func:`adopt`).
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from llmdebate.agents.factory import Team
from llmdebate.core.schemas import Transcript, Turn
from llmdebate.errors import FieldError, ProtocolViolation
from llmdebate.protocols.common import (
    decided,
    judge_choice,
    judge_variables,
    recorded_view,
    view_of,
    with_quote_penalty,
)
from llmdebate.protocols.families import SpeechProtocol
from llmdebate.protocols.interface import Additions, Capabilities
from llmdebate.protocols.registry import PROTOCOLS, RECORDED, register
from llmdebate.protocols.spec import DebateSpec, Log, ProtocolSettings
from llmdebate.protocols.speeches import deliver, speech_prompt
from llmdebate.qa.passage import JudgeView

Visible = Literal["public", "private", "turn"]


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

    @model_validator(mode="after")
    def _speakers(self) -> Topology:
        for i, step in enumerate(self.turns):
            if step.speaker not in self.seats:
                raise FieldError(
                    ("turns", i, "speaker"),
                    f"{step.speaker!r} is not a seat (seats: {', '.join(self.seats)})",
                )
        return self


def readable(step: Step, turn: Turn, index: int, rnd: int, step_of: list[Step]) -> bool:
    """Whether ``step`` (in round ``rnd``) reads earlier turn number ``index`` (``turn``,
    written by ``step_of[index]``)."""
    written = step_of[index]
    if written.visible == "public":
        return True
    if written.visible == "private":
        return turn.role == step.speaker
    return turn.round == rnd


class TopologyProtocol(SpeechProtocol):
    """A speech protocol run from its :attr:`topology`."""

    topology: ClassVar[Topology]
    can = Capabilities(assigned=True)

    def public(self, turns: list[Turn]) -> list[Turn]:
        """The turns the judge reads: those of public slots (judge turns are never passed)."""
        steps = self.topology.turns
        return [
            t for i, t in enumerate(turns) if steps[i % len(steps)].visible == "public"
        ]

    def judge_prompt(self, t: Transcript) -> tuple[str, dict[str, Any]]:
        turns = [x for x in t.turns if x.role != "judge"]
        item = t.item or {}
        return self.judge_act, judge_variables(
            str(item.get("question", "")), recorded_view(t), self.public(turns)
        )

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
        every = [self.topology.turns[i % len(self.topology.turns)] for i in range(len(turns))]
        seen = [t for i, t in enumerate(turns) if readable(step, t, i, rnd, every)]
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

    async def run(
        self, spec: DebateSpec, team: Team, settings: ProtocolSettings, log: Log
    ) -> Transcript:
        if spec.answer is None:
            raise ProtocolViolation(f"{self.name} needs an assigned answer")
        sides = (spec.answer, spec.shown[1] if spec.answer == spec.shown[0] else spec.shown[0])
        view = view_of(spec, team)
        turns: list[Turn] = []
        for rnd in range(1, settings.rounds + 1):
            for step in self.topology.turns:
                turns.append(
                    await self._step(
                        step, spec, team, view, (rnd, settings.rounds), turns, sides, log
                    )
                )
        decision = await judge_choice(
            team, self.judge_act, spec.shown, log,
            **judge_variables(spec.item.question, view, self.public(turns)),
        )
        agents = {s: team.model_for(s).name for s in self.seats}
        t = decided(
            spec,
            settings,
            agents={**agents, "judge": team.judge_name()},
            turns=turns,
            log=log,
            decision=decision,
            judge_round=settings.rounds + 1,
            options=spec.shown,
            rounds=settings.rounds,
            passage=view.mode,
            slots=[s.slot for s in self.topology.turns],
            topology={"name": self.name, **self.topology.model_dump(mode="json")},
        )
        return with_quote_penalty(t, team)


def register_topology(name: str, topology: Topology) -> None:
    """Register ``topology`` as speech protocol ``name``: a ValueError if a protocol of
    that name is registered that is not the same topology (a built-in, a plugin's)."""
    if name in PROTOCOLS:
        held = PROTOCOLS.get(name)
        if not isinstance(held, TopologyProtocol):
            raise ValueError("a protocol of that name is registered already (not a topology)")
        if held.topology == topology:
            return
    attrs: dict[str, Any] = {
        "topology": topology,
        "title": topology.title or name,
        "rank": topology.rank,
        "seats": tuple(topology.seats),
        "judge_act": topology.judge,
        "adds": Additions(
            seats=dict(topology.seats), roles={s: s for s in topology.seats},
            models=frozenset(),
        ),
        "__doc__": f"Speech protocol {name}, from a topology.",
    }
    cls = type(f"Topology[{name}]", (TopologyProtocol,), attrs)
    register(name, replace=True)(cls)


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
