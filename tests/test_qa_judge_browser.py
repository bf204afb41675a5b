"""The hidden-passage judge page in a real headless Chromium (Debian's /usr/bin/chromium): no
passage, the speeches' quotes styled verified (green, ticked) or unverified (red, struck
through, flagged "not in the passage"), the leaf evidence's quotes likewise. Screenshots go
to $LLMDEBATE_SCREENSHOTS when set, else to the test's tmp dir."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from fixtures.qa_fixtures import INVENTED, pieces
from judging_study import assign, server, with_base, write_judges
from qa_passage import leaks, passage, run_scripted, windows

from llmdebate.records.rundir import load_transcripts

playwright = pytest.importorskip("playwright.sync_api")

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


def test_hidden_passage_page_styles_verified_and_unverified_quotes(tmp_path: Path) -> None:
    shots = Path(os.environ.get("LLMDEBATE_SCREENSHOTS") or tmp_path / "shots")
    shots.mkdir(parents=True, exist_ok=True)
    run_dir, _ = run_scripted(
        tmp_path, {"kind": "human", "passage": "hidden"},
        protocols=["two-sided", "prover-estimator"], rounds=1,
    )
    waiting = [t for t in load_transcripts(run_dir) if t.status == "awaiting_verdict"]
    names = [f"j{i}" for i in range(len(waiting))]
    links = assign(run_dir, write_judges(tmp_path / "j.yaml", names), 1)
    quote = pieces(passage())["quote"]
    ws = windows(passage())
    kinds: set[str] = set()
    with server(run_dir) as base, playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            for name in names:
                page = browser.new_context(viewport={"width": 900, "height": 900}).new_page()
                page.goto(with_base(links[name], base))
                page.goto(base + "/next")
                kind = page.get_attribute("#judge-form", "data-kind") or ""
                assert page.locator("section.passage").count() == 0
                assert page.locator("#quote-legend").is_visible()
                ok = page.locator("main q.quote.verified").filter(has_text=quote).first
                bad = page.locator("main q.quote.unverified").filter(has_text=INVENTED).first
                assert ok.is_visible() and bad.is_visible()
                green = ok.evaluate("e => getComputedStyle(e).backgroundColor")
                struck = bad.locator("s").evaluate(
                    "e => getComputedStyle(e).textDecorationLine"
                )
                assert green == "rgb(227, 244, 230)" and "line-through" in struck
                assert "not in the passage" in bad.inner_text().lower()
                # what the page shows outside its verified quotes holds no passage text
                outside = page.evaluate(
                    "() => { const m = document.querySelector('main').cloneNode(true);"
                    " m.querySelectorAll('q.quote.verified').forEach(q => q.remove());"
                    " return m.innerText; }"
                )
                assert leaks(outside, ws) == []
                if kind not in kinds:
                    page.screenshot(path=str(shots / f"hidden-{kind}.png"), full_page=True)
                    kinds.add(kind)
        finally:
            browser.close()
    assert kinds == {"choice", "leaf"}
