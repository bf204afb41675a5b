"""A run's size before it starts: the model calls its debates will make, and a large run
refused with its estimate unless ``--allow-large``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from llmdebate.cli import main
from llmdebate.experiment.estimate import calls_per_debate, estimate
from llmdebate.experiment.loading import validate
from llmdebate.experiment.plan import Plan
from llmdebate.experiment.runner import _items

REPO = Path(__file__).resolve().parents[1]
FIXTURE = str(REPO / "tests" / "fixtures" / "llm_fixtures.py")
SCRIPTED = {"model": "scripted", "options": {"responder": f"{FIXTURE}:responder",
                                             "probabilities": f"{FIXTURE}:probabilities"}}


def write(tmp_path: Path, depth: int) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({
        "dataset": {"path": str(REPO / "datasets" / "divisors.jsonl"), "limit": 1},
        "debate": {"depth": depth, "width": 2},
        "prover": {**SCRIPTED, "decomposer": "formal"}, "estimator": SCRIPTED,
        "judge": {"kind": "oracle"},
    }))
    return path


def test_the_calls_follow_from_depth_width_best_of_and_rounds() -> None:
    cfg = validate({"debate": {"depth": 3, "width": 4}, "prover": {"best_of": 2}, "rounds": 3})
    assert calls_per_debate("prover-estimator", cfg) == 2 + 3 * (2 + 4 + 1)
    assert calls_per_debate("two-sided", cfg) == 3 * 2 + 1
    assert calls_per_debate("consultancy", cfg) == 3 * 1 + 1
    items = _items(validate({"dataset": {"path": str(REPO / "datasets" / "divisors.jsonl"),
                                         "limit": 3}, "protocols": ["prover-estimator"]}))
    small = validate({"protocols": ["prover-estimator"], "debate": {"depth": 2, "width": 2}})
    e = estimate(Plan(items, small).jobs(), small)
    assert (e.debates, e.calls, e.most_per_debate) == (6, 6 * 10, 10) and not e.large


def test_a_deep_debate_is_refused_with_its_estimate_unless_allowed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = write(tmp_path, depth=2)
    argv = ["run", "--config", str(cfg), "--quiet", "--debate-depth", "30"]
    assert main([*argv, "--run-dir", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        "error: a large run: 2 debates, about 244 model calls (prover-estimator: about 122 per "
        "debate at depth 30, width 2); give --allow-large to run it, or lower --debate-depth, "
        "--debate-width, --rounds or --dataset-limit")
    assert not (tmp_path / "r").exists()
    assert main([*argv, "--run-dir", str(tmp_path / "ok"), "--allow-large"]) == 0
    summary = json.loads((tmp_path / "ok" / "summary.json").read_text())
    assert summary["status"] == {"complete": 2}
    assert main(["run", "--config", str(cfg), "--quiet", "--run-dir", str(tmp_path / "s")]) == 0
