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
(:meth:`~llmdebate.protocols.speeches.Speech.deliver`: scratchpad, word limits, quotes);
with ``position: none`` it is the model's reply as written. Its template gets the variables
of every speech (:meth:`~llmdebate.protocols.speeches.Speech.prompt`: ``transcript`` is
what this step may read), ``assigned`` and ``other``, and ``opponent_position`` (the answer the
step does not argue for).

A topology may declare what it can do beyond an assigned answer (``can``):

* ``open_roles``: with ``prover.assignment: choose`` (variant ``chosen``) its first seat's
  model picks the answer it defends;
* ``asks_questions``: an interactive judge
  (:class:`~llmdebate.protocols.interactive.JudgeTurns`, told it hears ``audience``) may ask
  after every round, reading what a judge reads;
* ``pairs``: every item is run in both orders, variants ``order-0`` (the assigned answer
  is the first option shown) and ``order-1`` (the options shown swapped), so an advantage
  of an option's place cancels across the pair; its transcripts record the answers the
  seats defend, in seat order (``meta.order``), and a tournament pairs models into them.

With ``follows_mode: true`` the run's ``mode`` applies: ``simultaneous``, the steps of a
round speak at once, each reading only the turns of the rounds before (``sequential``: a
step reads the round's earlier slots as its visibility allows); its transcripts record
``mode``, which a fork reads back.

A topology with no turns (and no seats) is the judge alone (:class:`JudgeAlone`): a choice
protocol whose judge reads no transcript; with ``views: true`` it runs one debate per judge
view of an item's passage (``judge.direct_passage``: ``blind``, ``expert``). The built-in
consultancy, two-sided debate and direct judge ship as topologies (``consultancy.yaml``,
``two_sided.yaml`` and ``direct.yaml`` beside this module); their schema is
:mod:`llmdebate.protocols.topology_schema`.

:func:`register_topology` registers a topology under its name (the config does it when it
is read); a config's topology's transcripts record it (``meta.topology``), so a report, a
re-scoring or an export of them needs no config (:func:`adopt`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any, ClassVar

import yaml
from pydantic import ValidationError

from llmdebate.agents.factory import SEAT_ROLES, Team
from llmdebate.core.schemas import Transcript, Turn
from llmdebate.errors import ProtocolViolation
from llmdebate.prompts import PromptError, Prompts
from llmdebate.protocols.common import (
    VIEW_VARIANTS,
    decided,
    judge_choice,
    judge_variables,
    view_of,
    with_quote_penalty,
)
from llmdebate.protocols.families import ChoiceProtocol, SpeechProtocol
from llmdebate.protocols.interactive import JudgeTurns
from llmdebate.protocols.interface import Additions, Capabilities
from llmdebate.protocols.open_roles import chosen_position
from llmdebate.protocols.registry import PROTOCOLS, RECORDED, register
from llmdebate.protocols.spec import DebateSpec, Log, ProtocolSettings
from llmdebate.protocols.speeches import Speech
from llmdebate.protocols.topology_schema import JUDGE, Step, Topology
from llmdebate.qa.passage import HIDDEN, JudgeView

ORDERS = ("order-0", "order-1")
"""The variants of a protocol that pairs: the options shown in the item's order, swapped."""

__all__ = ["JUDGE", "Step", "Topology", "TopologyProtocol", "adopt", "load_shipped",
           "register_topology", "template_problems"]


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


@dataclass(frozen=True)
class _Debate:
    """One debate of a topology as its steps see it."""

    spec: DebateSpec
    team: Team
    view: JudgeView
    shown: tuple[str, str]
    """The options in the order the speakers and the judge read them."""
    sides: tuple[str, str]
    """(the assigned answer, the other option)."""
    rounds: int
    log: Log


class FromTopology:
    """What a protocol run from a topology has: its topology, and whether its transcripts
    record it."""

    name: ClassVar[str]
    topology: ClassVar[Topology]
    records_topology: ClassVar[bool] = True
    """Whether its transcripts record the topology (a shipped one's need not)."""

    def recorded(self) -> dict[str, Any]:
        """What its transcripts record of the topology (``meta.slots``, ``meta.topology``;
        nothing for a shipped one's)."""
        if not self.records_topology:
            return {}
        return {
            "slots": [s.slot for s in self.topology.turns],
            "topology": {"name": self.name, **self.topology.model_dump(mode="json")},
        }


class JudgeAlone(FromTopology, ChoiceProtocol):
    """A topology with no turns: the judge alone chooses between the two answers, reading no
    transcript (direct judging); with ``views``, one debate per judge view of an item's
    passage."""

    shows_transcript = False

    def variants(
        self, assignment: str, index: int, views: Sequence[str] | None = None
    ) -> tuple[str, ...]:
        """One debate, or with ``views`` on an item with a passage one per judge view
        (``blind``, ``expert``)."""
        if views is None or not self.topology.views:
            return (self.name,)
        names: dict[str, str] = {mode: name for name, mode in VIEW_VARIANTS.items()}
        return tuple(names[v] for v in views) or (names[HIDDEN],)

    async def run(
        self, spec: DebateSpec, team: Team, settings: ProtocolSettings, log: Log
    ) -> Transcript:
        """One judge's decision between the item's gold answer and its distractor."""
        view = view_of(spec, team)
        decision = await judge_choice(
            team, self.judge_act, spec.shown, log, **judge_variables(spec.item.question, view)
        )
        return decided(
            spec, settings, agents={"judge": team.judge_name()}, turns=[], log=log,
            decision=decision, judge_round=0, options=spec.shown, passage=view.mode,
            **self.recorded(),
        )


class TopologyProtocol(FromTopology, SpeechProtocol):
    """A speech protocol run from its :attr:`topology`."""

    can = Capabilities(assigned=True)
    all_public: ClassVar[bool] = False
    """Whether every slot is public (each step and the judge read every turn)."""

    def variants(
        self, assignment: str, index: int, views: Sequence[str] | None = None
    ) -> tuple[str, ...]:
        """``order-0`` / ``order-1`` for a protocol that pairs (unless its first seat
        chooses), else the variants of an assigned answer."""
        if self.can.pairs and assignment != "choose":
            return ORDERS
        return super().variants(assignment, index, views)

    def seen(self, step: Step | None, turns: list[Turn], rnd: int = 0) -> list[Turn]:
        """The turns ``step`` in round ``rnd`` reads (``step`` None: what the judge reads,
        the public slots and its own questions)."""
        if self.all_public:
            return list(turns)
        steps = _written(self.topology.turns, turns)
        return [t for t, w in zip(turns, steps, strict=True) if readable(step, t, w, rnd)]

    def judge_reads(self, turns: list[Turn]) -> list[Turn]:
        return self.seen(None, turns)

    async def _step(self, step: Step, d: _Debate, rnd: int, readable: list[Turn]) -> Turn:
        """``step`` in round ``rnd``, reading what it may of ``readable``."""
        seen = self.seen(step, readable, rnd)
        position = {"assigned": d.sides[0], "other": d.sides[1]}.get(step.position)
        opponent = {"assigned": d.sides[1], "other": d.sides[0]}.get(step.position, "")
        speech = Speech(
            d.team, d.spec, d.view, role=step.speaker, rnd=rnd, rounds=d.rounds,
            position=position or "", seen=seen, options=d.shown, judge_act=self.judge_act,
            log=d.log,
        )
        msgs = speech.prompt(
            step.act, assigned=d.sides[0], other=d.sides[1], opponent_position=opponent
        )
        if position is not None:
            return await speech.deliver(msgs)
        out = await d.team.model_for(step.speaker).generate(
            msgs, d.team.speech_config(), role=step.speaker, act=f"argue round {rnd}",
            log=d.log,
        )
        return Turn(role=step.speaker, round=rnd, text=out.text.strip())

    async def _debate(
        self, spec: DebateSpec, team: Team, settings: ProtocolSettings, log: Log
    ) -> _Debate:
        """The debate's options as shown (variant ``order-1`` of a protocol that pairs swaps
        them) and its sides: the assigned answer (that pairs: the first option shown; with
        variant ``chosen`` the first seat's model picks it) and the other option."""
        swapped = self.can.pairs and spec.variant == ORDERS[1]
        shown = (spec.shown[1], spec.shown[0]) if swapped else spec.shown
        position = spec.answer
        if position is None and spec.variant == "chosen":
            position = await chosen_position(team, spec, self.seats[0], log)
        elif position is None and self.can.pairs and spec.variant in ORDERS:
            position = shown[0]
        elif position is None:
            raise ProtocolViolation(f"{self.name} needs an assigned answer")
        other = shown[1] if position == shown[0] else shown[0]
        return _Debate(spec, team, view_of(spec, team), shown, (position, other),
                       settings.rounds, log)

    async def run(
        self, spec: DebateSpec, team: Team, settings: ProtocolSettings, log: Log
    ) -> Transcript:
        d = await self._debate(spec, team, settings, log)
        at_once = self.topology.follows_mode and settings.mode == "simultaneous"
        turns: list[Turn] = []
        asks = JudgeTurns(team, spec, d.shown, settings.rounds, self.topology.audience)
        for rnd in range(1, settings.rounds + 1):
            before = len(turns)
            for step in self.topology.turns:
                turn = await self._step(step, d, rnd, turns[:before] if at_once else turns)
                turns.append(turn)
            shown = judge_variables(spec.item.question, d.view, self.judge_reads(turns))
            if not await asks.goes_on(rnd, turns, log, shown):
                break
        decision = asks.decision() or await judge_choice(
            team, self.judge_act, d.shown, log,
            **judge_variables(spec.item.question, d.view, self.judge_reads(turns)),
        )
        t = decided(
            spec,
            settings,
            agents={**{s: team.model_for(s).name for s in self.seats}, "judge": team.judge_name()},
            turns=turns,
            log=log,
            decision=decision,
            judge_round=asks.judge_round(),
            options=d.shown,
            **self._meta(d, settings, asks),
        )
        return with_quote_penalty(t, team)

    def _meta(self, d: _Debate, settings: ProtocolSettings, asks: JudgeTurns) -> dict[str, Any]:
        """What its transcripts record beyond every choice's: the seats' answers (``order``,
        a protocol that pairs), the rounds, the mode (one that follows it), the judge's view
        of the passage, the interactive judge's turns, and a config's topology."""
        meta: dict[str, Any] = {"order": list(d.sides)} if self.can.pairs else {}
        meta["rounds"] = settings.rounds
        if self.topology.follows_mode:
            meta["mode"] = settings.mode
        meta |= {"passage": d.view.mode, **asks.meta()}
        return meta | self.recorded()


SPEECH_VARIABLES = frozenset({
    "question", "context", "options", "position", "round", "rounds", "transcript",
    "max_words", "min_words", "quote_words", "scratchpad", "assigned", "other",
    "opponent_position",
})
"""What the template of a step is given (:meth:`~llmdebate.protocols.speeches.Speech.prompt`
and the step's ``assigned``, ``other`` and ``opponent_position``)."""
JUDGE_VARIABLES = frozenset({
    "question", "context", "hidden", "quoted", "options", "first", "transcript",
})
"""What the judge's template is given (:func:`~llmdebate.protocols.common.judge_variables`
and :func:`~llmdebate.protocols.common.model_choice`); the judge alone reads no
``transcript``."""


def template_problems(topology: Topology, prompts: Prompts) -> list[tuple[str, str]]:
    """What keeps ``topology``'s templates from rendering, found before any debate: (the
    field naming the template, ``turns.1.act`` or ``judge``; what is wrong) for a template
    that ``prompts`` lacks, does not parse, or reads a variable it is not given."""
    judged = JUDGE_VARIABLES if topology.turns else JUDGE_VARIABLES - {"transcript"}
    wanted = [(f"turns.{i}.act", s.act, SPEECH_VARIABLES) for i, s in enumerate(topology.turns)]
    out: list[tuple[str, str]] = []
    for field, act, given in [*wanted, ("judge", topology.judge, judged)]:
        try:
            unknown = sorted(prompts.variables(act) - given)
        except PromptError as exc:
            out.append((field, str(exc)))
            continue
        if unknown:
            out.append((field, f"template {act}.j2 reads {', '.join(unknown)}, which it is not "
                        f"given (it is given: {', '.join(sorted(given))})"))
    return out


def register_topology(name: str, topology: Topology, *, shipped: bool = False) -> None:
    """Register ``topology`` as protocol ``name`` (``shipped``: the package's own, whose
    transcripts need not record it): a speech protocol (:class:`TopologyProtocol`), or with
    no turns the judge alone (:class:`JudgeAlone`, a choice protocol). A ValueError if a
    protocol of that name is registered that is not the same topology (a built-in, a
    plugin's)."""
    if name in PROTOCOLS:
        held = PROTOCOLS.get(name)
        if not isinstance(held, FromTopology) or held.records_topology == shipped:
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
        "adds": Additions(seats=new, roles={s: s for s in new}, models=frozenset()),
        "__doc__": f"Protocol {name}, from a topology.",
        "__module__": __name__,
    }
    base: type[FromTopology] = JudgeAlone
    if topology.turns:
        base = TopologyProtocol
        attrs["fork_records"] = ("rounds", "mode") if topology.follows_mode else ("rounds",)
        attrs["can"] = Capabilities(assigned=True, **flags)
        attrs["all_public"] = all(s.visible == "public" for s in topology.turns)
    cls = type(f"Topology[{name}]", (base,), attrs)
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
