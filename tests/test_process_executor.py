"""``--executor processes``: debates on local worker processes against the fake HTTP server give
the transcripts one process gives; a worker killed mid-run, or the driver killed mid-run, leave
every debate in the run exactly once and no worker process behind."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
import yaml

from llmdebate.cli import main as cli_main
from llmdebate.data import load_items
from llmdebate.errors import UserError
from llmdebate.experiment import debate
from llmdebate.experiment.debate import Finished, RunStopped, finished
from llmdebate.experiment.executors import ExecutorOptions
from llmdebate.experiment.executors.processes import ProcessExecutor, WorkerError
from llmdebate.experiment.jobs import make_jobs
from llmdebate.experiment.loading import validate
from llmdebate.experiment.runner import run
from llmdebate.records.rundir import TRANSCRIPTS_FILE

try:
    from tests.fixtures.executor_runs import (
        DIVISORS,
        assert_each_debate_once,
        debate_server,
        lines,
        run_config,
        wait_for_lines,
    )
    from tests.fixtures.fake_server import FakeServer
except ImportError:  # pytest run from inside tests/
    from fixtures.executor_runs import (  # type: ignore[no-redef]
        DIVISORS,
        assert_each_debate_once,
        debate_server,
        lines,
        run_config,
        wait_for_lines,
    )
    from fixtures.fake_server import FakeServer  # type: ignore[no-redef]

ITEMS = 8


@pytest.fixture()
def server() -> Iterator[FakeServer]:
    with debate_server(0.05) as s:
        yield s


def config(server: FakeServer, tmp_path: Path) -> dict[str, Any]:
    return run_config(
        server, tmp_path, "procs", ITEMS, {"depth": 2, "width": 2, "early_stop": False}
    )


def workers_of(pid: int) -> list[psutil.Process]:
    """The worker processes (``multiprocessing`` spawned children) of process ``pid``."""
    found = []
    for p in psutil.Process(pid).children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if "spawn_main" in " ".join(p.cmdline()):
                found.append(p)
    return found


def assert_gone(procs: list[psutil.Process], timeout: float = 10.0) -> None:
    _, alive = psutil.wait_procs(procs, timeout=timeout)
    assert not alive, f"worker processes left behind: {[p.pid for p in alive]}"


def transcripts(run_dir: Path) -> dict[str, dict[str, Any]]:
    """The run's transcripts by id, without the fields that time the run; calls made
    concurrently within a debate are logged as they return, so in a sorted order here."""
    out = {}
    for raw in (run_dir / TRANSCRIPTS_FILE).read_bytes().splitlines():
        t = json.loads(raw)
        t["meta"].pop("wall_s")
        for call in t["calls"]:
            call.pop("latency_s")
        t["calls"].sort(key=lambda call: json.dumps(call, sort_keys=True))
        assert t["id"] not in out, f"{t['id']} was written twice"
        out[t["id"]] = t
    return out


def test_processes_write_the_transcripts_one_process_writes(
    server: FakeServer, tmp_path: Path
) -> None:
    cfg = validate(config(server, tmp_path))
    local = run(cfg, tmp_path / "local", progress=False)
    procs = run(
        cfg, tmp_path / "procs", progress=False, executor=ExecutorOptions("processes", workers=2)
    )
    assert local.exit_code == procs.exit_code == 0
    inv = procs.summary["last_invocation"]
    assert inv["executor"] == "processes" and inv["workers"] == 2
    assert inv["debates_resent"] == 0
    a, b = transcripts(tmp_path / "local"), transcripts(tmp_path / "procs")
    assert len(a) == 2 * ITEMS and sum(len(t["calls"]) for t in a.values()) > 2 * ITEMS
    assert a == b  # ids, statuses, calls, rewards: all but the timing fields
    for key in ("status", "usage", "missing"):
        assert local.summary[key] == procs.summary[key]
    assert_gone(workers_of(os.getpid()), timeout=0)


def test_a_worker_killed_mid_run_has_its_debates_run_again(
    server: FakeServer, tmp_path: Path
) -> None:
    cfg = config(server, tmp_path)
    run_dir = tmp_path / "killed-worker"
    killed: list[int] = []
    seen: list[psutil.Process] = []

    def kill_one_worker() -> None:
        wait_for_lines(run_dir / TRANSCRIPTS_FILE, 3)
        seen.extend(workers_of(os.getpid()))
        os.kill(seen[0].pid, signal.SIGKILL)
        killed.append(seen[0].pid)

    killer = threading.Thread(target=kill_one_worker, daemon=True)
    killer.start()
    res = run(
        validate(cfg), run_dir, progress=False, executor=ExecutorOptions("processes", workers=2)
    )
    killer.join(timeout=5)
    assert killed, "no worker was killed"
    assert res.exit_code == 0 and res.stopped is None
    inv = res.summary["last_invocation"]
    assert inv["debates_resent"] >= 1  # the killed worker's debates in flight ran again
    assert inv["worker_restarts"] == 1
    assert res.summary["status"] == {"complete": 2 * ITEMS} and res.summary["missing"] == 0
    assert_each_debate_once(run_dir, cfg)
    assert_gone([*seen, *workers_of(os.getpid())], timeout=0)


def test_a_killed_driver_leaves_no_worker_and_is_resumed_to_every_debate_once(
    server: FakeServer, tmp_path: Path
) -> None:
    cfg = config(server, tmp_path)
    cfg_path = tmp_path / "c.yaml"
    cfg_path.write_text(yaml.safe_dump(cfg))
    run_dir = tmp_path / "killed-driver"
    cmd = [
        sys.executable,
        "-m",
        "llmdebate.cli",
        "run",
        "--config",
        str(cfg_path),
        "--run-dir",
        str(run_dir),
        "--quiet",
        "--executor",
        "processes",
        "--workers",
        "2",
    ]
    proc = subprocess.Popen(
        cmd, cwd=DIVISORS.parents[1], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        wait_for_lines(run_dir / TRANSCRIPTS_FILE, 4)
        workers = workers_of(proc.pid)
        children = psutil.Process(proc.pid).children(recursive=True)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        _, err = proc.communicate()
    assert len(workers) == 2, err.decode()[-2000:]
    assert_gone(children)  # each worker saw its socket close and exited; nothing else is left
    before = lines(run_dir / TRANSCRIPTS_FILE)
    assert 4 <= before < 2 * ITEMS, err.decode()[-2000:]
    res = run(
        validate(cfg), run_dir, progress=False, executor=ExecutorOptions("processes", workers=2)
    )
    assert res.exit_code == 0
    assert res.skipped >= 4 and res.ran == 2 * ITEMS - res.skipped
    assert_each_debate_once(run_dir, cfg)


def test_a_stopped_run_cancels_its_debates_and_stops_its_workers(
    server: FakeServer, tmp_path: Path
) -> None:
    cfg = validate(config(server, tmp_path))
    jobs = make_jobs(load_items(DIVISORS), cfg)
    servers = {r: server.url for r in ("prover", "estimator", "judge")}
    got: list[Finished] = []

    def on_finished(f: Finished) -> None:
        got.append(f)
        if len(got) == 2:
            raise RunStopped("enough", 3)

    ex = ProcessExecutor(cfg, servers, workers=2, concurrency=6)  # waits for its workers
    pids = ex.pids()

    async def go() -> None:
        try:
            with pytest.raises(RunStopped, match="enough"):
                await ex.run(jobs, on_finished)
        finally:
            await ex.aclose()

    asyncio.run(go())
    assert len(got) == 2 and len(pids) == 2
    assert not [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != "zombie"]
    sent = server.requests
    time.sleep(0.3)
    assert server.requests == sent  # nothing runs on
    assert sent < len(jobs) * min(f.calls for f in got)  # the other debates never ran out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--workers", "2"], "--workers needs --executor processes or --executor ray"),
        (["--executor", "dask"], "--executor: unknown executor 'dask': choose from "),
        (["--executor", "processes", "--workers", "0"], "--workers must be >= 1 (got 0)"),
        (["--executor", "processes", "--ray-address", "auto"], "--ray-address needs --executor"),
    ],
)
def test_bad_executor_options_get_one_line_and_exit_2(
    args: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = tmp_path / "r"
    code = cli_main(["run", "--dataset-path", str(DIVISORS), "--run-dir", str(run_dir), *args])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and message in err
    assert not run_dir.exists()


def test_executor_options_name_their_problem_from_the_registry() -> None:
    with pytest.raises(UserError, match=r"^--executor: unknown executor 'dask': choose from "):
        ExecutorOptions("dask")
    with pytest.raises(UserError, match=r"needs --executor processes or --executor ray"):
        ExecutorOptions("local", workers=2)
    assert ExecutorOptions("processes", workers=2).workers == 2


def test_a_worker_that_cannot_start_says_why_before_any_debate(tmp_path: Path) -> None:
    role = {"model": "scripted", "options": {"responder": str(tmp_path / "gone.py") + ":reply"}}
    cfg = validate(
        {"dataset": {"path": str(DIVISORS)}, "prover": role, "estimator": role, "judge": role}
    )
    before = {p.pid for p in workers_of(os.getpid())}
    with pytest.raises(UserError, match=r"a worker process could not start: cannot import"):
        ProcessExecutor(cfg, {}, workers=2, concurrency=4)
    assert not {p.pid for p in workers_of(os.getpid())} - before


def test_workers_reaching_another_server_than_the_driver_stop_the_run(
    server: FakeServer, tmp_path: Path
) -> None:
    cfg = validate(config(server, tmp_path))
    jobs = make_jobs(load_items(DIVISORS, limit=2), cfg)
    elsewhere = {r: "http://127.0.0.1:9/v1" for r in ("prover", "estimator", "judge")}

    ex = ProcessExecutor(cfg, elsewhere, workers=1, concurrency=2)

    async def go() -> None:
        try:
            await ex.run(jobs, lambda f: None)
        finally:
            await ex.aclose()

    with pytest.raises(RunStopped, match=f"reaches the .* at {server.url}, the driver at") as e:
        asyncio.run(go())
    assert e.value.exit_code == 2 and server.requests == 0


DEFECT = """
import os

