"""A backend from outside the package: defined here, registered in the backend registry,
served by the fake server, and used by a run through its model string (``tiny/<model>``),
with its options checked by the options model it registered."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from llmdebate.errors import UserError
from llmdebate.experiment.loading import validate
from llmdebate.experiment.runner import run
from llmdebate.models import (
    Backend,
    ChatMessage,
    GenerateConfig,
    ModelOutput,
    TokenLogprob,
    TransientError,
    get_model,
)
from llmdebate.models.backends import BACKENDS, BackendSpec, construct, inner_spec, own_options
from llmdebate.models.get_model import create_backend
from llmdebate.models.http1 import Reply
from llmdebate.models.http_errors import failure_error, reply_error
from llmdebate.models.profile import BackendProfile
from llmdebate.models.transport import HTTPRequest, PreparedPost, loads, open_transport

try:
    from tests.fixtures.executor_runs import debate_server, run_config
    from tests.fixtures.fake_server import FakeServer
except ImportError:  # tests/ is not a package: pytest put tests/ itself on sys.path
    from fixtures.executor_runs import debate_server, run_config  # type: ignore[no-redef]
    from fixtures.fake_server import FakeServer  # type: ignore[no-redef]


class TinyOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    system: str = ""
    """A system message put before every conversation."""


class TinyBackend(Backend):
    """Chat completions over the package's transport, in a few lines."""

    provider = "tiny"
    profile = BackendProfile(logprobs=True, http=True)

    def __init__(self, name: str, model_id: str, base_url: str, system: str = "") -> None:
        self.name, self.model_id, self.system = name, model_id, system
        self.transport = open_transport(base_url, {"content-type": "application/json"}, 10.0)

    @property
    def server_url(self) -> str:
        return self.transport.base_url

    @property
    def http_requests(self) -> int:
        return self.transport.sent

    def _request(self, messages: list[ChatMessage], config: GenerateConfig) -> HTTPRequest:
        system = [{"role": "system", "content": self.system}] if self.system else []
        body: dict[str, Any] = {
            "model": self.model_id,
            "messages": system + messages,
            "temperature": config.temperature,
            "max_tokens": config.max_tokens,
        }
        if config.top_logprobs:
            body |= {"logprobs": True, "top_logprobs": config.top_logprobs}
        return HTTPRequest("/chat/completions", body)

    def _read(self, reply: Reply | BaseException, latency: float) -> ModelOutput:
        if isinstance(reply, BaseException):
            raise failure_error(reply, self.name, None)
        if reply.status >= 400:
            raise reply_error(reply.status, reply.headers, reply.body, self.name, None)
        choice = loads(reply.body)["choices"][0]
        content = (choice.get("logprobs") or {}).get("content")
        logprobs = [
            TokenLogprob(
                t["token"], t["logprob"], {a["token"]: a["logprob"] for a in t["top_logprobs"]}
            )
            for t in content or []
        ]
        return ModelOutput(
            choice["message"]["content"], self.name, logprobs=logprobs or None, latency_s=latency
        )

    def prepare(
        self, messages: list[ChatMessage], config: GenerateConfig, sample_index: int = 0
    ) -> PreparedPost[ModelOutput]:
        return PreparedPost(self.transport, self._request(messages, config), self._read)

    async def generate(
        self, messages: list[ChatMessage], config: GenerateConfig, sample_index: int = 0
    ) -> ModelOutput:
        return self._read(await self.transport.post(self._request(messages, config)), 0.0)

    async def aclose(self) -> None:
        await self.transport.aclose()


def tiny(spec: BackendSpec) -> Backend:
    """A tiny chat backend (this test's plugin)."""
    if spec.base_url is None:
        raise UserError(f"{spec.model}: base_url is required")
    return construct(spec, TinyBackend, spec.model, spec.model_id, spec.base_url, **spec.options)


@pytest.fixture
def registered() -> Iterator[None]:
    BACKENDS.add("tiny", tiny, options=TinyOptions, capabilities={"http", "model-id"})
    yield
    BACKENDS.remove("tiny")


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with debate_server(0.0) as s:
        yield s


