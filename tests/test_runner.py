"""The runner end to end: run directories, resume, the failure policy, faults, kill -9."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from llmdebate.cli import main
from llmdebate.commands.run import outcome_line
from llmdebate.core.scoring import score_transcript
from llmdebate.errors import ConfigError, TranscriptError, UserError
from llmdebate.experiment.config import ExperimentConfig
from llmdebate.experiment.loading import validate
from llmdebate.experiment.runner import RunResult, run
from llmdebate.records.rundir import (
    FAILURES_FILE,
    SUMMARY_FILE,
    TRANSCRIPTS_FILE,
    load_transcripts,
    repair_transcripts,
    statuses,
)

try:
    from tests.fixtures.fake_server import FakeServer
except ImportError:  # pytest run from inside tests/
    from fixtures.fake_server import FakeServer  # type: ignore[no-redef]

REPO = Path(__file__).resolve().parents[1]
DIVISORS = REPO / "datasets" / "divisors.jsonl"
CIRCUITS = REPO / "datasets" / "circuits.jsonl"
SAMPLE = REPO / "datasets" / "samples" / "arc_challenge.jsonl"
FIXTURE = str(REPO / "tests" / "fixtures" / "llm_fixtures.py")


def scripted(responder: str = "responder", **extra: object) -> dict[str, Any]:
    opts = {"responder": f"{FIXTURE}:{responder}", "probabilities": f"{FIXTURE}:probabilities"}
    return {"model": "scripted", "options": {**opts, **extra}}


def config(path: Path, **over: Any) -> ExperimentConfig:
    data: dict[str, Any] = {
        "name": "t",
        "dataset": {"path": str(path), "limit": 6},
        "debate": {"depth": 2, "width": 3},
        "prover": {**scripted(), "decomposer": "formal"},
        "estimator": scripted(),
        "judge": {"kind": "oracle"},
        "max_concurrency": 3,
    }
    for key, value in over.items():
        data[key] = {**data[key], **value} if isinstance(value, dict) else value
    return validate(data)


def lines(run_dir: Path) -> list[dict[str, Any]]:
    raw = (run_dir / TRANSCRIPTS_FILE).read_bytes()
    assert raw.endswith(b"\n")
    return [json.loads(x) for x in raw.splitlines()]


def summary(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / SUMMARY_FILE).read_text())


# ----------------------------------------------------------------------- end to end


@pytest.mark.parametrize("dataset", [DIVISORS, CIRCUITS])
def test_formal_datasets_end_to_end(tmp_path: Path, dataset: Path) -> None:
    res = run(config(dataset, prover={"assignment": "alternate"}), tmp_path / "r", progress=False)
    assert res.exit_code == 0
    ts = load_transcripts(tmp_path / "r")
    assert {t.meta["variant"] for t in ts} == {"honest", "dishonest"} and len(ts) == 6
    for t in ts:
        assert t.status == "complete", t.failure
        assert t.init is not None
        assert t.init.claim.truth == int(t.meta["variant"] == "honest")
        assert score_transcript(t).mismatches == []
        for rd in t.rounds:  # every subclaim's gold truth is known for formal data
            assert rd.claim.truth is not None
            for sub in rd.decomposition.subclaims if rd.decomposition else []:
                assert sub.truth is not None
    s = summary(tmp_path / "r")
    assert s["status"] == {"complete": 6} and s["planned"] == 6 and s["missing"] == 0
    assert s["usage"]["calls"] == sum(len(t.calls) for t in ts) > 0
    pe = s["metrics"]["protocols"]["prover-estimator"]
    assert pe["payoff"]["honest"]["n"] == 3 and pe["payoff"]["dishonest"]["n"] == 3


def test_bundled_qa_sample_with_a_chosen_answer_and_an_llm_judge(tmp_path: Path) -> None:
    cfg = config(
        SAMPLE,
        prover={"assignment": "choose", "decomposer": "model"},
        judge={**scripted(), "kind": "llm"},
        debate={"depth": 1, "width": 2},
    )
    res = run(cfg, tmp_path / "r", progress=False)
    ts = load_transcripts(tmp_path / "r")
    assert res.exit_code == 0 and len(ts) == 6
    for t in ts:
        assert t.status == "complete", t.failure
        assert t.calls[0].act == "answer"  # the prover chose its answer, recorded first
        assert t.init is not None and t.init.claim.truth is not None
        assert score_transcript(t).mismatches == []


def test_invalid_output_is_a_failed_debate_and_the_run_goes_on(tmp_path: Path) -> None:
    cfg = config(SAMPLE, prover={**scripted("bad_responder"), "decomposer": "model"})
    res = run(cfg, tmp_path / "r", progress=False)
    s = summary(tmp_path / "r")
    assert res.exit_code == 1
    assert s["status"] == {"failed": 12}
    assert s["failures"]["by_kind"] == {"InvalidOutputError": 12}
    for line in lines(tmp_path / "r"):
        assert line["failure"].startswith("InvalidOutputError:")
        assert line["calls"], "the calls of a failed debate are kept"


def test_item_without_a_wrong_answer_fails_alone(tmp_path: Path) -> None:
    data = tmp_path / "d.jsonl"
    rows = [
        {"id": "a", "question": "Capital of France?", "answer": "Paris"},
        {"id": "b", "question": "2+2?", "answer": "4"},
    ]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    cfg = config(data, protocols=["direct"], judge={**scripted(), "kind": "llm"})
    res = run(cfg, tmp_path / "r", progress=False)
    by_id = {t.id: t for t in load_transcripts(tmp_path / "r")}
    assert by_id["direct/b/direct"].status == "complete"
    assert by_id["direct/a/direct"].status == "failed"
    assert "no wrong answer" in (by_id["direct/a/direct"].failure or "")
    assert res.exit_code == 1


def test_deferred_judge_leaves_debates_awaiting_and_exits_0(tmp_path: Path) -> None:
    res = run(config(DIVISORS, judge={"kind": "deferred"}), tmp_path / "r", progress=False)
    ts = load_transcripts(tmp_path / "r")
    waiting = [t for t in ts if t.status == "awaiting_verdict"]
    assert waiting and all(
        t.status == "complete" and t.stopped_early for t in ts if t not in waiting
    )  # a debate that stopped early needs no judge
    assert res.exit_code == 0 and summary(tmp_path / "r")["status"]["awaiting_verdict"] == len(
        waiting
    )


def test_a_run_awaiting_verdicts_exits_0_with_the_assign_line_as_the_readme_says(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = tmp_path / "c.yaml"
    data = config(DIVISORS, judge={"kind": "deferred"}).model_dump(mode="json")
    data["dataset"]["limit"] = 1
    cfg.write_text(yaml.safe_dump(data))
    code = main(["run", "--config", str(cfg), "--run-dir", str(tmp_path / "r"), "--quiet"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "await a person's verdict: llmdebate assign" in out or "awaits a person's" in out
    readme = " ".join((REPO / "README.md").read_text().split())
    assert "Exit status: 0 when every debate completed or awaits a person's verdict" in readme


# ----------------------------------------------------------------------- resume


def test_resume_skips_finished_debates(tmp_path: Path) -> None:
    cfg = config(DIVISORS)
    first = run(
        cfg.model_copy(update={"dataset": cfg.dataset.model_copy(update={"limit": 3})}),
        tmp_path / "r",
        progress=False,
    )
    second = run(cfg, tmp_path / "r", progress=False)
    assert first.ran == 6 and second.ran == 6 and second.skipped == 6
    ids = [x["id"] for x in lines(tmp_path / "r")]
    assert len(ids) == len(set(ids)) == 12
    assert summary(tmp_path / "r")["last_invocation"]["debates_skipped"] == 6


def test_resume_retries_failed_debates_and_keeps_their_old_lines(tmp_path: Path) -> None:
    bad = config(SAMPLE, prover={**scripted("bad_responder"), "decomposer": "model"})
    run(bad, tmp_path / "r", progress=False)
    # the run failed at start for every debate: corrected settings are accepted
    good = config(SAMPLE, prover={"decomposer": "model"}, judge={**scripted(), "kind": "llm"})
    res = run(good, tmp_path / "r", progress=False)
    assert res.exit_code == 0 and res.ran == 12
    assert all(x["status"] == "complete" for x in lines(tmp_path / "r"))
    old = (tmp_path / "r" / FAILURES_FILE).read_text().splitlines()
    assert len(old) == 12 and all(json.loads(x)["status"] == "failed" for x in old)


def test_resume_with_a_different_config_is_refused(tmp_path: Path) -> None:
    run(config(DIVISORS), tmp_path / "r", progress=False)
    with pytest.raises(UserError, match=r"debate\.epsilon"):
        run(config(DIVISORS, debate={"epsilon": 0.1}), tmp_path / "r", progress=False)
    # resumable fields (concurrency, limit, protocols added) may change
    more = config(DIVISORS, max_concurrency=1, protocols=["prover-estimator", "naive-recursive"])
    assert run(more, tmp_path / "r", progress=False).ran == 12


def test_torn_last_line_is_cut_and_complete_lines_kept(tmp_path: Path) -> None:
    run(config(DIVISORS), tmp_path / "r", progress=False)
    out = tmp_path / "r" / TRANSCRIPTS_FILE
    good = out.read_bytes()
    out.write_bytes(good + b'{"id": "torn", "stat')
    assert len(load_transcripts(tmp_path / "r")) == 12  # readers skip the torn line
    assert repair_transcripts(out) == len(b'{"id": "torn", "stat')
    assert out.read_bytes() == good


def test_duplicate_line_is_reported_with_file_and_line(tmp_path: Path) -> None:
    run(config(DIVISORS), tmp_path / "r", progress=False)
    out = tmp_path / "r" / TRANSCRIPTS_FILE
    first = out.read_bytes().splitlines(keepends=True)[0]
    out.write_bytes(out.read_bytes() + first)
    with pytest.raises(TranscriptError, match=r"transcripts\.jsonl:13: duplicate debate id"):
        statuses(out)


# ----------------------------------------------------------------------- start-up


def test_nothing_is_written_before_the_settings_and_models_are_valid(tmp_path: Path) -> None:
    run_dir = tmp_path / "r"
    with pytest.raises(UserError, match=r"unknown model|no such|provider"):
        run(config(DIVISORS, prover={"model": "nosuch/model"}), run_dir, progress=False)
    assert not run_dir.exists()
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    code = subprocess.run(
        [
            sys.executable,
            "-m",
            "llmdebate.cli",
            "run",
            "--run-dir",
            str(run_dir),
            "--dataset-path",
            str(DIVISORS),
            "--prover-model",
            "openai/gpt-4o-mini",
            "--quiet",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert code.returncode == 2 and "OPENAI_API_KEY" in code.stderr
    assert len(code.stderr.strip().splitlines()) == 1
    assert not run_dir.exists()
    # corrected settings under the same id work
    assert run(config(DIVISORS), run_dir, progress=False).exit_code == 0


def test_secrets_in_options_are_refused_before_anything_is_written(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"api_key.*environment variable"):
        validate({"prover": {"model": "openai/x", "options": {"api_key": "sk-123"}}})
    code = main(
        ["run", "--run-dir", str(tmp_path / "r"), "--prover-options", '{"api_key": "sk-1"}']
    )
    assert code == 2 and not (tmp_path / "r").exists()


def test_depth_beyond_the_representable_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="depth"):
        validate({"debate": {"depth": 250}})


# ----------------------------------------------------------------------- a real HTTP server


def http_config(server: FakeServer, data: Path, n: int, **over: Any) -> ExperimentConfig:
    model = {
        "model": "openai/fake",
        "base_url": server.url,
        "options": {"timeout": 0.5, "retry_base_delay": 0.01, "retry_max_delay": 0.05},
    }
    return config(
        data,
        dataset={"path": str(data), "limit": n},
        debate={"depth": 1, "width": 2},
        prover={**model, "decomposer": "formal", "max_tokens": 16},
        estimator={**model, "independent": True},
        max_concurrency=8,
        max_retries=5,
        **over,
    )


def test_faults_leave_every_debate_complete_or_failed_with_reason(tmp_path: Path) -> None:
    with FakeServer(seed=7) as server:
        server.fault_rate = 0.2
        server.fault_mix = ("429", "500", "timeout", "malformed")
        server.timeout_delay = 1.0
        cfg = http_config(server, DIVISORS, 16)
        res = run(cfg, tmp_path / "r", progress=False)
        injected = sum(server.injected.values())
    got = lines(tmp_path / "r")
    assert len(got) == 32 == len({x["id"] for x in got})  # none lost, none twice
    for x in got:
        assert x["status"] == "complete" or x["failure"], x["id"]
    s = summary(tmp_path / "r")
    assert s["transcripts"] == 32 and s["retries"] > 0 and injected > 0
    assert res.exit_code == (0 if s["status"] == {"complete": 32} else 1)
    assert s["debate_wall_s"]["mean"] > 0


def test_an_item_too_long_for_the_server_fails_alone_and_a_resume_finishes(
    tmp_path: Path,
) -> None:
    rows = [json.loads(x) for x in DIVISORS.read_text().splitlines()[:4]]
    rows[1]["context"] = "A very long passage. " * 400
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with FakeServer() as server:
        server.max_prompt_chars = 4000
        cfg = http_config(server, data, 4)
        first = run(cfg, tmp_path / "r", progress=False)
        statuses_ = {x["id"]: x for x in lines(tmp_path / "r")}
        assert first.exit_code == 1 and len(statuses_) == 8
        long_id = rows[1]["id"]
        for did, x in statuses_.items():
            if f"/{long_id}/" in did:
                assert x["status"] == "failed"
                assert x["failure"].startswith("RequestRejectedError")
            else:
                assert x["status"] == "complete", x["failure"]
        assert server.requests > 0
        second = run(cfg, tmp_path / "r", progress=False)  # retries the two, which fail again
        assert second.ran == 2 and second.stopped is None and second.exit_code == 1
        server.max_prompt_chars = None  # the server now takes it: a resume completes the run
        third = run(cfg, tmp_path / "r", progress=False)
        assert third.exit_code == 0 and summary(tmp_path / "r")["status"] == {"complete": 8}


def test_a_server_that_refuses_everything_trips_the_circuit_breaker(tmp_path: Path) -> None:
    with FakeServer() as server:
        server.fault_rate = 1.0
        server.fault_mix = ("500",)
        cfg = http_config(server, DIVISORS, 20, max_consecutive_failures=3)
        cfg = cfg.model_copy(update={"max_retries": 1, "max_concurrency": 1})
        res = run(cfg, tmp_path / "r", progress=False)
    s = summary(tmp_path / "r")
    assert res.stopped and "max_consecutive_failures" in res.stopped and res.exit_code == 1
    assert s["stopped"] == res.stopped and s["status"] == {"failed": 3} and s["missing"] == 37
    assert s["failures"]["by_kind"] == {"RetriesExhaustedError": 3}
    assert res.ran == 3 and s["last_invocation"]["debates_not_run"] == 37
    assert outcome_line(res).startswith(  # the 37 never started are not counted as run
        f"{tmp_path / 'r'}: 40 debates: 3 failed, 37 not run; 3 run now, 0 already done; "
    )


def test_the_outcome_line_counts_in_the_singular_and_the_plural(tmp_path: Path) -> None:
    def line(ran: int, status: dict[str, int], missing: int, calls: int, retries: int) -> str:
        summary = {
            "status": status,
            "missing": missing,
            "planned": sum(status.values()) + missing,
            "usage": {"calls": calls},
            "retries": retries,
        }
        return outcome_line(RunResult(tmp_path, ran, 0, 0.25, summary))

    assert line(1, {"complete": 1}, 0, 1, 1) == (
        f"{tmp_path}: 1 debate: 1 complete; 1 run now, 0 already done; 1 model call, 1 retry; "
        "0.2 s"
    )
    assert line(2, {"failed": 1, "awaiting_verdict": 1, "complete": 0}, 1, 0, 2) == (
        f"{tmp_path}: 3 debates: 1 awaiting a verdict, 1 failed, 1 not run; 2 run now, "
        "0 already done; 0 model calls, 2 retries; 0.2 s"
    )


def test_bad_credentials_stop_the_run_with_exit_2_and_a_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong-key")
    with FakeServer() as server:
        server.api_key = "sk-right-key"
        res = run(http_config(server, DIVISORS, 4), tmp_path / "r", progress=False)
    assert res.exit_code == 2 and res.stopped and "AuthenticationError" in res.stopped
    assert (tmp_path / "r" / SUMMARY_FILE).exists()
    everything = "".join(p.read_text() for p in (tmp_path / "r").iterdir() if p.is_file())
    assert "sk-wrong-key" not in everything


def test_server_url_is_recorded_and_a_resume_elsewhere_is_refused(tmp_path: Path) -> None:
    with FakeServer() as one, FakeServer() as two:
        cfg = http_config(one, DIVISORS, 2)
        run(cfg, tmp_path / "r", progress=False)
        saved = yaml.safe_load((tmp_path / "r" / "config.yaml").read_text())
        assert saved["servers"]["prover"] == saved["servers"]["estimator"]
        assert saved["servers"]["prover"].startswith(one.url.rstrip("/"))
        assert all(
            x["meta"]["servers"]["prover"] == saved["servers"]["prover"]
            for x in lines(tmp_path / "r")
        )
        moved = cfg.model_copy(deep=True)
        moved.prover.base_url = moved.estimator.base_url = two.url
        moved.dataset.limit = 3
        with pytest.raises(UserError, match="allow-server-change"):
            run(moved, tmp_path / "r", progress=False)
        assert run(moved, tmp_path / "r", progress=False, allow_server_change=True).ran == 2


# ----------------------------------------------------------------------- kill -9


def test_sigkill_at_random_moments_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    n = 10
    cfg = {
        "name": "kill",
        "dataset": {"path": str(DIVISORS), "limit": n},
        "debate": {"depth": 2, "width": 3},
        "prover": {**scripted(delay_s=0.01), "decomposer": "formal"},
        "estimator": scripted(delay_s=0.01),
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
    rng = random.Random(3)
    kept = b""
    for _ in range(3):
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        target = kept.count(b"\n") + rng.randint(1, 3)
        deadline = time.time() + 90
        while time.time() < deadline and proc.poll() is None:
            if out.exists() and out.read_bytes().count(b"\n") >= target:
                time.sleep(rng.uniform(0, 0.05))
                break
            time.sleep(0.005)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        now = out.read_bytes()
        complete = now[: now.rfind(b"\n") + 1]
        assert complete.startswith(kept), "a line already written was lost"
        kept = complete
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    data = out.read_bytes()
    assert data.startswith(kept) and data.endswith(b"\n")
    ids = [json.loads(x)["id"] for x in data.splitlines()]
    assert len(ids) == len(set(ids)) == 2 * n
    rescore = subprocess.run(
        [sys.executable, "-m", "llmdebate.cli", "score", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert rescore.returncode == 0, rescore.stdout + rescore.stderr


# ----------------------------------------------------------------------- the embedded model


@pytest.mark.integration
def test_one_debate_with_the_embedded_local_model(tmp_path: Path) -> None:
    cfg = validate(
        {
            "name": "local",
            "dataset": {"path": str(DIVISORS), "limit": 1},
            "debate": {"depth": 1, "width": 2},
            "prover": {
                "model": "local",
                "decomposer": "formal",
                "max_tokens": 8,
                "assignment": "honest",
            },
            "estimator": {"model": "local", "independent": True},
            "judge": {"kind": "llm", "model": "local"},
        }
    )
    res = run(cfg, tmp_path / "r", progress=False)
    (t,) = load_transcripts(tmp_path / "r")
    assert t.status == "complete", t.failure
    assert score_transcript(t).mismatches == []
    assert res.exit_code == 0
