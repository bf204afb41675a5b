"""llmdebate in UK AISI's Inspect: the task ``llmdebate/debate`` for every protocol (Inspect's
mock model playing the roles), its log read back with Inspect's own log API and re-scored
exactly, ``inspect eval`` on the command line against the fake OpenAI server, the
``inspect/<provider>/<model>`` backend in ``llmdebate run``, and a run exported as an Inspect
log."""

from __future__ import annotations

import asyncio
import json
import math
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import inspect_ai
import pytest
import yaml
from inspect_ai.log import read_eval_log

from llmdebate.cli import main
from llmdebate.commands.score import score_file
from llmdebate.core.schemas import Transcript
from llmdebate.core.scoring import score_transcript
from llmdebate.errors import UserError
from llmdebate.inspect_ext.task import METADATA_KEY, debate
from llmdebate.models import GenerateConfig, get_model
from llmdebate.protocols.families import rewarded as paid
from llmdebate.protocols.interface import FirstOption
from llmdebate.protocols.registry import PROTOCOLS

try:
    from tests.fixtures.fake_server import FakeServer
    from tests.inspect_mock import ITEMS, mock_roles
except ImportError:  # run from inside tests/
    from fixtures.fake_server import FakeServer  # type: ignore[no-redef]
    from inspect_mock import ITEMS, mock_roles  # type: ignore[no-redef]

REPO = Path(__file__).resolve().parents[1]
DIVISORS = str(REPO / "datasets" / "divisors.jsonl")
FIXTURE = str(REPO / "tests" / "fixtures" / "llm_fixtures.py")
SCRIPTED = {
    "model": "scripted",
    "options": {"responder": f"{FIXTURE}:responder", "probabilities": f"{FIXTURE}:probabilities"},
}


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as s:
        yield s


def transcripts_of(path: Path) -> list[Transcript]:
    log = read_eval_log(str(path))
    return [
        Transcript.model_validate(d)
        for s in log.samples or []
        for d in s.metadata[METADATA_KEY]["transcripts"]
    ]


@pytest.mark.parametrize("protocol", PROTOCOLS.builtin_names())  # not an installed plugin's
def test_every_protocol_runs_in_inspect_and_rescores_from_its_log(
    protocol: str, tmp_path: Path
) -> None:
    config = tmp_path / "experiment.yaml"  # the items' own decompositions: leaves have truth
    config.write_text(yaml.safe_dump({"prover": {"decomposer": "formal"}}))
    task = debate(protocol=protocol, dataset=DIVISORS, config=str(config), limit=2, depth=1,
                  width=2)
    [log] = inspect_ai.eval(
        task, model=None, model_roles=mock_roles(), log_dir=str(tmp_path), display="none"
    )
    assert log.status == "success", log.error
    [path] = list(tmp_path.glob("*.eval"))
    back = read_eval_log(str(path), resolve_attachments=True)
    assert back.eval.task_args["config"] == str(config)  # Inspect's own log API
    assert back.eval.task_args["protocol"] == protocol
    assert [s.id for s in back.samples or []] == ["divisors-000", "divisors-001"]
    ts = transcripts_of(path)
    variants = PROTOCOLS.get(protocol).variants("paired", 0)
    assert len(ts) == 2 * len(variants)
    assert all(t.status == "complete" and t.protocol == protocol for t in ts), [
        t.failure for t in ts
    ]
    assert all(not score_transcript(t).mismatches for t in ts)
    res = score_file(path)  # what `llmdebate score LOG.eval` runs
    assert res.ok and res.scored == len(ts) and not res.mismatches
    # the protocol's figures under their names as Inspect metrics
    metrics = {s.name: s.metrics for s in back.results.scores} if back.results else {}
    rewarded = paid(PROTOCOLS.get(protocol))
    key = "item_leaf_claim_accuracy" if rewarded else "judge_accuracy"
    assert set(metrics[key]) == {"accuracy", "stderr"}
    assert ("honest_beats_dishonest" in metrics) is rewarded
    assert "correct" not in metrics and "payoff" not in metrics
    sample = (back.samples or [])[0]
    score = next(iter((sample.scores or {}).values()))
    assert isinstance(score.value, dict) and 0.0 <= score.value[key] <= 1.0
    # the debate as readable events, the model calls inside the debate's span
    infos = [e for e in sample.events if e.event == "info"]
    assert infos and any("**Outcome**: complete" in str(e.data) for e in infos)
    spans = [e.name for e in sample.events if e.event == "span_begin"]
    assert f"{protocol} · divisors-000 · {variants[0]}" in spans
    assert "model call" not in spans  # every call's span is named by its act
    models = [e for e in sample.events if e.event == "model"]
    calls = sum(len(t.calls) for t in ts if t.meta["item_id"] == "divisors-000")
    assert len(models) == calls > 0


