"""Failure classification with the real openai/anthropic SDKs against the fake server.

401/403 stop the run, 404 names the model, 400/413/422 fail one debate without a retry,
transient failures are retried (and counted) until they run out; errors raised on this
machine are never retried; the API key appears in no message or record.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from llmdebate.core.schemas import ModelCallRecord
from llmdebate.elicit import estimate
from llmdebate.errors import (
    AuthenticationError,
    FatalModelError,
    ModelError,
    RequestRejectedError,
    RetriesExhaustedError,
    UserError,
)
from llmdebate.models import GenerateConfig, Model, RetriesExhausted, TransientError, get_model

try:
    from tests.fixtures.fake_server import FakeServer
except ImportError:  # tests/ is not a package: pytest put tests/ itself on sys.path
    from fixtures.fake_server import FakeServer

SECRET = "sk-test-SECRET-value-0123456789"
Q = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Is 7 prime?"}]
PROVIDERS = ("openai", "anthropic")


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLMDEBATE_CACHE_DIR", str(tmp_path / "cache"))
    for var in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer(seed=7) as s:
        yield s


def model(server: FakeServer, provider: str = "openai", **kw) -> Model:
    kw.setdefault("retry_base_delay", 0.001)
    kw.setdefault("use_cache", False)
    if provider == "openai":
        return get_model("openai/gpt-4o-mini", base_url=server.url, **kw)
    return get_model("anthropic/claude-haiku-4-5", base_url=server.root, **kw)


def assert_no_secret(*texts: object) -> None:
    for text in texts:
        shown = text.model_dump_json() if isinstance(text, ModelCallRecord) else str(text)
        assert SECRET not in shown and SECRET[8:] not in shown


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_wrong_key_is_an_authentication_error_not_retried(server: FakeServer, provider):
    server.api_key = "sk-the-right-one"  # the server echoes the wrong key it got
    m = model(server, provider)
    log: list[ModelCallRecord] = []
    with pytest.raises(AuthenticationError, match=r"HTTP 401.*_API_KEY") as info:
        await m.generate(Q, log=log)
    assert isinstance(info.value, FatalModelError) and not isinstance(info.value, ModelError)
    assert server.requests == 1 and m.usage.retries == 0
    assert log[0].error is not None and log[0].retries == 0
    assert_no_secret(info.value, log[0], repr(info.value))


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_forbidden_is_an_authentication_error(server: FakeServer, provider):
    server.faults.append({"status": 403, "message": "not allowed"})
    with pytest.raises(AuthenticationError, match="HTTP 403"):
        await model(server, provider).generate(Q)
    assert server.requests == 1


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_unknown_model_is_fatal_and_named(server: FakeServer, provider):
    server.models = {"some-other-model"}
    with pytest.raises(FatalModelError, match=r"HTTP 404.*(gpt-4o-mini|claude-haiku-4-5)"):
        await model(server, provider).generate(Q)
    assert server.requests == 1


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_prompt_too_long_is_rejected_with_the_servers_message(server, provider):
    server.max_prompt_chars = 40
    m = model(server, provider)
    long_q = [{"role": "user", "content": "x" * 100}]
    log: list[ModelCallRecord] = []
    with pytest.raises(RequestRejectedError, match=r"HTTP 400.*(maximum context|too long)"):
        await m.generate(long_q, log=log)
    assert server.requests == 1 and m.usage.retries == 0 and log[0].retries == 0
    assert "too long" in (log[0].error or "") or "maximum context" in (log[0].error or "")
    assert (await m.generate(Q)).text == "True"  # the next request is unaffected


@pytest.mark.parametrize("status", [400, 413, 422])
async def test_request_errors_are_not_retried(server: FakeServer, status: int):
    server.faults.append(
        {"status": status, "message": "content filtered", "code": "content_filter"}
    )
    m = model(server)
    with pytest.raises(RequestRejectedError, match=rf"HTTP {status}: content filtered"):
        await m.generate(Q)
    assert server.requests == 1 and m.usage.retries == 0


async def test_exhausted_quota_is_fatal(server: FakeServer):
    server.faults.append({"status": 429, "code": "insufficient_quota", "message": "no money"})
    with pytest.raises(FatalModelError, match="insufficient_quota"):
        await model(server).generate(Q)
    assert server.requests == 1


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("status", [408, 409, 425, 429, 500, 502, 503, 529])
async def test_transient_statuses_are_retried_and_counted(server, provider, status):
    server.faults.extend([{"status": status, "retry_after": "0"}] * 2)
    m = model(server, provider)
    log: list[ModelCallRecord] = []
    assert (await m.generate(Q, log=log)).text == "True"
    assert server.requests == 3 and m.usage.retries == 2 and log[0].retries == 2


async def test_exhausted_retries_carry_attempts_and_last_error(server: FakeServer):
    server.faults.extend([{"status": 500}, {"status": 429, "retry_after": "0"}] * 3)
    m = model(server, max_retries=3)
    log: list[ModelCallRecord] = []
    with pytest.raises(RetriesExhaustedError, match="gave up after 4 attempts") as info:
        await m.generate(Q, log=log)
    err = info.value
    assert isinstance(err, RetriesExhausted) and err.attempts == 4
    assert isinstance(err.last_error, TransientError) and "HTTP 429" in str(err.last_error)
    assert server.requests == 4 and m.usage.retries == 3 and m.usage.errors == 1
    assert log[0].retries == 3 and "RetriesExhausted" in (log[0].error or "")


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_timeouts_malformed_bodies_and_dropped_connections_are_retried(server, provider):
    server.timeout_delay = 5.0  # ends early when the server shuts down
    server.faults.extend([{"delay": 5.0}, {"malformed": True}, {"disconnect": True}])
    m = model(server, provider, timeout=0.2)
    log: list[ModelCallRecord] = []
    assert (await m.generate(Q, log=log)).text == "True"
    assert server.requests == 4 and log[0].retries == 3


async def test_timeouts_run_out(server: FakeServer):
    server.faults.extend([{"delay": 5.0}] * 2)
    m = model(server, timeout=0.1, max_retries=1)
    with pytest.raises(RetriesExhaustedError, match=r"timed out.*2 attempts"):
        await m.generate(Q)


async def test_seeded_random_faults_are_all_retried_and_counted(server: FakeServer):
    server.fault_rate = 0.3
    server.fault_mix = ("429", "500", "timeout", "malformed", "disconnect")
    server.timeout_delay = 5.0
    m = model(server, timeout=0.5, max_retries=10, max_concurrency=16)
    log: list[ModelCallRecord] = []
    outs = await m.generate_many([Q] * 40, sample_indices=range(40), log=log)
    assert [o.text for o in outs] == ["True"] * 40 and len(log) == 40
    injected = sum(server.injected.values())
    assert injected > 0 and set(server.injected) <= set(server.fault_mix)
    assert server.requests >= 40 + injected
    # on a loaded machine a slow reply may time out too: at least every injected fault
    assert m.usage.retries == sum(r.retries for r in log) >= injected


def test_a_key_with_a_newline_is_refused_when_the_model_is_built(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET + "\n")
    with pytest.raises(UserError, match=r"\$OPENAI_API_KEY .*a newline") as info:
        get_model("openai/gpt-4o-mini")
    assert "\n" not in str(info.value)
    assert_no_secret(info.value)
    monkeypatch.setenv("MY_KEY", "sk-abc def")
    with pytest.raises(UserError, match=r"\$MY_KEY .*a space"):
        get_model("anthropic/claude-haiku-4-5", api_key_env="MY_KEY")


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_bad_header_found_at_call_time_is_not_retried(server, provider, monkeypatch):
    import llmdebate.models.http_errors as http_errors

    monkeypatch.setattr(http_errors, "check_key", lambda variable, key: None)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET + "\n")
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET + "\n")
    m = model(server, provider)
    log: list[ModelCallRecord] = []
    with pytest.raises(AuthenticationError, match="header could not be sent") as info:
        await m.generate(Q, log=log)
    assert server.requests == 0 and m.usage.retries == 0 and log[0].retries == 0
    assert_no_secret(info.value, log[0])


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_an_unencodable_prompt_is_rejected_locally(server, provider, tmp_path):
    m = model(server, provider, use_cache=True)
    log: list[ModelCallRecord] = []
    bad = [{"role": "user", "content": "Is \ud800 a character?"}]
    with pytest.raises(RequestRejectedError, match="message 0 cannot be sent: surrogates"):
        await m.generate(bad, log=log)
    with pytest.raises(RequestRejectedError):
        await estimate(m, bad, "sampling", samples=2, log=log)
    assert server.requests == 0 and m.usage.retries == 0 and len(log) == 2
    assert all(r.error and r.retries == 0 for r in log)


async def test_records_and_errors_never_hold_the_key(server: FakeServer, tmp_path: Path):
    m = model(server, use_cache=True)
    log: list[ModelCallRecord] = []
    await m.generate(Q, log=log)
    await estimate(m, Q, "logprobs", log=log)
    server.faults.append({"status": 400, "message": f"echo {SECRET}"})
    with pytest.raises(RequestRejectedError) as info:
        await m.generate(Q, GenerateConfig(max_tokens=3), log=log)
    assert "echo ***" in str(info.value)
    assert_no_secret(info.value, *log)
    blob = (tmp_path / "cache" / "responses.sqlite").read_bytes()
    assert SECRET.encode() not in blob


async def test_base_url_is_the_effective_server_url(server, monkeypatch):
    assert model(server).base_url == server.url
    assert model(server, "anthropic").base_url == server.root
    assert get_model("openai/gpt-4o").base_url == "https://api.openai.com/v1"
    assert get_model("anthropic/claude-haiku-4-5").base_url == "https://api.anthropic.com"
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    assert get_model("openai/gpt-4o").base_url == server.url
    assert get_model("scripted").base_url is None


async def test_generate_many_keeps_order_and_raises_after_all_ran(server: FakeServer):
    server.responder = lambda body: body["messages"][-1]["content"].upper()
    m = model(server)
    batch = [[{"role": "user", "content": c}] for c in "abc"]
    log: list[ModelCallRecord] = []
    outs = await m.generate_many(batch, role="prover", act="many", log=log)
    assert [o.text for o in outs] == ["A", "B", "C"]
    assert [r.completion for r in log] == ["A", "B", "C"]
    assert {(r.role, r.act) for r in log} == {("prover", "many")}
    server.max_prompt_chars = 1
    batch.append([{"role": "user", "content": "too long"}])
    log.clear()
    with pytest.raises(RequestRejectedError):
        await m.generate_many(batch, log=log)
    assert len(log) == 4 and [r.error is None for r in log] == [True, True, True, False]
    await asyncio.sleep(0)


async def test_a_batch_raises_the_failure_that_stops_the_run_first(server: FakeServer):
    server.api_key = "sk-the-right-one"
    m = model(server)
    batch = [[{"role": "user", "content": "\ud800"}], Q]  # rejected here, then a 401
    log: list[ModelCallRecord] = []
    with pytest.raises(AuthenticationError):
        await m.generate_many(batch, log=log)
    assert [r.error.split(":")[0] for r in log if r.error] == [
        "RequestRejectedError",
        "AuthenticationError",
    ]
