"""Run directories end to end with the scripted backend: QA and formal data, resume, failures."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from llmdebate.config import RunConfig, validate_config
from llmdebate.errors import ConfigError, TranscriptError
from llmdebate.runner import (
    SUMMARY_FILE,
    TRANSCRIPTS_FILE,
    RunError,
    finished_ids,
    repair_transcripts,
    run,
)
from llmdebate.scoring import score_transcript
from llmdebate.transcripts import read_transcripts


def _fixtures():
    import importlib.util

    name = "llm_fixtures"
    if name not in sys.modules:
        path = Path(__file__).parent / "fixtures" / "llm_fixtures.py"
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        sys.modules[name] = module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return sys.modules[name]


fx = _fixtures()
CIRCUITS, DIVISORS, REPO, STRATEGYQA = fx.CIRCUITS, fx.DIVISORS, fx.REPO, fx.STRATEGYQA

FIXTURE = str(REPO / "tests" / "fixtures" / "llm_fixtures.py")


def scripted_section(responder: str = "responder", **extra: object) -> dict:
    opts = {
        "responder": f"{FIXTURE}:{responder}",
        "probabilities": f"{FIXTURE}:probabilities",
        **extra,
    }
    return {"model": "scripted", "options": opts}


def make_config(path: Path, **over: object) -> RunConfig:
    data: dict = {
        "name": "t",
        "dataset": {"path": str(path), "limit": 6},
        "debate": {"depth": 2, "width": 3},
        "prover": scripted_section(),
        "estimator": scripted_section(),
        "judge": {"kind": "oracle"},
        "max_concurrency": 3,
    }
    for key, value in over.items():
        data[key] = {**data[key], **value} if isinstance(value, dict) else value
    return validate_config(data, "test")


def lines(run_dir: Path) -> list[dict]:
    raw = (run_dir / TRANSCRIPTS_FILE).read_bytes()
    assert raw.endswith(b"\n")
    return [json.loads(x) for x in raw.splitlines()]


def test_strategyqa_is_present() -> None:
    assert STRATEGYQA.is_file(), f"shared datasets missing: expected {STRATEGYQA}"


def test_strategyqa_end_to_end_and_rescore(tmp_path: Path) -> None:
    cfg = make_config(
        STRATEGYQA,
        judge={**scripted_section(), "kind": "llm"},
        prover={"assignment": "choose"},
        debate={"depth": 1, "width": 2},
    )
    res = run(cfg, tmp_path / "r", progress=False)
    ts = list(read_transcripts(tmp_path / "r" / TRANSCRIPTS_FILE))
    assert len(ts) == 6 and all(t.status == "complete" for t in ts)
    for t in ts:
        assert t.item is not None and t.item["dataset"] == "strategyqa"
        assert t.init is not None and t.init.claim.text.startswith("The answer to the question")
        assert t.calls[0].act == "answer"  # the prover chose its answer
        assert score_transcript(t).mismatches == []
    s = json.loads((tmp_path / "r" / SUMMARY_FILE).read_text())
    assert s["transcripts"] == 6 and s["status"] == {"complete": 6}
    assert s["top_answers_with_known_truth"] == 6
    assert s["usage"]["calls"] == sum(len(t.calls) for t in ts) > 0
    assert res.ran == 6


@pytest.mark.parametrize("dataset", [DIVISORS, CIRCUITS])
def test_bundled_dataset_end_to_end(tmp_path: Path, dataset: Path) -> None:
    run(make_config(dataset), tmp_path / "r", progress=False)
    ts = list(read_transcripts(tmp_path / "r" / TRANSCRIPTS_FILE))
    assert {t.meta["assignment"] for t in ts} == {"honest", "dishonest"}
    for t in ts:
        assert t.status == "complete", t.failure
        assert t.init is not None
        assert t.init.claim.truth == int(t.meta["assignment"] == "honest")
        assert score_transcript(t).mismatches == []
        for rd in t.rounds:  # every subclaim's gold truth is known for formal data
            assert rd.claim.truth is not None
            for sub in rd.decomposition.subclaims if rd.decomposition else []:
                assert sub.truth is not None
    s = json.loads((tmp_path / "r" / SUMMARY_FILE).read_text())
    assert s["calibration"]["top"]["n"] == 6
    assert s["calibration"]["top"]["mean_abs_error"] == pytest.approx(0.15)
    assert s["payoff"]["honest"]["n"] + s["payoff"]["dishonest"]["n"] == 6
    assert s["top_answer_accuracy"] == pytest.approx(0.5)


def test_invalid_output_is_a_failed_debate_and_the_run_goes_on(tmp_path: Path) -> None:
    cfg = make_config(
        STRATEGYQA,
        prover={**scripted_section("bad_responder"), "assignment": "honest", "max_attempts": 2},
        judge={**scripted_section(), "kind": "llm"},
        dataset={"limit": 3},
    )
    res = run(cfg, tmp_path / "r", progress=False)
    ts = list(read_transcripts(tmp_path / "r" / TRANSCRIPTS_FILE))
    assert len(ts) == 3 and res.failed == 3
    t = ts[0]
    assert t.status == "failed" and "2 attempts" in (t.failure or "")
    assert [c.act for c in t.calls].count("decompose") == 2  # the failed attempts are kept
    s = json.loads((tmp_path / "r" / SUMMARY_FILE).read_text())
    assert len(s["failures"]) == 3 and "InvalidOutputError" in s["failures"][0]["reason"]


def test_resume_skips_finished_debates(tmp_path: Path) -> None:
    cfg = make_config(DIVISORS, dataset={"limit": 3})
    run(cfg, tmp_path / "r", progress=False)
    more = make_config(DIVISORS, dataset={"limit": 5})
    res = run(more, tmp_path / "r", progress=False)
    assert (res.ran, res.skipped) == (2, 3)
    ids = [x["id"] for x in lines(tmp_path / "r")]
    assert len(ids) == len(set(ids)) == 5
    again = run(more, tmp_path / "r", progress=False)
    assert again.ran == 0 and len(lines(tmp_path / "r")) == 5


def test_resume_with_a_different_config_is_refused(tmp_path: Path) -> None:
    run(
        make_config(DIVISORS, dataset={"limit": 1}),
        tmp_path / "r",
        progress=False,
    )
    other = make_config(DIVISORS, debate={"depth": 1}, dataset={"limit": 1})
    with pytest.raises(ConfigError, match=r"debate\.depth"):
        run(other, tmp_path / "r", progress=False)


def test_torn_last_line_is_cut_and_complete_lines_kept(tmp_path: Path) -> None:
    cfg = make_config(DIVISORS, dataset={"limit": 3})
    run(cfg, tmp_path / "r", progress=False)
    path = tmp_path / "r" / TRANSCRIPTS_FILE
    good = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(good[:2]) + good[2][: len(good[2]) // 2])  # torn third line
    assert repair_transcripts(path) == len(good[2]) // 2
    assert path.read_bytes() == b"".join(good[:2])
    res = run(cfg, tmp_path / "r", progress=False)
    assert res.ran == 1
    now = path.read_bytes().splitlines(keepends=True)
    assert now[:2] == good[:2]
    redone, original = json.loads(now[2]), json.loads(good[2])
    assert redone["id"] == original["id"]
    assert redone["rounds"] == original["rounds"]  # the same seed replays the same debate


def test_duplicate_or_corrupt_complete_line_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"id": "a"}\n{"id": "a"}\n')
    with pytest.raises(TranscriptError, match=r"t\.jsonl:2: duplicate"):
        finished_ids(path)
    path.write_text('{"id": "a"}\nnot json\n')
    with pytest.raises(TranscriptError, match=r"t\.jsonl:2"):
        finished_ids(path)


def test_unreachable_server_stops_the_run_with_one_line(tmp_path: Path) -> None:
    cfg = make_config(
        DIVISORS,
        dataset={"limit": 2},
        estimator={
            "model": "openai/gpt-4o-mini",
            "base_url": "http://127.0.0.1:9/v1",
            "options": {},
        },
        max_retries=0,
    )
    os.environ.setdefault("OPENAI_API_KEY", "sk-test-not-a-real-key")
    with pytest.raises(RunError, match="run stopped") as info:
        run(cfg, tmp_path / "r", progress=False)
    assert "\n" not in str(info.value)
    assert (tmp_path / "r" / "config.yaml").is_file()


def test_sigkill_mid_run_then_resume(tmp_path: Path) -> None:
    n = 12
    cfg = {
        "name": "kill",
        "dataset": {"path": str(DIVISORS), "limit": n},
        "debate": {"depth": 2, "width": 3},
        "prover": scripted_section(delay_s=0.02),
        "estimator": scripted_section(delay_s=0.02),
        "judge": {"kind": "oracle"},
        "max_concurrency": 2,
    }
    cfg_path = tmp_path / "c.yaml"
    cfg_path.write_text(yaml.safe_dump(cfg))
    run_dir = tmp_path / "r"
    out = run_dir / TRANSCRIPTS_FILE
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
    ]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 60
    while time.time() < deadline:
        if out.exists() and out.read_bytes().count(b"\n") >= 3:
            break
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    before = out.read_bytes().count(b"\n")
    assert 3 <= before < n, "the run was not killed mid-way"
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    data = out.read_bytes()
    assert data.endswith(b"\n")
    ids = [json.loads(x)["id"] for x in data.splitlines()]
    assert len(ids) == len(set(ids)) == n
    rescore = subprocess.run(
        [sys.executable, "-m", "llmdebate.cli", "score", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert rescore.returncode == 0 and "0 mismatches" in rescore.stdout


@pytest.mark.integration
def test_one_debate_with_the_embedded_local_model(tmp_path: Path) -> None:
    cfg = validate_config(
        {
            "name": "local",
            "dataset": {"path": str(DIVISORS), "limit": 1},
            "debate": {"depth": 1, "width": 2},
            "prover": {"model": "local", "decomposer": "formal", "max_tokens": 8},
            "estimator": {"model": "local", "independent": True},
            "judge": {"kind": "llm", "model": "local"},
            "use_cache": False,
        },
        "test",
    )
    run(cfg, tmp_path / "r", progress=False)
    (t,) = read_transcripts(tmp_path / "r" / TRANSCRIPTS_FILE)
    assert t.status == "complete", t.failure
    assert {c.model for c in t.calls} == {"local"}
    assert all(c.logprobs for c in t.calls if c.act in ("estimate", "independent", "verdict"))
    assert score_transcript(t).mismatches == []


def test_deferred_judge_leaves_debates_awaiting_a_verdict(tmp_path: Path) -> None:
    cfg = make_config(
        DIVISORS, judge={"kind": "deferred"}, dataset={"limit": 2}, debate={"depth": 1, "width": 2}
    )
    run(cfg, tmp_path / "r", progress=False)
    ts = list(read_transcripts(tmp_path / "r" / TRANSCRIPTS_FILE))
    stopped = [t for t in ts if t.stopped_early]
    assert all(t.status == "awaiting_verdict" for t in ts if t not in stopped)
    assert any(t.status == "awaiting_verdict" for t in ts)
    assert all(t.rounds[-1].evidence is not None for t in ts if t.status == "awaiting_verdict")
    assert run(cfg, tmp_path / "r", progress=False).ran == 0
