"""A person who asks and stops, end to end in a real headless Chromium (Debian's chromium):
an interactive consultancy and two-sided debate with the passage hidden; each judge types a
question, ``llmdebate answer`` runs the debaters' next round, the judge's page shows the
answer by itself (no reload), the judge ends and decides, and the clock counted the waiting.
Screenshots go to $LLMDEBATE_SCREENSHOTS when set, else to the test's tmp dir."""

from __future__ import annotations

import math
import os
import shutil
from pathlib import Path

import pytest
from judging_study import assign, server, with_base, write_judges
from qa_passage import leaks, passage, run_cli, windows
from sqlalchemy import select

from llmdebate.cli import main
from llmdebate.commands.score import score_file
from llmdebate.judging.asking import ASKED_FILE, load_asked
from llmdebate.judging.db import Judgment, Question, connect
from llmdebate.records.rundir import JUDGED_FILE, load_transcripts

playwright = pytest.importorskip("playwright.sync_api")

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
JUDGE = {"kind": "human", "passage": "hidden", "interactive": True, "turn_cost": 0.1,
         "log_base": 2}


def _outside_quotes(page) -> str:  # type: ignore[no-untyped-def]
    return str(page.evaluate(
        "() => { const m = document.querySelector('main').cloneNode(true);"
        " m.querySelectorAll('q.quote.verified').forEach(q => q.remove());"
        " return m.innerText; }"
    ))


def test_a_person_asks_a_question_and_ends_early_in_chromium(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shots = Path(os.environ.get("LLMDEBATE_SCREENSHOTS") or tmp_path / "shots")
    shots.mkdir(parents=True, exist_ok=True)
    run_dir = run_cli(tmp_path, JUDGE, protocols=["consultancy", "two-sided"], rounds=3)
    waiting = [t for t in load_transcripts(run_dir) if t.status == "awaiting_verdict"]
    assert len(waiting) == 4
    assert all(max(x.round for x in t.turns) == 1 for t in waiting)  # it waits after round 1
    names = [f"j{i}" for i in range(len(waiting))]
    links = assign(run_dir, write_judges(tmp_path / "j.yaml", names), 1)
    ws = windows(passage())
    pages = {}
    with server(run_dir) as base, playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            for n, name in enumerate(names):
                page = browser.new_context(viewport={"width": 900, "height": 1000}).new_page()
                page.goto(with_base(links[name], base))
                page.goto(base + "/next")
                assert page.locator("#ask-question").is_visible()
                assert page.locator("#end").is_visible()
                assert page.locator("#submit").count() == 0  # the verdict comes after "end"
                assert leaks(_outside_quotes(page), ws) == []
                if n == 0:
                    page.screenshot(path=str(shots / "ask-question-box.png"), full_page=True)
                page.fill("#ask-question", f"Which line of the story supports your answer, {name}?")
                page.click("#ask-button")
                page.wait_for_load_state()
                assert page.locator("#waiting").is_visible()
                assert page.locator("#ask-question").count() == 0
                if n == 0:
                    page.screenshot(path=str(shots / "ask-waiting.png"), full_page=True)
                pages[name] = page
            page.wait_for_timeout(3000)  # the pages wait (and poll) a while: the clock runs
            assert main(["answer", str(run_dir)]) == 0
            assert "answered 4 question(s)" in capsys.readouterr().out
            assert main(["answer", str(run_dir)]) == 0  # nothing waits any more
            assert "answered 0 question(s)" in capsys.readouterr().out
            for n, name in enumerate(names):
                page = pages[name]
                page.locator("article.asked").wait_for(timeout=30_000)  # no reload by hand
                asked = page.locator("article.asked")
                assert asked.count() == 1
                assert f"supports your answer, {name}?" in asked.inner_text()
                heard = page.locator("article.turn:not(.asked) h3").all_inner_texts()
                assert any("round 2" in h for h in heard) and not any("round 3" in h for h in heard)
                assert page.locator("#ask-question").is_visible()  # a third round is left
                assert leaks(_outside_quotes(page), ws) == []
                if n == 0:
                    page.screenshot(path=str(shots / "ask-answered.png"), full_page=True)
                page.click("#end")
                page.wait_for_load_state()
                assert page.locator("#ask-question").count() == 0
                for _ in range(4):
                    page.keyboard.press("ArrowLeft")  # towards answer 1: 70 %
                page.fill("#explanation", "the answer to my question settled it")
                page.click("#submit")
                page.wait_for_load_state()
        finally:
            browser.close()
    sessions = connect(run_dir)
    with sessions() as s:
        assert len(list(s.scalars(select(Question)))) == 4
        assert len(list(s.scalars(select(Judgment)))) == 4
    assert len(load_asked(run_dir)) == 4 and (run_dir / ASKED_FILE).is_file()
    judged = load_transcripts(run_dir, judged=True)
    assert len(judged) == 4
    for t in judged:
        rec = t.meta["judge_turns"]
        assert [x["action"] for x in rec["turns"]] == ["ask", "decide"]
        assert rec["asked"] == 1 and rec["max_rounds"] == 3
        assert max(x.round for x in t.turns if x.role != "judge") == 2
        p_first = t.meta["judge"]["p_first"]
        p = p_first if t.meta["options"][0] == t.meta["gold"] else 1 - p_first
        assert rec["score"] == pytest.approx(math.log2(p) - 0.1)
        assert t.meta["judgment"]["interactive_score"] == rec["score"]
        assert t.id.split("#")[1].isdigit() and "#ask" not in t.id
        assert t.meta["judgment"]["active_s"] >= 3.0  # the waiting counted, not reset
    res = score_file(run_dir / JUDGED_FILE)
    assert res.ok and res.scored == 4 and not res.mismatches
    capsys.readouterr()
    assert main(["score", str(run_dir / JUDGED_FILE)]) == 0
    assert "0 mismatches" in capsys.readouterr().out
    assert main(["report", str(run_dir), "--quiet"]) == 0
    assert "A judge who asks and stops" in (run_dir / "report.html").read_text()
