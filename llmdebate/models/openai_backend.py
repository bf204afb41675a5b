"""OpenAI chat completions, and any OpenAI-compatible server (``base_url``).

The key comes from ``$OPENAI_API_KEY`` (or the variable named by ``api_key_env``). A base URL
on this machine (localhost / 127.x, e.g. vLLM, llama.cpp server, Ollama) needs no key: a
dummy one is sent if none is set. The base URL comes from ``base_url`` or
``$OPENAI_BASE_URL``. The SDK client is built with ``max_retries=0``; retries are the
wrapper's.

Per-role options (``--prover-options '{"endpoint": "completions"}'``):

* ``endpoint``: ``chat`` (chat completions, the default) or ``completions`` (text
  completions, for base models behind vLLM or llama.cpp): the messages are rendered to one
  plain-text prompt (:mod:`llmdebate.models.text_prompt`; ``chat_template`` names a model's
  template to render them with instead), and logprobs come from the completion's
  ``top_logprobs``. Without a chat template the backend takes plain-text prompts
  (:attr:`text_prompts`): a role's acts with a ``prompts/text/<act>.j2`` template come
  rendered by it (:mod:`llmdebate.agents.text_prompts`) and are sent as they are, with the
  template's stop sequences (a re-ask appends the reply, the error and the prompt's last
  line). Concurrent calls with equal settings go out as *one* request with a list
  of prompts (``batch_prompts``, at most ``max_batch`` prompts, gathered for
  ``batch_wait_s``).
* ``structured``: how a ``json_schema`` is asked for
  (:data:`~llmdebate.models.structured.STRUCTURED_MODES`; default ``response_format``,
  strict). If the server rejects the field (HTTP 400 naming it), the call is re-sent as a
  plain prompt and later calls send none (the reply is parsed either way).
  ``grammars`` holds GBNF grammars by schema name for ``structured: grammar`` and
  ``structured_outputs_grammar``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from typing import Any, cast

from llmdebate.errors import InvalidOutputError, RequestRejectedError, UserError
from llmdebate.models import fast_http
from llmdebate.models.base import (
    Backend,
    ChatMessage,
    GenerateConfig,
    ModelOutput,
    TokenLogprob,
    TransientError,
)
from llmdebate.models.batching import PromptBatcher
from llmdebate.models.http1 import Done
from llmdebate.models.http_errors import api_key, map_sdk_error
from llmdebate.models.slots import Prepared
from llmdebate.models.structured import STRUCTURED_MODES, OutputSchema, server_fields
from llmdebate.models.text_prompt import (
    TURN_STOPS,
    ChatTemplate,
    format_prompt,
    is_text_prompt,
    load_chat_template,
    render_text_prompt,
)

LOCAL_DUMMY_KEY = "sk-local-no-key"
ENDPOINTS = ("chat", "completions")
# words in a 400 reply that mean the server does not know the structured-output field
_STRUCTURED_WORDS = ("response_format", "json_schema", "guided", "structured", "grammar", "schema")


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
        endpoint: str = "chat",
        structured: str = "response_format",
        grammars: dict[str, str] | None = None,
        chat_template: str | None = None,
        batch_prompts: bool = True,
        max_batch: int = 32,
        batch_wait_s: float = 0.002,
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
        if endpoint not in ENDPOINTS:
            raise UserError(
                f"{name}: endpoint must be one of {', '.join(ENDPOINTS)} (got {endpoint!r})"
            )
        if structured not in STRUCTURED_MODES:
            raise UserError(
                f"{name}: structured must be one of {', '.join(STRUCTURED_MODES)} "
                f"(got {structured!r})"
            )
        self.endpoint = endpoint
        self.structured = structured
        self.grammars = dict(grammars or {})
        self.structured_rejected = False  # the server refused the structured field once
        self.chat_template_source = chat_template
        self._template = ChatTemplate(load_chat_template(chat_template)) if chat_template else None
        self.batch_prompts = batch_prompts
        self._batcher: PromptBatcher[GenerateConfig, ModelOutput] = PromptBatcher(
            self._complete_many, max_batch=max_batch, wait_s=batch_wait_s
        )

    @property
    def identity(self) -> str:
        ident = f"{self.name}@{self.base_url}" if self.base_url else self.name
        if self.endpoint == "completions":  # another endpoint, another prompt: other replies
            ident += f"#completions:{self.chat_template_source or 'plain'}"
        return ident

    @property
    def text_prompts(self) -> bool:
        """Whether the agents should render plain-text prompts for this backend: a
        completions endpoint without the model's chat template."""
        return self.endpoint == "completions" and self._template is None

    @property
    def requests_sent(self) -> int:
        """Text-completions requests sent by the prompt batcher."""
        return self._batcher.requests

    @property
    def server_url(self) -> str:
        """The option, else the environment variable, else the SDK's default URL."""
        return str(self._client.base_url).rstrip("/")

    def _structured_fields(self, schema: OutputSchema | None) -> dict[str, Any] | None:
        if schema is None or self.structured_rejected:
            return None
        return server_fields(self.structured, schema, self.grammars)

    async def generate(
        self, messages: list[ChatMessage], config: GenerateConfig, sample_index: int = 0
    ) -> ModelOutput:
        if self.endpoint == "completions":
            prompt = self.render(messages)
            config = dataclasses.replace(config, stop=self._stops(messages, config))
            if self.batch_prompts:
                key = json.dumps(dataclasses.asdict(config), sort_keys=True)
                return await self._batcher.submit(prompt, key, config)
            return (await self._complete_many([prompt], config))[0]
        fields = self._structured_fields(config.json_schema)
        try:
            return await self._chat(messages, config, fields)
        except RequestRejectedError as exc:
            if not fields or not _names_field(str(exc)):
                raise
            self.structured_rejected = True  # prompt-and-parse from now on
            return await self._chat(messages, config, None)

    def render(self, messages: list[ChatMessage]) -> str:
        """The text prompt of ``messages`` for the completions endpoint."""
        if self._template is not None:
            return self._template.render(messages)
        if is_text_prompt(messages):
            return render_text_prompt(messages)
        return format_prompt(messages)

    def _stops(self, messages: list[ChatMessage], config: GenerateConfig) -> list[str] | None:
        """The call's stop sequences, then the prompt's: a text template's own, else the
        turn labels of a plain rendering (none with a chat template)."""
        given = list(config.stop or [])
        own: list[str] = []
        if is_text_prompt(messages):
            own = list(messages[0].get("stop") or [])
        elif self._template is None:
            own = TURN_STOPS
        stops = [*given, *(s for s in own if s not in given)]
        return stops[:4] or None  # OpenAI allows at most 4 stop sequences

    def prepare(
        self, messages: list[ChatMessage], config: GenerateConfig, sample_index: int = 0
    ) -> Prepared[ModelOutput] | None:
        """A chat request on the plain-http lane, built ahead (see
        :meth:`~llmdebate.models.base.Backend.prepare`); None for other endpoints, https,
        and calls with a schema (whose field a server may refuse: :meth:`generate` falls
        back)."""
        if self.endpoint != "chat" or config.json_schema is not None:
            return None
        lane = fast_http.raw_lane(self._client)
        if lane is None:
            return None
        body = self._chat_body(messages, config, None)
        post = fast_http.RawPost(self._client, lane, "/chat/completions", body)
        return _PreparedChat(self, post, bool(config.top_logprobs))

    def _chat_body(
        self, messages: list[ChatMessage], config: GenerateConfig, fields: dict[str, Any] | None
    ) -> dict[str, Any]:
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

    async def _chat(
        self, messages: list[ChatMessage], config: GenerateConfig, fields: dict[str, Any] | None
    ) -> ModelOutput:
        kwargs = self._chat_body(messages, config, fields)
        try:
            resp = await fast_http.post_json(self._client, "/chat/completions", kwargs)
        except Exception as exc:
            raise self._error(exc) from exc
        out = self._parse(resp, bool(config.top_logprobs))
        out.constrained = bool(fields)
        return out

    async def _complete_many(self, prompts: list[str], config: GenerateConfig) -> list[ModelOutput]:
        """One text-completions request for ``prompts`` (a list when there are several)."""
        fields = self._structured_fields(config.json_schema)
        try:
            return await self._completions(prompts, config, fields)
        except RequestRejectedError as exc:
            if not fields or not _names_field(str(exc)):
                raise
            self.structured_rejected = True
            return await self._completions(prompts, config, None)

    async def _completions(
        self, prompts: list[str], config: GenerateConfig, fields: dict[str, Any] | None
    ) -> list[ModelOutput]:
        kwargs: dict[str, Any] = {
            "model": self.model_id,
            "prompt": prompts if len(prompts) > 1 else prompts[0],
            "temperature": config.temperature,
            "max_tokens": config.max_tokens,
            "stop": config.stop,  # the call's and the prompt's (generate sets them)
        }
        if config.top_logprobs:
            kwargs["logprobs"] = config.top_logprobs
        if config.seed is not None:
            kwargs["seed"] = config.seed
        if fields:
            kwargs.update(fields)
        try:
            resp = await fast_http.post_json(self._client, "/completions", kwargs)
        except Exception as exc:
            raise self._error(exc) from exc
        outs = self._parse_completions(resp, len(prompts), bool(config.top_logprobs))
        for out in outs:
            out.constrained = bool(fields)
            out.batch_size = len(prompts)
        return outs

    def _error(self, exc: Exception) -> Exception:
        return map_sdk_error(
            exc,
            self._sdk,
            self.name,
            self._secret,
            key_variable=self.key_variable,
            server=self.server_url,
        )

    def _parse(self, resp: Any, want_logprobs: bool) -> ModelOutput:
        """A chat completion reply (dicts and lists, as :func:`fast_http.post_json` gives)."""
        try:
            choice = resp["choices"][0]
            text = (choice.get("message") or {}).get("content") or ""
            usage = resp.get("usage")
            logprobs = None
            if want_logprobs:
                content = (choice.get("logprobs") or {}).get("content")
                if not content:
                    raise InvalidOutputError(f"{self.name}: the server returned no logprobs")
                logprobs = [
                    TokenLogprob(t["token"], float(t["logprob"]), _top(t.get("top_logprobs")))
                    for t in content
                ]
            return ModelOutput(
                text=text,
                model=self.name,
                tokens_in=int(usage.get("prompt_tokens") or 0) if usage else 0,
                tokens_out=int(usage.get("completion_tokens") or 0) if usage else 0,
                logprobs=logprobs,
            )
        except (AttributeError, IndexError, KeyError, TypeError, ValueError) as exc:
            raise TransientError(f"malformed response: {type(exc).__name__}: {exc}") from exc

    def _parse_completions(self, resp: Any, n: int, want_logprobs: bool) -> list[ModelOutput]:
        """One output per prompt, in prompt order (choices carry their prompt's ``index``);
        the request's token usage is shared out so that the outputs add up to it."""
        try:
            choices = sorted(resp["choices"], key=lambda c: int(c["index"]))
            if len(choices) != n:
                raise ValueError(f"{n} prompts but {len(choices)} choices")
            usage = resp.get("usage")
            total_in = int(usage.get("prompt_tokens") or 0) if usage else 0
            total_out = int(usage.get("completion_tokens") or 0) if usage else 0
            outs = []
            for i, choice in enumerate(choices):
                logprobs = None
                lp = choice.get("logprobs")
                if want_logprobs:
                    if lp is None or not lp.get("tokens"):
                        raise InvalidOutputError(f"{self.name}: the server returned no logprobs")
                    tokens = lp["tokens"]
                    tops = lp.get("top_logprobs") or [None] * len(tokens)
                    values = lp.get("token_logprobs") or [None] * len(tokens)
                    logprobs = [
                        TokenLogprob(t, float(v if v is not None else -9999.0), _top_map(top))
                        for t, v, top in zip(tokens, values, tops, strict=False)
                    ]
                outs.append(
                    ModelOutput(
                        text=choice.get("text") or "",
                        model=self.name,
                        tokens_in=_share(total_in, n, i),
                        tokens_out=_share(total_out, n, i),
                        logprobs=logprobs,
                    )
                )
            return outs
        except (AttributeError, IndexError, KeyError, TypeError, ValueError) as exc:
            raise TransientError(f"malformed response: {type(exc).__name__}: {exc}") from exc

    async def aclose(self) -> None:
        await self._client.close()


