"""With ``judge.passage: hidden`` no judge — model or person, every protocol — reads any part
of the passage except inside a verified quote; with ``shown`` they read the passage.

The scripted debaters (tests/fixtures/qa_fixtures.py) quote the passage, copy a run of it
without quote markup, invent a quote, and keep passage text in their private scratchpad. The
check: no 40-character window of the (normalised) passage occurs outside ``<v_quote>`` in any
judge request — the call records of role judge and the requests the judge's scripted model
received — nor outside a verified quote on any judge page (web) or terminal screen.
"""

from __future__ import annotations

import html
import io
import re
from pathlib import Path

import pytest
from judging_study import assign, write_judges
from qa_passage import EVERY, leaks, passage, request_text, run_scripted, windows
from rich.console import Console
from starlette.testclient import TestClient

from llmdebate.judging.app import create_app
from llmdebate.judging.db import Assignment, connect
from llmdebate.judging.terminal import _show
from llmdebate.judging.view import build_view
from llmdebate.records.rundir import load_transcripts

VERIFIED_HTML = re.compile(r'<q class="quote verified"[^>]*>.*?</q>', re.DOTALL)
TAG = re.compile(r"<[^>]+>")
VERIFIED_TERMINAL = re.compile(r"✓“.*?”", re.DOTALL)


def _judge_requests(run_dir: Path, judge_model: object) -> list[str]:
    texts = []
    for t in load_transcripts(run_dir):
        texts += [request_text(c.messages) for c in t.calls if c.role == "judge"]
    texts += [request_text(m) for m in judge_model.backend.requests]  # type: ignore[attr-defined]
    return texts


@pytest.mark.parametrize("mode", ["hidden", "shown"])
def test_model_judges_see_the_passage_only_through_verified_quotes_unless_shown(
    tmp_path: Path, mode: str
) -> None:
    run_dir, models = run_scripted(
        tmp_path, {"passage": mode, "direct_passage": [mode]}
    )
    ts = load_transcripts(run_dir)
    assert {t.protocol for t in ts} == set(EVERY)
    assert all(t.status == "complete" for t in ts), [t.failure for t in ts]
    assert all(t.meta["passage"] == mode for t in ts)
    judge_calls = [c for t in ts for c in t.calls if c.role == "judge"]
    assert {t.protocol for t in ts for c in t.calls if c.role == "judge"} == set(EVERY)
    requests = _judge_requests(run_dir, models["judge"])
    assert len(requests) >= len(judge_calls) > 0
    text = passage()
    assert all((t.item or {}).get("context") == text for t in ts)
    ws = windows(text)
    found = [w for text in requests for w in leaks(text, ws)]
    if mode == "hidden":
        assert found == []
        # the judges did read quotes: verified, unverified, and the copied run marked verified
        everything = "\n".join(requests)
        assert "<v_quote>" in everything and "<u_quote>" in everything
        assert "have not read the passage" in everything
    else:
        assert len(found) > 1000  # the whole passage is in the expert's and judges' prompts
    # the speakers' quotes are recorded with their status and spans
    speeches = [x for t in ts for x in t.turns if x.role != "judge"]
    assert speeches and all(x.quotes for x in speeches)
    for x in speeches:
        statuses = [q["status"] for q in x.quotes or [] if not q.get("copied")]
        assert statuses == ["verified", "unverified"]
        # the copied run is a quote in its own right when the judge cannot read the passage
        copies = [q for q in x.quotes or [] if q.get("copied")]
        assert bool(copies) == (mode == "hidden")
        assert all(q["status"] == "verified" and q["spans"] for q in copies)
        (start, end), = x.quotes[0]["spans"]  # type: ignore[index]
        assert " ".join(text[start:end].split()) == x.quotes[0]["text"]  # type: ignore[index]
    leaves = [t.rounds[-1].evidence for t in ts if t.rounds]
    assert leaves and all(
        [q["status"] for q in ev.data["quotes"] if not q.get("copied")]
        == ["verified", "unverified"]
        for ev in leaves if ev is not None
    )


def _page_text(page: str) -> str:
    """What a judge reads on a page, verified quotes marked as such."""
    main = page[page.index("<main") :]
    return html.unescape(TAG.sub(" ", VERIFIED_HTML.sub("<v_quote>q</v_quote>", main)))


def _pages(tmp_path: Path, mode: str) -> tuple[list[str], list[str]]:
    """Every judge page (web) and terminal screen of a run waiting for people."""
    run_dir, _ = run_scripted(
        tmp_path, {"kind": "human", "passage": mode, "direct_passage": [mode]}
    )
    waiting = {t.id: t for t in load_transcripts(run_dir) if t.status == "awaiting_verdict"}
    assert {t.protocol for t in waiting.values()} == set(EVERY)
    names = [f"j{i}" for i in range(len(waiting))]  # a judge sees an item once
    links = assign(run_dir, write_judges(tmp_path / "j.yaml", names), 1)
    pages: list[str] = []
    app = create_app(run_dir)
    for name in names:
        with TestClient(app) as c:
            r = c.get(links[name][links[name].index("/login/") :], follow_redirects=True)
            assert r.status_code == 200
            r = c.get("/next", follow_redirects=True)
            assert "/a/" in str(r.url)
            pages.append(r.text)
    with connect(run_dir)() as s:
        assert len(s.query(Assignment).all()) == len(waiting)
    screens = []
    for t in waiting.values():
        out = io.StringIO()
        console = Console(file=out, width=100, color_system=None, record=True)
        _show(console, build_view(t, 1, "full"), 1, 1)
        screens.append(console.export_text())
    return pages, screens


@pytest.mark.parametrize("mode", ["hidden", "shown"])
def test_judge_pages_and_terminal_show_the_passage_only_through_verified_quotes_unless_shown(
    tmp_path: Path, mode: str
) -> None:
    pages, screens = _pages(tmp_path, mode)
    assert len(pages) == len(screens) >= len(EVERY)
    ws = windows(passage())
    web = [w for p in pages for w in leaks(_page_text(p), ws)]
    term = [
        w for s in screens for w in leaks(VERIFIED_TERMINAL.sub("<v_quote>q</v_quote>", s), ws)
    ]
    if mode == "hidden":
        assert web == [] and term == []
        assert any('class="quote verified"' in p for p in pages)
        assert any('class="quote unverified"' in p for p in pages)
        assert all("Passage</h2>" not in p for p in pages)
        assert any("not in the passage" in s for s in screens)
    else:
        assert len(web) > 1000 and len(term) > 1000
        assert all("Passage</h2>" in p for p in pages)
