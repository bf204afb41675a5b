"""What a run's metrics keep of each debate: a :class:`DebateRecord` of a few numbers, and
:class:`RunTally`, the fold of a run's transcripts into records and running totals.

The summary of a run streams: each transcript read from ``transcripts.jsonl`` is folded in
and dropped, so it needs about a hundred bytes per debate, not the transcripts (10^5
debates: megabytes, not gigabytes). Totals are summed in the order the transcripts come,
exactly as a pass over a list of them would, so the figures do not depend on how the run is
read. The per-transcript helpers (``item_id``, ``side``, ...) are here and re-exported by
:mod:`llmdebate.report.metrics`.
"""

from __future__ import annotations

from array import array
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from llmdebate.agents.audit import DecompositionTally
from llmdebate.agents.belief_audit import BeliefTally
from llmdebate.agents.estimate_audit import EstimateTally
from llmdebate.core import scoring
from llmdebate.core.schemas import Transcript
from llmdebate.protocols.families import calibration_point, expected_payoff
from llmdebate.protocols.registry import protocol_of
from llmdebate.report.decided import DecidedTally


def item_id(t: Transcript) -> str:
    """The id of the item a debate is about (``meta.item_id``, else ``item.id``, else its id)."""
    if "item_id" in t.meta:
        return str(t.meta["item_id"])
    if t.item and "id" in t.item:
        return str(t.item["id"])
    return t.id


def gold(t: Transcript) -> str | None:
    """The gold answer text of the debate's item."""
    if "gold" in t.meta:
        return str(t.meta["gold"])
    if t.item and t.item.get("answer") is not None:
        return str(t.item["answer"])
    return None


def decision_correct(t: Transcript) -> float | None:
    """1.0 / 0.0 if the judge's ``decision`` equals the gold answer; None if undecided."""
    dec, g = t.meta.get("decision"), gold(t)
    if t.status != "complete" or dec is None or g is None:
        return None
    return float(str(dec).strip().lower() == g.strip().lower())


def normalized_payoff(t: Transcript) -> float | None:
    """The prover's payoff R_A in units of r^(d+1) (prover-estimator) or as is (naive: ±1)."""
    return protocol_of(t).payoff(t)


def normalized_expected_payoff(t: Transcript) -> float | None:
    """E[R_A] over the protocol's own draws, in units of r^(d+1), where the protocol records
    it (:meth:`~llmdebate.protocols.families.RecursiveProtocol.expected_payoff`)."""
    return expected_payoff(protocol_of(t), t)


def side(t: Transcript) -> str | None:
    """``honest`` if the prover defended the gold answer, ``dishonest`` if not, else None."""
    claimed, g = t.meta.get("claimed_answer"), gold(t)
    if claimed is None or g is None:
        return None
    return "honest" if str(claimed).strip().lower() == g.strip().lower() else "dishonest"


@dataclass(frozen=True, slots=True)
class DebateRecord:
    """The numbers of one debate that a comparison needs (see :func:`record_of`)."""

    id: str
    protocol: str
    status: str
    item_id: str
    variant: str | None
    side: str | None
    payoff: float | None
    expected_payoff: float | None
    correct: float | None
    # (claim text, p_d, truth) of a forecast the protocol calibrates (prover-estimator debate:
    # the estimator's p_d on a top claim with a gold truth)
    calibration: tuple[str, float, int] | None
    failure: str | None
    passage: str | None = None
    """The judge's view of the item's passage (``hidden`` / ``shown``; None: no passage)."""
    quotes: tuple[tuple[str, str, int, int], ...] = ()
    """(side, model, verified quotes, quotes) of every speaker that quoted the passage."""
    bound: float | None = None
    """Lemma A.5's completeness bound in payoff units (1-ε; discounted rewards only)."""
    pairing: str = ""
    """Who sat where, sides left out (``meta.seats``): an honest and a dishonest debate pair
    up on the same item and the same pairing (a tournament has several per item)."""


def record_of(t: Transcript) -> DebateRecord:
    """The :class:`DebateRecord` of a transcript."""
    cal = calibration_point(protocol_of(t), t)
    variant = t.meta.get("variant")
    return DebateRecord(
        id=t.id,
        protocol=t.protocol,
        status=t.status,
        item_id=item_id(t),
        variant=variant if isinstance(variant, str) else None,
        side=side(t),
        payoff=normalized_payoff(t),
        expected_payoff=normalized_expected_payoff(t),
        correct=decision_correct(t),
        calibration=cal,
        failure=t.failure if t.status == "failed" else None,
        passage=t.meta.get("passage") if isinstance(t.meta.get("passage"), str) else None,
        quotes=quote_counts(t),
        bound=scoring.normalized_completeness_bound(t),
        pairing=pairing(t),
    )


