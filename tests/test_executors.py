"""Executors are entries of one registry: flags, help and messages come from it, and a package
adds one through the ``llmdebate.executors`` entry-point group."""

from __future__ import annotations

import json
import sys
import textwrap
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import pytest
import yaml

import llmdebate.registry
from llmdebate.cli import main
from llmdebate.errors import UserError
from llmdebate.experiment.executors import EXECUTORS, ExecutorOptions
from llmdebate.experiment.executors.local import LocalExecutor

REPO = Path(__file__).resolve().parents[1]
FIXTURE = str(REPO / "tests" / "fixtures" / "llm_fixtures.py")
SCRIPTED = {
    "model": "scripted",
    "options": {"responder": f"{FIXTURE}:responder", "probabilities": f"{FIXTURE}:probabilities"},
}
PLUGIN = '''
from llmdebate.experiment.executors.executor import EXECUTORS, IN_PROCESS
from llmdebate.experiment.executors.local import LocalExecutor


@EXECUTORS.register("serial", capabilities={IN_PROCESS}, summary="one debate at a time")
class Serial(LocalExecutor):
    where = " (serially)"
    made = 0

    @classmethod
    def create(cls, options, run):
        cls.made += 1
        return cls(run.team, run.settings, run.servers, 1)
'''


def test_the_builtin_executors_and_what_they_can_do() -> None:
    assert set(EXECUTORS.builtin_names()) == {"local", "processes", "ray"}
    assert EXECUTORS.get("local") is LocalExecutor
    assert set(EXECUTORS.with_capability("workers")) == {"processes", "ray"}
    assert EXECUTORS.with_capability("address") == ("ray",)
    assert EXECUTORS.with_capability("in-process") == ("local",)
    assert ExecutorOptions().in_process and not ExecutorOptions("processes").in_process
    with pytest.raises(UserError, match=r"^--ray-address needs --executor ray \(got --executor"):
        ExecutorOptions("processes", ray_address="auto")


@pytest.fixture()
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The module ``serial_executor`` named by an entry point of ``llmdebate.executors``."""
    (tmp_path / "serial_executor.py").write_text(PLUGIN, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    points = [EntryPoint("serial", "serial_executor", "llmdebate.executors")]

    def entry_points(group: str) -> list[EntryPoint]:
        return points if group == "llmdebate.executors" else []

    monkeypatch.setattr(llmdebate.registry, "entry_points", entry_points)
    monkeypatch.setattr(EXECUTORS, "_loaded", False)  # read the entry points again
    try:
        yield points
    finally:
        EXECUTORS.remove("serial")
        sys.modules.pop("serial_executor", None)


def config(tmp_path: Path) -> Path:
    path = tmp_path / "c.yaml"
    data = {
        "dataset": {"path": str(REPO / "datasets" / "divisors.jsonl"), "limit": 2},
        "debate": {"depth": 1, "width": 2},
        "prover": SCRIPTED,
        "estimator": SCRIPTED,
        "judge": {"kind": "oracle"},
    }
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def test_an_executor_from_an_entry_point_runs_a_run(
    plugin: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = tmp_path / "r"
    argv = ["run", "--config", str(config(tmp_path)), "--run-dir", str(run_dir)]
    assert main([*argv, "--executor", "serial"]) == 0
    serial = EXECUTORS.get("serial")
    assert serial.made == 1  # type: ignore[attr-defined]
    captured = capsys.readouterr()
    assert "4 debates to run (0 done), 4 at a time (serially)" in captured.err
    assert ": 4 debates: 4 complete; 4 run now, 0 already done; " in captured.out
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["last_invocation"]["executor"] == "serial"
    assert main(["run", "--help"]) == 0
    help_text = " ".join(capsys.readouterr().out.split())
    assert "serial (one debate at a time)" in help_text
    # --workers is for the executors that declare it, and the message says which
    assert main([*argv, "--executor", "serial", "--workers", "2"]) == 2
    assert "--workers needs --executor processes or --executor ray (got --executor serial" in (
        capsys.readouterr().err
    )


def test_a_broken_executor_plugin_is_one_line_and_breaks_run_alone(
    plugin: list[EntryPoint], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "serial_executor.py").write_text(
        textwrap.dedent("""
            import no_such_module_anywhere
        """),
        encoding="utf-8",
    )
    argv = ["run", "--config", str(config(tmp_path)), "--run-dir", str(tmp_path / "r")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "executor plugin 'serial' (serial_executor) of entry-point group" in err
    assert "No module named 'no_such_module_anywhere'" in err
    assert not (tmp_path / "r").exists()
    assert main(["score", "--help"]) == 0  # other verbs do not read the executors
