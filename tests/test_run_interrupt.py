"""A run stopped by SIGTERM or Ctrl-C mid-way, its debates served over HTTP by the fake
OpenAI-compatible server (a separate process, with latency): ``summary.json`` is written, one
line says what was kept and the command that resumes, the exit code is 143 (130), and the
resume completes the run with no debate twice."""

from __future__ import annotations

import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
DIVISORS = REPO / "datasets" / "divisors.jsonl"
# Ctrl-C as a terminal delivers it, even where this process was started with SIGINT
# ignored (a job started in the background of a shell without job control)
CLI = (
    "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "from llmdebate.cli import main; sys.exit(main(sys.argv[1:]))"
)


@pytest.fixture(scope="module")
def slow_server() -> Iterator[str]:
    proc = subprocess.Popen(
        [sys.executable, str(REPO / "benchmarks" / "fake_openai_server.py"), "--port", "0",
         "--latency", "0.05"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("listening "), line
        yield line.split()[1].strip()
    finally:
        proc.terminate()
        proc.wait(10)


def env(tmp: Path) -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    return {**out, "PYTHONPATH": str(REPO), "LLMDEBATE_CACHE_DIR": str(tmp / "cache")}


def config(tmp: Path, url: str) -> Path:
    role = {"model": "openai/fake", "base_url": url}
    cfg = {
        "name": "interrupted",
        "dataset": {"path": str(DIVISORS), "limit": 6},
        "debate": {"depth": 2, "width": 2},
        "protocols": ["prover-estimator"],
        "prover": {**role, "decomposer": "formal"},
        "estimator": role,
        "judge": {"kind": "llm", **role},
        "max_concurrency": 2,
        "use_cache": False,
        "report": {"bootstrap": 10},
    }
    path = tmp / "run.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


@pytest.mark.parametrize(("sig", "code", "said"), [
    (signal.SIGTERM, 143, "interrupted by SIGTERM"),
    (signal.SIGINT, 130, "interrupted by Ctrl-C"),
])
def test_an_interrupted_run_writes_its_summary_and_resumes_without_duplicates(
    tmp_path: Path, slow_server: str, sig: int, code: int, said: str,
    record_property: Callable[[str, object], None],
) -> None:
    cfg = config(tmp_path, slow_server)
    run_dir = tmp_path / "run"
    args = ["run", "--config", str(cfg), "--run-dir", str(run_dir), "--quiet"]
    proc = subprocess.Popen(
        [sys.executable, "-c", CLI, *args], env=env(tmp_path), cwd=tmp_path,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    transcripts = run_dir / "transcripts.jsonl"
    deadline = time.monotonic() + 120
    while len(lines(transcripts)) < 2:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "no debate finished in 120 s"
        time.sleep(0.05)
    proc.send_signal(sig)
    began = time.monotonic()
    _, err = proc.communicate(timeout=300)  # a hang guard: the time itself is measured below
    record_property("exit_s", round(time.monotonic() - began, 2))
    assert proc.returncode == code, err
    summary = json.loads((run_dir / "summary.json").read_text())
    kept = len(lines(transcripts))
    assert summary["stopped"] == said
    assert summary["planned"] == 12 and 2 <= kept < 12
    assert summary["missing"] == 12 - kept
    (line,) = [x for x in err.splitlines() if x.strip()]
    assert line.startswith(f"{said}: {kept} of 12 debates kept in {run_dir}")
    resume = line.split("resume: ", 1)[1]
    argv = shlex.split(resume)
    assert argv[0] == "llmdebate" and argv[1:] == [*args[:3], *args[5:], *args[3:5]]
    again = subprocess.run(
        [sys.executable, "-c", CLI, *argv[1:]], env=env(tmp_path), cwd=tmp_path,
        capture_output=True, text=True, timeout=300,
    )
    assert again.returncode == 0, again.stderr
    ids = [t["id"] for t in lines(transcripts)]
    assert len(ids) == len(set(ids)) == 12
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["stopped"] is None and summary["missing"] == 0


def test_a_run_whose_server_is_down_says_why_on_the_terminal(tmp_path: Path) -> None:
    """Fewer debates than the circuit breaker's limit fail: the terminal line still says why
    (connection refused), not only how many."""
    with socket.socket() as s:  # a port with nothing listening
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cfg = config(tmp_path, f"http://127.0.0.1:{port}/v1")
    raw = yaml.safe_load(cfg.read_text())
    raw.update(max_retries=0, dataset={"path": str(DIVISORS), "limit": 2})
    cfg.write_text(yaml.safe_dump(raw))
    done = subprocess.run(
        [sys.executable, "-c", CLI, "run", "--config", str(cfg), "--run-dir",
         str(tmp_path / "run"), "--quiet"],
        env=env(tmp_path), cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 1
    (line,) = [x for x in done.stderr.splitlines() if x.startswith("failed: ")]
    assert line.startswith("failed: 4 RetriesExhaustedError (")
    assert "connection refused" in line and f"127.0.0.1:{port}" in line


@pytest.mark.integration
@pytest.mark.parametrize(("sig", "code", "said"), [
    (signal.SIGINT, 130, "interrupted by Ctrl-C"),
    (signal.SIGTERM, 143, "interrupted by SIGTERM"),
])
def test_a_run_on_the_embedded_model_stops_inside_its_model_calls(
    tmp_path: Path, sig: int, code: int, said: str,
    record_property: Callable[[str, object], None],
) -> None:
    """Signalled while the embedded model computes (the prover writes its decompositions,
    several calls in one batch): the run ends, writes its summary and says how to resume.
    The seconds to the exit are recorded (``exit_s``), not judged: they depend on the
    machine's load; benchmarks/bench_stop.py measures them (benchmarks/README.md)."""
    cfg = {
        "name": "stopped",
        "dataset": {"path": str(DIVISORS), "limit": 4},
        "debate": {"depth": 2, "width": 2},
        "protocols": ["prover-estimator"],
        "prover": {"model": "local", "max_tokens": 200},
        "estimator": {"model": "local"},
        "judge": {"kind": "llm", "model": "local"},
        "max_concurrency": 4,
        "use_cache": False,
        "report": {"bootstrap": 10},
    }
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(cfg))
    run_dir = tmp_path / "run"
    local_env = {k: v for k, v in env(tmp_path).items() if k != "LLMDEBATE_CACHE_DIR"}
    proc = subprocess.Popen(
        [sys.executable, "-c", CLI, "run", "--config", str(path), "--run-dir", str(run_dir)],
        env=local_env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    err: list[str] = []
    for line in proc.stderr:  # the weights are loaded when the run says what it will run
        err.append(line)
        if " to run " in line:
            break
    else:
        raise AssertionError("".join(err))
    time.sleep(3.0)  # the first calls are in the model
    proc.send_signal(sig)
    began = time.monotonic()
    rest = proc.communicate(timeout=600)[1]  # a hang guard only
    record_property("exit_s", round(time.monotonic() - began, 2))
    print(f"{signal.Signals(sig).name}: exit after {time.monotonic() - began:.2f} s")
    assert proc.returncode == code, rest
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["stopped"] == said and summary["planned"] == 8
    last = [x for x in rest.splitlines() if x.startswith(said)]
    assert len(last) == 1 and "resume: llmdebate run" in last[0], rest


# The run of CLI, with one of its set-up steps replaced by one that signals the process and then
# takes its time (a long step the signal cuts short): argv[1] the step, argv[2] the signal.
AT_STEP = (
    "import os, signal, sys, time; signal.signal(signal.SIGINT, signal.default_int_handler)\n"
    "from llmdebate.experiment import runner\n"
    "step, sig = sys.argv[1], getattr(signal, sys.argv[2])\n"
    "real = getattr(runner, step)\n"
    "def signalled(*args, **kwargs):\n"
    "    out = real(*args, **kwargs)\n"
    "    os.kill(os.getpid(), sig)\n"
    "    time.sleep(120)\n"
    "    return out\n"
    "setattr(runner, step, signalled)\n"
    "from llmdebate.cli import main; sys.exit(main(sys.argv[3:]))\n"
)


@pytest.mark.parametrize(("sig", "code", "said"), [
    (signal.SIGTERM, 143, "interrupted by SIGTERM"),
    (signal.SIGINT, 130, "interrupted by Ctrl-C"),
])
def test_a_run_signalled_while_its_models_load_writes_its_summary(
    tmp_path: Path, sig: int, code: int, said: str
) -> None:
    """Signalled while the models are being loaded, before any debate: the summary says so,
    with nothing kept and every debate missing, and one line gives the command that resumes
    (the server is never asked: nothing listens at its address)."""
    cfg = config(tmp_path, "http://127.0.0.1:9/v1")
    run_dir = tmp_path / "run"
    args = ["run", "--config", str(cfg), "--run-dir", str(run_dir), "--quiet"]
    done = subprocess.run(
        [sys.executable, "-c", AT_STEP, "_prepare_models", signal.Signals(sig).name, *args],
        env=env(tmp_path), cwd=tmp_path, capture_output=True, text=True, timeout=100,
    )
    assert done.returncode == code, done.stderr
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["stopped"] == said
    assert summary["planned"] == summary["missing"] == 12
    assert summary["last_invocation"]["debates_run"] == 0
    assert not lines(run_dir / "transcripts.jsonl")
    (line,) = [x for x in done.stderr.splitlines() if x.strip()]
    assert line.startswith(f"{said}: 0 of 12 debates kept in {run_dir}")
    assert "resume: llmdebate run" in line and "Traceback" not in done.stderr


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_run_signalled_while_it_builds_its_models_ends_with_its_exit_code(
    tmp_path: Path, sig: int, code: int
) -> None:
    """Signalled before its run directory is written (the models are being built): SIGTERM
    as well as Ctrl-C ends the command with one line and its exit code, and nothing is left
    half-written."""
    cfg = config(tmp_path, "http://127.0.0.1:9/v1")
    run_dir = tmp_path / "run"
    args = ["run", "--config", str(cfg), "--run-dir", str(run_dir), "--quiet"]
    done = subprocess.run(
        [sys.executable, "-c", AT_STEP, "_build_models", signal.Signals(sig).name, *args],
        env=env(tmp_path), cwd=tmp_path, capture_output=True, text=True, timeout=100,
    )
    assert done.returncode == code, done.stderr
    assert [x for x in done.stderr.splitlines() if x.strip()] == ["aborted"]
    assert not run_dir.exists()


@pytest.mark.integration
@pytest.mark.parametrize(("sig", "code", "said"), [
    (signal.SIGINT, 130, "interrupted by Ctrl-C"),
    (signal.SIGTERM, 143, "interrupted by SIGTERM"),
])
def test_a_run_on_the_embedded_model_stops_while_it_loads_the_weights(
    tmp_path: Path, sig: int, code: int, said: str,
    record_property: Callable[[str, object], None],
) -> None:
    """Signalled as soon as it says it is loading the weights: the run ends, writes its
    summary (nothing kept) and says how to resume. The seconds to the exit are recorded
    (``exit_s``), not judged."""
    cfg = yaml.safe_load(config(tmp_path, "unused").read_text())
    for role in ("prover", "estimator", "judge"):
        cfg[role] = {k: v for k, v in cfg[role].items() if k not in ("base_url", "decomposer")}
        cfg[role]["model"] = "local"
    path = tmp_path / "local.yaml"
    path.write_text(yaml.safe_dump(cfg))
    run_dir = tmp_path / "run"
    local_env = {k: v for k, v in env(tmp_path).items() if k != "LLMDEBATE_CACHE_DIR"}
    proc = subprocess.Popen(
        [sys.executable, "-c", CLI, "run", "--config", str(path), "--run-dir", str(run_dir)],
        env=local_env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    err: list[str] = []
    for line in proc.stderr:
        err.append(line)
        if line.startswith("preparing "):
            break
    else:
        raise AssertionError("".join(err))
    proc.send_signal(sig)
    began = time.monotonic()
    rest = proc.communicate(timeout=600)[1]  # a hang guard only
    record_property("exit_s", round(time.monotonic() - began, 2))
    assert proc.returncode == code, rest
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["stopped"] == said
    assert summary["planned"] == summary["missing"] == 12
    last = [x for x in rest.splitlines() if x.startswith(said)]
    assert len(last) == 1 and "0 of 12 debates kept" in last[0], rest
