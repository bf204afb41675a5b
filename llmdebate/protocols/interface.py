"""What the system asks of every protocol: the :class:`Protocol` base, what it declares.

A protocol is one module: a subclass of one family (:mod:`llmdebate.protocols.families`:
:class:`~llmdebate.protocols.families.RecursiveProtocol`,
:class:`~llmdebate.protocols.families.ChoiceProtocol`, or the choice family's
:class:`~llmdebate.protocols.families.SpeechProtocol`) registered in
:data:`llmdebate.protocols.registry.PROTOCOLS` under its name
(:func:`llmdebate.protocols.registry.register`). Everything outside :mod:`llmdebate.protocols`
looks a protocol up there (:func:`llmdebate.protocols.registry.protocol_of`) and reads what it
declares; no module names a protocol.

The base carries what every protocol has, twelve members:

* who it is: :attr:`Protocol.name`, :attr:`Protocol.family`, :attr:`Protocol.title`,
  :attr:`Protocol.rank`;
* what it declares: its debater seats (:attr:`Protocol.seats`), what it adds to the package
  (:attr:`Protocol.adds`: new seats' role sections, exported roles, templates, the role
  models it asks for) and what it can do (:attr:`Protocol.can`, typed
  :class:`Capabilities`, read by config and tournament code: never its name);
* its hooks, in the order a debate meets them: :meth:`Protocol.variants` (the debates of an
  item), :meth:`Protocol.run`, :meth:`Protocol.complete` (a deferred judge's ruling),
  :meth:`Protocol.payoff` (reports) and :meth:`Protocol.injectable` (online RL).

Members of one family live on it: the recursive family's rewards (``reward_scheme``, the
expected payoff, the estimator's calibration point), the choice family's judge prompt, the
speech family's ``fork_records``. Running one debate is
:func:`llmdebate.protocols.families.play`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from types import MappingProxyType
from typing import ClassVar
from typing import Protocol as TypingProtocol

from llmdebate.agents.factory import Team
from llmdebate.core import scoring
from llmdebate.core.schemas import Ruling as VerdictRuling
from llmdebate.core.schemas import Transcript
from llmdebate.protocols.spec import DebateSpec, Log, ProtocolSettings


class Family(Enum):
    """How a protocol's debate ends, and so which shared machinery its transcripts fit."""

    RECURSIVE = "recursive"
    """Rounds of claims down to a leaf claim the judge rules on (True / False, with
    P[O = 1]); a deferred judge completes it with a verdict; the prover's payoff is in
    ``Transcript.total`` (:class:`llmdebate.protocols.families.RecursiveProtocol`)."""
    CHOICE = "two-answer"
    """The judge chooses between the item's gold answer and its distractor
    (``meta.options``); a deferred judge completes it with P(first option)
    (:class:`llmdebate.protocols.families.ChoiceProtocol`)."""


class DecisionRow(TypingProtocol):
    """The fields of a decision row that say whether a reply can be injected into it."""

    @property
    def speaker(self) -> str: ...
    @property
    def role(self) -> str: ...
    @property
    def act(self) -> str: ...
    @property
    def call_act(self) -> str | None: ...
    @property
    def source(self) -> str: ...
    @property
    def round_k(self) -> int | None: ...


def assignment_variants(assignment: str, index: int) -> tuple[str, ...]:
    """The debates of item number ``index`` of a protocol with an assigned answer."""
    if assignment == "paired":
        return ("honest", "dishonest")
    if assignment == "alternate":
        return ("honest",) if index % 2 == 0 else ("dishonest",)
    if assignment == "choose":
        return ("chosen",)
    return (assignment,)


@dataclass(frozen=True)
class LeafVerdict:
    """A judge's ruling on the leaf claim of a recursive debate: its verdict (0/1) and, where
    the judge gave one, its probability that the claim is true."""

    verdict: int
    probability: float | None = None
    ruling: VerdictRuling | None = None
    """How a model judge ruled from its probability (``argmax``); None for a person."""


@dataclass(frozen=True)
class FirstOption:
    """A judge's ruling between two answers: its probability that the first option shown is
    the right one."""

    p_first: float


Ruling = LeafVerdict | FirstOption
"""What completes a waiting debate; each family takes its own kind."""


