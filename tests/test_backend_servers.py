"""Backends that learn what their server does, against the fake server on 127.0.0.1 playing
llama-cpp-python's server: HTTP 500 for a list of prompts, ``response_format`` and
``json_schema`` accepted and ignored, ``grammar`` applied. The fallback is announced once,
no batch is sent again after the first refusal, ``constrained`` is recorded only for a reply
that was constrained and matches its schema (cache hits too), and a reply cached under one
structured mode is never served to another."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from llmdebate.core.schemas import ModelCallRecord
from llmdebate.elicit.methods import estimate_from_logprobs
from llmdebate.errors import InvalidOutputError
from llmdebate.experiment.loading import validate
from llmdebate.experiment.runner import run
from llmdebate.models import GenerateConfig, TransientError, get_model
from llmdebate.models.http1 import HTTPConnectionError
from llmdebate.models.http_errors import reply_error
from llmdebate.models.structured import OutputSchema
from llmdebate.models.transport import (
    HTTPRequest,
    HttpxTransport,
    RawTransport,
    Transport,
    loads,
)

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
LOGGER = "llmdebate.models"


def llama_cpp_python(body: dict[str, Any]) -> str:
    """Replies as llama-cpp-python does: a grammar constrains them, the other fields do not."""
    if "grammar" in body:
        return '{"answer": true}'
    return "Sure! I think the answer is yes."


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLMDEBATE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as s:
        s.responder = llama_cpp_python
        s.enforce_fields = {"grammar"}
        yield s


def ask(i: int) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"Is {i} even?"}]


def warnings(caplog: pytest.LogCaptureFixture, words: str) -> int:
    return sum(words in r.getMessage() for r in caplog.records if r.name == LOGGER)


def list_prompts(server: FakeServer) -> int:
    return sum(isinstance(b.get("prompt"), list) for b in server.bodies)


async def test_a_server_refusing_a_list_of_prompts_is_found_out_at_its_first_refusal(
    server: FakeServer, caplog: pytest.LogCaptureFixture
) -> None:
    server.reject_list_prompts = True
    m = get_model("openai/base", base_url=server.url, endpoint="completions", use_cache=False)
    config = GenerateConfig(max_tokens=4)
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        first = await m.generate_many([ask(i) for i in range(6)], config)
        second = await m.generate_many([ask(i) for i in range(6, 12)], config)
    assert [o.text for o in first + second] == ["Sure! I think the answer is yes."] * 12
    assert list_prompts(server) == 1  # the first batch only: never sent again
    assert server.injected["list-prompt"] == 1
    assert server.requests == 1 + 6 + 6 and m.usage.retries == 0
    assert m.http_requests == server.requests  # requests counted beside calls
    assert m.usage.calls == 12
    assert not m.backend.profile.batched_prompts
    assert warnings(caplog, "refuses a list of prompts") == 1
    await m.aclose()


async def test_no_list_is_sent_after_the_first_refusal_even_by_a_concurrent_batch(
    server: FakeServer, caplog: pytest.LogCaptureFixture
) -> None:
    # the second batch starts after the refusal, before the one-by-one retries reply
    server.reject_list_prompts = True
    server.latency = 0.2
    m = get_model("openai/base", base_url=server.url, endpoint="completions", use_cache=False)
    config = GenerateConfig(max_tokens=4)
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        first = asyncio.create_task(m.generate_many([ask(i) for i in range(4)], config))
        while server.requests < 1 + 4:  # the list refused, its prompts sent alone: in flight
            await asyncio.sleep(0.005)
        second = await m.generate_many([ask(i) for i in range(4, 8)], config)
        outs = await first + second
    assert len(outs) == 8 and all(o.text.startswith("Sure!") for o in outs)
    assert list_prompts(server) == 1
    assert server.requests == 1 + 4 + 4
    assert not m.backend.profile.batched_prompts
    assert warnings(caplog, "refuses a list of prompts") == 1
    await m.aclose()


async def test_a_failing_server_is_not_taken_for_one_that_refuses_lists(
    server: FakeServer, caplog: pytest.LogCaptureFixture
) -> None:
    # the list and each prompt alone fail: an outage, not a refusal; lists go on
    server.faults.extend({"status": 500} for _ in range(4))
    m = get_model(
        "openai/base",
        base_url=server.url,
        endpoint="completions",
        use_cache=False,
        retry_base_delay=0.001,
    )
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        outs = await m.generate_many([ask(i) for i in range(3)], GenerateConfig(max_tokens=4))
    assert len(outs) == 3 and m.backend.profile.batched_prompts
    assert warnings(caplog, "refuses a list") == 0
    assert list_prompts(server) >= 2  # the retries went as a list again, and it was answered
    await m.aclose()


@pytest.mark.parametrize("endpoint", ["chat", "completions"])
@pytest.mark.parametrize("mode", ["response_format", "json_schema"])
async def test_an_ignored_structured_field_is_dropped_once_and_never_recorded_constrained(
    server: FakeServer, caplog: pytest.LogCaptureFixture, endpoint: str, mode: str
) -> None:
    m = get_model(
        "openai/base", base_url=server.url, endpoint=endpoint, structured=mode, use_cache=False
    )
    config = GenerateConfig(max_tokens=16, json_schema=SCHEMA)
    log: list[ModelCallRecord] = []
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        await m.generate_many([ask(i) for i in range(4)], config, log=log)
        await m.generate(ask(9), config, log=log)
    assert [r.constrained for r in log] == [False] * 5
    assert warnings(caplog, f"ignores {mode} on") == 1
    assert mode not in m.backend.profile.structured
    assert mode not in server.bodies[-1]  # prompt-and-parse from then on
    await m.aclose()


@pytest.mark.parametrize("endpoint", ["chat", "completions"])
async def test_an_applied_constraint_is_recorded_when_the_reply_matches(
    server: FakeServer, caplog: pytest.LogCaptureFixture, endpoint: str
) -> None:
    m = get_model(
        "openai/base", base_url=server.url, endpoint=endpoint, structured="grammar", use_cache=False
    )
    config = GenerateConfig(max_tokens=16, json_schema=SCHEMA)
    log: list[ModelCallRecord] = []
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        await m.generate(ask(1), config, log=log)
        server.enforce_fields = set()  # a reply the grammar did not write (e.g. cut short)
        server.responder = lambda body: '{"answer": "yes"}'  # JSON, but not the schema's
        await m.generate(ask(2), config, log=log)
    assert [r.constrained for r in log] == [True, False]
    assert "grammar" in server.bodies[-1]  # a JSON reply is no sign of an ignored field
    assert warnings(caplog, "ignores") == 0
    await m.aclose()


async def test_a_reply_cached_under_one_structured_mode_is_not_served_to_another(
    server: FakeServer, tmp_path: Path
) -> None:
    config = GenerateConfig(max_tokens=16, json_schema=SCHEMA)
    cache = tmp_path / "one-cache"
    by_grammar = get_model(
        "openai/base", base_url=server.url, structured="grammar", cache_dir=cache
    )
    first = await by_grammar.generate(ask(1), config)
    assert first.constrained and server.requests == 2  # the probe, then the call
    await by_grammar.aclose()

    by_schema = get_model(
        "openai/base", base_url=server.url, structured="json_schema", cache_dir=cache
    )
    log: list[ModelCallRecord] = []
    other = await by_schema.generate(ask(1), config, log=log)
    # asked again (after a probe of its own endpoint), not the grammar's reply
    assert server.requests == 4 and not other.cached
    assert other.text == "Sure! I think the answer is yes." and log[-1].constrained is False
    await by_schema.aclose()

    again = get_model("openai/base", base_url=server.url, structured="grammar", cache_dir=cache)
    log = []
    hit = await again.generate(ask(1), config, log=log)
    assert hit.cached and server.requests == 4
    assert log[-1].constrained is True  # a hit keeps what its reply was
    assert json.loads(hit.text) == {"answer": True}
    await again.aclose()


def test_a_run_on_a_server_refusing_lists_completes_and_counts_its_requests(
    server: FakeServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    server.reject_list_prompts = True
    server.responder = lambda body: "True"
    cfg = run_config(server, tmp_path, "llama-cpp-python", 3, {"depth": 1, "width": 2})
    for role in ("prover", "estimator", "judge"):
        cfg[role]["options"] = {"endpoint": "completions"}
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        res = run(validate(cfg), tmp_path / "run", progress=False)
    assert res.exit_code == 0, res.summary
    assert list_prompts(server) >= 1 and server.injected["list-prompt"] == list_prompts(server)
    models = 3  # one backend per role, each says it once
    assert 1 <= warnings(caplog, "refuses a list of prompts") <= models
    assert list_prompts(server) <= models  # no batch after a backend's first refusal
    inv = res.summary["last_invocation"]
    assert inv["http_requests"] == server.requests
    written = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert written["last_invocation"]["http_requests"] == server.requests


async def test_a_base_model_on_the_chat_endpoint_is_told_to_use_completions(
    server: FakeServer,
) -> None:
    server.top_logprobs = {"\n": -0.1, "The": -1.0, "Question": -2.0}  # a base model rambles
    for endpoint, hinted in (("chat", True), ("completions", False)):
        m = get_model("openai/base", base_url=server.url, endpoint=endpoint, use_cache=False)
        out = await m.generate(ask(7), GenerateConfig(max_tokens=1, top_logprobs=3))
        with pytest.raises(InvalidOutputError, match="no True/False token") as info:
            estimate_from_logprobs(out)
        assert ('"endpoint": "completions"' in str(info.value)) is hinted
        await m.aclose()


@pytest.mark.parametrize("lane", [RawTransport, HttpxTransport])
async def test_both_lanes_carry_the_same_replies_and_the_same_failures(
    server: FakeServer, lane: Callable[[str, dict[str, str], float], Transport]
) -> None:
    transport = lane(server.url, {"content-type": "application/json"}, 5.0)
    body = {"model": "m", "messages": ask(1), "max_tokens": 4}
    reply = await transport.post(HTTPRequest("/chat/completions", body))
    assert reply.status == 200 and loads(reply.body)["choices"][0]["message"]["content"]
    server.faults.append({"status": 429, "retry_after": "0.25", "code": "rate_limit"})
    reply = await transport.post(HTTPRequest("chat/completions", body))
    error = reply_error(reply.status, reply.headers, reply.body, "openai/m", None)
    assert isinstance(error, TransientError) and error.retry_after == 0.25
    assert str(error) == "HTTP 429: injected [rate_limit]" and error.status == 429
    assert transport.sent == 2 and server.requests == 2
    await transport.aclose()
    closed = lane("http://127.0.0.1:9/v1", {}, 2.0)  # nothing listens on port 9
    with pytest.raises(HTTPConnectionError):
        await closed.post(HTTPRequest("/chat/completions", body))
    await closed.aclose()
