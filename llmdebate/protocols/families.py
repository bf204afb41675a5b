"""The families of protocols, each a small base class a protocol subclasses, and what the
system does with any protocol (:func:`play` a debate).

* :class:`RecursiveProtocol`: rounds of claims down to a leaf claim the judge rules on
  (prover-estimator debate, naive recursive debate); a deferred judge completes the debate
  with a verdict on the leaf claim. Its members: the rewards its transcripts record
  (:attr:`~RecursiveProtocol.reward_scheme`), the expected payoff and the estimator's
  calibration point reports read. Its shared helpers (the top claim, gold truths, the leaf
  judge's view) are in :mod:`llmdebate.protocols.asymmetric`.
* :class:`ChoiceProtocol`: the judge chooses between the item's gold answer and its
  distractor (the direct judge); a deferred judge completes the debate with P(first option),
  from the prompt :meth:`~ChoiceProtocol.judge_prompt` gives a model judge of a waiting
  debate. Its shared helpers (the judge's choice, the transcript it reads) are in
  :mod:`llmdebate.protocols.common`.
* :class:`SpeechProtocol`: a choice protocol whose seats speak first (two-sided debate,
  consultancy): turns of role = seat, calls of act ``argue round r``, each speech credited with
  the judge's probability of its answer, forked at a speech round; it records its settings
  for a fork (:attr:`~SpeechProtocol.fork_records`). The speeches go through
  :mod:`llmdebate.protocols.speeches` (scratchpad, word limits, quotes); a protocol whose
  judge may ask (:attr:`~llmdebate.protocols.interface.Capabilities.asks_questions`) asks
  :class:`~llmdebate.protocols.interactive.JudgeTurns` after every round.
"""

from __future__ import annotations

from typing import Any, ClassVar

from llmdebate.agents.factory import Team
from llmdebate.core import scoring
from llmdebate.core.engine import complete_with_verdict
from llmdebate.core.schemas import Transcript, Turn, Verdict
from llmdebate.errors import ProtocolViolation
from llmdebate.protocols.common import complete_choice, judge_variables, recorded_view
from llmdebate.protocols.interface import (
    Additions,
    Capabilities,
    DecisionRow,
    Family,
    FirstOption,
    LeafVerdict,
    Protocol,
    Ruling,
)
from llmdebate.protocols.spec import DebateSpec, Log, ProtocolSettings


class RecursiveProtocol(Protocol):
    """A protocol of rounds of claims down to a leaf claim the judge rules on."""

    family = Family.RECURSIVE
    can = Capabilities(assigned=True, open_roles=True)
    seats = ("prover", "estimator")
    adds = Additions(models=frozenset())  # naive debate's challenger sits as the estimator
    reward_scheme: ClassVar[str | None] = None
    """The rewards its transcripts record (:func:`llmdebate.core.scoring.reward_scheme`):
    ``discounted``, ``plus-minus-one`` or None (read from the records)."""
    opens_in_report: ClassVar[bool] = False
    """Whether the report's section of a debate (its rounds) starts open."""

    def payoff(self, t: Transcript) -> float | None:
        return scoring.normalized_total(t, scheme=self.reward_scheme)

    def expected_payoff(self, t: Transcript) -> float | None:
        """The expected payoff over the protocol's own draws (None: not recorded)."""
        return None

    def calibration_point(self, t: Transcript) -> tuple[str, float, int] | None:
        """(claim text, probability, gold truth) of a forecast the report calibrates."""
        return None

    def complete(
        self,
        t: Transcript,
        ruling: Ruling,
        *,
        judge: str,
        method: str = "human",
        rationale: str | None = None,
    ) -> Transcript:
        if not isinstance(ruling, LeafVerdict):
            raise ProtocolViolation(f"debate {t.id}: a verdict on the leaf claim is needed")
        v = Verdict(
            value=ruling.verdict, probability=ruling.probability, judge=judge,
            rationale=rationale, ruling=ruling.ruling,
        )
        return complete_with_verdict(t, v)


class ChoiceProtocol(Protocol):
    """A protocol that ends with the judge's choice between the gold answer and the
    distractor (prompt :attr:`judge_act`)."""

    family = Family.CHOICE
    judge_act: ClassVar[str] = ""
    """The prompt of the judge's choice."""
    shows_transcript: ClassVar[bool] = True
    """Whether the judge prompt holds the transcript of the turns."""

    def judge_reads(self, turns: list[Turn]) -> list[Turn]:
        """The turns of a debate a judge, model or person, reads (all, unless the protocol
        keeps some from the judge: a topology's private and turn-only slots)."""
        return turns

    def judge_prompt(self, t: Transcript) -> tuple[str, dict[str, Any]]:
        """The prompt (act, variables) a model judge of waiting debate ``t`` is given."""
        item = t.item or {}
        turns = (
            self.judge_reads([x for x in t.turns if x.role != "judge"])
            if self.shows_transcript
            else None
        )
        return self.judge_act, judge_variables(
            str(item.get("question", "")), recorded_view(t), turns
        )

    def complete(
        self,
        t: Transcript,
        ruling: Ruling,
        *,
        judge: str,
        method: str = "human",
        rationale: str | None = None,
    ) -> Transcript:
        if not isinstance(ruling, FirstOption):
            raise ProtocolViolation(f"debate {t.id}: P(first option) is needed")
        return complete_choice(t, ruling.p_first, judge, method=method)


