"""The study lead's views: progress per judge and per protocol, and every judgment as CSV."""

from __future__ import annotations

import csv
import io
import json
from collections import Counter, defaultdict
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from llmdebate.judging.db import Assignment, Judgment

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
"""A cell starting with one of these is a formula to a spreadsheet (OWASP, CSV injection)."""


def lead_progress(sessions: sessionmaker[Session]) -> dict[str, Any]:
    """Assigned and judged counts per judge and per protocol, and judged time per judge."""
    with sessions() as s:
        rows = list(s.scalars(select(Assignment)))
        judged = {
            j.assignment_id: j
            for j in s.scalars(select(Judgment).where(Judgment.assignment_id.is_not(None)))
        }
        machines = Counter(
            s.scalars(select(Judgment.judge_id).where(Judgment.assignment_id.is_(None)))
        )
    per_judge: dict[str, Counter[str]] = defaultdict(Counter)
    per_protocol: dict[str, Counter[str]] = defaultdict(Counter)
    seconds: dict[str, list[float]] = defaultdict(list)
    for a in rows:
        per_judge[a.judge_id]["assigned"] += 1
        per_protocol[a.protocol]["assigned"] += 1
        j = judged.get(a.id)
        if j is not None:
            per_judge[a.judge_id]["done"] += 1
            per_protocol[a.protocol]["done"] += 1
            if j.active_s is not None:
                seconds[a.judge_id].append(j.active_s)
    return {
        "machines": sorted(machines.items()),
        "judges": [
            (
                jid,
                c["done"],
                c["assigned"],
                round(sum(seconds[jid]) / len(seconds[jid]), 1) if seconds[jid] else None,
            )
            for jid, c in sorted(per_judge.items())
        ],
        "protocols": [(p, c["done"], c["assigned"]) for p, c in sorted(per_protocol.items())],
        "done": sum(1 for a in rows if a.id in judged),
        "total": len(rows),
    }


EXPORT_FIELDS = (
    "id",
    "kind",
    "assignment_id",
    "judge_id",
    "debate_id",
    "verdict",
    "probability",
    "p_first",
    "explanation",
    "shown_digest",
    "started_at",
    "submitted_at",
    "active_s",
    "interface",
    "turns_revealed",
    "settings",
)


def csv_cell(value: Any) -> Any:
    """A text cell a spreadsheet will show as text: one starting like a formula gets a leading
    single quote (numbers, written by the study, stay numbers)."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def export_csv(sessions: sessionmaker[Session]) -> str:
    """Every judgment as CSV (for the study lead), every cell quoted, no cell a formula."""
    buf = io.StringIO()
    w = csv.writer(buf, quoting=csv.QUOTE_ALL)
    w.writerow(EXPORT_FIELDS)
    with sessions() as s:
        for j in s.scalars(select(Judgment).order_by(Judgment.id)):
            row = [getattr(j, f) for f in EXPORT_FIELDS]
            row[-1] = json.dumps(j.settings, sort_keys=True)
            w.writerow([csv_cell(v) for v in row])
    return buf.getvalue()
