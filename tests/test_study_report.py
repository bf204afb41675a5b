"""A human study's report while debates await verdicts: they are counted as waiting, not
failed; the report says what to do next and tabulates what has been judged."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from llmdebate.core.engine import run_prover_estimator
from llmdebate.core.schemas import Claim, DebateConfig, Transcript

try:
    from tests.core_agents import ToyEstimator, ToyJudge, ToyProver
except ImportError:  # pytest run from inside tests/
    from core_agents import ToyEstimator, ToyJudge, ToyProver  # type: ignore[no-redef]

from llmdebate.report.build import judged_by_kind, status_note, write_outputs


def _waiting(i: int) -> Transcript:
    t = asyncio.run(run_prover_estimator(
        Claim(text=f"claim {i}", truth=1), ToyProver(q=2, directions=1), ToyEstimator(),
        ToyJudge(defer=True), DebateConfig(depth=1, width=2), seed=i, debate_id=f"d{i}"))
    t.meta.update(item_id=f"i{i}", gold="yes", claimed_answer="yes", variant="honest")
    return t


def _judged(t: Transcript, kind: str, judge: str) -> Transcript:
    return t.model_copy(update={"id": f"{t.id}#{judge}", "status": "complete",
                                "meta": {**t.meta, "judgment": {"kind": kind, "judge": judge}}})


def test_debates_awaiting_verdicts_are_waiting_with_what_to_do_next() -> None:
    ts = [_waiting(i) for i in range(3)]
    assert {t.status for t in ts} == {"awaiting_verdict"}
    judged = [_judged(ts[0], "human", "j1"), _judged(ts[0], "oracle", "oracle"),
              _judged(ts[1], "oracle", "oracle")]
    assert judged_by_kind(judged) == {"human": (1, 1), "oracle": (2, 2)}
    facts = {"debates": 3, "debates_complete": 0, "debates_awaiting": 3, "debates_failed": 0}
    note = status_note(facts, judged, "runs/study")
    assert "0 of 3 debates are complete" in note
    assert "3 await a verdict (not failed)" in note
    assert "llmdebate judge runs/study --judge-id ID" in note
    assert "then run <code>llmdebate report runs/study</code> again" in note
    assert "<td>human</td><td>1</td><td>1</td><td>3</td>" in note
    assert "<td>oracle</td><td>2</td><td>2</td><td>3</td>" in note
    assert "resume" not in note and "failed:" not in note
    assert "No judgment has been made yet." in status_note(facts, [], "runs/study")
    failed = {**facts, "debates_awaiting": 2, "debates_failed": 1}
    assert "1 failed: listed with their reasons below; run the same" in status_note(
        failed, [], "r")
    assert status_note({**facts, "debates_complete": 3}, [], "r") == ""


def test_the_study_report_page_says_so(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    ts = [_waiting(i) for i in range(2)]
    write_outputs({"name": "study"}, ts, tmp_path, n_boot=50,
                  judged=[_judged(ts[0], "oracle", "oracle")])
    page = (tmp_path / "report.html").read_text()
    assert "2 await a verdict (not failed)" in page and "re-run the same" not in page
    assert "<td>0 / 2 / 0 / 2</td>" in page  # complete / awaiting / failed / in all
