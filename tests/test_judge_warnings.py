"""``llmdebate judge --model``: other packages' warnings (a transformers FutureWarning) go to
the run's warnings.log, not over the terminal."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

from llmdebate.cli import main
from llmdebate.judging import machine

try:
    from tests.judging_study import make_run
except ImportError:  # pytest run from inside tests/
    sys.path.insert(0, str(Path(__file__).parent))
    from judging_study import make_run  # type: ignore[no-redef]


def test_a_model_judges_warnings_go_to_the_runs_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir = make_run(tmp_path, ["two-sided"], limit=1)
    capsys.readouterr()

    def judge(run_dir: Path, model: Any, **kw: Any) -> machine.MachineResult:
        warnings.warn_explicit(
            "`torch_dtype` is deprecated! Use `dtype` instead!", FutureWarning,
            filename="/site-packages/transformers/configuration_utils.py", lineno=1)
        return machine.MachineResult(judge_id="model:scripted", judged=2)

    monkeypatch.setattr(machine, "judge_with_model", judge)
    assert main(["judge", str(run_dir), "--model", "scripted"]) == 0
    captured = capsys.readouterr()
    assert "deprecated" not in captured.err + captured.out
    assert "judged 2 waiting debates" in captured.out
    assert "`torch_dtype` is deprecated" in (run_dir / "warnings.log").read_text()
