"""``llmdebate compare`` end to end with scripted models: outputs, pairing, resume."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from llmdebate.cli import cli
from llmdebate.commands import compare as compare_cmd
from llmdebate.models import Model, ScriptedBackend
from llmdebate.protocols.common import RoleModels
from llmdebate.transcripts import read_transcripts

ITEMS = [
    {
        "id": f"q{i}",
        "dataset": "toy",
        "question": f"Question {i}?",
        "choices": ["yes", "no"],
        "answer": "yes" if i % 2 else "no",
        "facts": [f"Fact {i}."],
    }
    for i in range(4)
]


def _roles(cfg: object, prompts_dir: object, use_cache: bool = True) -> RoleModels:
    def judge_p(messages: list[dict[str, str]]) -> float:  # always picks the first option
        return 0.7

    return RoleModels(
        Model(ScriptedBackend(responder=lambda m: "An argument.", name="s-debater")),
        Model(ScriptedBackend(name="s-estimator", default_probability=0.6)),
        Model(ScriptedBackend(name="s-judge", probabilities=judge_p)),
        decomposer="facts",
    )


@pytest.fixture
def setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    data = tmp_path / "items.jsonl"
    data.write_text("".join(json.dumps(x) + "\n" for x in ITEMS))
    cfg = tmp_path / "compare.yaml"
    cfg.write_text(f"name: toy\ndataset: {data}\nlimit: 4\nbootstrap: 200\n")
    monkeypatch.setattr(compare_cmd, "_roles", _roles)
    return cfg, tmp_path / "runs"


def _invoke(*args: str) -> str:
    res = CliRunner().invoke(cli, ["compare", *args], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return res.output


def test_compare_writes_every_output_and_resumes(setup: tuple[Path, Path]) -> None:
    cfg, runs = setup
    out = _invoke("--config", str(cfg), "--runs-dir", str(runs))
    run = runs / "toy"
    for name in ("config.yaml", "comparison.json", "comparison.md", "report.html"):
        assert (run / name).is_file(), name
    assert sorted(p.name for p in (run / "plots").iterdir()) == [
        "accuracy.png",
        "calibration.png",
        "cost.png",
        "payoffs.png",
    ]
    ts = list(read_transcripts(run / "transcripts.jsonl"))
    # 4 items x (1 direct + 2 consultancy + 2 two-sided + 2 naive + 2 prover-estimator)
    assert len(ts) == 36 and all(t.status == "complete" for t in ts)
    m = json.loads((run / "comparison.json").read_text())
    # The judge always picks the first shown option: two-sided swaps the order within each
    # pair, so exactly one of the two debates per item is right.
    assert m["protocols"]["two-sided"]["accuracy"] == 0.5
    assert m["protocols"]["two-sided"]["ci95"] == [0.5, 0.5]
    assert m["protocols"]["prover-estimator"]["pairs"]["n"] == 4
    assert "accuracy" in out
    _invoke("--config", str(cfg), "--runs-dir", str(runs))  # resume: nothing left to run
    assert len(list(read_transcripts(run / "transcripts.jsonl"))) == 36


def test_compare_refuses_a_changed_config_in_the_same_run(setup: tuple[Path, Path]) -> None:
    cfg, runs = setup
    _invoke("--config", str(cfg), "--runs-dir", str(runs), "--limit", "1")
    res = CliRunner().invoke(cli, ["compare", "--config", str(cfg), "--runs-dir", str(runs)])
    assert res.exit_code != 0 and "different comparison config" in str(res.exception)