@dataclass(frozen=True)
class Capabilities:
    """What a protocol can do: read by config validation, tournaments, forks and reports,
    each a typed flag (a flag its family cannot have is refused at registration, in one line
    naming it)."""

    assigned: bool = False
    """The debater defends an assigned answer: variants ``honest`` / ``dishonest`` (or
    ``chosen``) by ``prover.assignment``."""
    open_roles: bool = False
    """``prover.assignment: choose`` applies: the debater's model picks the answer it defends
    (variant ``chosen``); its seats record the side it picked, and reports rate it apart."""
    judge_deferrable: bool = True
    """The judge may be a person (``judge.kind: human``): the debate waits for the verdict."""
    estimator_rewards: bool = False
    """Recursive family: prover-estimator rewards (an initialisation record, r-discounted
    rewards per round, the estimator's calibration); a fork replays the prover's and the
    estimator's decisions (its run asks ``team.make_prover()`` and ``team.make_estimator()``)."""
    asks_questions: bool = False
    """Speech family: ``judge.interactive`` applies: after every round an interactive judge
    may ask a question or decide (its run asks
    :class:`~llmdebate.protocols.interactive.JudgeTurns` after each round)."""
    pairs: bool = False
    """Speech family: two debater seats defend opposite answers (variants ``order-0`` /
    ``order-1``: the first seat defends ``shown[0]`` / ``shown[1]``; or ``chosen``), so a
    tournament pairs roster models into them by its schedule (round-robin or Swiss)."""


@dataclass(frozen=True)
class Additions:
    """What a protocol adds to the package at registration, beyond its :attr:`Protocol.seats`."""

    seats: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    """New seat -> the role section (``prover``, ``estimator``) whose settings and, by
    default, model it plays with (seats the package knows need no entry); ``seats:`` in a
    config fills it (``seats: {critic: {model: ...}}``)."""
    roles: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    """New call role -> the player it is exported as (``llmdebate export --role``): e.g.
    ``{"critic": "critic"}``; the built-in roles (prover, estimator, challenger, judge,
    debaters, consultant) need no entry."""
    prompts: str | None = None
    """A package whose folder holds the protocol's own prompt templates (``<act>.j2``),
    rendered by ``team.prompts`` like the shipped ones (which a template of the same name
    there cannot override); None: none."""
    models: frozenset[str] | None = None
    """The role sections (``prover``, ``estimator``) whose models a debate asks for beyond
    its seats' (a seat plays its role's model unless ``seats`` or a roster fills it); a run
    makes and loads no model for a role none of its protocols asks for. None: both, as for a
    protocol that does not say."""


def assigned_answer(variant: str, gold: str, distractor: str) -> str | None:
    """The answer the debater of ``variant`` defends (None: chosen, or none)."""
    return {"honest": gold, "dishonest": distractor}.get(variant)


class Protocol(ABC):
    """One debate protocol: what every protocol has (see the module docstring).

    A protocol subclasses one family (never this class directly), sets :attr:`name` (by
    :func:`~llmdebate.protocols.registry.register`) and implements :meth:`run`; every other
    hook has a default that fits a protocol without rewards.
    """

    name: ClassVar[str]
    family: ClassVar[Family]
    """How its debates end (set by the family base class)."""
    can: ClassVar[Capabilities] = Capabilities()
    """What it can do (:class:`Capabilities`)."""
    title: ClassVar[str] = ""
    """The protocol's name as a person judging is told it (``show_protocol``)."""
    rank: ClassVar[int] = 100
    """Place in a comparison (reports, judge assignments): lower first; ties by name."""
    seats: ClassVar[tuple[str, ...]] = ()
    """The debater seats of a debate (roles of its transcript), each of which may hold its own
    model (``seats: {<seat>: {model: ...}}`` and ``tournament.roster`` in the config); the
    judge is not among them. A seat the package does not know (``critic``) plays with the
    settings of the role section :attr:`Additions.seats` names, and with that role's model
    unless the config gives the seat its own."""
    adds: ClassVar[Additions] = Additions()
    """What it adds to the package (:class:`Additions`)."""

    def variants(
        self, assignment: str, index: int, views: Sequence[str] | None = None
    ) -> tuple[str, ...]:
        """The debates the protocol runs on item number ``index`` under a prover assignment
        (``prover.assignment``); ``views``: on an item with a passage, the judge views a run
        asks for (``judge.direct_passage``; None: the item has none), which a protocol that
        runs one debate per view (the direct baselines) names. A protocol without an assigned
        answer runs one debate, named after it."""
        if self.can.assigned:
            return assignment_variants(assignment, index)
        return (self.name,)

    @abstractmethod
    async def run(
        self, spec: DebateSpec, team: Team, settings: ProtocolSettings, log: Log
    ) -> Transcript:
        """Run the debate ``spec``; every model call is appended to ``log``."""

    @abstractmethod
    def complete(
        self,
        t: Transcript,
        ruling: Ruling,
        *,
        judge: str,
        method: str = "human",
        rationale: str | None = None,
    ) -> Transcript:
        """Waiting debate ``t`` finished with a judge's ``ruling``: the family's own kind of
        ruling (a :class:`LeafVerdict` for a recursive protocol, a :class:`FirstOption` for a
        choice between two answers); another kind is a
        :class:`~llmdebate.errors.ProtocolViolation`."""

    def payoff(self, t: Transcript) -> float | None:
        """The debater's payoff in the unit a report shows (None: the protocol has none)."""
        return scoring.normalized_total(t)

    def injectable(self, d: DecisionRow) -> bool:
        """Whether a policy's reply can stand for decision ``d`` in a replay (online RL)."""
        return False
