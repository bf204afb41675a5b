"""``openai/<model>`` with ``endpoint: completions``: the text-completions endpoint of vLLM,
llama.cpp or OpenAI's legacy API, for base models.

The messages are rendered to one plain-text prompt (:mod:`llmdebate.models.text_prompt`;
``chat_template`` names a model's template to render them with instead), and logprobs come
from the completion's ``top_logprobs``. Without a chat template the backend takes plain-text
prompts (``profile.text_prompts``): a role's acts with a ``prompts/text/<act>.j2`` template
come rendered by it (:mod:`llmdebate.agents.text_prompts`) and are sent as they are, with the
template's stop sequences.

Concurrent calls with equal settings go out as *one* request with a list of prompts
(``batch_prompts``, at most ``max_batch`` prompts, gathered for ``batch_wait_s``). A server
that refuses a list (llama-cpp-python answers HTTP 500) is found out by its first refusal:
that batch's prompts are sent one by one at once, and so is every batch from then on (also
one gathered while they are under way); if they succeed, every later call goes alone
(``profile.batched_prompts`` off), said once in the log; if they all fail too, the server is
failing, not refusing lists, and lists go on. Once a list has succeeded, a
failed batch is an ordinary failure (the wrapper retries each call).
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
from typing import Any

from llmdebate.errors import RequestRejectedError
from llmdebate.models.batching import PromptBatcher
from llmdebate.models.http1 import Reply
from llmdebate.models.interface import (
    ChatMessage,
    GenerateConfig,
    ModelOutput,
    TokenLogprob,
    TransientError,
)
from llmdebate.models.openai_common import OpenAIServer, log, share, usage_of
from llmdebate.models.profile import BackendProfile
from llmdebate.models.text_prompt import (
    TURN_STOPS,
    ChatTemplate,
    format_prompt,
    is_text_prompt,
    load_chat_template,
    render_text_prompt,
)
from llmdebate.models.transport import HTTPRequest

PATH = "/completions"
Result = ModelOutput | BaseException


class OpenAICompletionsBackend(OpenAIServer):
    """``openai/<model>`` on the text-completions endpoint (base models)."""

    endpoint = "completions"

    def __init__(
        self,
        name: str,
        model_id: str,
        *,
        chat_template: str | None = None,
        batch_prompts: bool = True,
        max_batch: int = 32,
        batch_wait_s: float = 0.002,
        max_tokens_param: str | None = None,
        **common: Any,
    ) -> None:
        super().__init__(name, model_id, **common)
        self.max_tokens_param = max_tokens_param or "max_tokens"
        self.chat_template_source = chat_template
        text = load_chat_template(chat_template) if chat_template else None
        self._template = ChatTemplate(text) if text is not None else None
        # the template enters the cache key by its text: an edited file gives other prompts
        self._template_id = hashlib.sha256(text.encode()).hexdigest()[:16] if text else "plain"
        self._lists_ok = False  # a list of prompts has been answered
        self._lists_refused = False  # a list was refused: each prompt goes alone
        modes = () if self.structured == "none" else (self.structured,)
        self.profile = BackendProfile(
            logprobs=True,
            structured=modes,
            completions_endpoint=True,
            batched_prompts=batch_prompts,
            text_prompts=self._template is None,
            http=True,
        )
        self._batcher: PromptBatcher[GenerateConfig, Result] = PromptBatcher(
            self._complete_many, max_batch=max_batch, wait_s=batch_wait_s
        )

    @property
    def identity(self) -> str:
        # another endpoint, another prompt: other replies
        return f"{super().identity}#completions:{self._template_id}"

    async def generate(
        self, messages: list[ChatMessage], config: GenerateConfig, sample_index: int = 0
    ) -> ModelOutput:
        prompt = self.render(messages)
        config = dataclasses.replace(config, stop=self._stops(messages, config))
        if self.profile.batched_prompts:
            key = json.dumps(dataclasses.asdict(config), sort_keys=True)
            result = await self._batcher.submit(prompt, key, config)
        else:
            result = (await self._request([prompt], config))[0]
        if isinstance(result, BaseException):
            raise result
        return result

    def render(self, messages: list[ChatMessage]) -> str:
        """The text prompt of ``messages``."""
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

    # -- requests
    async def _complete_many(self, prompts: list[str], config: GenerateConfig) -> list[Result]:
        """The results of one batch of prompts (see the module docstring for a refused list)."""
        if self._lists_refused or not self.profile.batched_prompts:
            return await self._each(prompts, config)
        if len(prompts) == 1 or self._lists_ok:
            return list(await self._request(prompts, config))
        try:
            outs: list[Result] = list(await self._request(prompts, config))
        except (TransientError, RequestRejectedError) as exc:
            if isinstance(exc, TransientError) and exc.status is None:
                raise  # no reply (a timeout, a dropped connection): nothing learnt
            return await self._one_by_one(prompts, config, exc)
        self._lists_ok = True
        return outs

    async def _each(self, prompts: list[str], config: GenerateConfig) -> list[Result]:
        """Each prompt in a request of its own."""
        results = await asyncio.gather(
            *(self._request([p], config) for p in prompts), return_exceptions=True
        )
        return [r if isinstance(r, BaseException) else r[0] for r in results]

    async def _one_by_one(
        self, prompts: list[str], config: GenerateConfig, refusal: Exception
    ) -> list[Result]:
        # lists are held back at once, while their prompts are tried alone
        self._lists_refused = True
        results = await self._each(prompts, config)
        if all(isinstance(r, BaseException) for r in results):
            self._lists_refused = False
            raise refusal  # the server fails alone too: not the list's fault
        if self.profile.batched_prompts:
            self.profile = self.profile.without("batched_prompts")
            log.warning(
                "%s: the server at %s refuses a list of prompts (%s); each prompt goes in a "
                "request of its own from now on (set batch_prompts: false for this server)",
                self.name,
                self.server_url,
                refusal,
            )
        return results

    async def _request(self, prompts: list[str], config: GenerateConfig) -> list[ModelOutput]:
        """One request for ``prompts``; the structured field dropped if the server refuses it
        (or a probe shows it ignores it)."""
        await self.ensure_enforcement(config.json_schema)
        fields = self.structured_fields(config.json_schema)
        try:
            outs = await self._post(prompts, config, fields)
        except (RequestRejectedError, TransientError) as exc:
            if not self.refuses(exc, fields):
                raise
            fields = None
            outs = await self._post(prompts, config, None)
        for out in outs:
            self.check_constrained(out, config.json_schema, fields)
        return outs

    async def probe_text(
        self, prompt: str, config: GenerateConfig, fields: dict[str, Any] | None
    ) -> str:
        return (await self._post([prompt], config, fields))[0].text

    async def _post(
        self, prompts: list[str], config: GenerateConfig, fields: dict[str, Any] | None
    ) -> list[ModelOutput]:
        body: dict[str, Any] = {
            "model": self.model_id,
            "prompt": prompts if len(prompts) > 1 else prompts[0],
            "temperature": config.temperature,
            self.max_tokens_param: config.max_tokens,
            "stop": config.stop,  # the call's and the prompt's (generate sets them)
        }
        if config.top_logprobs:
            body["logprobs"] = config.top_logprobs
        if config.seed is not None:
            body["seed"] = config.seed
        if fields:
            body.update(fields)
        try:
            reply: Reply | BaseException = await self.transport.post(HTTPRequest(PATH, body))
        except Exception as exc:
            reply = exc
        outs = self.parse(self.reply_json(reply), len(prompts), bool(config.top_logprobs))
        for out in outs:
            out.batch_size = len(prompts)
        return outs

    def parse(self, resp: Any, n: int, want_logprobs: bool) -> list[ModelOutput]:
        """One output per prompt, in prompt order (choices carry their prompt's ``index``);
        the request's token usage is shared out so that the outputs add up to it."""
        try:
            choices = sorted(resp["choices"], key=lambda c: int(c["index"]))
            if len(choices) != n:
                raise ValueError(f"{n} prompts but {len(choices)} choices")
            total_in, total_out = usage_of(resp)
            return [
                ModelOutput(
                    text=choice.get("text") or "",
                    model=self.name,
                    tokens_in=share(total_in, n, i),
                    tokens_out=share(total_out, n, i),
                    logprobs=self._logprobs(choice) if want_logprobs else None,
                    endpoint="completions",
                )
                for i, choice in enumerate(choices)
            ]
        except (AttributeError, IndexError, KeyError, TypeError, ValueError) as exc:
            raise TransientError(f"malformed response: {type(exc).__name__}: {exc}") from exc

    def _logprobs(self, choice: Any) -> list[TokenLogprob]:
        lp = choice.get("logprobs")
        if lp is None or not lp.get("tokens"):
            raise self.no_logprobs()
        tokens = lp["tokens"]
        tops = lp.get("top_logprobs") or [None] * len(tokens)
        values = lp.get("token_logprobs") or [None] * len(tokens)
        return [
            TokenLogprob(t, float(v if v is not None else -9999.0), _top_map(top))
            for t, v, top in zip(tokens, values, tops, strict=False)
        ]


def _top_map(top: Any) -> dict[str, float]:
    return {str(t): float(v) for t, v in (top or {}).items()}
