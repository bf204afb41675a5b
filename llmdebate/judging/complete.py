"""A person's verdict → a judgment row → a completed, scored transcript in ``judged.jsonl``.

The judgment is committed first (one per assignment: a second submission is a
:class:`Conflict`), then the debate is completed by its protocol
(:meth:`llmdebate.protocols.interface.Protocol.complete`: a verdict on the leaf claim for a
``recursive`` protocol, P(first option) for a ``two-answer`` one), scored by
:func:`~llmdebate.core.scoring.judgment_scores`, and appended with id
``<debate id>#<judgment id>``.
A crash between the commit and the append is repaired by :func:`sync`, which every server
and terminal session runs at start: completion is a pure function of the waiting transcript
and the judgment, so the repaired line is the one that would have been written.

A model judge's or the oracle's verdict (:func:`record_machine`) takes the same path: a
judgment row of kind ``llm`` or ``oracle`` with no assignment (a person's assignments are
untouched), completed and scored by the same functions.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from llmdebate.core import scoring
from llmdebate.core.schemas import ModelCallRecord, Transcript
from llmdebate.judging.asking import (
    MAX_QUESTION,
    ask_state,
    asks,
    questions_of,
    shown_debate,
)
from llmdebate.judging.db import Assignment, Judgment, Question, get_setting, utcnow
from llmdebate.judging.view import build_view, digest
from llmdebate.protocols.families import RecursiveProtocol
from llmdebate.protocols.interface import FirstOption, LeafVerdict, Ruling
from llmdebate.protocols.registry import protocol_of, recursive
from llmdebate.records.line_index import index_of
from llmdebate.records.rundir import JUDGED_FILE, append_judged, load_transcripts
from llmdebate.records.transcripts import transcript_of

STUDY_DEFAULTS: dict[str, Any] = {
    "require_explanation": True,
    "seed": 0,
    "reveal": "all",
    "turn_cost": 0.0,
    "show_protocol": False,
}

MAX_EXPLANATION = 5000


class NotFound(Exception):
    """No such assignment for this judge (another judge's id answers the same)."""


class Conflict(Exception):
    """This assignment already has a judgment."""


class Invalid(Exception):
    """The submission is incomplete or out of range; the message says what to fix."""


@dataclass
class Submission:
    """What a judge sends. ``verdict``/``probability``: a leaf (P[true] in [0.01, 0.99] or
    None); ``p_shown_first``: a speech protocol, P(the first answer *as shown* is correct)."""

    verdict: int | None = None
    probability: float | None = None
    p_shown_first: float | None = None
    explanation: str = ""
    active_s: float | None = None
    interface: str = "web"


def study_settings(s: Session) -> dict[str, Any]:
    """The study-wide settings (those missing in an older database: their defaults)."""
    return {k: get_setting(s, k, v) for k, v in STUDY_DEFAULTS.items()}


def view_for(t: Transcript, a: Assignment, study: dict[str, Any]) -> dict[str, Any]:
    """What the judge of assignment ``a`` is shown now (its turns revealed so far)."""
    return build_view(
        t,
        a.order_seed,
        a.context,
        reveal=str(study["reveal"]),
        revealed=a.revealed or 0,
        turn_cost=float(study["turn_cost"]),
        show_protocol=bool(study["show_protocol"]),
    )


def reveal_next(
    sessions: sessionmaker[Session],
    waiting: dict[str, Transcript],
    judge_id: str,
    assignment_id: int,
    seen: int | None = None,
) -> int:
    """Stepped reveal: show one more turn of an open assignment; returns the turns now shown.

    ``seen``: the number of turns on the judge's page; a repeated request (a reload) from the
    same page reveals nothing more. Unanswered and own assignments only.
    """
    with sessions.begin() as s:
        a = s.get(Assignment, assignment_id)
        if a is None or a.judge_id != judge_id:
            raise NotFound(assignment_id)
        if s.scalars(select(Judgment.id).where(Judgment.assignment_id == a.id)).first():
            raise Conflict(assignment_id)
        study = study_settings(s)
        view = view_for(waiting[a.debate_id], a, study)
        if not view.get("stepped"):
            raise Invalid("this item shows every turn at once")
        now = len(view["turns"])
        want = now + 1 if seen is None else max(now, seen + 1)
        a.revealed = min(int(view["turns_total"]), want)
        return a.revealed


MAX_ACTIVE_S = 86400.0
"""The most active seconds one item can record (a day)."""


def wall_s(a: Assignment, now: datetime | None = None) -> float:
    """The wall-clock seconds since the assignment was first opened (0 before): the most
    active time it can have, whatever a page reports."""
    if a.started_at is None:
        return 0.0
    return max(0.0, ((now or utcnow()) - a.started_at).total_seconds())


def _active(posted: float | None, a: Assignment, now: datetime) -> float | None:
    """The active seconds of a verdict: the larger of the page's last count and the kept one,
    at most the wall time since the assignment was opened."""
    counts = [x for x in (posted, a.active_s) if x is not None]
    return min(max(counts), wall_s(a, now), MAX_ACTIVE_S) if counts else None


def keep_active(
    sessions: sessionmaker[Session], judge_id: str, assignment_id: int, seconds: float | None
) -> float | None:
    """Record that the judge's page of an own assignment has been active ``seconds`` (the
    count only grows, and is bounded by the wall time since the assignment was opened and
    :data:`MAX_ACTIVE_S`: the page's clock is the client's); the count kept."""
    with sessions.begin() as s:
        a = _kept_active(s, judge_id, assignment_id, seconds)
        return a.active_s


def _kept_active(
    s: Session, judge_id: str, assignment_id: int, seconds: float | None
) -> Assignment:
    """The judge's own assignment, its active time raised to ``seconds`` (bounded by the wall
    time since it was opened and :data:`MAX_ACTIVE_S`)."""
    a = s.get(Assignment, assignment_id)
    if a is None or a.judge_id != judge_id:
        raise NotFound(assignment_id)
    if seconds is not None:
        most = min(wall_s(a), MAX_ACTIVE_S)
        a.active_s = max(a.active_s or 0.0, min(max(seconds, 0.0), most))
    return a


def still_waiting(
    sessions: sessionmaker[Session],
    run_dir: Path,
    waiting: dict[str, Transcript],
    judge_id: str,
    assignment_id: int,
    seconds: float | None,
) -> bool:
    """A waiting page's poll, in one transaction: keep its active time (as
    :func:`keep_active`) and say whether its question still waits for the debaters."""
    with sessions.begin() as s:
        a = _kept_active(s, judge_id, assignment_id, seconds)
        state = ask_state(shown_debate(run_dir, waiting[a.debate_id], a.id), questions_of(s, a.id))
        return bool(state and state["pending"])


def ask(
    sessions: sessionmaker[Session],
    run_dir: Path,
    waiting: dict[str, Transcript],
    judge_id: str,
    assignment_id: int,
    text: str,
) -> int:
    """A person's question to the debaters of an interactive debate (stored; answered by
    ``llmdebate answer``); returns the number of questions asked. Own, unanswered
    assignments only; one question at a time, while rounds are left."""
    question = text.strip()
    if not question:
        raise Invalid("type a question for the debaters")
    if len(question) > MAX_QUESTION:
        raise Invalid(f"a question is at most {MAX_QUESTION} characters")
    with sessions.begin() as s:
        a = s.get(Assignment, assignment_id)
        if a is None or a.judge_id != judge_id:
            raise NotFound(assignment_id)
        if s.scalars(select(Judgment.id).where(Judgment.assignment_id == a.id)).first():
            raise Conflict(assignment_id)
        qs = questions_of(s, a.id)
        state = ask_state(shown_debate(run_dir, waiting[a.debate_id], a.id), qs)
        if state is None:
            raise Invalid("this debate takes no questions")
        if state["pending"]:
            raise Invalid("your question is waiting for the debaters' answer")
        if not state["can_ask"]:
            raise Invalid("the debate has no rounds left: end it and decide")
        s.add(Question(assignment_id=a.id, number=len(qs) + 1, text=question))
        return len(qs) + 1


def waiting_by_id(run_dir: Path) -> dict[str, Transcript]:
    return {t.id: t for t in load_transcripts(run_dir) if t.status == "awaiting_verdict"}


def _check(view: dict[str, Any], sub: Submission, need_explanation: bool) -> None:
    if len(sub.explanation) > MAX_EXPLANATION:
        raise Invalid(f"the explanation is at most {MAX_EXPLANATION} characters")
    if view["kind"] == "leaf":
        if sub.verdict not in (0, 1):
            raise Invalid("choose True or False")
        p = sub.probability
        if p is not None:
            if not 0.01 <= p <= 0.99:
                raise Invalid("the probability is between 1 % and 99 %")
            if (p > 0.5 and sub.verdict == 0) or (p < 0.5 and sub.verdict == 1):
                raise Invalid("the probability must agree with the verdict (above 50 % for True)")
        return
    p = sub.p_shown_first
    if p is None or not 0.01 <= p <= 0.99:
        raise Invalid("set the slider: a probability between 1 % and 99 %")
    if need_explanation and not sub.explanation.strip():
        raise Invalid("explain your answer in a sentence or two")


def submit(
    sessions: sessionmaker[Session],
    run_dir: Path,
    waiting: dict[str, Transcript],
    judge_id: str,
    assignment_id: int,
    sub: Submission,
) -> Judgment:
    """Record one judgment and append its completed transcript; see the module doc."""
    with sessions.begin() as s:
        a = s.get(Assignment, assignment_id)
        if a is None or a.judge_id != judge_id:
            raise NotFound(assignment_id)
        if s.scalars(select(Judgment.id).where(Judgment.assignment_id == a.id)).first():
            raise Conflict(assignment_id)
        t = shown_debate(run_dir, waiting[a.debate_id], a.id)
        study = study_settings(s)
        view = view_for(t, a, study)
        _check(view, sub, bool(study["require_explanation"]))
        now = utcnow()
        state = ask_state(t, questions_of(s, a.id))
        if state is not None and state["pending"]:
            raise Invalid("your question is waiting for the debaters' answer")
        p_first = sub.p_shown_first
        if p_first is not None and view["flipped"]:
            p_first = 1.0 - p_first
        settings = {
            "context": a.context,
            "require_explanation": bool(study["require_explanation"]),
            "seed": study["seed"],
            "order_seed": a.order_seed,
            "flipped": view["flipped"],
            "reveal": study["reveal"],
            "turn_cost": float(study["turn_cost"]),
            "show_protocol": bool(study["show_protocol"]),
            "passage": view.get("passage_setting"),
        }
        j = Judgment(
            assignment_id=a.id,
            kind="human",
            judge_id=judge_id,
            debate_id=a.debate_id,
            verdict=sub.verdict if view["kind"] == "leaf" else None,
            probability=sub.probability if view["kind"] == "leaf" else None,
            p_first=p_first if view["kind"] == "choice" else None,
            explanation=sub.explanation.strip(),
            shown_digest=digest(view),
            started_at=a.started_at,
            submitted_at=now,
            active_s=_active(sub.active_s, a, now),
            interface=sub.interface,
            settings=settings,
            turns_revealed=len(view["turns"]) if view.get("stepped") else None,
        )
        s.add(j)
        try:
            s.flush()
        except IntegrityError:
            raise Conflict(assignment_id) from None
    append_judged(run_dir, judged_transcript(t, j))
    return j


def record_machine(
    sessions: sessionmaker[Session],
    run_dir: Path,
    t: Transcript,
    *,
    kind: str,
    judge_id: str,
    verdict: int | None = None,
    probability: float | None = None,
    p_first: float | None = None,
    shown_digest: str,
    settings: dict[str, Any],
    calls: list[ModelCallRecord] | None = None,
    active_s: float | None = None,
) -> Judgment:
    """Record a model judge's or the oracle's verdict on waiting debate ``t`` (no assignment)
    and append its completed, scored transcript. A second verdict of the same judge on the
    same debate is a :class:`Conflict`."""
    if kind not in ("llm", "oracle"):
        raise ValueError(f"a machine judgment is of kind llm or oracle (got {kind!r})")
    now = utcnow()
    leaf = recursive(t)  # a verdict on the leaf claim, else P(first option)
    with sessions.begin() as s:
        j = Judgment(
            assignment_id=None,
            kind=kind,
            judge_id=judge_id,
            debate_id=t.id,
            verdict=verdict if leaf else None,
            probability=probability if leaf else None,
            p_first=None if leaf else p_first,
            explanation="",
            shown_digest=shown_digest,
            started_at=now,
            submitted_at=now,
            active_s=active_s,
            interface=kind,
            settings={**settings, "passage": t.meta.get("passage")},
            calls=[c.model_dump(mode="json") for c in calls] if calls is not None else None,
        )
        s.add(j)
        try:
            s.flush()
        except IntegrityError:
            raise Conflict(t.id) from None
    append_judged(run_dir, judged_transcript(t, j))
    return j


def _iso(d: datetime | None) -> str | None:
    return d.isoformat(timespec="milliseconds") + "Z" if d is not None else None


def judged_transcript(t: Transcript, j: Judgment) -> Transcript:
    """Waiting debate ``t`` completed with judgment ``j`` and scored (a pure function)."""
    kind = j.kind or "human"
    who = f"human:{j.judge_id}" if kind == "human" else j.judge_id
    protocol = protocol_of(t)
    ruling: Ruling
    if isinstance(protocol, RecursiveProtocol):
        if j.verdict is None:
            raise ValueError(f"judgment {j.id} has no verdict")
        how = j.settings.get("ruling") if kind == "llm" else None  # a model judge's argmax
        ruling = LeafVerdict(j.verdict, j.probability, "argmax" if how == "argmax" else None)
    else:
        if j.p_first is None:
            raise ValueError(f"judgment {j.id} has no probability")
        ruling = FirstOption(j.p_first)
    method = "human" if kind == "human" else str(j.settings.get("method", kind))
    done = protocol.complete(
        t, ruling, judge=who, method=method, rationale=j.explanation or None
    )
    if j.calls:
        done.calls = [*done.calls, *(ModelCallRecord.model_validate(c) for c in j.calls)]
    done.id = f"{j.debate_id}#{j.id}"
    done.agents["judge"] = who
    done.meta["debate_id"] = j.debate_id
    done.meta["judgment"] = {
        "id": j.id,
        "kind": kind,
        "judge": j.judge_id,
        "assignment": j.assignment_id,
        "debate": j.debate_id,
        "interface": j.interface,
        "shown_digest": j.shown_digest,
        "explanation": j.explanation,
        "started_at": _iso(j.started_at),
        "submitted_at": _iso(j.submitted_at),
        "active_s": j.active_s,
        "settings": j.settings,
    }
    if j.turns_revealed is not None:
        cost = float(j.settings.get("turn_cost", 0.0))
        done.meta["judgment"]["reveal"] = {
            "turns": j.turns_revealed,
            "of": len([x for x in t.turns if x.role != "judge"]),
            "turn_cost": cost,
            "cost": scoring.reveal_cost(cost, j.turns_revealed),
        }
    done.meta["judgment"]["scores"] = scoring.judgment_scores(done)
    _person_turns(done, j)
    return done


def _person_turns(done: Transcript, j: Judgment) -> None:
    """A person who asked and stopped: ``meta.judge_turns`` as a model judge's (questions,
    the verdict after the last round heard, the interactive score), also in the judgment."""
    rec = asks(done)
    if rec is None or j.p_first is None:
        return
    questions = [str(q) for q in rec["questions"]]
    options, gold = done.meta.get("options") or [], done.meta.get("gold")
    p = j.p_first if str(options[0]).strip().lower() == str(gold).strip().lower() else 1 - j.p_first
    cost, base = float(rec["turn_cost"]), float(rec["log_base"])
    score = scoring.finite(
        scoring.interactive_judge_score(p, len(questions), cost, log_base=base)
    )
    done.meta["judge_turns"] = {
        "turns": [
            *({"round": n, "action": "ask", "question": q} for n, q in enumerate(questions, 1)),
            {"round": int(rec["heard"]), "action": "decide", "p_first": j.p_first},
        ],
        "asked": len(questions),
        "max_rounds": int(rec["max_rounds"]),
        "turn_cost": cost,
        "log_base": base,
        "score": score,
    }
    done.meta["judgment"]["interactive_score"] = score


def sync(sessions: sessionmaker[Session], run_dir: Path, waiting: dict[str, Transcript]) -> int:
    """Append the completed transcript of every judgment that ``judged.jsonl`` lacks."""
    have = index_of(run_dir / JUDGED_FILE, transcript_of).where
    written = 0
    with sessions() as s:
        for j in s.scalars(select(Judgment).order_by(Judgment.id)):
            t = waiting.get(j.debate_id)
            if t is not None and f"{t.id}#{j.id}" not in have:
                if j.assignment_id is not None:
                    t = shown_debate(run_dir, t, j.assignment_id)
                written += append_judged(run_dir, judged_transcript(t, j))
    return written
