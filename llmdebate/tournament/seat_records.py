"""What a tournament reads off transcripts: the seats, and plain :class:`Match` /
:class:`PERecord` records.

Every debate records in ``meta.seats`` who held each debater seat: ``{"debater A": {"model":
<model string>, "name": <the roster name, else the model string>, "side": "correct" |
"incorrect" | null}}``. A two-answer debate with a debater on some side is a
:class:`~llmdebate.tournament.ratings.Match`; a recursive one with a prover and an estimator a
:class:`~llmdebate.tournament.figures.PERecord`. Debates in which the debater chose the answer
it defends (variant ``chosen``) are rated apart from assigned ones: their protocol reads
``<protocol> (chosen)``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from llmdebate.core.schemas import Transcript
from llmdebate.protocols.families import ChoiceProtocol
from llmdebate.protocols.registry import protocol_of
from llmdebate.report.records import decision_correct, gold, item_id, normalized_payoff, side
from llmdebate.tournament.figures import PERecord
from llmdebate.tournament.ratings import Match

CHOSEN = "chosen"


def seats_of(t: Transcript) -> dict[str, Mapping[str, Any]]:
    """``meta.seats`` of a transcript (empty where it records none)."""
    seats = t.meta.get("seats")
    return dict(seats) if isinstance(seats, dict) else {}


def seat_name(t: Transcript, seat: str) -> str | None:
    """The name of the model that held ``seat`` (its roster name where it had one)."""
    rec = seats_of(t).get(seat)
    return None if rec is None else str(rec.get("name") or rec.get("model"))


def debater_models(transcripts: Iterable[Transcript]) -> set[str]:
    """Every model name that held a debater seat in ``transcripts``."""
    return {
        str(rec.get("name") or rec.get("model"))
        for t in transcripts
        for rec in seats_of(t).values()
    }


def rated_protocol(t: Transcript) -> str:
    """The protocol a debate is rated under: ``<protocol> (chosen)`` for an open role."""
    return f"{t.protocol} ({CHOSEN})" if t.meta.get("variant") == CHOSEN else t.protocol


def _p_correct(t: Transcript) -> float | None:
    judge = t.meta.get("judge")
    options, g = t.meta.get("options"), gold(t)
    if not isinstance(judge, dict) or not isinstance(options, list) or g is None:
        return None
    p_first = judge.get("p_first")
    if not isinstance(p_first, int | float) or not options:
        return None
    first_correct = str(options[0]).strip().lower() == g.strip().lower()
    return float(p_first) if first_correct else 1.0 - float(p_first)


def match_of(t: Transcript) -> Match | None:
    """The :class:`Match` of a complete two-answer debate with a debater seated on a side."""
    if t.status != "complete" or not isinstance(protocol_of(t), ChoiceProtocol):
        return None
    sides: dict[str, str] = {}
    for seat, rec in seats_of(t).items():
        if rec.get("side") in ("correct", "incorrect"):
            sides[str(rec["side"])] = str(seat_name(t, seat))
    judged = decision_correct(t)
    if not sides or judged is None:
        return None
    judge = t.meta.get("judge")
    if isinstance(judge, dict) and judge.get("p_first") == 0.5:
        judged = 0.5  # a tie: the decision's first option is no verdict
    return Match(
        correct=sides.get("correct"),
        incorrect=sides.get("incorrect"),
        judge_correct=judged,
        p_correct=_p_correct(t),
        item=item_id(t),
        protocol=rated_protocol(t),
    )


def leaf_correct(t: Transcript) -> float | None:
    """1.0 / 0.0: whether the judge's verdict on the leaf claim matched its gold truth."""
    for rd in reversed(t.rounds):
        if rd.verdict is not None and rd.claim.truth is not None:
            return float(rd.verdict.value == rd.claim.truth)
    return None


def pe_record_of(t: Transcript) -> PERecord | None:
    """The :class:`PERecord` of a complete debate of a protocol with an estimator
    (``estimator_rewards``) with a prover and an estimator recorded in its seats."""
    if t.status != "complete" or not protocol_of(t).can.estimator_rewards:
        return None
    prover, estimator = seat_name(t, "prover"), seat_name(t, "estimator")
    if prover is None or estimator is None:
        return None
    return PERecord(
        prover=prover,
        estimator=estimator,
        honest=side(t) == "honest",
        payoff=normalized_payoff(t),
        correct=leaf_correct(t),
        item=item_id(t),
        stopped_early=t.stopped_early,
    )


def matches_of(transcripts: Iterable[Transcript]) -> list[Match]:
    return [m for t in transcripts if (m := match_of(t)) is not None]


def pe_records_of(transcripts: Iterable[Transcript]) -> list[PERecord]:
    """The prover x estimator records of the debates with an estimator."""
    return [r for t in transcripts if (r := pe_record_of(t)) is not None]
