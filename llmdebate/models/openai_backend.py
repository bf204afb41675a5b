"""OpenAI chat completions, and any OpenAI-compatible server (``base_url``).

The key comes from ``$OPENAI_API_KEY`` (or the variable named by ``api_key_env``). A base URL
on this machine (localhost / 127.x, e.g. vLLM, llama.cpp server, Ollama) needs no key: a
dummy one is sent if none is set. The base URL comes from ``base_url`` or
``$OPENAI_BASE_URL``. The SDK client is built with ``max_retries=0``; retries are the
wrapper's.
"""

from __future__ import annotations

import os
from typing import Any, cast

from llmdebate.errors import InvalidOutputError
from llmdebate.models import fast_http
from llmdebate.models.base import (
    Backend,
    ChatMessage,
    GenerateConfig,
    ModelOutput,
    TokenLogprob,
    TransientError,
)
from llmdebate.models.http_errors import api_key, map_sdk_error

LOCAL_DUMMY_KEY = "sk-local-no-key"


class OpenAIBackend(Backend):
    """``openai/<model>``: the chat completions endpoint with logprobs."""

    provider = "openai"
    supports_logprobs = True
    default_concurrency = 8

    def __init__(
        self,
        name: str,
        model_id: str,
        *,
        base_url: str | None = None,
        api_key_env: str | None = None,
        timeout: float = 60.0,  # seconds per request
        max_tokens_param: str | None = None,
    ) -> None:
        from llmdebate.errors import require

        self._sdk: Any = cast(Any, require("openai", "openai"))
        self.name = name
        self.model_id = model_id
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        self.key_variable = api_key_env or "OPENAI_API_KEY"
        self._secret = api_key(self.key_variable, "OpenAI", self.base_url, LOCAL_DUMMY_KEY)
        # Servers other than OpenAI's mostly know only max_tokens; OpenAI's newer models
        # require max_completion_tokens.
        self.max_tokens_param = max_tokens_param or (
            "max_tokens" if self.base_url else "max_completion_tokens"
        )
        self._client = self._sdk.AsyncOpenAI(
            api_key=self._secret,
            base_url=self.base_url,
            max_retries=0,
            timeout=timeout,
            http_client=fast_http.http_client(timeout),
        )

    @property
    def identity(self) -> str:
        return f"{self.name}@{self.base_url}" if self.base_url else self.name

    @property
    def server_url(self) -> str:
        """The option, else the environment variable, else the SDK's default URL."""
        return str(self._client.base_url).rstrip("/")

    async def generate(
        self, messages: list[ChatMessage], config: GenerateConfig, sample_index: int = 0
    ) -> ModelOutput:
        kwargs: dict[str, Any] = {
            "model": self.model_id,
            "messages": messages,
            "temperature": config.temperature,
            self.max_tokens_param: config.max_tokens,
        }
        if config.top_logprobs:
            kwargs["logprobs"] = True
            kwargs["top_logprobs"] = config.top_logprobs
        if config.stop:
            kwargs["stop"] = config.stop
        if config.seed is not None:
            kwargs["seed"] = config.seed
        try:
            resp = await fast_http.post_json(self._client, "/chat/completions", kwargs)
        except Exception as exc:
            raise map_sdk_error(
                exc,
                self._sdk,
                self.name,
                self._secret,
                key_variable=self.key_variable,
                server=self.server_url,
            ) from exc
        return self._parse(resp, bool(config.top_logprobs))

    def _parse(self, resp: Any, want_logprobs: bool) -> ModelOutput:
        try:
            choice = resp.choices[0]
            text = choice.message.content or ""
            usage = resp.usage
            logprobs = None
            if want_logprobs:
                content = choice.logprobs.content if choice.logprobs else None
                if not content:
                    raise InvalidOutputError(f"{self.name}: the server returned no logprobs")
                logprobs = [
                    TokenLogprob(t.token, float(t.logprob), _top(t.top_logprobs)) for t in content
                ]
            return ModelOutput(
                text=text,
                model=self.name,
                tokens_in=int(usage.prompt_tokens) if usage else 0,
                tokens_out=int(usage.completion_tokens) if usage else 0,
                logprobs=logprobs,
            )
        except (AttributeError, IndexError, TypeError, ValueError) as exc:
            raise TransientError(f"malformed response: {type(exc).__name__}: {exc}") from exc

    async def aclose(self) -> None:
        await self._client.close()


def _top(alternatives: Any) -> dict[str, float]:
    return {a.token: float(a.logprob) for a in alternatives or []}
