"""``constrained`` means the constraint was applied: a server that accepts a structured field
and drops it (llama-cpp-python's ``/v1/completions`` with ``json_schema``) is found out by one
probe per endpoint, even when its free-running replies happen to match the schema; a server
that applies it is recorded so; the verdict is kept for the run and its resume."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llmdebate.core.schemas import ModelCallRecord
from llmdebate.errors import UserError
from llmdebate.experiment.loading import validate
from llmdebate.experiment.runner import run
from llmdebate.models import GenerateConfig, get_model
from llmdebate.models.enforcement import ENFORCEMENT, probe_enforced, probe_schema
from llmdebate.models.structured import OutputSchema
from llmdebate.records.rundir import STRUCTURED_FILE, TRANSCRIPTS_FILE

try:
    from tests.fixtures.executor_runs import run_config
    from tests.fixtures.fake_server import FakeServer
except ImportError:  # tests/ is not a package: pytest put tests/ itself on sys.path
    from fixtures.executor_runs import run_config  # type: ignore[no-redef]
    from fixtures.fake_server import FakeServer  # type: ignore[no-redef]

SCHEMA = OutputSchema.of(
    "verdict",
    {
        "type": "object",
        "properties": {"answer": {"type": "boolean"}},
        "required": ["answer"],
        "additionalProperties": False,
    },
)
MATCHING = '{"answer": true}'  # what every reply is: it matches SCHEMA, by chance or not
LOGGER = "llmdebate.models"


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLMDEBATE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    ENFORCEMENT.begin()  # a fresh process's registry: no verdict of an earlier test's server


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as s:
        s.responder = lambda body: MATCHING
        yield s


def ask(i: int) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"Is {i} even?"}]


def probes(server: FakeServer) -> list[dict[str, Any]]:
    return [b for b in server.bodies if "probe" in json.dumps(b.get("json_schema") or {})]


def completions(server: FakeServer, **options: Any) -> Any:
    return get_model(
        "openai-completions/base", base_url=server.url, structured="json_schema",
        use_cache=False, **options,
    )


async def test_a_server_ignoring_the_schema_is_not_constrained_by_a_chance_match(
    server: FakeServer, caplog: pytest.LogCaptureFixture
) -> None:
    config = GenerateConfig(max_tokens=16, json_schema=SCHEMA)
    log: list[ModelCallRecord] = []
    one, two = completions(server), completions(server)  # two roles, one endpoint
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        outs = await one.generate_many([ask(i) for i in range(4)], config, log=log)
        outs.append(await two.generate(ask(9), config, log=log))
    assert [o.text for o in outs] == [MATCHING] * 5  # every reply matches the schema
    assert [r.constrained for r in log] == [False] * 5  # none was constrained
    assert len(probes(server)) == 1  # once per endpoint, however many calls and roles
    assert all("json_schema" not in b for b in server.bodies[1:])  # the field is no more sent
    lines = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert len(lines) == 1
    assert lines[0].startswith(
        f"{server.url} ignores json_schema on /v1/completions: replies are parsed, not constrained"
    )
    # the probe, the four prompts as one list, the fifth alone
    assert one.http_requests + two.http_requests == server.requests == 1 + 1 + 1
    (verdict,) = ENFORCEMENT.snapshot().values()
    assert verdict == {"enforced": False, "how": "probe", "probes": 1}
    await one.aclose()
    await two.aclose()


@pytest.mark.parametrize(
    ("endpoint", "mode"), [("completions", "json_schema"), ("chat", "response_format")]
)
async def test_an_enforcing_server_is_recorded_constrained(
    server: FakeServer, caplog: pytest.LogCaptureFixture, endpoint: str, mode: str
) -> None:
    server.enforce_fields = {mode}
    m = get_model(
        "openai/base", base_url=server.url, endpoint=endpoint, structured=mode, use_cache=False
    )
    config = GenerateConfig(max_tokens=16, json_schema=SCHEMA)
    log: list[ModelCallRecord] = []
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        for i in range(3):
            await m.generate(ask(i), config, log=log)
    assert [r.constrained for r in log] == [True] * 3
    assert server.requests == 1 + 3 and m.http_requests == server.requests  # the probe counts
    assert all(mode in b for b in server.bodies)
    assert not [r for r in caplog.records if r.name == LOGGER]
    await m.aclose()


async def test_the_option_says_what_the_server_does_without_a_probe(server: FakeServer) -> None:
    config = GenerateConfig(max_tokens=16, json_schema=SCHEMA)
    ignored, enforced = completions(server, enforcement="ignored"), get_model(
        "openai/other", base_url=server.url, structured="grammar", enforcement="enforced",
        use_cache=False,
    )
    log: list[ModelCallRecord] = []
    await ignored.generate(ask(1), config, log=log)
    await enforced.generate(ask(2), config, log=log)
    assert server.requests == 2 and not probes(server)
    assert "json_schema" not in server.bodies[0] and "grammar" in server.bodies[1]
    assert [r.constrained for r in log] == [False, True]
    with pytest.raises(UserError, match="enforcement must be one of probe, enforced, ignored"):
        completions(server, enforcement="maybe")
    await ignored.aclose()
    await enforced.aclose()


def test_openai_strict_response_format_is_documented_as_enforced() -> None:
    m = get_model("openai/gpt-4o-mini", use_cache=False)  # api.openai.com: nothing is sent
    assert m.backend.known_enforcement() is True
    assert [v["how"] for v in ENFORCEMENT.snapshot().values()][-1:] == ["documented"]
    other = get_model("openai/gpt-4o-mini", structured="json_schema", use_cache=False)
    assert other.backend.known_enforcement() is None  # any other field: a probe finds out


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(2, 24), st.text(max_size=20))
def test_only_the_admitted_reply_or_its_prefix_shows_enforcement(cut: int, text: str) -> None:
    schema = probe_schema("http://h/v1/completions m json_schema")
    token = schema.schema["properties"]["probe"]["enum"][0]
    compact = json.dumps({"probe": token}, separators=(",", ":"))
    assert probe_enforced(json.dumps({"probe": token}), schema)
    assert probe_enforced(" " + compact[:cut], schema)  # cut short by max_tokens
    written = "".join(text.split())
    assert probe_enforced(text, schema) == (len(written) >= 2 and compact.startswith(written))
    assert not probe_enforced('{"probe": "yes"}', schema)
    assert not probe_enforced(MATCHING, schema)


def test_a_run_records_the_verdict_and_its_resume_sends_no_probe_again(
    server: FakeServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    server.responder = lambda body: '{"probability": 0.7}'  # matches the schema by chance
    cfg = run_config(server, tmp_path, "ignored-schema", 3, {"depth": 1, "width": 2})
    cfg["estimator"] = {
        **cfg["estimator"],
        "method": "verbalised",
        "options": {"endpoint": "completions", "structured": "json_schema"},
    }
    run_dir = tmp_path / "run"
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        first = run(validate(cfg), run_dir, progress=False)
    assert first.exit_code == 0, first.summary
    recorded = json.loads((run_dir / STRUCTURED_FILE).read_text())
    (key,) = recorded
    assert key.endswith("/v1/completions fake json_schema")
    assert recorded[key] == {"enforced": False, "how": "probe", "probes": 1}
    assert first.summary["structured_outputs"] == recorded
    inv = first.summary["last_invocation"]
    assert inv["probe_requests"] == 1 and inv["http_requests"] == server.requests
    assert len(probes(server)) == 1
    calls = [
        c for line in (run_dir / TRANSCRIPTS_FILE).read_text().splitlines()
        for c in json.loads(line)["calls"] if c.get("constrained") is not None
    ]
    assert calls and not any(c["constrained"] for c in calls)  # every reply matched, none counts

    # a debate lost (a kill): the resume reads the verdict instead of probing again
    lines = (run_dir / TRANSCRIPTS_FILE).read_text().splitlines(keepends=True)
    (run_dir / TRANSCRIPTS_FILE).write_text("".join(lines[:-1]))
    server.reset_counts()
    again = run(validate(cfg), run_dir, progress=False)
    assert again.exit_code == 0 and again.ran == 1
    assert not probes(server) and again.summary["last_invocation"]["probe_requests"] == 0
    assert again.summary["structured_outputs"][key]["how"] == "recorded"
    assert again.summary["structured_outputs"][key]["enforced"] is False
    assert all("json_schema" not in b for b in server.bodies)


async def test_a_probe_the_server_refuses_is_a_refusal_and_a_failed_one_no_verdict(
    server: FakeServer, caplog: pytest.LogCaptureFixture
) -> None:
    config = GenerateConfig(max_tokens=16, json_schema=SCHEMA)
    server.reject_fields, server.reject_status = {"json_schema"}, 500  # llama-cpp-python chat
    refused = completions(server, retry_base_delay=0.001)
    log: list[ModelCallRecord] = []
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        await refused.generate(ask(1), config, log=log)
    assert server.requests == 2 and [r.constrained for r in log] == [False]  # probe, call
    assert [r.getMessage() for r in caplog.records].count(
        f"openai-completions/base: the server at {server.url} fails (HTTP 500) on structured: "
        "json_schema; replies are prompted and parsed from now on (set structured to one the "
        "server applies, e.g. grammar for llama.cpp)"
    ) == 1
    assert ENFORCEMENT.get(refused.backend.enforcement_key) is False
    await refused.aclose()

    # a probe with no answer settles nothing: the call is retried, and the probe with it
    server.reject_fields = set()
    server.enforce_fields = {"grammar"}
    server.faults.append({"status": 503})
    m = get_model(
        "openai-completions/other", base_url=server.url, structured="grammar",
        use_cache=False, retry_base_delay=0.001,
    )
    server.reset_counts()
    out = await m.generate(ask(2), config)
    assert out.constrained and m.usage.retries == 1
    assert [("grammar" in b, "ok-" in b.get("grammar", "")) for b in server.bodies] == [
        (True, True), (True, True), (True, False)
    ]
    assert ENFORCEMENT.snapshot()[m.backend.enforcement_key]["how"] == "probe"
    await m.aclose()


async def test_an_enforced_option_the_server_refuses_is_not_recorded_enforced(
    server: FakeServer,
) -> None:
    """``enforcement: enforced`` says what the server does until it shows otherwise: an HTTP
    500 on the field (llama-cpp-python's chat endpoint) makes the verdict False, refused."""
    server.reject_fields, server.reject_status = {"json_schema"}, 500
    m = completions(server, enforcement="enforced", retry_base_delay=0.001)
    log: list[ModelCallRecord] = []
    await m.generate(ask(1), GenerateConfig(max_tokens=16, json_schema=SCHEMA), log=log)
    key = m.backend.enforcement_key
    assert [r.constrained for r in log] == [False]
    assert ENFORCEMENT.snapshot()[key]["enforced"] is False
    assert ENFORCEMENT.snapshot()[key]["how"] == "refused"
    await m.aclose()
