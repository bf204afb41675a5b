"""The two families of protocols, each a small base class a protocol subclasses.

* :class:`RecursiveProtocol`: rounds of claims down to a leaf claim the judge rules on
  (prover-estimator debate, naive recursive debate); a deferred judge completes the debate
  with a verdict on the leaf claim. Its shared helpers (the top claim, gold truths, the leaf
  judge's view) are in :mod:`llmdebate.protocols.asymmetric`.
* :class:`ChoiceProtocol`: the judge chooses between the item's gold answer and its
  distractor (two-sided debate, consultancy, the direct judge), after the seats' speeches
  when :attr:`~llmdebate.protocols.interface.Protocol.speeches`; a deferred judge completes
  the debate with P(first option). Its shared helpers (speeches, the judge's choice, the
  transcript it reads) are in :mod:`llmdebate.protocols.common`.

Each family sets :attr:`~llmdebate.protocols.interface.Protocol.family` and implements
:meth:`~llmdebate.protocols.interface.Protocol.complete`; the choice family also the judge
prompt of a waiting debate and which decisions online RL may inject into.
"""

from __future__ import annotations

from typing import Any, ClassVar

from llmdebate.core.engine import complete_with_verdict
from llmdebate.core.schemas import Transcript, Verdict
from llmdebate.errors import ProtocolViolation
from llmdebate.protocols.common import complete_choice, judge_variables, recorded_view
from llmdebate.protocols.interface import (
    DecisionRow,
    Family,
    FirstOption,
    LeafVerdict,
    Protocol,
    Ruling,
)


class RecursiveProtocol(Protocol):
    """A protocol of rounds of claims down to a leaf claim the judge rules on."""

    family = Family.RECURSIVE
    assigned = True
    open_roles = True
    judge_deferrable = True
    seats = ("prover", "estimator")
    models = frozenset[str]()  # naive debate's challenger sits as the estimator

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
    distractor (prompt :attr:`judge_act`); speeches, if any, are ``turns``."""

    family = Family.CHOICE
    judge_deferrable = True
    judge_act: ClassVar[str] = ""
    """The prompt of the judge's choice."""
    shows_transcript: ClassVar[bool] = True
    """Whether the judge prompt holds the transcript of the speeches."""

    def needs_wrong_answer(self, variant: str) -> bool:
        """Every debate of a choice between two answers needs the distractor."""
        return True

    def judge_prompt(self, t: Transcript) -> tuple[str, dict[str, Any]]:
        item = t.item or {}
        turns = [x for x in t.turns if x.role != "judge"] if self.shows_transcript else None
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

    def injectable(self, d: DecisionRow) -> bool:
        """A debater's speech (protocols with speeches)."""
        return self.speeches and d.act == "speech" and d.round_k is not None