import llmdebate.experiment.debate as debate

_finished = debate.finished
_count = [0]


def _defective(*args, **kwargs):
    _count[0] += 1
    if _count[0] == 3:
        raise RuntimeError("a defect in the worker")
    return _finished(*args, **kwargs)


if os.getpid() != int(os.environ["DEFECT_DRIVER_PID"]):  # in worker processes only
    debate.finished = _defective


def reply(messages):
    return "True"
"""


def test_a_defect_in_a_worker_is_raised_in_the_driver_with_its_traceback(
    server: FakeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not a debate's failure: a bug in the code around it, met in a worker process, stops
    the run in the driver as :class:`WorkerError` (as it would propagate in one process);
    what was written stays whole, and no worker is left."""
    defect = tmp_path / "defect.py"  # imported by each worker as it builds the judge
    defect.write_text(DEFECT)
    monkeypatch.setenv("DEFECT_DRIVER_PID", str(os.getpid()))  # the driver stays sound
    cfg = config(server, tmp_path)
    cfg["judge"] = {"kind": "llm", "model": "scripted", "options": {"responder": f"{defect}:reply"}}
    run_dir = tmp_path / "defect"
    with pytest.raises(WorkerError) as e:
        run(
            validate(cfg),
            run_dir,
            progress=False,
            executor=ExecutorOptions("processes", workers=2),
        )
    message = str(e.value)
    assert "Traceback" in message and "RuntimeError: a defect in the worker" in message
    written = (run_dir / TRANSCRIPTS_FILE).read_bytes().splitlines()
    assert 2 <= len(written) < 2 * ITEMS
    assert all(json.loads(raw)["status"] == "complete" for raw in written)
    assert_gone(workers_of(os.getpid()))
    assert debate.finished is finished  # this process was never patched