class SpeechProtocol(ChoiceProtocol):
    """A choice protocol whose seats speak for rounds before the judge chooses."""

    fork_records: ClassVar[tuple[str, ...]] = ("rounds",)
    """The keys of ``Transcript.meta`` every debate records so that a fork or a replay can
    run it again with the same settings (``rounds``, and ``mode`` where it reads it), read
    back by :func:`llmdebate.rl.replay_protocols.settings_of`. Enforced: a transcript missing
    one is a :class:`~llmdebate.errors.ProtocolViolation` when the debate is played."""

    def injectable(self, d: DecisionRow) -> bool:
        """A debater's speech."""
        return d.act == "speech" and d.round_k is not None


SPEECH_ONLY = ("asks_questions", "pairs")
RECURSIVE_ONLY = ("estimator_rewards",)


def misfit(cls: type[Protocol]) -> str | None:
    """What a protocol class declares that its family cannot have, in one line (None: it
    fits)."""
    family = getattr(cls, "family", None)
    if not isinstance(family, Family) or not issubclass(
        cls, RecursiveProtocol | ChoiceProtocol
    ):
        return "subclass a family (RecursiveProtocol, ChoiceProtocol or SpeechProtocol)"
    for flag in SPEECH_ONLY:
        if getattr(cls.can, flag) and not issubclass(cls, SpeechProtocol):
            return f"capability {flag} needs a protocol whose seats speak (SpeechProtocol)"
    for flag in RECURSIVE_ONLY:
        if getattr(cls.can, flag) and not issubclass(cls, RecursiveProtocol):
            return f"capability {flag} needs a recursive protocol (RecursiveProtocol)"
    return None


def check_record(p: Protocol, t: Transcript) -> None:
    """A :class:`ProtocolViolation` when speech debate ``t`` lacks a key of its protocol's
    :attr:`~SpeechProtocol.fork_records` (a fork could not run it again)."""
    if t.status == "failed" or not isinstance(p, SpeechProtocol):
        return
    missing = [k for k in p.fork_records if k not in t.meta]
    if missing:
        raise ProtocolViolation(
            f"protocol {p.name}: debate {t.id} does not record meta "
            f"{', '.join(missing)} (its fork_records; a fork reads them back)"
        )


async def play(
    p: Protocol, spec: DebateSpec, team: Team, settings: ProtocolSettings, log: Log
) -> Transcript:
    """One debate of protocol ``p``: its run, the record checked (:func:`check_record`)."""
    t = await p.run(spec, team, settings, log)
    check_record(p, t)
    return t


def needs_wrong_answer(p: Protocol, variant: str) -> bool:
    """Whether a debate of ``variant`` needs the item's distractor (an item without one is
    recorded as failed): every choice between two answers does, a recursive debate unless
    its prover defends the gold answer or picks one."""
    return isinstance(p, ChoiceProtocol) or variant not in ("honest", "chosen")



def rescore(p: Protocol, t: Transcript) -> scoring.Score:
    """Every recorded reward of ``t`` (a debate of ``p``) recomputed, and every mismatch, by
    :mod:`llmdebate.core.scoring`, the optional quote penalty included."""
    scheme = p.reward_scheme if isinstance(p, RecursiveProtocol) else None
    s = scoring.score_transcript(t, scheme)
    scoring.check_quote_penalties(t, s)
    return s


def rewarded(p: Protocol) -> bool:
    """Whether protocol ``p`` pays its debaters (a recursive protocol's reward scheme)."""
    return isinstance(p, RecursiveProtocol) and p.reward_scheme is not None


def expected_payoff(p: Protocol, t: Transcript) -> float | None:
    """The expected payoff of ``t`` over its protocol's own draws (None: not recorded)."""
    return p.expected_payoff(t) if isinstance(p, RecursiveProtocol) else None


def calibration_point(p: Protocol, t: Transcript) -> tuple[str, float, int] | None:
    """(claim text, probability, gold truth) of a forecast of ``t`` a report calibrates."""
    return p.calibration_point(t) if isinstance(p, RecursiveProtocol) else None
