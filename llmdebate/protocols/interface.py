"""What the system asks of a protocol: the :class:`Protocol` interface, its two families.

A protocol is one module: a subclass of one family base class registered in
:data:`llmdebate.protocols.registry.PROTOCOLS` under its name
(:func:`llmdebate.protocols.registry.register`). Everything outside :mod:`llmdebate.protocols`
looks a protocol up there (:func:`llmdebate.protocols.registry.protocol_of`) and calls its
hooks or reads its typed attributes; no module names a protocol.

The families (:class:`Family`): a recursive protocol
(:class:`llmdebate.protocols.families.RecursiveProtocol`: rounds of claims down to a leaf
verdict) and a choice protocol (:class:`llmdebate.protocols.families.ChoiceProtocol`: the judge
chooses between two answers, after the seats' speeches if :attr:`Protocol.speeches`). Each
family implements :meth:`Protocol.complete` (a deferred judge's verdict, or P(first option))
and :meth:`Protocol.judge_prompt`; a protocol implements :meth:`Protocol.run`.

What a protocol declares, as class attributes: its seats (:attr:`Protocol.seats`, new ones
with the role section they play as, :attr:`Protocol.seat_roles`), the call roles it exports
as players (:attr:`Protocol.roles`), its prompt templates (:attr:`Protocol.prompts_package`),
what its transcripts record for a fork (:attr:`Protocol.fork_records`), and what it can do
(:attr:`Protocol.family`, :attr:`Protocol.estimator_rewards`, :attr:`Protocol.speeches`,
:attr:`Protocol.assigned`, :attr:`Protocol.open_roles`, :attr:`Protocol.judge_deferrable`).

The hooks, in the order a debate meets them:

* which debates an item yields: :meth:`Protocol.variants`, :meth:`Protocol.passage_variants`,
  :meth:`Protocol.assigned_answer`,
  :meth:`Protocol.needs_wrong_answer` (:mod:`llmdebate.experiment.jobs`);
* running one debate: :meth:`Protocol.run` (a protocol object is also callable as its run,
  which checks the record, :meth:`Protocol.check_record`);
* a judge that deferred: :meth:`Protocol.judge_prompt` and :meth:`Protocol.complete`;
* scoring: :meth:`Protocol.rescore` and :meth:`Protocol.judgment_scores`, which call
  :mod:`llmdebate.core.scoring` (the one scoring implementation);
* reports: :meth:`Protocol.payoff`, :meth:`Protocol.expected_payoff`,
  :meth:`Protocol.calibration_point`;
* training data and online RL: :meth:`Protocol.injectable` (a decision a policy's reply can
  stand for), :meth:`Protocol.in_generation_metrics`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from types import MappingProxyType
from typing import Any, ClassVar
from typing import Protocol as TypingProtocol

from llmdebate.agents.factory import Team
from llmdebate.core import scoring
from llmdebate.core.schemas import Ruling as VerdictRuling
from llmdebate.core.schemas import Transcript
from llmdebate.errors import ProtocolViolation
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


class Protocol(ABC):
    """One debate protocol: every hook the system calls (see the module docstring).

    A protocol subclasses one of the two families (never this class directly):
    :class:`~llmdebate.protocols.families.RecursiveProtocol` or
    :class:`~llmdebate.protocols.families.ChoiceProtocol`, sets :attr:`name` (by
    :func:`~llmdebate.protocols.registry.register`) and implements :meth:`run`; every other
    hook has a default that fits a protocol without rewards. What it can do is typed class
    attributes (:attr:`family`, :attr:`estimator_rewards`, :attr:`speeches`, :attr:`assigned`,
    :attr:`open_roles`, :attr:`judge_deferrable`), read by the shared machinery.
    """

    name: ClassVar[str]
    family: ClassVar[Family]
    """How its debates end (set by the family base class)."""
    estimator_rewards: ClassVar[bool] = False
    """Prover-estimator rewards: an initialisation record, r-discounted rewards per round,
    the estimator's calibration; a fork replays the prover's and the estimator's decisions
    (its run asks ``team.make_prover()`` and ``team.make_estimator()`` for them)."""
    speeches: ClassVar[bool] = False
    """Its seats speak (turns of role = seat; calls of act ``argue round r``), each credited
    with the judge's probability of its answer; forked at a speech round."""
    assigned: ClassVar[bool] = False
    """The debater defends an assigned answer: variants ``honest`` / ``dishonest`` (or
    ``chosen``) by ``prover.assignment``."""
    open_roles: ClassVar[bool] = False
    """``prover.assignment: choose`` applies: the debater's model picks the answer it defends
    (variant ``chosen``); its seats record the side it picked, and reports rate it apart."""
    judge_deferrable: ClassVar[bool] = False
    """The judge may be a person (``judge.kind: human``): the debate waits for the verdict."""
    title: ClassVar[str] = ""
    """The protocol's name as a person judging is told it (``show_protocol``)."""
    rank: ClassVar[int] = 100
    """Place in a comparison (reports, judge assignments): lower first; ties by name."""
    opens_in_report: ClassVar[bool] = False
    """Whether the report's debate section of a transcript starts open."""
    seats: ClassVar[tuple[str, ...]] = ()
    """The debater seats of a debate (roles of its transcript), each of which may hold its own
    model (``seats: {<seat>: {model: ...}}`` and ``tournament.roster`` in the config); the
    judge is not among them. A seat the package does not know (``critic``) plays with the
    settings of the role section :attr:`seat_roles` names, and with that role's model unless
    the config gives the seat its own."""
    seat_roles: ClassVar[Mapping[str, str]] = MappingProxyType({})
    """New seat -> the role section (prover, estimator) whose settings and model it takes by
    default (seats the package knows need no entry)."""
    roles: ClassVar[Mapping[str, str]] = MappingProxyType({})
    """New call role -> the player it is exported as (``llmdebate export --role``): e.g.
    ``{"critic": "critic"}``; the built-in roles (prover, estimator, challenger, judge,
    debaters, consultant) need no entry."""
    prompts_package: ClassVar[str | None] = None
    """A package whose folder holds the protocol's own prompt templates (``<act>.j2``),
    rendered by ``team.prompts`` like the shipped ones (which a template of the same name
    there cannot override); None: none."""
    fork_records: ClassVar[tuple[str, ...]] = ()
    """The keys of ``Transcript.meta`` every debate of the protocol records so that a fork
    or a replay can run it again with the same settings (the speech family: ``rounds``, read
    back by :func:`llmdebate.rl.replay_protocols.settings_of`). Enforced: a transcript
    missing one is a :class:`~llmdebate.errors.ProtocolViolation` when the debate is run."""
    models: ClassVar[frozenset[str] | None] = None
    """The role sections (``prover``, ``estimator``) whose models a debate asks for beyond
    its seats' (a seat plays its role's model unless ``seats`` or a roster fills it); a run
    makes and loads no model for a role none of its protocols asks for. None: both, as for a
    protocol that does not say."""
    reward_scheme: ClassVar[str | None] = None
    """The rewards its transcripts record (:func:`llmdebate.core.scoring.reward_scheme`): None (the
    judge's choice only), ``discounted`` or ``plus-minus-one``."""

    @property
    def recursive(self) -> bool:
        """Rounds of claims down to a leaf verdict (:attr:`Family.RECURSIVE`)."""
        return self.family is Family.RECURSIVE

    @property
    def two_answer(self) -> bool:
        """The judge's choice between two answers (:attr:`Family.CHOICE`)."""
        return self.family is Family.CHOICE

    def player_of(self, role: str) -> str | None:
        """The exported player of call role ``role`` declared by the protocol (None: a
        built-in role, or none)."""
        return self.roles.get(role)

    # -- the debates of an item -----------------------------------------------------------
    def variants(self, assignment: str, index: int) -> tuple[str, ...]:
        """The debates the protocol runs on item number ``index`` under a prover assignment
        (``prover.assignment``); a protocol without an assigned answer runs one, named after
        it."""
        if self.assigned:
            return assignment_variants(assignment, index)
        return (self.name,)

    def passage_variants(
        self, variants: tuple[str, ...], views: Sequence[str]
    ) -> tuple[str, ...]:
        """The debates of an item that has a passage, given ``variants`` and the judge views
        a run asks for (``judge.direct_passage``): a protocol that runs one debate per view
        of the passage (the direct baselines) names them; others keep ``variants``."""
        return variants

    def assigned_answer(self, variant: str, gold: str, distractor: str) -> str | None:
        """The answer the debater of ``variant`` defends (None: chosen, or none)."""
        return {"honest": gold, "dishonest": distractor}.get(variant)

    def needs_wrong_answer(self, variant: str) -> bool:
        """Whether a debate of ``variant`` needs the item's distractor (an item without one
        is recorded as failed)."""
        return variant not in ("honest", "chosen")

    # -- one debate -----------------------------------------------------------------------
    @abstractmethod
    async def run(
        self, spec: DebateSpec, team: Team, settings: ProtocolSettings, log: Log
    ) -> Transcript:
        """Run the debate ``spec``; every model call is appended to ``log``."""

    async def __call__(
        self, spec: DebateSpec, team: Team, settings: ProtocolSettings, log: Log
    ) -> Transcript:
        t = await self.run(spec, team, settings, log)
        self.check_record(t)
        return t

    def check_record(self, t: Transcript) -> None:
        """A :class:`ProtocolViolation` when debate ``t`` lacks a key of
        :attr:`fork_records` (a fork could not run it again)."""
        if t.status == "failed":
            return
        missing = [k for k in self.fork_records if k not in t.meta]
        if missing:
            raise ProtocolViolation(
                f"protocol {self.name}: debate {t.id} does not record meta "
                f"{', '.join(missing)} (its fork_records; a fork reads them back)"
            )

    # -- a deferred judge -----------------------------------------------------------------
    def judge_prompt(self, t: Transcript) -> tuple[str, dict[str, Any]]:
        """The prompt (act, variables) a model judge of waiting debate ``t`` is given."""
        raise ProtocolViolation(f"{t.protocol} has no judge prompt for a waiting debate")

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

    # -- scoring --------------------------------------------------------------------------
    def rescore(self, t: Transcript) -> scoring.Score:
        """Every recorded reward recomputed (and every mismatch) by :mod:`llmdebate.core.scoring`,
        the optional quote penalty included."""
        s = scoring.score_transcript(t, self.reward_scheme)
        scoring.check_quote_penalties(t, s)
        return s

    def judgment_scores(self, t: Transcript) -> dict[str, float | None]:
        """How well the judge of a complete debate did against the gold truth."""
        return scoring.judgment_scores(t)

    # -- reports --------------------------------------------------------------------------
    def payoff(self, t: Transcript) -> float | None:
        """The debater's payoff in the unit a report shows (None: the protocol has none)."""
        return scoring.normalized_total(t, scheme=self.reward_scheme)

    def expected_payoff(self, t: Transcript) -> float | None:
        """The expected payoff over the protocol's own draws (None: not recorded)."""
        return None

    def calibration_point(self, t: Transcript) -> tuple[str, float, int] | None:
        """(claim text, probability, gold truth) of a forecast the report calibrates."""
        return None

    # -- training -------------------------------------------------------------------------
    def injectable(self, d: DecisionRow) -> bool:
        """Whether a policy's reply can stand for decision ``d`` in a replay (online RL)."""
        return False

    def in_generation_metrics(self, t: Transcript) -> bool:
        """Whether a debate of this protocol counts in a training generation's metrics."""
        return False
