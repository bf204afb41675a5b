"""``llmdebate train`` on the embedded model (one tiny iteration), and its config errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from llmdebate.cli import main
from llmdebate.export import FORMATS, carrier_sums, decision_rows, export_run, run_info
from llmdebate.export.format_registry import WHOLE_RUN
from llmdebate.records.rundir import load_transcripts, read_run_config

REPO = Path(__file__).resolve().parents[1]
TENSOR = "model.layers.0.self_attn.q_proj.weight"


def tiny_config(out: Path) -> Path:
    cfg: dict[str, Any] = {
        "name": "t",
        "experiment": {
            "name": "t",
            "dataset": {"path": str(REPO / "datasets" / "divisors.jsonl"), "limit": 2},
            "debate": {"depth": 1, "width": 2},
            "prover": {"model": "local", "assignment": "alternate", "decomposer": "formal",
                       "max_tokens": 12},
            "estimator": {"model": "local", "method": "logprobs", "independent": True},
            "judge": {"kind": "oracle"},
            "use_cache": False,
        },
        "iterations": 1,
        "estimator_updates": 1,
        "regenerate": False,
        "evaluate_last": False,
        "estimator": {"method": "kto", "batch_size": 2, "max_steps": 1, "max_rows": 2,
                      "max_length": 128, "learning_rate": 1e-3},
        "prover": {"method": "sft", "baseline": "-1e9", "batch_size": 2, "max_steps": 1,
                   "max_rows": 2, "max_length": 128, "learning_rate": 1e-3},
        "device": "cpu",
    }
    path = out / "train.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("trl")
    pytest.importorskip("peft")
    base = tmp_path_factory.mktemp("train")
    out = base / "out"
    assert main(["train", "--config", str(tiny_config(base)), "--out-dir", str(out),
                 "--quiet"]) == 0
    return out


@pytest.mark.integration
def test_one_iteration_updates_both_roles_and_the_checkpoints_load(trained: Path) -> None:
    import asyncio

    from safetensors import safe_open

    from llmdebate.models import GenerateConfig, get_model
    from llmdebate.training.update import model_dir

    summary = json.loads((trained / "summary.json").read_text())
    ups = summary["updates"]
    assert [u["role"] for u in ups] == ["estimator", "prover"]
    assert all(u["skipped"] is None and u["steps"] == 1 for u in ups)
    with safe_open(str(model_dir("local") / "model.safetensors"), "pt") as f:
        before = f.get_tensor(TENSOR)
    for u in ups:
        with safe_open(str(Path(u["checkpoint"]) / "model.safetensors"), "pt") as f:
            after = f.get_tensor(TENSOR)
        assert after.shape == before.shape and not bool((after == before).all())
    assert summary["models"]["prover"] == f"hf/{Path(ups[1]['checkpoint']).resolve()}"
    model = get_model(summary["models"]["prover"], use_cache=False)
    out = asyncio.run(model.generate([{"role": "user", "content": "Is 7 prime?"}],
                                     GenerateConfig(max_tokens=2)))
    assert out.tokens_out >= 1
    asyncio.run(model.aclose())
    metrics = [json.loads(x) for x in (trained / "metrics.jsonl").read_text().splitlines()]
    assert metrics[0]["complete"] == 2 and metrics[0]["expected_payoff"] is not None
    # the judge-hacking audit of the generation: a level, so one audited generation has a
    # line; none where no debate reached a leaf verdict on a claim of known truth
    assert {"audit_judge_wins", "audit_argued_truth", "audit_judge_accuracy", "audit_lean",
            "audit_control_lean", "audit_estimator_judge_wins"} <= set(metrics[0])
    for side, prefix in (("prover", "audit_"), ("estimator", "audit_estimator_")):
        line = summary["judge_audit"][side]
        assert (line is None) == (metrics[0][f"{prefix}judge_wins"] is None), (side, line)
        assert line is None or "judge hacking" in line
    assert (trained / "metrics.png").stat().st_size > 0
    assert len((trained / "iter-00" / "data" / "estimator-0.jsonl").read_text().splitlines()) > 0


@pytest.mark.integration
def test_export_from_an_embedded_model_run(trained: Path, tmp_path: Path) -> None:
    run_dir = trained / "iter-00" / "gen-0"
    info = run_info(run_dir, read_run_config(run_dir), 0.0)
    rows = [r for r, _ in decision_rows(load_transcripts(run_dir), info)]
    sums = carrier_sums(rows)
    for t in load_transcripts(run_dir):
        assert t.total is not None and t.expected_total is not None
        assert sums[(t.id, "prover")] == (t.total, t.expected_total)
        assert sums[(t.id, "estimator")] == (-t.total, -t.expected_total)
    for fmt in FORMATS.builtin_names():
        if fmt == "trl-preference" or FORMATS.entry(fmt).can(WHOLE_RUN):
            continue  # no sibling samples in two debates
        res = export_run(run_dir, tmp_path / f"{fmt}.jsonl", role="estimator", fmt=fmt, text=True)
        assert res.rows > 0


def test_a_bad_train_config_names_file_line_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "t.yaml"
    path.write_text("name: x\nestimator:\n  batch_size: 1\n")
    assert main(["train", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}:3:3: estimator.batch_size" in err and "greater than or equal to 2" in err
    path2 = tmp_path / "u.yaml"
    path2.write_text("name: x\nepochs: 3\n")
    assert main(["train", "--config", str(path2)]) == 2
    assert "epochs: unknown field" in capsys.readouterr().err
