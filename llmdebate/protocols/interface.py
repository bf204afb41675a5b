"""What the system asks of a protocol: the :class:`Protocol` interface and its capabilities.

A protocol is one module: a subclass of :class:`Protocol` registered in
:data:`llmdebate.protocols.registry.PROTOCOLS` under its name, with its capabilities as data on
the registry entry. Everything outside :mod:`llmdebate.protocols` looks a protocol up there
(:func:`llmdebate.protocols.registry.protocol_of`) and calls its hooks or reads its
capabilities; no module names a protocol.

The hooks, in the order a debate meets them:

* which debates an item yields: :meth:`Protocol.variants`, :meth:`Protocol.passage_variants`,
  :meth:`Protocol.assigned_answer`,
  :meth:`Protocol.needs_wrong_answer` (:mod:`llmdebate.experiment.jobs`);
* running one debate: :meth:`Protocol.run` (a protocol object is also callable as its run);
* a judge that deferred: :meth:`Protocol.judge_prompt` (what a model judge of the waiting
  debate is asked) and :meth:`Protocol.complete` (the debate finished with a verdict);
* scoring: :meth:`Protocol.rescore` and :meth:`Protocol.judgment_scores`, which call
  :mod:`llmdebate.core.scoring` (the one scoring implementation);
* reports: :meth:`Protocol.expected_payoff`, :meth:`Protocol.calibration_point`,
  :attr:`Protocol.rank` (the order of a comparison), :attr:`Protocol.title` (what a person
  judging is told), :attr:`Protocol.opens_in_report`;
* training data and online RL: :meth:`Protocol.injectable` (a decision a policy's reply can
  stand for), :meth:`Protocol.in_generation_metrics`.

Capabilities (:data:`CAPABILITIES`) say which shared machinery a protocol's transcripts fit:
the judge's view, the export rows and credits, the fork points of a replay, the rewards of
online RL. A new protocol that ends with the judge's choice between two answers declares
``two-answer`` (and subclasses :class:`llmdebate.protocols.common.ChoiceProtocol`); one whose
transcripts hold rounds of claims down to a leaf verdict declares ``recursive``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar
from typing import Protocol as TypingProtocol

from llmdebate.agents.factory import Team
from llmdebate.core import scoring
from llmdebate.core.schemas import Transcript
from llmdebate.errors import ProtocolViolation
from llmdebate.protocols.spec import DebateSpec, Log, ProtocolSettings

RECURSIVE = "recursive"
"""Rounds of claims down to a leaf claim the judge rules on (True / False, with P[O = 1]); a
deferred judge completes it with a verdict; the prover's payoff is in ``Transcript.total``."""
ESTIMATOR = "estimator"
"""Prover-estimator rewards: an initialisation record, r-discounted rewards per round, the
estimator's calibration; a fork replays the prover's and the estimator's decisions (its run asks
``team.make_prover()`` and ``team.make_estimator()`` for them)."""
TWO_ANSWER = "two-answer"
"""The judge chooses between the item's gold answer and its distractor (``meta.options``); a
deferred judge completes it with P(first option)."""
SPEECHES = "speeches"
"""Debaters' speeches (roles mapped to the ``debater`` player), credited with the judge's
probability of their answer; forked at a speech round."""
ASSIGNED = "assigned"
"""The debater defends an assigned answer: variants ``honest`` / ``dishonest`` (or
``chosen``) by ``prover.assignment``."""
OPEN_ROLES = "open-roles"
"""``prover.assignment: choose`` applies: the debater's model picks the answer it defends
(variant ``chosen``, :func:`llmdebate.protocols.open_roles.chosen_position` for a speech
protocol); its seats record the side it picked, and reports rate it apart."""
JUDGE_DEFERRABLE = "judge-deferrable"
"""The judge may be a person (``judge.kind: human``): the debate waits for the verdict."""

CAPABILITIES = (
    RECURSIVE, ESTIMATOR, TWO_ANSWER, SPEECHES, ASSIGNED, OPEN_ROLES, JUDGE_DEFERRABLE
)


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


class Protocol(ABC):
    """One debate protocol: every hook the system calls (see the module docstring).

    Subclasses set :attr:`name` and :attr:`capabilities` and implement :meth:`run` and
    :meth:`complete`; every other hook has a default that fits a protocol without rewards.
    """

    name: ClassVar[str]
    capabilities: ClassVar[frozenset[str]] = frozenset()
    title: ClassVar[str] = ""
    """The protocol's name as a person judging is told it (``show_protocol``)."""
    rank: ClassVar[int] = 100
    """Place in a comparison (reports, judge assignments): lower first; ties by name."""
    opens_in_report: ClassVar[bool] = False
    """Whether the report's debate section of a transcript starts open."""
    seats: ClassVar[tuple[str, ...]] = ()
    """The debater seats of a debate (roles of its transcript), each of which may hold its own
    model (``seats`` and ``tournament.roster`` in the config); the judge is not among them."""
    models: ClassVar[frozenset[str] | None] = None
    """The role sections (``prover``, ``estimator``) whose models a debate asks for beyond
    its seats' (a seat plays its role's model unless ``seats`` or a roster fills it); a run
    makes and loads no model for a role none of its protocols asks for. None: both, as for a
    protocol that does not say."""
    reward_scheme: ClassVar[str | None] = None
    """The rewards its transcripts record (:func:`llmdebate.core.scoring.reward_scheme`): None (the
    judge's choice only), ``discounted`` or ``plus-minus-one``."""

    def can(self, capability: str) -> bool:
        return capability in self.capabilities

    # -- the debates of an item -----------------------------------------------------------
    def variants(self, assignment: str, index: int) -> tuple[str, ...]:
        """The debates the protocol runs on item number ``index`` under a prover assignment
        (``prover.assignment``); a protocol without an assigned answer runs one, named after
        it."""
        if self.can(ASSIGNED):
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
        return await self.run(spec, team, settings, log)

    # -- a deferred judge -----------------------------------------------------------------
    def judge_prompt(self, t: Transcript) -> tuple[str, dict[str, Any]]:
        """The prompt (act, variables) a model judge of waiting debate ``t`` is given."""
        raise ProtocolViolation(f"{t.protocol} has no judge prompt for a waiting debate")

    @abstractmethod
    def complete(
        self,
        t: Transcript,
        *,
        judge: str,
        verdict: int | None = None,
        probability: float | None = None,
        p_first: float | None = None,
        rationale: str | None = None,
        method: str = "human",
    ) -> Transcript:
        """Waiting debate ``t`` finished with a judge's ruling: a verdict on the leaf claim
        (``recursive``) or P(first option) (``two-answer``)."""

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