def pairing(t: Transcript) -> str:
    """``seat=name`` of every seat of ``meta.seats``, sorted and joined by ``;`` (sides left
    out); empty where the debate records no seats."""
    seats = t.meta.get("seats")
    if not isinstance(seats, dict):
        return ""
    return ";".join(
        f"{seat}={rec.get('name') or rec.get('model')}"
        for seat, rec in sorted(seats.items())
        if isinstance(rec, dict)
    )


def _count(quotes: list[dict[str, Any]] | None) -> tuple[int, int]:
    qs = quotes or []
    return sum(1 for q in qs if q.get("status") == "verified"), len(qs)


def quote_counts(t: Transcript) -> tuple[tuple[str, str, int, int], ...]:
    """(side, model, verified, quotes) per speaker of ``t`` that quoted the passage: the
    speeches' quotes (side: whether the speaker argued for the gold answer) and the leaf
    evidence's (the prover's side)."""
    g = gold(t)
    tally: dict[tuple[str, str], list[int]] = {}

    def add(who: str, model: str, counts: tuple[int, int]) -> None:
        if counts[1]:
            row = tally.setdefault((who, model), [0, 0])
            row[0] += counts[0]
            row[1] += counts[1]

    for turn in t.turns:
        if turn.quotes:
            honest = g is not None and (turn.position or "").strip().lower() == g.strip().lower()
            who = "honest" if honest else "dishonest"
            add(who, t.agents.get(turn.role, ""), _count(turn.quotes))
    for rd in t.rounds:
        ev = rd.evidence
        if ev is not None and isinstance(ev.data.get("quotes"), list):
            add(side(t) or "prover", t.agents.get("prover", ""), _count(ev.data["quotes"]))
    return tuple((who, model, v, n) for (who, model), (v, n) in sorted(tally.items()))


@dataclass
class Cost:
    debates: int = 0
    failed: int = 0
    calls: int = 0
    cached_calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float = 0.0


def _role_usage() -> dict[str, float]:
    return {"calls": 0, "tokens_in": 0, "tokens_out": 0, "cost": 0.0}


class RunTally:
    """A run's transcripts folded one at a time: a record per debate, usage and cost per
    protocol and role, debate wall times, leaf-judge hits and decomposition counts."""

    def __init__(self) -> None:
        self.records: list[DebateRecord] = []
        self.costs: dict[str, Cost] = defaultdict(Cost)
        self.by_role: dict[str, dict[str, float]] = defaultdict(_role_usage)
        self.walls = array("d")
        self.retries = self.calls = self.cached = self.tokens_in = self.tokens_out = 0
        self.cost = 0.0
        self.judge_n = self.judge_hits = 0
        self.decompositions = DecompositionTally()
        self.estimates = EstimateTally()
        self.beliefs = BeliefTally()
        self.decided = DecidedTally()

    def add(self, t: Transcript) -> None:
        rec = record_of(t)
        self.records.append(rec)
        self.decided.add(t, rec.side, rec.item_id, rec.pairing)
        c = self.costs[t.protocol]
        c.debates += 1
        c.failed += t.status == "failed"
        wall = t.meta.get("wall_s")
        if isinstance(wall, int | float):
            self.walls.append(float(wall))
        for call in t.calls:
            c.calls += 1
            c.cached_calls += call.cached
            c.tokens_in += call.tokens_in
            c.tokens_out += call.tokens_out
            c.cost += call.cost
            self.calls += 1
            self.cached += call.cached
            self.tokens_in += call.tokens_in
            self.tokens_out += call.tokens_out
            self.cost += call.cost
            self.retries += int(getattr(call, "retries", 0) or 0)
            r = self.by_role[call.role or "?"]
            r["calls"] += 1
            r["tokens_in"] += call.tokens_in
            r["tokens_out"] += call.tokens_out
            r["cost"] += call.cost
        for rd in t.rounds:
            if rd.verdict is not None and rd.claim.truth is not None:
                self.judge_n += 1
                self.judge_hits += rd.verdict.value == rd.claim.truth
        self.decompositions.add(t)
        self.estimates.add(t)
        self.beliefs.add(t)

    def extend(self, transcripts: Iterable[Transcript]) -> RunTally:
        for t in transcripts:
            self.add(t)
        return self


def tally(transcripts: Iterable[Transcript]) -> RunTally:
    """The :class:`RunTally` of ``transcripts`` (any iterable: a list, or a file read lazily)."""
    return RunTally().extend(transcripts)
