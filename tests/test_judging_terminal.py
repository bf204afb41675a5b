"""The terminal judge in a pseudo-terminal (pexpect): answer, quit, resume, finish."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pexpect
from judging_study import REPO, assign, make_run, write_judges
from sqlalchemy import select

from llmdebate.commands.score import score_file
from llmdebate.judging.db import Assignment, Judgment, connect
from llmdebate.records.rundir import JUDGED_FILE, load_transcripts

CODE = "import sys; from llmdebate.cli import main; sys.exit(main(sys.argv[1:]))"


def _spawn(run_dir: Path, judge: str) -> pexpect.spawn:
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "100", "TERM": "dumb", "NO_COLOR": "1"}
    return pexpect.spawn(
        sys.executable,
        ["-c", CODE, "judge", str(run_dir), "--judge-id", judge],
        env=env,
        encoding="utf-8",
        timeout=30,
        dimensions=(40, 100),
    )


def _answer_one(child: pexpect.spawn, n: int) -> None:
    i = child.expect([r"Is the claim true\? \((t|f) or (t|f); q quits\)", r"answer 1 is correct"])
    if i == 0:
        child.sendline("x")  # not a choice: asked again
        child.expect("Please select one of the available options")
        child.sendline("t")
        child.expect("Probability that it is true")
        child.sendline("150")  # out of range: the whole item is asked again
        child.expect(r"Reason \(optional\)")
        child.sendline("")
        child.expect("between 1 % and 99 %")
        child.expect("Is the claim true")
        child.sendline("t")
        child.expect("Probability that it is true")
        child.sendline("75")
        child.expect(r"Reason \(optional\)")
        child.sendline(f"terminal reason {n}")
    else:
        child.sendline("65")
        child.expect("Explain your answer")
        child.sendline("")  # required: asked again
        child.expect("explain your answer in a sentence or two")
        child.expect("answer 1 is correct")
        child.sendline("65")
        child.expect("Explain your answer")
        child.sendline(f"terminal reason {n}")
    child.expect("Recorded")


def test_terminal_judge_answers_quits_and_resumes(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path, ["prover-estimator", "two-sided"], limit=2)
    assign(run_dir, write_judges(tmp_path / "j.yaml", ["tess"]), 1)
    with connect(run_dir)() as s:
        total = len(list(s.scalars(select(Assignment))))
    assert total == 2

    child = _spawn(run_dir, "tess")
    child.expect("0 of 2 items done")
    child.expect("Item 1 of 2")
    _answer_one(child, 0)
    child.expect("Item 2 of 2")
    child.expect([r"q quits\)", r"\(q quits\)"])
    child.sendline("q")
    child.expect("Stopped; 1 judged")
    child.expect(pexpect.EOF)

    child = _spawn(run_dir, "tess")
    child.expect("1 of 2 items done")
    child.expect("Item 2 of 2")
    _answer_one(child, 1)
    child.expect("All items done")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0

    with connect(run_dir)() as s:
        judgments = list(s.scalars(select(Judgment)))
    assert len(judgments) == total and {j.interface for j in judgments} == {"terminal"}
    judged = load_transcripts(run_dir, judged=True)
    assert len(judged) == total and {t.protocol for t in judged} == {
        "prover-estimator",
        "two-sided",
    }
    assert score_file(run_dir / JUDGED_FILE).ok

    bad = _spawn(run_dir, "nobody")
    bad.expect("no such judge")
    bad.expect(pexpect.EOF)
    bad.close()
    assert bad.exitstatus == 2


def test_terminal_judge_reveals_turns_one_at_a_time(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path, ["two-sided"], limit=1, rounds=2)
    judges = write_judges(tmp_path / "j.yaml", ["tess"], reveal="stepped", turn_cost=0.1)
    assign(run_dir, judges, 1)
    child = _spawn(run_dir, "tess")
    child.expect("Item 1 of 1")
    child.expect("1 of 4 turns shown; each further turn costs 0.1")
    child.expect(r"n: next turn, costs 0.1; q quits\)")
    child.sendline("n")
    child.expect("round 1")  # the second speech of round 1
    child.expect("2 of 4 turns shown")
    child.sendline("n")
    child.expect("3 of 4 turns shown")
    child.sendline("55")
    child.expect("Explain your answer")
    child.sendline("seen enough")
    child.expect("Recorded")
    child.expect(pexpect.EOF)
    child.close()
    with connect(run_dir)() as s:
        (j,) = list(s.scalars(select(Judgment)))
    assert j.turns_revealed == 3 and j.interface == "terminal"
    (t,) = load_transcripts(run_dir, judged=True)
    assert t.meta["judgment"]["reveal"] == {"turns": 3, "of": 4, "turn_cost": 0.1, "cost": 0.2}
    assert score_file(run_dir / JUDGED_FILE).ok
