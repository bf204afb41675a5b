"""``openai/<model>``: the chat completions endpoint of OpenAI or a compatible server.

Options (per role, e.g. ``--prover-options '{"structured": "grammar"}'``; see
:mod:`llmdebate.models.openai_common` for keys, URLs and structured outputs):
``max_tokens_param`` (default ``max_completion_tokens`` for OpenAI, ``max_tokens`` for a
``base_url``), ``structured``, ``grammars``, ``timeout``. A call without a schema is built
ahead as one request (:class:`~llmdebate.models.transport.PreparedPost`) and sent the instant
a place frees up. A base model (no chat template) does not belong here: serve it with
``endpoint: completions`` (:mod:`llmdebate.models.openai_completions`).
"""

from __future__ import annotations

from typing import Any

from llmdebate.errors import RequestRejectedError
from llmdebate.models.http1 import Reply
from llmdebate.models.interface import (
    ChatMessage,
    GenerateConfig,
    ModelOutput,
    TokenLogprob,
    TransientError,
)
from llmdebate.models.openai_common import OpenAIServer, usage_of
from llmdebate.models.profile import BackendProfile
from llmdebate.models.slots import Prepared
from llmdebate.models.transport import HTTPRequest, PreparedPost

PATH = "/chat/completions"


class OpenAIChatBackend(OpenAIServer):
    """``openai/<model>``: chat completions with logprobs."""

    endpoint = "chat"

    def __init__(
        self,
        name: str,
        model_id: str,
        *,
        max_tokens_param: str | None = None,
        **common: Any,
    ) -> None:
        super().__init__(name, model_id, **common)
        # Servers other than OpenAI's mostly know only max_tokens; OpenAI's newer models
        # require max_completion_tokens.
        self.max_tokens_param = max_tokens_param or (
            "max_tokens" if self.base_url else "max_completion_tokens"
        )
        modes = () if self.structured == "none" else (self.structured,)
        self.profile = BackendProfile(logprobs=True, structured=modes, http=True)

    def body(
        self, messages: list[ChatMessage], config: GenerateConfig, fields: dict[str, Any] | None
    ) -> dict[str, Any]:
        """The request body of one chat call."""
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
        if fields:  # response_format, or a server's own field (sent as is in the body)
            kwargs.update(fields)
        return kwargs

    def prepare(
        self, messages: list[ChatMessage], config: GenerateConfig, sample_index: int = 0
    ) -> Prepared[ModelOutput]:
        """A call without a schema: the request itself, built ahead. A call with one runs
        :meth:`generate` (the server may refuse the field, and the call is sent again)."""
        if config.json_schema is not None:
            return super().prepare(messages, config, sample_index)
        want = bool(config.top_logprobs)

        def read(reply: Reply | BaseException, latency: float) -> ModelOutput:
            out = self.parse(self.reply_json(reply), want)
            out.latency_s = latency
            return out

        request = HTTPRequest(PATH, self.body(messages, config, None))
        return PreparedPost(self.transport, request, read)

    async def generate(
        self, messages: list[ChatMessage], config: GenerateConfig, sample_index: int = 0
    ) -> ModelOutput:
        await self.ensure_enforcement(config.json_schema)
        fields = self.structured_fields(config.json_schema)
        try:
            out = await self._chat(messages, config, fields)
        except (RequestRejectedError, TransientError) as exc:
            if not self.refuses(exc, fields):
                raise
            fields = None  # prompt-and-parse from now on
            out = await self._chat(messages, config, None)
        self.check_constrained(out, config.json_schema, fields)
        return out

    async def probe_text(
        self, prompt: str, config: GenerateConfig, fields: dict[str, Any] | None
    ) -> str:
        messages: list[ChatMessage] = [{"role": "user", "content": prompt}]
        return (await self._chat(messages, config, fields)).text

    async def _chat(
        self, messages: list[ChatMessage], config: GenerateConfig, fields: dict[str, Any] | None
    ) -> ModelOutput:
        request = HTTPRequest(PATH, self.body(messages, config, fields))
        try:
            reply: Reply | BaseException = await self.transport.post(request)
        except Exception as exc:
            reply = exc
        return self.parse(self.reply_json(reply), bool(config.top_logprobs))

    def parse(self, resp: Any, want_logprobs: bool) -> ModelOutput:
        """A chat completion reply (dicts and lists)."""
        try:
            choice = resp["choices"][0]
            text = (choice.get("message") or {}).get("content") or ""
            logprobs = None
            if want_logprobs:
                content = (choice.get("logprobs") or {}).get("content")
                if not content:
                    raise self.no_logprobs()
                logprobs = [
                    TokenLogprob(t["token"], float(t["logprob"]), _top(t.get("top_logprobs")))
                    for t in content
                ]
            tokens_in, tokens_out = usage_of(resp)
            return ModelOutput(
                text=text,
                model=self.name,
                tokens_in=tokens_in,
                tokens_out=tokens_out,
                logprobs=logprobs,
                endpoint="chat",
            )
        except (AttributeError, IndexError, KeyError, TypeError, ValueError) as exc:
            raise _malformed(exc) from exc


def _top(alternatives: Any) -> dict[str, float]:
    return {a["token"]: float(a["logprob"]) for a in alternatives or []}


def _malformed(exc: Exception) -> Exception:
    return TransientError(f"malformed response: {type(exc).__name__}: {exc}")
