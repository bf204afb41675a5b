"""The report's section on a judge who asks and stops (``judge.interactive``): per row (a
protocol and the judge's view of the passage, :func:`llmdebate.report.metrics.row_of`), over
its debates, the rounds it heard, the questions it asked, its accuracy and its mean score
(:func:`llmdebate.core.scoring.interactive_judge_score`, as recorded in ``meta.judge_turns``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from llmdebate.core.schemas import Transcript
from llmdebate.report.html import table
from llmdebate.report.metrics import row_of
from llmdebate.report.records import decision_correct
from llmdebate.report.sections import SECTIONS, Part, RunView

HEAD = ["row", "debates", "mean rounds heard (of at most)", "mean questions asked",
        "judge accuracy", "mean score (log_b p − cost × rounds asked)", "debates scored −inf"]


def section(transcripts: Sequence[Transcript]) -> dict[str, Any] | None:
    """Per row, the interactive judge's figures; None when no debate had one."""
    by: dict[str, list[Transcript]] = {}
    for t in transcripts:
        if t.status == "complete" and isinstance(t.meta.get("judge_turns"), dict):
            by.setdefault(row_of(t), []).append(t)
    if not by:
        return None
    out: dict[str, Any] = {}
    for proto, ts in sorted(by.items()):
        recs = [t.meta["judge_turns"] for t in ts]
        scores = [r["score"] for r in recs if r.get("score") is not None]
        correct = [c for t in ts if (c := decision_correct(t)) is not None]
        out[proto] = {
            "debates": len(ts),
            "rounds_heard": float(np.mean([len(r["turns"]) for r in recs])),
            "max_rounds": max(int(r["max_rounds"]) for r in recs),
            "questions": float(np.mean([r["asked"] for r in recs])),
            "accuracy": float(np.mean(correct)) if correct else None,
            "score": float(np.mean(scores)) if scores else None,
            "minus_infinity": len(recs) - len(scores),
            "turn_cost": recs[0]["turn_cost"],
            "log_base": recs[0]["log_base"],
        }
    return out


def _rows(sec: dict[str, Any]) -> list[list[str]]:
    def f(x: float | None) -> str:
        return "–" if x is None else f"{x:.3f}"

    return [
        [proto, str(s["debates"]), f"{s['rounds_heard']:.2f} (of {s['max_rounds']})",
         f"{s['questions']:.2f}", f(s["accuracy"]), f(s["score"]), str(s["minus_infinity"])]
        for proto, s in sec.items()
    ]


def markdown(sec: dict[str, Any]) -> str:
    lines = ["## A judge who asks and stops", "", "| " + " | ".join(HEAD) + " |",
             "|---" * len(HEAD) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in _rows(sec)]
    return "\n".join(lines) + "\n"


def html(sec: dict[str, Any]) -> str:
    first = next(iter(sec.values()))
    return (
        "<h2 id='asking-judge'>A judge who asks and stops</h2>"
        f"<p class='muted'>After every round the model judge asked the debaters a question or "
        f"decided; each round it asked for cost {first['turn_cost']} (log base "
        f"{first['log_base']}).</p>" + table(HEAD, _rows(sec))
    )


@SECTIONS.register("asking_judge")
def asking_section(run: RunView) -> Part | None:
    """The judge who asks, models and people alike, when any debate had one."""
    sec = section([*run.transcripts, *run.judged])
    if sec is None:
        return None
    return Part("asking_judge", sec, markdown(sec), html(sec))
