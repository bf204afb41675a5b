"""End to end in a real headless Chromium: two judges judge leaves and a two-sided debate.

Playwright drives Debian's /usr/bin/chromium (no browser download). Screenshots of a judge's
pages and of the lead's page go to $LLMDEBATE_SCREENSHOTS when set, else to the test's tmp dir.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest
from judging_study import assign, make_run, server, with_base, write_judges
from sqlalchemy import select

from llmdebate.commands.score import score_file
from llmdebate.judging.db import Assignment, Judgment, connect
from llmdebate.records.rundir import JUDGED_FILE, load_transcripts

playwright = pytest.importorskip("playwright.sync_api")

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# words that would tell a judge what they must not know, or which model or protocol ran
FORBIDDEN = re.compile(
    r"gold|honest|scripted|prover-estimator|naive-recursive|two-sided|consultancy|"
    r"\"truth\"|order-[01]|debate_id|divisors-\d",
    re.I,
)


def _judge_all(page, base: str, answers: list[str], shots: Path, who: str) -> int:
    """Answer every open item of the logged-in judge; returns how many were answered."""
    n = 0
    page.goto(base + "/next")
    while "/a/" in page.url:
        kind = page.get_attribute("#judge-form", "data-kind")
        if kind == "leaf":
            page.keyboard.press("t" if n % 2 == 0 else "f")
            if n == 0:
                page.check("#use_probability")
                page.fill("#probability", "80")
        else:
            for _ in range(4):
                page.keyboard.press("ArrowLeft")  # towards answer 1: 70 %
            page.fill("#explanation", f"{who} reasons <b>bold</b> {{{{ 7*7 }}}}")
        if n < 2:
            page.screenshot(path=str(shots / f"{who}-{kind}-{n}.png"), full_page=True)
        answers.append(page.content())
        page.click("#submit")
        page.wait_for_load_state()
        n += 1
        assert n < 50
    return n


def test_two_judges_in_chromium(tmp_path: Path) -> None:
    shots = Path(os.environ.get("LLMDEBATE_SCREENSHOTS") or tmp_path / "shots")
    shots.mkdir(parents=True, exist_ok=True)
    run_dir = make_run(tmp_path, ["prover-estimator", "two-sided"], limit=3)
    links = assign(run_dir, write_judges(tmp_path / "judges.yaml", ["alice", "bob"]), 1)
    sessions = connect(run_dir)
    with sessions() as s:
        mine = {
            j: [a.id for a in s.scalars(select(Assignment).where(Assignment.judge_id == j))]
            for j in ("alice", "bob")
        }
        protocols = {a.protocol for a in s.scalars(select(Assignment))}
    assert protocols == {"prover-estimator", "two-sided"}
    bodies: list[str] = []
    with server(run_dir) as base, playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            alice = browser.new_context(viewport={"width": 900, "height": 900})
            bob = browser.new_context(viewport={"width": 390, "height": 844})  # a phone
            for ctx in (alice, bob):
                ctx.on("response", lambda r: bodies.append(r.text()) if r.ok else None)
            pa, pb = alice.new_page(), bob.new_page()
            pa.goto(with_base(links["alice"], base))
            assert "Welcome, alice" in pa.content() and "/login/" not in pa.url
            pb.goto(with_base(links["bob"], base))

            # alice may not open bob's item
            refused = pa.goto(f"{base}/a/{mine['bob'][0]}")
            assert refused is not None and refused.status == 404
            # nor the lead's page
            lead_try = pa.goto(f"{base}/lead")
            assert lead_try is not None and lead_try.status == 403

            # bob opens his first item in two tabs and submits in both: the second is a conflict
            pb2 = bob.new_page()
            first = f"{base}/a/{mine['bob'][0]}"
            pb.goto(first)
            pb2.goto(first)
            kind = pb.get_attribute("#judge-form", "data-kind")
            for page in (pb, pb2):
                if kind == "leaf":
                    page.keyboard.press("t")
                else:
                    page.fill("#explanation", "first tab")
                    page.keyboard.press("ArrowRight")
            pb.click("#submit")
            pb.wait_for_load_state()
            with pb2.expect_navigation() as nav:
                pb2.click("#submit")
            assert nav.value is not None and nav.value.status == 409
            assert "your first answer counts" in pb2.content()
            pb2.close()

            done_a = _judge_all(pa, base, bodies, shots, "alice")
            done_b = _judge_all(pb, base, bodies, shots, "bob")
            assert done_a == len(mine["alice"]) and done_b == len(mine["bob"]) - 1
            assert "All" in pa.content() and "items are answered" in pa.content()

            lead = browser.new_context(viewport={"width": 1000, "height": 800})
            pl = lead.new_page()
            pl.goto(with_base(links["lead"], base))
            assert pl.url.endswith("/lead")
            total = len(mine["alice"]) + len(mine["bob"])
            assert f"{total} of {total} assignments judged" in pl.content()
            pl.screenshot(path=str(shots / "lead.png"), full_page=True)
            csv_text = pl.request.get(f"{base}/lead/judgments.csv").text()
            assert len(csv_text.strip().splitlines()) == total + 1
        finally:
            browser.close()

    # nothing a judge received names the gold answer, a side, a model or a protocol
    for body in bodies:
        assert not FORBIDDEN.search(body), FORBIDDEN.search(body)
    # explanations with markup came back escaped, never rendered
    with sessions() as s:
        judgments = list(s.scalars(select(Judgment)))
    assert len(judgments) == total
    assert any("<b>bold</b> {{ 7*7 }}" in j.explanation for j in judgments)
    judged = load_transcripts(run_dir, judged=True)
    assert len(judged) == total and len({t.id for t in judged}) == total
    assert {t.meta["judgment"]["id"] for t in judged} == {j.id for j in judgments}
    assert all(t.status == "complete" for t in judged)
    assert {t.meta["judgment"]["interface"] for t in judged} == {"web"}
    res = score_file(run_dir / JUDGED_FILE)
    assert res.ok and res.scored == total and not res.mismatches
    shot_names = {p.name for p in shots.glob("*.png")}
    assert "lead.png" in shot_names and any("leaf" in n for n in shot_names)
    assert any("choice" in n for n in shot_names)


def test_stepped_reveal_in_chromium_with_and_without_javascript(tmp_path: Path) -> None:
    shots = Path(os.environ.get("LLMDEBATE_SCREENSHOTS") or tmp_path / "shots")
    shots.mkdir(parents=True, exist_ok=True)
    run_dir = make_run(tmp_path, ["two-sided"], limit=1, rounds=2)
    judges = write_judges(tmp_path / "j.yaml", ["amy", "noel"], reveal="stepped", turn_cost=0.05)
    links = assign(run_dir, judges, 1)
    shown = re.compile(r"(\d) of 4 turns shown")
    with server(run_dir) as base, playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            amy = browser.new_context(viewport={"width": 900, "height": 1000}).new_page()
            amy.goto(with_base(links["amy"], base))
            amy.goto(base + "/next")
            assert shown.search(amy.content()).group(1) == "1"  # type: ignore[union-attr]
            assert amy.locator("article.turn").count() == 1
            amy.fill("#explanation", "kept across reveals")
            amy.click("h1")  # out of the text box, where N is a letter
            with amy.expect_navigation():
                amy.keyboard.press("n")  # the shortcut asks for the next turn
            assert shown.search(amy.content()).group(1) == "2"  # type: ignore[union-attr]
            with amy.expect_navigation():
                amy.click("#reveal")
            assert amy.locator("article.turn").count() == 3
            assert amy.input_value("#explanation") == "kept across reveals"
            amy.screenshot(path=str(shots / "amy-stepped.png"), full_page=True)
            amy.keyboard.press("ArrowLeft")
            amy.click("#submit")
            amy.wait_for_load_state()
            assert "items are answered" in amy.content()

            ctx = browser.new_context(java_script_enabled=False)  # the server alone decides
            noel = ctx.new_page()
            noel.goto(with_base(links["noel"], base))
            noel.goto(base + "/next")
            noel.click("#reveal")
            noel.wait_for_load_state()
            assert shown.search(noel.content()).group(1) == "2"  # type: ignore[union-attr]
            noel.fill("#explanation", "no scripts here")
            noel.click("#submit")
            noel.wait_for_load_state()
            assert "items are answered" in noel.content()
        finally:
            browser.close()
    with connect(run_dir)() as s:
        got = {j.judge_id: j for j in s.scalars(select(Judgment))}
    assert got["amy"].turns_revealed == 3 and got["noel"].turns_revealed == 2
    assert got["amy"].explanation == "kept across reveals"
    judged = load_transcripts(run_dir, judged=True)
    costs = sorted(t.meta["judgment"]["reveal"]["cost"] for t in judged)
    assert costs == [pytest.approx(0.05), pytest.approx(0.10)]
    assert score_file(run_dir / JUDGED_FILE).ok
