"""benchmarks/learn_formal.py runs as docs/training-dynamics.md says (tiny sizes here)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "benchmarks" / "learn_formal.py"


def bench(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_writes_curves_and_figures_and_keeps_other_experiments(tmp_path: Path) -> None:
    first = bench("--tiny", "--experiments", "b", "--seeds", "0,1", "--out", str(tmp_path))
    assert first.returncode == 0, first.stderr[-2000:]
    second = bench("--tiny", "--experiments", "d", "--seeds", "0", "--out", str(tmp_path))
    assert second.returncode == 0, second.stderr[-2000:]
    got = json.loads((tmp_path / "learning.json").read_text())
    assert set(got["experiments"]) == {"b", "d"}
    arm = got["experiments"]["b"]["arms"][0]
    assert arm["seeds"] == [0, 1] and len(arm["curves"]) == 2
    assert len(arm["curves"][0]["win"]) == 7  # the pair at init and after each of 6 updates
    assert (tmp_path / "learning-b.png").stat().st_size > 1000
    assert (tmp_path / "learning-d.png").stat().st_size > 1000
    assert bench("--replot", "--out", str(tmp_path)).returncode == 0


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    bad = bench("--experiments", "a,z", "--out", str(tmp_path))
    assert bad.returncode == 2 and "--experiments" in bad.stderr
    seeds = bench("--seeds", "x", "--out", str(tmp_path))
    assert seeds.returncode == 2 and "--seeds" in seeds.stderr
    missing = bench("--replot", "--out", str(tmp_path / "none"))
    assert missing.returncode == 2 and "--replot" in missing.stderr
