"""The terminal judge of an interactive debate in a pseudo-terminal (pexpect): ask the
debaters, ``llmdebate answer``, read the answer, end and decide; the same store and score as
the web page."""

from __future__ import annotations

import math
from pathlib import Path

import pexpect
import pytest
from judging_study import assign, make_run, write_judges
from sqlalchemy import select
from test_judging_terminal import _spawn

from llmdebate.cli import main
from llmdebate.commands.score import score_file
from llmdebate.judging.db import Judgment, Question, connect
from llmdebate.records.rundir import JUDGED_FILE, load_transcripts

JUDGE = {"kind": "human", "interactive": True, "turn_cost": 0.2, "log_base": 2}


def test_terminal_judge_asks_then_ends_and_decides(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = make_run(tmp_path, ["two-sided"], limit=1, rounds=3, judge=JUDGE)
    assign(run_dir, write_judges(tmp_path / "j.yaml", ["tess"]), 1)

    child = _spawn(run_dir, "tess")
    child.expect("Item 1 of 1")
    child.expect(r"a: ask the debaters \(costs 0.2\), e: end and decide, q quits")
    child.sendline("a")
    child.expect("Your question to the debaters")
    child.sendline("")  # empty: asked again
    child.expect("type a question")
    child.expect("a: ask the debaters")
    child.sendline("a")
    child.expect("Your question to the debaters")
    child.sendline("Which divisor decides it?")
    child.expect("Asked")
    child.expect("All items done. 0 judged")
    child.expect(pexpect.EOF)

    child = _spawn(run_dir, "tess")  # the question waits: the item is skipped
    child.expect("waits for the debaters' answer")
    child.expect(pexpect.EOF)

    assert main(["answer", str(run_dir)]) == 0
    assert "answered 1 question(s)" in capsys.readouterr().out

    child = _spawn(run_dir, "tess")
    child.expect("Your question, after round 1")
    child.expect("Which divisor decides it")
    child.expect("round 2")
    child.expect("a: ask the debaters")
    child.sendline("e")
    child.expect("answer 1 is correct")
    child.sendline("80")
    child.expect("Explain your answer")
    child.sendline("the answer settled it")
    child.expect("Recorded")
    child.expect("All items done. 1 judged")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0

    with connect(run_dir)() as s:
        assert [q.text for q in s.scalars(select(Question))] == ["Which divisor decides it?"]
        (j,) = s.scalars(select(Judgment))
    assert j.interface == "terminal"
    (t,) = load_transcripts(run_dir, judged=True)
    rec = t.meta["judge_turns"]
    assert rec["asked"] == 1 and [x["action"] for x in rec["turns"]] == ["ask", "decide"]
    p_first = t.meta["judge"]["p_first"]
    p = p_first if t.meta["options"][0] == t.meta["gold"] else 1 - p_first
    assert rec["score"] == pytest.approx(math.log2(p) - 0.2)
    res = score_file(run_dir / JUDGED_FILE)
    assert res.ok and res.scored == 1
