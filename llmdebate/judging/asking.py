"""A person who asks and stops (``judge.interactive`` with a deferred judge): the store.

A waiting debate of such a run stops after its first round and records ``meta.person_asks``.
The person's questions are rows of :class:`~llmdebate.judging.db.Question`; ``llmdebate
answer`` runs the debaters' next round for each unanswered one (a fork of the debate through
its protocol's own run, :func:`llmdebate.protocols.interactive.person_asks`) and appends the
continued debate to ``asked.jsonl`` with id ``<debate id>#ask<assignment id>.<questions>``:
every judge has their own continued debate, and ``transcripts.jsonl`` is never rewritten.
The judge's page and verdict use the latest continuation of their assignment
(:func:`shown_debate`, which reads the one line it needs through the file's index).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from llmdebate.core.schemas import Transcript
from llmdebate.judging.db import Assignment, Judgment, Question
from llmdebate.records.line_index import LineIndex, index_of
from llmdebate.records.rundir import append_once
from llmdebate.records.transcripts import iter_transcripts, transcript_of

ASKED_FILE = "asked.jsonl"
MAX_QUESTION = 1000


def continuation_id(debate_id: str, assignment_id: int, asked: int) -> str:
    """The id of the continued debate of an assignment after ``asked`` answered questions."""
    return f"{debate_id}#ask{assignment_id}.{asked}"


def asks(t: Transcript) -> dict[str, Any] | None:
    """A person-asked debate's record (``meta.person_asks``), else None."""
    rec = t.meta.get("person_asks")
    return rec if isinstance(rec, dict) else None


def load_asked(run_dir: Path) -> dict[str, Transcript]:
    """Every continued debate of the run directory, by id."""
    path = run_dir / ASKED_FILE
    return {t.id: t for t in iter_transcripts(path)} if path.is_file() else {}


def append_asked(run_dir: Path, t: Transcript) -> bool:
    """Append a continued debate unless its id is there (locked, fsynced, a torn line cut)."""
    return append_once(run_dir / ASKED_FILE, t)


def questions_of(s: Session, assignment_id: int) -> list[str]:
    """An assignment's questions in the order asked."""
    rows = s.scalars(
        select(Question).where(Question.assignment_id == assignment_id).order_by(Question.number)
    )
    return [q.text for q in rows]


def shown_debate(
    run_dir: Path,
    t: Transcript,
    assignment_id: int,
    asked: dict[str, Transcript] | LineIndex[Transcript] | None = None,
) -> Transcript:
    """What the judge of an assignment judges: the latest continuation of ``t``, or ``t``."""
    if asks(t) is None:
        return t
    have = asked_index(run_dir) if asked is None else asked
    n = int(asks(t)["max_rounds"])  # type: ignore[index]
    for k in range(n, 0, -1):
        cont = have.get(continuation_id(t.id, assignment_id, k))
        if cont is not None:
            return cont
    return t


def asked_index(run_dir: Path) -> LineIndex[Transcript]:
    """The index of ``asked.jsonl`` (:mod:`llmdebate.records.line_index`), brought up to
    date: a page finds its judge's continuation without reading the whole file."""
    return index_of(run_dir / ASKED_FILE, transcript_of)


def ask_state(t: Transcript, questions: list[str]) -> dict[str, Any] | None:
    """The page's ask/end choice for shown debate ``t`` and the questions asked so far:
    ``pending`` (a question waits for the debaters), ``can_ask`` (rounds are left)."""
    rec = asks(t)
    if rec is None:
        return None
    answered = len(rec["questions"])
    pending = len(questions) > answered
    return {
        "questions": questions,
        "pending": pending,
        "can_ask": not pending and int(rec["heard"]) < int(rec["max_rounds"]),
        "turn_cost": float(rec["turn_cost"]),
        "max_length": MAX_QUESTION,
    }


def unanswered(
    s: Session, run_dir: Path, waiting: dict[str, Transcript]
) -> list[tuple[str, Transcript, int, list[str]]]:
    """Every open assignment whose last question waits: (its debate's id, the debate it
    shows now, its id, its questions)."""
    asked = load_asked(run_dir)
    done = set(s.scalars(select(Judgment.assignment_id)))
    ids = sorted(set(s.scalars(select(Question.assignment_id))) - done)
    out = []
    for aid in ids:
        a = s.get(Assignment, aid)
        t = waiting.get(a.debate_id) if a is not None else None
        if t is None:
            continue
        shown = shown_debate(run_dir, t, aid, asked)
        qs = questions_of(s, aid)
        if len(qs) > len(asks(shown)["questions"]):  # type: ignore[index]
            out.append((t.id, shown, aid, qs))
    return out
