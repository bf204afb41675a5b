"""The throughput benchmark runs as documented: at zero server latency, and with the worker
flag the CLI has (``--workers``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "benchmarks" / "bench_throughput.py"


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


def test_zero_latency_rows_have_no_ideal_rate(tmp_path: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    common = ["--latency", "0", "--in-flight", "2", "--seconds", "0.2", "--json", str(rows)]
    calls = bench("calls", *common)
    assert calls.returncode == 0, calls.stderr[-2000:]
    debates = bench("debates", *common, "--debates", "4", "--depth", "1", "--width", "2")
    assert debates.returncode == 0, debates.stderr[-2000:]
    got = [json.loads(x) for x in rows.read_text().splitlines()]
    assert [r["what"] for r in got] == ["calls", "debates"]
    assert all(r["latency_s"] == 0 and r["ideal_per_s"] is None for r in got)
    assert got[0]["calls"] >= 200 and got[1]["debates"] == 4 and got[1]["failed"] == 0
    assert all(r["ratio"] > 0 for r in got)  # against the measured bound alone


def test_the_worker_flag_is_the_clis() -> None:
    shown = bench("--help")
    assert shown.returncode == 0
    assert "--workers" in shown.stdout and "--ray-workers" not in shown.stdout
    assert "--ray-workers" not in (REPO / "benchmarks" / "README.md").read_text()


def test_a_speech_protocols_debates(tmp_path: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    res = bench("debates", "--protocol", "two-sided", "--rounds", "2", "--latency", "0",
                "--in-flight", "2", "--seconds", "0.2", "--debates", "4", "--json", str(rows))
    assert res.returncode == 0, res.stderr[-2000:]
    (row,) = [json.loads(x) for x in rows.read_text().splitlines()]
    assert row["protocol"] == "two-sided" and row["debates"] == 4 and row["failed"] == 0
    assert row["calls_per_debate"] == 5  # two speeches a round for two rounds, the judge's


def test_the_speech_cpu_benchmark_runs_as_documented() -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    res = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "bench_speech_cpu.py"), "--debates", "6",
         "--rounds", "2", "--repeat", "2"],
        env=env, capture_output=True, text=True, timeout=300, check=False,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    lines = res.stdout.splitlines()
    assert sum(" two-sided: 6 debates, " in x for x in lines) == 4
    assert lines[-1].startswith("median CPU: before ")