def test_a_run_uses_a_backend_registered_outside_the_package(
    registered: None, server: FakeServer, tmp_path: Path
) -> None:
    cfg = run_config(server, tmp_path, "plugin", 3, {"depth": 1, "width": 2})
    for role in ("prover", "estimator", "judge"):
        cfg[role]["model"] = "tiny/fake"
    cfg["estimator"]["options"] = {"system": "You are the estimator."}
    res = run(validate(cfg), tmp_path / "run", progress=False)
    assert res.exit_code == 0 and res.summary["status"] == {"complete": 6}
    assert (
        server.requests > 0 and res.summary["last_invocation"]["http_requests"] == server.requests
    )
    assert any(
        m[0] == {"role": "system", "content": "You are the estimator."}
        for m in (b["messages"] for b in server.bodies)
    )
    assert "tiny" in BACKENDS.names()
    with pytest.raises(UserError, match=r"tiny/<model>"):  # the choices name it
        get_model("nosuch/x")


def test_its_options_are_checked_by_the_model_it_registered(
    registered: None, server: FakeServer, tmp_path: Path
) -> None:
    cfg = run_config(server, tmp_path, "plugin", 1, {"depth": 1, "width": 2})
    cfg["judge"] |= {"model": "tiny/fake", "options": {"system": ["not", "text"]}}
    with pytest.raises(UserError, match=r"judge\.options\.system"):
        validate(cfg)
    cfg["judge"] |= {"options": {"endpoint": "completions"}}  # another backend's option
    with pytest.raises(UserError, match="only openai/ models take endpoint"):
        validate(cfg)


async def test_its_failures_are_mapped_like_the_built_in_backends(
    registered: None, server: FakeServer
) -> None:
    server.faults.append({"status": 503})
    m = get_model("tiny/fake", base_url=server.url, use_cache=False, max_retries=0)
    with pytest.raises(Exception) as info:
        await m.generate([{"role": "user", "content": "q"}])
    assert isinstance(info.value.__cause__, TransientError) and "HTTP 503" in str(info.value)
    await m.aclose()


class LoggedOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    tag: str = ""
    """A tag this wrapping backend puts on the name of every reply."""


class Logged(Backend):
    """Wraps another backend (the rest of its model string), tagging its replies."""

    provider = "logged"

    def __init__(self, name: str, inner: Backend, tag: str = "") -> None:
        self.name, self.inner, self.tag = name, inner, tag

    async def generate(
        self, messages: list[ChatMessage], config: GenerateConfig, sample_index: int = 0
    ) -> ModelOutput:
        out = await self.inner.generate(messages, config, sample_index)
        return ModelOutput(f"[{self.tag}] {out.text}", self.name)

    async def aclose(self) -> None:
        await self.inner.aclose()


def logged(spec: BackendSpec) -> Backend:
    inner = inner_spec(spec)
    built = create_backend(inner.model, base_url=inner.base_url, **inner.options)
    return construct(spec, Logged, spec.model, built, **own_options(spec))


def test_a_wrapping_backend_takes_and_forwards_its_inner_backends_options(
    registered: None, server: FakeServer, tmp_path: Path
) -> None:
    BACKENDS.add("logged", logged, options=LoggedOptions, capabilities={"wraps"})
    try:
        cfg = run_config(server, tmp_path, "wrapped", 1, {"depth": 1, "width": 2})
        cfg["judge"] |= {"model": "logged/tiny/fake", "options": {"tag": "j", "system": "S"}}
        validate(cfg)  # its own option and the inner backend's, both known
        cfg["judge"]["options"] = {"tag": "j", "sytem": "S"}
        with pytest.raises(UserError, match=r"judge\.options\.sytem"):
            validate(cfg)
        m = get_model("logged/tiny/fake", base_url=server.url, use_cache=False, tag="t",
                      system="You are wrapped.")
        assert isinstance(m.backend, Logged) and m.backend.tag == "t"
        assert isinstance(m.backend.inner, TinyBackend)
        assert m.backend.inner.system == "You are wrapped."

        async def ask() -> str:
            try:
                return (await m.generate([{"role": "user", "content": "q"}])).text
            finally:
                await m.aclose()

        assert asyncio.run(ask()).startswith("[t] ")
        assert server.bodies[-1]["messages"][0] == {"role": "system", "content": "You are wrapped."}
    finally:
        BACKENDS.remove("logged")