def test_prover_estimator_events_show_each_round(tmp_path: Path) -> None:
    task = debate(protocol="prover-estimator", dataset=DIVISORS, limit=1, depth=1, width=2)
    inspect_ai.eval(
        task, model=None, model_roles=mock_roles(), log_dir=str(tmp_path), display="none"
    )
    log = read_eval_log(str(next(tmp_path.glob("*.eval"))), resolve_attachments=True)
    sample = (log.samples or [])[0]
    texts = [str(e.data) for e in sample.events if e.event == "info"]
    assert any(t.startswith("**Initialisation**") for t in texts)
    assert any("**Round 1**" in t and "decomposition (" in t and "estimates b =" in t
               for t in texts)
    assert any("**Round 0**" in t and "verdict O =" in t for t in texts)
    spans = [e.name for e in sample.events if e.event == "span_begin"]
    assert "initialisation · estimate" in spans and "round 1 · decompose" in spans
    assert "round 0 · verdict" in spans


def test_an_unknown_protocol_names_the_choices() -> None:
    with pytest.raises(UserError, match=r"-T protocol.*prover-estimator"):
        debate(protocol="nope", dataset=DIVISORS)


def test_inspect_samples_are_a_dataset_too(tmp_path: Path) -> None:
    from inspect_ai.dataset import Sample

    samples = [
        Sample(input="Is water wet?", target="A", choices=["yes", "no"], id="w"),
        Sample(input="Is fire cold?", target="no", choices=["yes", "no"], id="f"),
    ]
    [log] = inspect_ai.eval(
        debate(protocol="consultancy", dataset=samples), model=None, model_roles=mock_roles(),
        log_dir=str(tmp_path), display="none",
    )
    assert log.status == "success", log.error
    ts = transcripts_of(next(tmp_path.glob("*.eval")))
    assert {t.meta["gold"] for t in ts} == {"yes", "no"}  # the letter target is the choice


def test_the_entry_point_registers_llmdebate_debate() -> None:
    import tomllib
    from inspect_ai._util.registry import registry_info, registry_lookup

    eps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["entry-points"]
    module = eps["inspect_ai"]["llmdebate"]
    __import__(module)  # what Inspect's ensure_entry_points("llmdebate") does
    task = registry_lookup("task", "llmdebate/debate")
    assert task is not None and registry_info(task).name == "llmdebate/debate"
    assert registry_lookup("scorer", "llmdebate/debate_scorer") is not None


def test_inspect_eval_on_the_command_line(server: FakeServer, tmp_path: Path) -> None:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
        "OPENAI_BASE_URL": server.url,
        "OPENAI_API_KEY": "sk-test",
        "INSPECT_LOG_DIR": str(tmp_path),
    }
    inspect = Path(sys.executable).with_name("inspect")
    argv = [
        str(inspect), "eval", str(REPO / "llmdebate" / "inspect_ext" / "task.py@debate"),
        "-T", "protocol=direct", "-T", f"dataset={DIVISORS}", "-T", "limit=2",
        "--model", "openai/fake-model", "-M", "responses_api=false",
        "--model-role", "judge={model: openai/fake-model, model_args: {responses_api: false}}",
        "--display", "plain", "--log-dir", str(tmp_path),
    ]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    [path] = list(tmp_path.glob("*.eval"))
    log = read_eval_log(str(path))
    assert log.status == "success" and len(log.samples or []) == 2
    assert server.requests == 2  # one judge call per direct debate
    assert all("logprobs" in b and b["top_logprobs"] for b in server.bodies)
    assert main(["score", str(path)]) == 0


