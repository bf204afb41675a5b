"""The real openai and anthropic SDK clients against a fake server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import math
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from llmdebate.core.schemas import ModelCallRecord
from llmdebate.elicit import estimate
from llmdebate.errors import (
    InvalidOutputError,
    MissingAPIKeyError,
    MissingExtraError,
    RequestRejectedError,
    RetriesExhaustedError,
    UserError,
)
from llmdebate.models import GenerateConfig, Model, get_model

try:
    from tests.fixtures.fake_server import FakeServer
except ImportError:  # tests/ is not a package: pytest put tests/ itself on sys.path
    from fixtures.fake_server import FakeServer

SECRET = "sk-test-SECRET-never-stored"
Q = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Is 7 prime?"}]


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLMDEBATE_CACHE_DIR", str(tmp_path / "cache"))
    for var in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as s:
        yield s


def openai_model(server: FakeServer, **kw) -> Model:
    kw.setdefault("retry_base_delay", 0.01)
    return get_model("openai/gpt-4o-mini", base_url=server.url, **kw)


def anthropic_model(server: FakeServer, **kw) -> Model:
    kw.setdefault("retry_base_delay", 0.01)
    return get_model("anthropic/claude-haiku-4-5", base_url=server.root, **kw)


async def test_openai_generate_usage_and_cost(server: FakeServer):
    server.responder = lambda body: "Yes, 7 is prime."
    m = openai_model(server)
    out = await m.generate(Q, GenerateConfig(max_tokens=20, stop=["\n"], seed=3))
    assert out.text == "Yes, 7 is prime." and out.tokens_in == 5 and out.tokens_out == 1
    assert out.cost == pytest.approx((5 * 0.15 + 1 * 0.60) / 1e6)
    body = server.bodies[0]
    assert body["model"] == "gpt-4o-mini" and body["messages"] == Q
    assert body["max_tokens"] == 20 and body["stop"] == ["\n"] and body["seed"] == 3
    assert server.headers[0]["authorization"] == f"Bearer {SECRET}"
    assert m.usage.cost == out.cost and m.usage.calls == 1


async def test_cache_second_run_sends_nothing_and_holds_no_key(server: FakeServer, tmp_path):
    records: list[ModelCallRecord] = []
    first = openai_model(server)
    await first.generate(Q, log=records)
    await estimate(first, Q, "logprobs", log=records)
    assert server.requests == 2
    second = openai_model(server)  # a new process, same cache dir
    out = await second.generate(Q, log=records)
    est = await estimate(second, Q, "logprobs", log=records)
    assert server.requests == 2 and out.cached and records[-1].cached
    assert second.usage.cached_calls == 2 and second.usage.cost == 0.0
    assert est.value == pytest.approx(math.exp(-0.2) / (math.exp(-0.2) + math.exp(-1.8)))
    blob = (tmp_path / "cache" / "responses.sqlite").read_bytes()
    assert SECRET.encode() not in blob
    assert all(SECRET not in r.model_dump_json() for r in records)
    fresh = openai_model(server, use_cache=False)
    await fresh.generate(Q)
    assert server.requests == 3


async def test_429_with_retry_after_is_honoured(server: FakeServer):
    server.faults.extend([{"status": 429, "retry_after": "0.4"}, {"status": 500}])
    m = openai_model(server, retry_base_delay=0.01)
    start = time.perf_counter()
    out = await m.generate(Q)
    elapsed = time.perf_counter() - start
    assert out.text == "True"
    assert server.requests == 3 and m.usage.retries == 2
    assert elapsed >= 0.4  # the server's Retry-After, not the 10 ms backoff


async def test_gives_up_after_max_retries(server: FakeServer):
    server.faults.extend([{"status": 503}] * 10)
    m = openai_model(server, max_retries=2)
    with pytest.raises(RetriesExhaustedError, match=r"HTTP 503.*gave up after 3 attempts"):
        await m.generate(Q)
    assert server.requests == 3  # the SDK itself did not retry (max_retries=0)


async def test_client_errors_are_not_retried(server: FakeServer):
    server.faults.append({"status": 400})
    m = openai_model(server)
    with pytest.raises(RequestRejectedError, match="HTTP 400"):
        await m.generate(Q)
    assert server.requests == 1 and m.usage.retries == 0


async def test_malformed_body_is_retried(server: FakeServer):
    server.faults.append({"malformed": True})
    m = openai_model(server)
    assert (await m.generate(Q)).text == "True"
    assert server.requests == 2 and m.usage.retries == 1


async def test_timeout_is_retried(server: FakeServer):
    server.faults.append({"delay": 1.5})
    m = openai_model(server, timeout=0.3)
    start = time.perf_counter()
    assert (await m.generate(Q)).text == "True"
    assert server.requests == 2 and m.usage.retries == 1
    assert time.perf_counter() - start < 1.4


@pytest.mark.parametrize("limit", [1, 3])
async def test_in_flight_limit(server: FakeServer, limit: int):
    server.latency = 0.05
    m = openai_model(server, max_concurrency=limit, use_cache=False)
    await asyncio.gather(*(m.generate(Q, sample_index=i) for i in range(12)))
    assert server.requests == 12
    assert server.max_in_flight == limit


async def test_logprobs_request_and_extraction(server: FakeServer):
    server.top_logprobs = {" True": math.log(0.3), "True": math.log(0.1), " False": math.log(0.2)}
    server.top_logprobs[" Paris"] = math.log(0.4)
    m = openai_model(server)
    est = await estimate(m, Q, "logprobs")
    body = server.bodies[0]
    assert body["logprobs"] is True and body["top_logprobs"] == 20 and body["max_tokens"] == 1
    assert body["messages"][-1]["content"].startswith("Is 7 prime?\n\nAnswer with exactly")
    assert est.value == pytest.approx(0.4 / 0.6)
    assert est.evidence["neither_mass"] == pytest.approx(0.4)
    server.top_logprobs = {" Paris": -0.1}
    with pytest.raises(InvalidOutputError, match="no True/False"):
        await estimate(m, [{"role": "user", "content": "Capital?"}], "logprobs")


async def test_sampling_uses_separate_cached_samples(server: FakeServer):
    answers = iter(["True", "False", "True", "True", "banana"] * 2)
    server.responder = lambda body: next(answers)
    m = openai_model(server)
    est = await estimate(m, Q, "sampling", samples=5, temperature=0.7)
    assert server.requests == 5 and all(b["temperature"] == 0.7 for b in server.bodies)
    assert est.value == pytest.approx((3 + 1) / (4 + 2))
    assert sorted(est.evidence["samples"]) == ["False", "True", "True", "True", "banana"]
    again = await estimate(m, Q, "sampling", samples=5, temperature=0.7)
    assert server.requests == 5 and again.value == est.value
    await estimate(m, Q, "sampling", samples=6, temperature=0.7)
    assert server.requests == 6  # only the new sample index is sent


async def test_verbalised_reasks_with_the_error(server: FakeServer):
    replies = iter(["Quite likely!", "0.8"])
    server.responder = lambda body: next(replies)
    m = openai_model(server, enforcement="ignored")  # as the fake is: no probe takes a reply
    est = await estimate(m, Q, "verbalised")
    assert est.value == pytest.approx(0.8) and est.evidence["attempts"] == 2
    reask = server.bodies[1]["messages"]
    assert reask[-2] == {"role": "assistant", "content": "Quite likely!"}
    assert "no number" in reask[-1]["content"]
    server.responder = lambda body: "no idea"
    with pytest.raises(InvalidOutputError, match="3 attempts"):
        await estimate(m, [{"role": "user", "content": "Other?"}], "verbalised")


async def test_anthropic_generate_and_estimates(server: FakeServer):
    server.responder = lambda body: "False"
    records: list[ModelCallRecord] = []
    m = anthropic_model(server)
    out = await m.generate(Q, GenerateConfig(temperature=0.5, max_tokens=7, stop=["."]))
    await m.generate(Q, GenerateConfig(temperature=1.5, max_tokens=7))
    body = server.bodies[0]
    assert out.text == "False" and out.tokens_out == 1
    assert body["system"] == "Be brief." and body["messages"] == [Q[1]]
    assert body["temperature"] == 0.5 and body["max_tokens"] == 7
    assert "temperature" not in server.bodies[1]  # capped at 1.0, the API default
    assert body["stop_sequences"] == ["."]
    sent = server.headers[0]
    assert SECRET in (
        sent.get("x-api-key", ""),
        sent.get("authorization", "").removeprefix("Bearer "),
    )
    assert out.cost == pytest.approx((3 * 1.0 + 1 * 5.0) / 1e6)  # system is not in messages
    with pytest.raises(UserError, match=r"no logprobs.*sampling.*verbalised"):
        await estimate(m, Q, "logprobs", log=records)
    assert server.requests == 2 and records[-1].error and "no logprobs" in records[-1].error
    est = await estimate(m, Q, "sampling", samples=4)
    assert est.value == pytest.approx(1 / 6)


async def test_anthropic_retries_529(server: FakeServer):
    server.faults.append({"status": 529, "retry_after": "0"})
    m = anthropic_model(server)
    assert (await m.generate(Q)).text == "True"
    assert server.requests == 2


def test_missing_keys(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    with pytest.raises(MissingAPIKeyError, match="OPENAI_API_KEY"):
        get_model("openai/gpt-4o")
    with pytest.raises(MissingAPIKeyError, match="ANTHROPIC_API_KEY"):
        get_model("anthropic/claude-sonnet-4-5")
    with pytest.raises(MissingAPIKeyError, match="MY_KEY"):
        get_model("openai/gpt-4o", api_key_env="MY_KEY")
    with pytest.raises(MissingAPIKeyError, match="OPENAI_API_KEY"):
        get_model("openai/x", base_url="https://api.example.com/v1")
    # a variable the settings name must be set, whatever the URL: no dummy key
    with pytest.raises(MissingAPIKeyError, match="the variable MY_KEY is not set"):
        get_model("openai/x", base_url="http://127.0.0.1:9/v1", api_key_env="MY_KEY")
    with pytest.raises(MissingAPIKeyError, match="MY_KEY"):
        get_model("anthropic/x", base_url="http://localhost:9", api_key_env="MY_KEY")


def test_missing_key_names_role_and_field(monkeypatch: pytest.MonkeyPatch):
    from llmdebate.agents.factory import build_models
    from llmdebate.agents.settings import ModelSettings

    monkeypatch.delenv("OPENAI_API_KEY")
    named = ModelSettings(model="openai/x", base_url="http://127.0.0.1:9/v1", api_key_env="K9")
    with pytest.raises(MissingAPIKeyError, match=r"^estimator\.api_key_env: the estimator's"):
        build_models({"prover": ModelSettings(model="scripted"), "estimator": named})
    with pytest.raises(MissingAPIKeyError, match=r"^seats\.debater_b: .*in seats\.debater_b\."):
        build_models({"seat/debater_b": ModelSettings(model="openai/x")})


async def test_local_server_needs_no_key(server: FakeServer, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    m = get_model("openai/llama")
    assert (await m.generate(Q)).text == "True"
    assert server.bodies[0]["model"] == "llama"
    assert server.headers[0]["authorization"] == "Bearer sk-local-no-key"


@pytest.mark.parametrize(
    ("model", "extra"), [("openai/gpt-4o", "openai"), ("anthropic/c", "anthropic")]
)
def test_missing_extra(monkeypatch: pytest.MonkeyPatch, model: str, extra: str):
    monkeypatch.setitem(sys.modules, extra, None)  # makes `import <extra>` fail
    with pytest.raises(MissingExtraError, match=rf"llmdebate\[{extra}\]"):
        get_model(model)


@pytest.mark.parametrize("bad", ["gpt-4o", "openai/", "hf/", "claude", "", "local/x"])
def test_unknown_model_string(bad: str):
    with pytest.raises(UserError) as info:
        get_model(bad)
    message = str(info.value)
    assert "\n" not in message and "openai/<model>" in message and "scripted" in message


@pytest.mark.parametrize("which", ["openai", "anthropic", "openai-https-client"])
def test_a_model_serves_one_asyncio_run_after_another(
    server: FakeServer, which: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A command that calls a model from several ``asyncio.run`` (``llmdebate answer``, a fork
    per reward) keeps a connection open from the first: each later loop gets its own, and no
    call meets 'Event loop is closed'."""
    server.responder = lambda body: "Yes."
    if which == "openai-https-client":  # a proxy in the environment: the httpx client
        monkeypatch.setenv("http_proxy", "http://127.0.0.1:9")
        monkeypatch.setenv("no_proxy", "127.0.0.1")
    m = anthropic_model(server) if which == "anthropic" else openai_model(server)
    m.cache = None
    for i in range(4):
        out = asyncio.run(m.generate(Q, GenerateConfig(max_tokens=5, seed=i)))
        assert out.text == "Yes."
    assert server.requests == 4
    asyncio.run(m.backend.aclose())
