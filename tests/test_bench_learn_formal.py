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


def test_table_counts_the_runs_that_reached_the_honest_equilibrium(tmp_path: Path) -> None:
    """--table's *reached*: the last point has accuracy >= 0.95 and B's Brier <= 0.01 (naive:
    accuracy and win >= 0.95). Recounted here by hand on two seeds of each kind."""
    pe = {"accuracy": [0.5, 0.96], "brier": [0.2, 0.005], "payoff": [3.0, 1.0]}
    pe_miss = {"accuracy": [0.5, 0.99], "brier": [0.2, 0.02], "payoff": [3.0, 1.2]}
    nv = {"accuracy": [0.5, 0.97], "win": [0.1, 0.96], "payoff": [-0.8, 0.92]}
    nv_miss = {"accuracy": [0.5, 0.97], "win": [0.1, 0.5], "payoff": [-0.8, 0.0]}
    summary = {"experiments": {"e": {"arms": [
        {"label": "pe arm", "kind": "pe", "seeds": [0, 1], "seconds": [1.0, 2.0],
         "curves": [pe, pe_miss], "refined": [{"payoff": 0.9}, {"payoff": 1.1}]},
        {"label": "naive arm", "kind": "naive", "seeds": [0, 1], "seconds": [1.0, 1.0],
         "curves": [nv, nv_miss], "refined": []},
    ]}}}
    (tmp_path / "learning.json").write_text(json.dumps(summary))
    got = bench("--table", "--experiments", "e", "--out", str(tmp_path))
    assert got.returncode == 0, got.stderr[-2000:]
    rows = [r for r in got.stdout.splitlines() if r.startswith("| (e)")]
    by_hand = [sum(c["accuracy"][-1] >= 0.95 and c["brier"][-1] <= 0.01 for c in (pe, pe_miss)),
               sum(c["accuracy"][-1] >= 0.95 and c["win"][-1] >= 0.95 for c in (nv, nv_miss))]
    assert by_hand == [1, 1]
    assert [r.split(" | ")[3] for r in rows] == ["1 of 2", "1 of 2"]
    assert "0.9 to 1.1" in rows[0] and "0.96 to 0.99" in rows[0]