def test_every_role_on_an_openai_compatible_server_through_inspects_openai_provider(
    server: FakeServer, tmp_path: Path
) -> None:
    """docs/inspect.md: `responses_api: false` per role, for a server without /v1/responses."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
        "OPENAI_BASE_URL": server.url,
        "OPENAI_API_KEY": "sk-test",
    }
    config = tmp_path / "experiment.yaml"
    config.write_text(yaml.safe_dump({"prover": {"decomposer": "formal"}}))
    role = "{model: openai/fake-model, model_args: {responses_api: false}}"
    inspect = Path(sys.executable).with_name("inspect")
    argv = [
        str(inspect), "eval", str(REPO / "llmdebate" / "inspect_ext" / "task.py@debate"),
        "-T", "protocol=prover-estimator", "-T", f"dataset={DIVISORS}", "-T", "limit=1",
        "-T", f"config={config}", "-T", "depth=1", "-T", "width=2",
        "--model-role", f"prover={role}", "--model-role", f"estimator={role}",
        "--model-role", f"judge={role}", "--display", "plain", "--log-dir", str(tmp_path),
    ]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    [path] = list(tmp_path.glob("*.eval"))
    log = read_eval_log(str(path))
    assert log.status == "success", log.error
    assert server.requests > 0 and all("messages" in b for b in server.bodies)
    ts = transcripts_of(path)
    assert ts and all(t.status == "complete" for t in ts)
    assert "estimator" in {c.role for t in ts for c in t.calls}  # (a sure estimator: early stops)
    assert all(isinstance(s.scores, dict) for s in log.samples or [])


def test_inspect_backend_in_llmdebate_run(
    server: FakeServer, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cfg = {
        "name": "insp",
        "protocols": ["direct"],
        "dataset": {"path": DIVISORS, "limit": 3},
        "prover": SCRIPTED,
        "estimator": SCRIPTED,
        "judge": {
            "model": "inspect/openai/fake-model", "base_url": server.url,
            "options": {"model_args": {"responses_api": False}},
        },
        "cache_dir": str(tmp_path / "cache"),
    }
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(cfg))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    run_dir = tmp_path / "r"
    assert main(["run", "--config", str(path), "--run-dir", str(run_dir), "--quiet"]) == 0
    lines = (run_dir / "transcripts.jsonl").read_text().splitlines()
    ts = [Transcript.model_validate_json(x) for x in lines]
    assert len(ts) == 3 and all(t.status == "complete" for t in ts)
    assert all(c.model == "inspect/openai/fake-model" and c.logprobs for t in ts for c in t.calls)
    assert server.requests == 3
    # llmdebate's cache answers a second run: no request reaches the server
    again = tmp_path / "r2"
    assert main(["run", "--config", str(path), "--run-dir", str(again), "--quiet"]) == 0
    assert server.requests == 3
    capsys.readouterr()


def test_inspect_backend_retries_are_llmdebates(
    server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    server.faults.extend([{"status": 429, "retry_after": "0"}, {"status": 500}])
    m = get_model("inspect/openai/fake-model", base_url=server.url, use_cache=False,
                  model_args={"responses_api": False},
                  retry_base_delay=0.0)
    out = asyncio.run(m.generate([{"role": "user", "content": "Is it?"}]))
    assert out.text == "True"
    assert server.requests == 3 and m.usage.retries == 2  # Inspect sent each request once


def test_a_provider_without_logprobs_is_refused_with_the_methods_that_work() -> None:
    from inspect_ai.model import ModelOutput

    m = get_model("inspect/mockllm/model", use_cache=False, model_args={
        "custom_outputs": [ModelOutput.from_content("mockllm/model", "True")]})
    m.backend.profile = m.backend.profile.without("logprobs")
    with pytest.raises(UserError, match=r"returns no logprobs; use method 'sampling' or"):
        asyncio.run(m.generate([{"role": "user", "content": "x"}],
                               GenerateConfig(top_logprobs=5)))
    with pytest.raises(UserError, match=r"unknown model 'inspect/gpt'.*inspect/<provider>"):
        get_model("inspect/gpt")


def test_a_run_exported_as_an_inspect_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = {
        "name": "exp", "protocols": ["prover-estimator", "consultancy"],
        "dataset": {"path": DIVISORS, "limit": 2}, "debate": {"depth": 1, "width": 2},
        "prover": SCRIPTED, "estimator": SCRIPTED, "judge": SCRIPTED,
    }
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(cfg))
    run_dir = tmp_path / "r"
    assert main(["run", "--config", str(path), "--run-dir", str(run_dir), "--quiet"]) == 0
    out = tmp_path / "run.eval"
    assert main(["export", str(run_dir), "--format", "inspect-log", "--out", str(out)]) == 0
    assert "run.eval: 2 samples (8 debates, 0 judgments by a person)" in capsys.readouterr().out
    log = read_eval_log(str(out))
    assert log.status == "success" and [s.id for s in log.samples or []] == [
        "divisors-000", "divisors-001"]
    ts = transcripts_of(out)
    assert sorted(t.id for t in ts) == sorted(
        json.loads(x)["id"] for x in (run_dir / "transcripts.jsonl").read_text().splitlines())
    assert main(["score", str(out)]) == 0
    assert "8 transcripts, 8 scored, 0 mismatches" in capsys.readouterr().out
    sample = (log.samples or [])[0]
    assert sample.scores and set(sample.scores) == {"prover-estimator", "consultancy"}
    assert any(e.event == "info" for e in sample.events)
    json_out = tmp_path / "run.json"  # Inspect's JSON log format too, named as Inspect names
    assert main(["export", str(run_dir), "--format", "inspect-log", "--out", str(json_out)]) == 0
    [written] = tmp_path.glob("*_run.json")
    assert f"{written}: 2 samples" in capsys.readouterr().out
    assert len(transcripts_of(written)) == 8
    assert main(["export", str(run_dir), "--format", "trl-prompt-completion", "--out",
                 str(tmp_path / "x.jsonl")]) == 2  # a row format still needs --role
    assert "--role is required for --format trl-prompt-completion" in capsys.readouterr().err
    from llmdebate.export import export_run

    with pytest.raises(UserError, match="inspect-log writes a whole run, not rows"):
        export_run(run_dir, tmp_path / "rows.jsonl", role="prover", fmt="inspect-log")


def test_a_persons_judgments_are_scores_of_the_exported_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from llmdebate.protocols.registry import protocol_of
    from llmdebate.records.rundir import append_judged, load_transcripts

    cfg = {
        "name": "people", "protocols": ["consultancy"], "dataset": {"path": DIVISORS, "limit": 1},
        "prover": SCRIPTED, "estimator": SCRIPTED, "judge": {"kind": "human"},
    }
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(cfg))
    run_dir = tmp_path / "r"
    assert main(["run", "--config", str(path), "--run-dir", str(run_dir), "--quiet"]) == 0
    waiting = load_transcripts(run_dir)
    assert [t.status for t in waiting] == ["awaiting_verdict"] * 2
    first = waiting[0]
    gold_first = first.meta["options"][0] == first.meta["gold"]
    # two people judge the first debate, as the judging app records them: <debate>#<judgment>
    for n, right in ((1, True), (2, False)):
        done = protocol_of(first).complete(
            first, FirstOption(0.9 if gold_first == right else 0.1), judge="human"
        )
        done.id = f"{first.id}#{n}"
        assert append_judged(run_dir, done)
    out = tmp_path / "people.eval"
    assert main(["export", str(run_dir), "--format", "inspect-log", "--out", str(out)]) == 0
    assert "1 samples (2 debates, 2 judgments by a person)" in capsys.readouterr().out
    log = read_eval_log(str(out))
    [sample] = log.samples or []
    assert sample.scores is not None
    assert "consultancy" not in sample.scores  # no debate of the item completed by a model
    human = sample.scores["consultancy · human"]
    assert human.value == {"consultancy · human · item_judge_accuracy": 0.5}
    assert (human.metadata or {})["judge"] == "human"
    ids = sorted(t.id for t in transcripts_of(out))
    assert ids == sorted([w.id for w in waiting] + [f"{first.id}#1", f"{first.id}#2"])
    assert log.results is not None and log.results.total_samples == 1
    assert log.results.completed_samples == 1
    [score] = log.results.scores
    assert score.name == "consultancy · human · item_judge_accuracy"
    assert score.metrics["mean"].value == 0.5
    assert main(["score", str(out)]) == 0  # every judgment re-scores from the log


def test_inspect_backend_errors_are_llmdebates(
    server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from llmdebate.errors import AuthenticationError, RequestRejectedError

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(UserError, match=r"Inspect cannot load 'openai/fake-model': .*OPENAI_API_K"):
        get_model("inspect/openai/fake-model", base_url=server.url)
    server.api_key = "sk-right"
    from llmdebate.errors import MissingAPIKeyError

    with pytest.raises(MissingAPIKeyError, match="INSPECT_TEST_KEY"):
        get_model("inspect/openai/fake-model", base_url="https://example.invalid/v1",
                  api_key_env="INSPECT_TEST_KEY")
    monkeypatch.setenv("INSPECT_TEST_KEY", "sk-wrong")
    m = get_model("inspect/openai/fake-model", base_url=server.url, use_cache=False,
                  api_key_env="INSPECT_TEST_KEY", model_args={"responses_api": False})
    with pytest.raises(AuthenticationError, match="inspect/openai/fake-model"):
        asyncio.run(m.generate([{"role": "user", "content": "x"}]))
    server.api_key = None
    server.faults.append({"status": 400, "message": "prompt too long",
                          "code": "context_length_exceeded"})
    with pytest.raises(RequestRejectedError, match=r"refused the request \(model_length"):
        asyncio.run(m.generate([{"role": "user", "content": "y"}]))


def test_leaf_claim_accuracy_is_unscored_where_the_leaves_have_no_truth(tmp_path: Path) -> None:

    data = tmp_path / "items.jsonl"
    data.write_text("".join(json.dumps(it) + "\n" for it in ITEMS))
    [log] = inspect_ai.eval(  # the model's decomposition: leaf claims of unknown truth
        debate(protocol="prover-estimator", dataset=str(data), depth=1, width=2),
        model=None, model_roles=mock_roles(), log_dir=str(tmp_path), display="none",
    )
    assert log.status == "success", log.error
    values = [next(iter((s.scores or {}).values())).value for s in log.samples or []]
    assert values and all(isinstance(v, dict) and math.isnan(v["item_leaf_claim_accuracy"])
                          for v in values)
    assert all(v["honest_beats_dishonest"] in (0.0, 1.0) for v in values)  # type: ignore[index]
    scores = {s.name: s for s in (log.results.scores if log.results else [])}
    assert scores["item_leaf_claim_accuracy"].unscored_samples == len(values)


def test_prover_estimator_scores_every_sample_when_an_items_debates_all_stop_early(
    tmp_path: Path,
) -> None:
    from inspect_mock import mock_role

    from llmdebate.models import ScriptedBackend

    top = "Statement: 2647 has"  # divisors-000's claims: the estimator is sure of each, so
    # both of its debates stop early (the prover agrees within epsilon)

    def sure(messages: list[dict[str, str]]) -> float:
        return 0.999 if messages[-1]["content"].startswith(top) else 0.6

    config = tmp_path / "experiment.yaml"
    config.write_text(yaml.safe_dump({"prover": {"decomposer": "formal"}}))
    roles = {**mock_roles(), "estimator": mock_role(ScriptedBackend(probabilities=sure))}
    [log] = inspect_ai.eval(
        debate(protocol="prover-estimator", dataset=DIVISORS, config=str(config), limit=3,
               depth=1, width=2),
        model=None, model_roles=roles, log_dir=str(tmp_path), display="none",
    )
    assert log.status == "success", log.error
    samples = {s.id: s for s in log.samples or []}
    stopped = [Transcript.model_validate(d) for d in samples["divisors-000"].metadata[
        METADATA_KEY]["transcripts"]]
    assert stopped and all(t.stopped_early for t in stopped)
    scored = {i: next(iter((s.scores or {}).values())).value for i, s in samples.items()}
    assert all(isinstance(v, dict) for v in scored.values())
    early = scored["divisors-000"]
    assert isinstance(early, dict) and early["honest_beats_dishonest"] in (0.0, 1.0)
    assert math.isnan(early["item_leaf_claim_accuracy"])  # no leaf was judged, so unscored
    assert any(isinstance(v, dict) and not math.isnan(v["item_leaf_claim_accuracy"])
               for v in scored.values())
    names = {s.name for s in log.results.scores} if log.results else set()
    assert names == {"honest_beats_dishonest", "item_leaf_claim_accuracy", "item_payoff_honest",
                     "item_payoff_dishonest"}


def test_the_exported_log_has_a_results_block_per_protocol_and_is_listed_by_inspect(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from inspect_ai.log import list_eval_logs

    cfg = {
        "name": "mixed", "protocols": ["direct", "consultancy", "prover-estimator"],
        "dataset": {"path": DIVISORS, "limit": 2}, "debate": {"depth": 1, "width": 2},
        "prover": {**SCRIPTED, "decomposer": "formal"}, "estimator": SCRIPTED, "judge": SCRIPTED,
    }
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(cfg))
    run_dir = tmp_path / "r"
    assert main(["run", "--config", str(path), "--run-dir", str(run_dir), "--quiet"]) == 0
    logs = tmp_path / "logs"
    logs.mkdir()
    for out in ("my-run.json", "my-run.eval", ""):  # a file of either kind, or a folder
        assert main(["export", str(run_dir), "--format", "inspect-log", "--out",
                     str(logs / out) if out else str(logs)]) == 0
    capsys.readouterr()
    listed = list_eval_logs(str(logs))
    assert len(listed) == 3, [x.name for x in listed]
    log = read_eval_log(listed[0].name, resolve_attachments=True)
    assert log.results is not None and log.results.total_samples == 2
    assert log.results.completed_samples == 2
    names = {s.name for s in log.results.scores}
    assert {"direct · judge_accuracy", "consultancy · judge_accuracy",
            "prover-estimator · honest_beats_dishonest",
            "prover-estimator · item_leaf_claim_accuracy"} <= names
    assert not any("correct" in n for n in names)
    assert log.stats.started_at and log.stats.completed_at
    sample = (log.samples or [])[0]
    assert set(sample.scores or {}) == {"direct", "consultancy", "prover-estimator"}
    # the card reads as a description of the debate, not as an answer key
    infos = [str(e.data) for e in sample.events if e.event == "info"]
    assert not any("correct answer is" in x.lower() or "assigned None" in x for x in infos)
    assert any("for scoring only" in x for x in infos)
    spans = [e.name for e in sample.events if e.event == "span_begin"]
    assert "model call" not in spans and any(x.startswith("consultant · ") for x in spans)
    inspect = Path(sys.executable).with_name("inspect")
    done = subprocess.run([str(inspect), "log", "list", "--log-dir", str(logs), "--json"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert len(json.loads(done.stdout)) == 3


def test_the_direct_baselines_are_scored_apart_in_inspect(tmp_path: Path) -> None:
    quality = str(REPO / "datasets" / "quality" / "sample.jsonl")
    [log] = inspect_ai.eval(
        debate(protocol="direct", dataset=quality, limit=2),
        model=None, model_roles=mock_roles(), log_dir=str(tmp_path), display="none",
    )
    assert log.status == "success", log.error
    names = {s.name for s in log.results.scores} if log.results else set()
    assert names == {"judge_accuracy (direct blind)", "judge_accuracy (direct expert)"}
    for s in log.samples or []:
        value = next(iter((s.scores or {}).values())).value
        assert isinstance(value, dict) and set(value) == names


def test_the_exported_results_give_no_standard_error_from_one_sample() -> None:
    from inspect_ai.log import EvalSample
    from inspect_ai.scorer import Score

    from llmdebate.inspect_ext.logs import results

    def sample(n: int, value: dict[str, float]) -> EvalSample:
        return EvalSample(id=n, epoch=1, input="q", target="a", scores={"s": Score(value=value)})

    block = results([sample(1, {"a": 1.0, "b": 1.0}), sample(2, {"a": 0.0, "b": math.nan})])
    by = {e.name: e for e in block.scores}
    assert set(by["a"].metrics) == {"mean", "stderr"} and by["a"].metrics["stderr"].value == 0.5
    assert set(by["b"].metrics) == {"mean"}  # Inspect's stderr of one sample is 0: left out
    assert (by["b"].scored_samples, by["b"].unscored_samples) == (1, 1)
