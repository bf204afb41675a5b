"""Runs on a local Ray instance with two workers against the fake HTTP server: a worker killed
mid-run, and the driver killed mid-run, leave every debate in the run exactly once."""

from __future__ import annotations

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
import ray
import yaml

from llmdebate.errors import UserError
from llmdebate.experiment.executors import ExecutorOptions
from llmdebate.experiment.jobs import make_jobs
from llmdebate.experiment.loading import validate
from llmdebate.experiment.runner import run
from llmdebate.rundir import TRANSCRIPTS_FILE, load_transcripts

try:
    from tests.fixtures.fake_server import FakeServer
    from tests.fixtures.llm_fixtures import responder
except ImportError:  # pytest run from inside tests/
    from fixtures.fake_server import FakeServer  # type: ignore[no-redef]
    from fixtures.llm_fixtures import responder  # type: ignore[no-redef]

REPO = Path(__file__).resolve().parents[1]
DIVISORS = REPO / "datasets" / "divisors.jsonl"


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
    with FakeServer() as s:
        s.responder = lambda body: responder(body["messages"])
        s.latency = 0.1  # long enough for debates to be in flight when a process dies
        yield s


def config(server: FakeServer, tmp_path: Path, items: int = 8) -> dict[str, Any]:
    role = {"model": "openai/fake", "base_url": server.url}
    return {
        "name": "ray",
        "dataset": {"path": str(DIVISORS), "limit": items},
        "debate": {"depth": 1, "width": 2},
        "prover": {**role, "decomposer": "formal"},
        "estimator": role,
        "judge": {"kind": "llm", **role},
        "max_concurrency": 6,
        "use_cache": False,
        "runs_dir": str(tmp_path / "runs"),
        "report": {"bootstrap": 10},
    }


def lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def wait_for_lines(path: Path, n: int, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while lines(path) < n:
        if time.monotonic() > deadline:
            raise AssertionError(f"{path} did not reach {n} lines")
        time.sleep(0.02)


def worker_pids() -> list[int]:
    """The processes of the run's Ray actors (Ray names them ``ray::DebateWorker...``)."""
    pids = []
    for p in psutil.process_iter(["pid", "cmdline"]):
        cmd = " ".join(p.info["cmdline"] or [])
        if "DebateWorker" in cmd:
            pids.append(p.info["pid"])
    return pids


def assert_each_debate_once(run_dir: Path, cfg: dict[str, Any]) -> None:
    ids = [json.loads(raw)["id"] for raw in (run_dir / TRANSCRIPTS_FILE).read_bytes().splitlines()]
    conf = validate(cfg)
    from llmdebate.data import load_items

    planned = {j.spec.debate_id for j in make_jobs(load_items(DIVISORS, limit=8), conf)}
    assert len(ids) == len(set(ids)), "a debate was written twice"
    assert set(ids) == planned
    assert all(t.status == "complete" for t in load_transcripts(run_dir))


def test_a_worker_killed_mid_run_has_its_debates_run_again(
    cluster: str, server: FakeServer, tmp_path: Path
) -> None:
    cfg = config(server, tmp_path)
    run_dir = tmp_path / "killed-worker"
    killed: list[int] = []

    def kill_one_worker() -> None:
        wait_for_lines(run_dir / TRANSCRIPTS_FILE, 3)
        pid = worker_pids()[0]
        os.kill(pid, signal.SIGKILL)
        killed.append(pid)

    killer = threading.Thread(target=kill_one_worker, daemon=True)
    killer.start()
    res = run(
        validate(cfg), run_dir, progress=False, executor=ExecutorOptions("ray", ray_workers=2)
    )
    killer.join(timeout=5)
    assert killed, "no worker was killed"
    assert res.exit_code == 0 and res.stopped is None
    inv = res.summary["last_invocation"]
    assert inv["executor"] == "ray" and inv["ray_workers"] == 2
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
        sys.executable, "-m", "llmdebate.cli", "run", "--config", str(cfg_path),
        "--run-dir", str(run_dir), "--quiet", "--executor", "ray", "--ray-address", cluster,
        "--ray-workers", "2",
    ]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
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
        run(cfg, tmp_path / "r", models={"prover": m, "estimator": m, "judge": m},
            executor=ExecutorOptions("ray"))
    assert not (tmp_path / "r").exists()
    with pytest.raises(UserError, match="--executor must be one of local, ray"):
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
    from llmdebate.experiment.ray_executor import worker_config

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