class _PreparedChat:
    """A chat call built ahead: sent by the wrapper's slots, parsed by the backend."""

    __slots__ = ("backend", "logprobs", "post", "sent_at")

    def __init__(self, backend: OpenAIBackend, post: fast_http.RawPost, logprobs: bool) -> None:
        self.backend = backend
        self.post = post
        self.logprobs = logprobs
        self.sent_at = 0.0

    def send(self, done: Done) -> None:
        self.sent_at = time.perf_counter()
        self.post.send(done)

    def finish(self, reply: Any) -> ModelOutput:
        latency = time.perf_counter() - self.sent_at
        try:
            resp = self.post.finish(reply)
        except Exception as exc:
            raise self.backend._error(exc) from exc
        out = self.backend._parse(resp, self.logprobs)
        out.latency_s = latency
        return out


def _top(alternatives: Any) -> dict[str, float]:
    return {a["token"]: float(a["logprob"]) for a in alternatives or []}


def _top_map(top: Any) -> dict[str, float]:
    return {str(t): float(v) for t, v in (top or {}).items()}


def _share(total: int, n: int, i: int) -> int:
    """Item ``i`` of ``total`` split into ``n`` near-equal integer parts."""
    return total // n + (1 if i < total % n else 0)


def _names_field(message: str) -> bool:
    low = message.lower()
    return any(word in low for word in _STRUCTURED_WORDS)
