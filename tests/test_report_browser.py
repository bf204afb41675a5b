"""The report of a run opens in a real headless Chromium and shows what a reader needs."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import yaml
from PIL import Image, ImageStat

from llmdebate.cli import main

REPO = Path(__file__).resolve().parents[1]
FIXTURE = str(REPO / "tests" / "fixtures" / "llm_fixtures.py")
SCRIPTED = {
    "model": "scripted",
    "options": {"responder": f"{FIXTURE}:responder", "probabilities": f"{FIXTURE}:probabilities"},
}
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium(*args: str) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    assert exe, "Debian's chromium is needed (scripts/install.sh dev installs it)"
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run(
            [exe, *FLAGS, f"--user-data-dir={profile}", *args],
            capture_output=True,
            text=True,
            timeout=120,
        )


def test_multi_protocol_report_renders_in_chromium(tmp_path: Path) -> None:
    cfg = {
        "name": "browser",
        "dataset": {"path": str(REPO / "datasets" / "divisors.jsonl"), "limit": 8},
        "debate": {"depth": 2, "width": 2},
        "protocols": ["prover-estimator", "naive-recursive", "two-sided", "direct"],
        "prover": {**SCRIPTED, "decomposer": "formal"},
        "estimator": SCRIPTED,
        "judge": {**SCRIPTED, "kind": "llm"},
    }
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(cfg))
    run_dir = tmp_path / "r"
    assert main(["run", "--config", str(path), "--run-dir", str(run_dir), "--quiet"]) == 0
    assert main(["report", str(run_dir), "--quiet"]) == 0
    page = (run_dir / "report.html").as_uri()
    dom = chromium("--dump-dom", page)
    assert dom.returncode == 0, dom.stderr[-2000:]
    for text in (
        "Judge accuracy and honest-beats-dishonest per protocol and view",
        "Honest against dishonest",
        'alt="payoffs"',
        "prover-estimator/divisors-000/honest",
        "data:image/png;base64,",
    ):
        assert text in dom.stdout, text
    shot = tmp_path / "report.png"
    out = chromium("--window-size=1280,2400", f"--screenshot={shot}", page)
    assert out.returncode == 0 and shot.is_file(), out.stderr[-2000:]
    image = Image.open(shot).convert("L")
    assert image.size == (1280, 2400)
    assert ImageStat.Stat(image).stddev[0] > 20  # not a blank page: text, tables and plots
