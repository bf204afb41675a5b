"""``llmdebate compare`` and ``llmdebate report`` end to end with scripted models: outputs,
pairing, resume, and debates that do not depend on which other protocols share the run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from llmdebate.cli import main
from llmdebate.records.rundir import load_transcripts

REPO = Path(__file__).resolve().parents[1]
FIXTURE = str(REPO / "tests" / "fixtures" / "llm_fixtures.py")
PLOTS = ["accuracy.png", "calibration.png", "cost.png", "payoffs.png"]

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


@pytest.fixture
def cfg(tmp_path: Path) -> Path:
    data = tmp_path / "items.jsonl"
    data.write_text("".join(json.dumps(x) + "\n" for x in ITEMS))
    config = {
        "name": "toy",
        "dataset": {"path": str(data)},
        "debate": {"depth": 1, "width": 2},
        # the prover decomposes with the item's gold facts, argues with fixed replies
        "prover": {
            "model": "scripted",
            "decomposer": "formal",
            "options": {"responder": f"{FIXTURE}:responder"},
        },
        "estimator": {"model": "scripted", "options": {"default_probability": 0.6}},
        # P(first shown option) = 0.7: the judge always picks the first option
        "judge": {"model": "scripted", "options": {"default_probability": 0.7}},
        "report": {"bootstrap": 200},
        "runs_dir": str(tmp_path / "runs"),
    }
    path = tmp_path / "compare.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def _main(*argv: str) -> int:
    return main([*argv, "--quiet"])


def _assert_report(run: Path, plots: list[str] = PLOTS) -> dict[str, Any]:
    for name in ("config.yaml", "comparison.json", "comparison.md", "report.html"):
        assert (run / name).is_file(), name
    assert sorted(p.name for p in (run / "plots").iterdir()) == plots
    for png in (run / "plots").iterdir():
        assert png.read_bytes().startswith(b"\x89PNG")
    page = (run / "report.html").read_text()
    assert page.count('src="data:image/png;base64,') == len(plots)
    m = json.loads((run / "comparison.json").read_text())
    assert sorted(f"{name}.png" for name in m["plots_not_drawn"]) == sorted(
        set(PLOTS) - set(plots)
    )
    return m


def test_compare_writes_every_output_and_resumes(
    cfg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "runs" / "toy"
    assert _main("compare", "--config", str(cfg), "--run-id", "toy") == 0
    out = capsys.readouterr().out
    assert "36 debates: 36 complete; 36 run now" in out and f"report: {run / 'report.html'}" in out
    m = _assert_report(run)
    ts = load_transcripts(run)
    # 4 items x (1 direct + 2 consultancy + 2 two-sided + 2 naive + 2 prover-estimator)
    assert len(ts) == 36 and all(t.status == "complete" for t in ts)
    assert yaml.safe_load((run / "config.yaml").read_text())["protocols"] == [
        "prover-estimator",
        "naive-recursive",
        "two-sided",
        "consultancy",
        "direct",
    ]
    # The judge always picks the first shown option: two-sided swaps the order within each
    # pair, so exactly one of the two debates per item is right.
    assert m["protocols"]["two-sided"]["accuracy"] == 0.5
    # four items: no interval, and the reason instead of a zero-width [0.5, 0.5]
    assert m["protocols"]["two-sided"]["ci95"] is None
    assert "too few for an interval" in m["protocols"]["two-sided"]["interval_note"]
    assert m["protocols"]["prover-estimator"]["pairs"]["n"] == 4
    assert m["protocols"]["naive-recursive"]["pairs"]["n"] == 4
    assert m["run"]["items"] == 4 and m["run"]["debates_complete"] == 36
    summary = json.loads((run / "summary.json").read_text())
    assert summary["status"] == {"complete": 36} and summary["metrics"]["n_transcripts"] == 36
    # every protocol in one file: only the rewarded ones are re-scored, with no mismatch
    capsys.readouterr()
    assert main(["score", str(run / "transcripts.jsonl")]) == 0
    assert "0 mismatches" in capsys.readouterr().out
    first = (run / "transcripts.jsonl").read_bytes()
    assert _main("compare", "--config", str(cfg), "--run-id", "toy") == 0  # resume
    assert "0 run now, 36 already done" in capsys.readouterr().out
    assert (run / "transcripts.jsonl").read_bytes() == first


def test_compare_takes_the_protocols_of_the_flag_or_the_file(cfg: Path, tmp_path: Path) -> None:
    argv = ["compare", "--config", str(cfg), "--limit", "1"]
    assert _main(*argv, "--run-id", "a", "--protocols", "direct,two-sided") == 0
    ids = sorted(t.id for t in load_transcripts(tmp_path / "runs" / "a"))
    assert ids == ["direct/q0/direct", "two-sided/q0/order-0", "two-sided/q0/order-1"]
    data = yaml.safe_load(cfg.read_text())
    data["protocols"] = ["consultancy"]
    cfg.write_text(yaml.safe_dump(data))
    assert _main(*argv, "--run-id", "b") == 0
    ids = sorted(t.id for t in load_transcripts(tmp_path / "runs" / "b"))
    assert ids == ["consultancy/q0/dishonest", "consultancy/q0/honest"]
    m = _assert_report(tmp_path / "runs" / "b", [p for p in PLOTS if p != "payoffs.png"])
    assert m["plots_not_drawn"]["payoffs"] == "no prover-estimator debate in this run"


def test_compare_refuses_a_changed_config_in_the_same_run(
    cfg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _main("compare", "--config", str(cfg), "--run-id", "toy", "--limit", "1") == 0
    before = (tmp_path / "runs" / "toy" / "transcripts.jsonl").read_bytes()
    capsys.readouterr()
    code = _main("compare", "--config", str(cfg), "--run-id", "toy", "--debate-depth", "2")
    err = capsys.readouterr().err
    assert code == 2 and "different configuration (debate.depth differ)" in err
    assert (tmp_path / "runs" / "toy" / "transcripts.jsonl").read_bytes() == before
    # more items and fewer protocols do not change any debate: the run resumes
    assert _main("compare", "--config", str(cfg), "--run-id", "toy", "--limit", "2") == 0
    assert len(load_transcripts(tmp_path / "runs" / "toy")) == 18


@pytest.mark.parametrize(
    ("protocols", "n"), [("prover-estimator", 8), ("prover-estimator,direct,two-sided", 20)]
)
def test_report_of_a_run_writes_every_output(
    cfg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], protocols: str, n: int
) -> None:
    run = tmp_path / "runs" / "r"
    assert _main("run", "--config", str(cfg), "--run-dir", str(run), "--protocols", protocols) == 0
    assert not (run / "report.html").exists()  # run writes no report
    capsys.readouterr()
    assert _main("report", str(run)) == 0
    assert f"report: {run / 'report.html'}" in capsys.readouterr().out
    m = _assert_report(run)
    assert sorted(m["protocols"]) == sorted(protocols.split(","))
    assert m["n_transcripts"] == n and m["bootstrap"]["resamples"] == 200
    assert m["protocols"]["prover-estimator"]["pairs"]["n"] == 4
    md = (run / "comparison.md").read_text()
    assert all(p in md for p in protocols.split(","))
    if n == 8:
        return
    # report reads the run directory only: a second report is byte-identical
    first = (run / "comparison.json").read_bytes()
    assert _main("report", str(run), "--bootstrap", "200") == 0
    assert (run / "comparison.json").read_bytes() == first
    assert _main("report", str(run), "--bootstrap", "50") == 0
    assert json.loads((run / "comparison.json").read_text())["bootstrap"]["resamples"] == 50


def test_report_of_a_missing_run_is_a_user_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _main("report", str(tmp_path / "nothing")) == 2
    assert "not a run directory" in capsys.readouterr().err


def _debates(run: Path, protocol: str) -> dict[str, dict[str, Any]]:
    out = {}
    for t in load_transcripts(run):
        if t.protocol != protocol:
            continue
        d = t.model_dump(mode="json")
        d["meta"].pop("wall_s")
        for call in d["calls"]:
            call.pop("latency_s")
        out[t.id] = d
    return out


@pytest.mark.parametrize("protocol", ["prover-estimator", "two-sided"])
def test_a_protocol_alone_and_among_others_writes_the_same_debates(
    cfg: Path, tmp_path: Path, protocol: str
) -> None:
    """Same items and seed: the same ids and transcripts (but for wall time) whichever other
    protocols share the run, and whatever the concurrency."""
    runs = tmp_path / "runs"
    alone = ["--run-dir", str(runs / "alone"), "--protocols", protocol]
    assert _main("run", "--config", str(cfg), *alone, "--max-concurrency", "1") == 0
    every = "prover-estimator,naive-recursive,two-sided,consultancy,direct"
    argv = ["--run-dir", str(runs / "all"), "--protocols", every, "--max-concurrency", "8"]
    assert _main("run", "--config", str(cfg), *argv) == 0
    a, b = _debates(runs / "alone", protocol), _debates(runs / "all", protocol)
    assert len(a) == 8 and sorted(a) == sorted(b)
    for debate_id in a:
        assert a[debate_id] == b[debate_id], debate_id
