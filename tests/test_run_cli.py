"""``llmdebate run``: config file plus flags, one-line errors, re-scoring the output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from llmdebate.cli import main

REPO = Path(__file__).resolve().parents[1]
FIXTURE = str(REPO / "tests" / "fixtures" / "llm_fixtures.py")
SCRIPTED = {
    "model": "scripted",
    "options": {"responder": f"{FIXTURE}:responder", "probabilities": f"{FIXTURE}:probabilities"},
}


def config_file(tmp_path: Path, **over: object) -> Path:
    data: dict = {
        "name": "cli",
        "dataset": {"path": str(REPO / "datasets" / "divisors.jsonl"), "limit": 8},
        "debate": {"depth": 1, "width": 2},
        "prover": SCRIPTED,
        "estimator": SCRIPTED,
        "judge": {"kind": "oracle"},
    }
    data.update(over)
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_run_with_flags_then_score(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = config_file(tmp_path)
    run_dir = tmp_path / "r"
    argv = [
        "run",
        "--config",
        str(cfg),
        "--run-dir",
        str(run_dir),
        "--limit",
        "3",
        "--debate-depth",
        "2",
        "--estimator-independent",
        "true",
        "--quiet",
        "--max-concurrency",
        "2",
    ]
    assert main(argv) == 0
    out = capsys.readouterr().out  # 3 items, paired: honest and dishonest
    assert ": 6 debates: 6 complete; 6 run now, 0 already done; " in out
    # the closing lines say whether the debate favoured the truth, against the bounds
    assert "prover-estimator: did the debate favour the truth? too few items" in out
    assert "Lemma A.5 (completeness): E[R_A] ≥ (1 − ε)·r^(d+1), 0.800 in these units" in out
    assert "Lemma A.4 (soundness): E[R_A] < r^(d+1)·P[A correct] + (2d+1)·δ" in out
    assert "an unbiased estimate of E[R_A]" in out and "paid = R_A of the draws made" in out
    saved = yaml.safe_load((run_dir / "config.yaml").read_text())
    assert saved["debate"]["depth"] == 2 and saved["estimator"]["independent"] is True
    assert saved["dataset"]["limit"] == 3 and saved["max_concurrency"] == 2
    assert saved["protocols"] == ["prover-estimator"] and saved["use_cache"] is True
    assert saved["servers"] == {"prover": None, "estimator": None}
    lines = (run_dir / "transcripts.jsonl").read_text().splitlines()
    assert len(lines) == 6
    ids = sorted(json.loads(x)["id"] for x in lines)
    assert ids == sorted(
        f"prover-estimator/divisors-00{i}/{v}" for i in range(3) for v in ("honest", "dishonest")
    )
    t = json.loads(lines[0])
    assert t["config"]["depth"] == 2
    assert {c["act"] for c in t["calls"] if c["role"] == "estimator"} <= {"estimate", "independent"}
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["transcripts"] == 6 and summary["status"] == {"complete": 6}
    assert summary["planned"] == 6 and summary["missing"] == 0 and summary["stopped"] is None
    assert summary["metrics"]["protocols"]["prover-estimator"]["pairs"]["n"] == 3
    assert main(["score", str(run_dir / "transcripts.jsonl")]) == 0
    assert "0 mismatches" in capsys.readouterr().out


def test_run_id_under_runs_dir(tmp_path: Path) -> None:
    cfg = config_file(tmp_path, runs_dir=str(tmp_path / "runs"))
    assert main(["run", "--config", str(cfg), "--run-id", "abc", "--limit", "1", "--quiet"]) == 0
    assert (tmp_path / "runs" / "abc" / "summary.json").is_file()


@pytest.mark.parametrize(
    ("over", "flags", "message"),
    [
        ({}, ["--debate-epsilon", "0.7"], r"^error: --debate-epsilon: epsilon must .*0\.7"),
        ({"debate": {"epsilon": 0.7}}, [], r"c\.yaml:\d+:\d+: debate\.epsilon: epsilon must"),
        ({"debate": {"widht": 2}}, [], r"c\.yaml:\d+:\d+: debate\.widht: unknown field"),
        ({}, ["--prover-model", "nosuch/model"], r"^error: --prover-model: unknown model 'nosu"),
        (
            {"estimator": {"model": "nosuch/model"}},
            [],
            r"c\.yaml:\d+:\d+: estimator\.model: unknown model 'nosuch/model'",
        ),
        (
            {},
            ["--estimator-method", "telepathy"],
            r"--estimator-method: unknown probability method .telepathy.: choose from logprobs, ",
        ),
        ({}, ["--prover-options", "{bad"], r"--prover-options: not valid JSON"),
        (
            {"estimator": {"model": "anthropic/claude-haiku-4-5", "method": "logprobs"}},
            [],
            r"c\.yaml:\d+:\d+: estimator\.method: anthropic/claude-haiku-4-5 returns no logp",
        ),
        (
            {},
            ["--estimator-model", "anthropic/c", "--estimator-method", "logprobs"],
            r"^error: --estimator-method: anthropic/c returns no logprobs: use sampling or",
        ),
        ({}, ["--protocols", "debate"], r"--protocols: unknown protocol 'debate': choose from"),
        ({}, ["--protocols", "prover-estimator,direct"], r"direct need judge\.kind llm"),
        ({}, ["--prover-options", '{"api_key": "x"}'], r"--prover-options: .*secret"),
    ],
)
def test_bad_configuration_is_one_line_and_nonzero(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], over: dict, flags: list[str], message: str
) -> None:
    cfg = config_file(tmp_path, **over)
    code = main(["run", "--config", str(cfg), "--run-dir", str(tmp_path / "r"), "--quiet", *flags])
    err = capsys.readouterr().err.strip()
    assert code == 2 and not (tmp_path / "r").exists()  # refused before anything is written
    assert len(err.splitlines()) == 1, err
    assert __import__("re").search(message, err), err


def test_bad_dataset_line_names_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "d.jsonl"
    good = (REPO / "datasets" / "divisors.jsonl").read_text().splitlines()[0]
    data.write_text(
        good + "\n" + '{"id": "z", "question": "Q", "choices": ["a", "b"], "answer": "c"}\n'
    )
    cfg = config_file(tmp_path, dataset={"path": str(data)})
    code = main(["run", "--config", str(cfg), "--run-dir", str(tmp_path / "r"), "--quiet"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert f"{data}:2:" in err
    assert not (tmp_path / "r").exists()  # nothing started


def test_resume_keeps_what_was_written(tmp_path: Path) -> None:
    cfg = config_file(tmp_path)
    run_dir = tmp_path / "r"
    assert (
        main(["run", "--config", str(cfg), "--run-dir", str(run_dir), "--limit", "2", "--quiet"])
        == 0
    )
    first = (run_dir / "transcripts.jsonl").read_bytes()
    code = main(
        ["run", "--config", str(cfg), "--run-dir", str(run_dir), "--debate-depth", "3", "--quiet"]
    )
    assert code == 2  # a different protocol config is refused ...
    assert (run_dir / "transcripts.jsonl").read_bytes() == first  # ... and nothing is lost
    assert main(["run", "--config", str(cfg), "--run-dir", str(run_dir), "--quiet"]) == 0
    assert (run_dir / "transcripts.jsonl").read_bytes().startswith(first)
    assert len((run_dir / "transcripts.jsonl").read_text().splitlines()) == 16  # 8 items, paired
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["last_invocation"]["debates_run"] == 12
    assert summary["last_invocation"]["debates_skipped"] == 4


def _without_timing(line: str) -> dict:
    t = json.loads(line)
    t["meta"].pop("wall_s")
    for call in t["calls"]:
        call.pop("latency_s"), call.pop("cached")
    return t


def test_a_run_replays_bit_for_bit(tmp_path: Path) -> None:
    """The same config and seed give the same debates: every draw, probability and reward."""
    cfg = config_file(tmp_path, debate={"depth": 2, "width": 2, "seed": 0})
    outs = []
    for name in ("a", "b"):
        argv = ["run", "--config", str(cfg), "--run-dir", str(tmp_path / name), "--quiet"]
        assert main([*argv, "--limit", "4", "--max-concurrency", "3"]) == 0
        lines = (tmp_path / name / "transcripts.jsonl").read_text().splitlines()
        outs.append(sorted((_without_timing(x) for x in lines), key=lambda t: t["id"]))
    assert len(outs[0]) == 8 and outs[0] == outs[1]
    assert len({t["seed"] for t in outs[0]}) == 4  # one seed per item, shared by its pair


def test_failed_debates_exit_1_and_are_counted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = {"model": "scripted", "options": {"responder": f"{FIXTURE}:bad_responder"}}
    # epsilon 0.05: the estimator (0.85 or 0.15) is never close enough to skip decomposing
    cfg = config_file(tmp_path, prover=bad, debate={"depth": 1, "width": 2, "epsilon": 0.05})
    run_dir = tmp_path / "r"
    code = main(["run", "--config", str(cfg), "--run-dir", str(run_dir), "--limit", "1", "--quiet"])
    assert code == 1
    assert "failed: 2 InvalidOutputError" in capsys.readouterr().err
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == {"failed": 2}
    assert summary["failures"]["by_kind"] == {"InvalidOutputError": 2}


def test_no_cache_flag_and_assignment_flag(tmp_path: Path) -> None:
    cfg = config_file(tmp_path)
    run_dir = tmp_path / "r"
    argv = ["run", "--config", str(cfg), "--run-dir", str(run_dir), "--quiet", "--limit", "2"]
    assert main([*argv, "--no-cache", "--prover-assignment", "alternate"]) == 0
    saved = yaml.safe_load((run_dir / "config.yaml").read_text())
    assert saved["use_cache"] is False and saved["prover"]["assignment"] == "alternate"
    ids = sorted(json.loads(x)["id"] for x in (run_dir / "transcripts.jsonl").open())
    assert ids == [
        "prover-estimator/divisors-000/honest",
        "prover-estimator/divisors-001/dishonest",
    ]
