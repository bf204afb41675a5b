"""Runs on a local Ray instance with two workers against the fake HTTP server: a worker killed
mid-run, and the driver killed mid-run, leave every debate in the run exactly once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
import ray
import yaml

from llmdebate.errors import UserError
from llmdebate.experiment.executors import ExecutorOptions
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


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """A local Ray instance with two CPUs; its address."""
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        yield str(ray.get_runtime_context().gcs_address)
    finally:
        ray.shutdown()


@pytest.fixture()
def server() -> Iterator[FakeServer]:
    with debate_server(0.1) as s:
        yield s


def config(server: FakeServer, tmp_path: Path, items: int = 8) -> dict[str, Any]:
    return run_config(server, tmp_path, "ray", items, {"depth": 1, "width": 2})


def worker_pids() -> list[int]:
    """The processes of the run's Ray actors (Ray names them ``ray::DebateWorker...``)."""
    pids = []
    for p in psutil.process_iter(["pid", "cmdline"]):
        cmd = " ".join(p.info["cmdline"] or [])
        if "DebateWorker" in cmd:
            pids.append(p.info["pid"])
    return pids


def test_workers_killed_mid_run_have_their_debates_run_again(
    cluster: str, server: FakeServer, tmp_path: Path
) -> None:
    cfg = config(server, tmp_path)
    run_dir = tmp_path / "killed-worker"
    killed: list[int] = []
    before = set(worker_pids())  # actors of earlier runs that may not have exited yet

    def kill_one_worker() -> None:
        wait_for_lines(run_dir / TRANSCRIPTS_FILE, 3)
        # both of this run's actors: a lone actor may be between debates just then (its
        # results back, the next job not yet sent by a busy driver), with none to run again
        for pid in sorted(set(worker_pids()) - before):
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    killer = threading.Thread(target=kill_one_worker, daemon=True)
    killer.start()
    res = run(
        validate(cfg), run_dir, progress=False, executor=ExecutorOptions("ray", workers=2)
    )
    killer.join(timeout=5)
    assert killed, "no worker was killed"
    assert res.exit_code == 0 and res.stopped is None
    inv = res.summary["last_invocation"]
    assert inv["executor"] == "ray" and inv["workers"] == 2
    assert inv["debates_resent"] >= 1  # the killed worker's debates in flight ran again
    assert res.summary["status"] == {"complete": 16} and res.summary["missing"] == 0
    assert_each_debate_once(run_dir, cfg)


def test_a_killed_driver_is_resumed_to_every_debate_once(
    cluster: str, server: FakeServer, tmp_path: Path
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
        "ray",
        "--ray-address",
        cluster,
        "--workers",
        "2",
    ]
    proc = subprocess.Popen(
        cmd, cwd=DIVISORS.parents[1], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        wait_for_lines(run_dir / TRANSCRIPTS_FILE, 4)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        _, err = proc.communicate()
    before = lines(run_dir / TRANSCRIPTS_FILE)
    assert 4 <= before < 16, err.decode()[-2000:]
    res = run(validate(cfg), run_dir, progress=False, executor=ExecutorOptions("ray"))
    assert res.exit_code == 0
    assert res.skipped >= 4 and res.ran == 16 - res.skipped
    assert_each_debate_once(run_dir, cfg)


def test_prebuilt_models_and_bad_options_are_refused(tmp_path: Path) -> None:
    from llmdebate.models import get_model

    cfg = validate({"dataset": {"path": str(DIVISORS), "limit": 1}, "runs_dir": str(tmp_path)})
    m = get_model("scripted")
    with pytest.raises(UserError, match="prebuilt models run only in this process"):
        run(
            cfg,
            tmp_path / "r",
            models={"prover": m, "estimator": m, "judge": m},
            executor=ExecutorOptions("ray"),
        )
    assert not (tmp_path / "r").exists()
    with pytest.raises(UserError, match=r"--executor: unknown executor 'dask': choose from "):
        ExecutorOptions("dask")
    with pytest.raises(UserError, match="needs --executor ray"):
        ExecutorOptions("local", ray_address="auto")


def test_without_ray_the_error_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # as if not installed
    cfg = validate({"dataset": {"path": str(DIVISORS), "limit": 1}, "runs_dir": str(tmp_path)})
    with pytest.raises(UserError, match=r"pip install 'llmdebate\[ray\]'"):
        run(cfg, tmp_path / "r", progress=False, executor=ExecutorOptions("ray"))
    assert not (tmp_path / "r").exists()


def test_workers_share_the_run_limits(tmp_path: Path) -> None:
    from llmdebate.experiment.worker import worker_config

    cfg = validate(
        {
            "dataset": {"path": str(DIVISORS)},
            "model_concurrency": 9,
            "prover": {"model": "scripted"},
            "estimator": {"model": "openai/x", "options": {"requests_per_minute": 600}},
            "prompts_dir": "prompts",
        }
    )
    share = worker_config(cfg, 2)
    assert share.model_concurrency == 5
    assert share.estimator.options["requests_per_minute"] == 300
    assert Path(str(share.prompts_dir)).is_absolute()
    assert cfg.model_concurrency == 9  # the run's own config is left alone
