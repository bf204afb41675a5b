"""A debate in Inspect's log viewer: the task's log bundled with ``inspect view bundle``,
served on 127.0.0.1 and opened in headless Chromium (Debian's /usr/bin/chromium through
Playwright); the screenshots are written next to the bundle."""

from __future__ import annotations

import functools
import http.server
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import inspect_ai
import pytest

from llmdebate.inspect_ext.task import debate

try:
    from tests.inspect_mock import mock_roles
except ImportError:  # run from inside tests/
    from inspect_mock import mock_roles  # type: ignore[no-redef]

playwright = pytest.importorskip("playwright.sync_api")

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


@pytest.fixture
def bundle(tmp_path: Path) -> Iterator[str]:
    """A prover-estimator debate's log, bundled and served; yields the viewer's URL."""
    task = debate(protocol="prover-estimator", dataset=str(REPO / "datasets" / "divisors.jsonl"),
                  limit=1, depth=1, width=2)
    logs = tmp_path / "logs"
    [log] = inspect_ai.eval(task, model=None, model_roles=mock_roles(), log_dir=str(logs),
                            display="none")
    assert log.status == "success", log.error
    out = tmp_path / "bundle"
    inspect = Path(sys.executable).with_name("inspect")
    subprocess.run([str(inspect), "view", "bundle", "--log-dir", str(logs), "--output-dir",
                    str(out)], check=True, capture_output=True, timeout=120)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(out))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    finally:
        httpd.shutdown()


def test_a_debate_in_inspects_log_viewer(bundle: str, tmp_path: Path) -> None:
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(bundle)
        page.get_by_text("prover-estimator · divisors-000 · honest").first.wait_for(
            timeout=30_000
        )
        page.get_by_text("initialisation · estimate").first.wait_for(timeout=30_000)
        page.screenshot(path=str(tmp_path / "viewer-sample.png"))
        body = page.inner_text("body")
        for shown in ("PROVER", "ESTIMATOR", "JUDGE", "round 1 · decompose",
                      "round 0 · verdict", "prover-estimator · divisors-000 · honest"):
            assert shown.lower() in body.lower(), shown
        # the rounds' info events come after the model calls: scroll the transcript to them
        page.mouse.move(800, 700)
        rnd = page.get_by_text("estimates b =", exact=False)
        for _ in range(80):
            if rnd.count():
                break
            page.mouse.wheel(0, 600)
            page.wait_for_timeout(150)
        rnd.first.scroll_into_view_if_needed()
        page.screenshot(path=str(tmp_path / "viewer-round.png"))
        body = page.inner_text("body")
        assert "Round 1" in body and "decomposition (and)" in body and "estimates b =" in body
        browser.close()


def test_an_exported_run_in_inspects_log_viewer(tmp_path: Path) -> None:
    """The list shows score, samples, completed and duration; a sample shows one score per
    protocol, named, and each model call's span named by its act."""
    import yaml

    from llmdebate.cli import main

    fixture = str(REPO / "tests" / "fixtures" / "llm_fixtures.py")
    scripted = {"model": "scripted", "options": {"responder": f"{fixture}:responder",
                                                 "probabilities": f"{fixture}:probabilities"}}
    cfg = {"name": "mixed", "protocols": ["direct", "consultancy", "prover-estimator"],
           "dataset": {"path": str(REPO / "datasets" / "divisors.jsonl"), "limit": 2},
           "debate": {"depth": 1, "width": 2},
           "prover": {**scripted, "decomposer": "formal"}, "estimator": scripted,
           "judge": scripted}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(cfg))
    run_dir, logs, out = tmp_path / "run", tmp_path / "logs", tmp_path / "bundle"
    assert main(["run", "--config", str(tmp_path / "c.yaml"), "--run-dir", str(run_dir),
                 "--quiet"]) == 0
    logs.mkdir()
    assert main(["export", str(run_dir), "--format", "inspect-log", "--out", str(logs)]) == 0
    inspect = Path(sys.executable).with_name("inspect")
    subprocess.run([str(inspect), "view", "bundle", "--log-dir", str(logs), "--output-dir",
                    str(out)], check=True, capture_output=True, timeout=120)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(out))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        with playwright.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(f"http://127.0.0.1:{httpd.server_address[1]}/")
            page.get_by_text("divisors-001", exact=True).first.wait_for(timeout=30_000)
            page.get_by_text("logs", exact=True).first.click()
            page.get_by_text("llmdebate/run").first.wait_for(timeout=30_000)
            page.screenshot(path=str(tmp_path / "viewer-export-list.png"))
            row = page.inner_text("body")
            assert "NaN" not in row and " sec" in row, row  # a duration, not "NaN days"
            page.go_back()
            page.get_by_text("divisors-001", exact=True).first.click()
            page.get_by_text("consultancy · divisors-001 · honest").first.wait_for(timeout=30_000)
            page.screenshot(path=str(tmp_path / "viewer-export-sample.png"))
            body = page.inner_text("body")
            for shown in ("direct · judge_accuracy", "consultancy · judge_accuracy",
                          "prover-estimator · honest_beats_dishonest", "consultant · argue round 1",
                          "judge · consultancy_judge", "for scoring only"):
                assert shown in body, shown
            assert "The correct answer is" not in body and "assigned None" not in body
            browser.close()
    finally:
        httpd.shutdown()
