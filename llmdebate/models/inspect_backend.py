"""``inspect/<provider>/<model>``: every model provider of UK AISI's Inspect (``inspect-ai``).

The model string after ``inspect/`` is an Inspect model name (``openai/gpt-4o-mini``,
``anthropic/claude-sonnet-4-0``, ``google/gemini-2.5-flash``, ``together/…``, ``vllm/…``,
``mockllm/model``); the call goes through Inspect's ``get_model()`` and ``Model.generate()``.

Under ``llmdebate run`` the retries, the response cache, the concurrency limits and the
accounting stay llmdebate's (:class:`~llmdebate.models.wrapper.Model`): each call is sent
with Inspect's retries off (``max_retries=0``; for providers built on an SDK client that
retries on its own, OpenAI's and Anthropic's among them, the client's ``max_retries=0``
too) and its cache off, and a failure Inspect
would have retried (a rate limit, a 5xx, a timeout) is raised as a
:class:`~llmdebate.models.interface.TransientError` for the wrapper to retry.

Inside an Inspect evaluation (:mod:`llmdebate.inspect_ext`) the backend wraps the role's
Inspect model as it is (``native=True``): Inspect's own retry and cache settings apply, and
every call appears in the sample's log as Inspect's model event.

Logprobs: asked for with Inspect's ``logprobs``/``top_logprobs``; providers that return
them (OpenAI and compatible servers, vLLM, Together, Hugging Face, …) give the
``logprobs`` probability method its numbers; a reply without them is refused with a
one-line error naming the methods that work without (``sampling``, ``verbalised``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from llmdebate.core.decisions import current_call, current_decision
from llmdebate.core.schemas import DecisionTag
from llmdebate.errors import (
    AuthenticationError,
    FatalModelError,
    ModelError,
    RequestRejectedError,
    UserError,
    require,
)
from llmdebate.models.http_errors import api_key
from llmdebate.models.interface import (
    Backend,
    ChatMessage,
    GenerateConfig,
    ModelOutput,
    TokenLogprob,
    TransientError,
)
from llmdebate.models.profile import BackendProfile

if TYPE_CHECKING:
    from inspect_ai.model import Model as InspectModel

# Inspect providers whose SDK client takes the provider's model args (and retries on its own
# unless told max_retries=0)
SDK_RETRY_PROVIDERS = frozenset({"openai", "openai-api", "anthropic", "together", "groq", "grok",
                                 "fireworks", "openrouter", "deepseek", "vllm", "sglang"})
# Inspect providers whose APIs return token logprobs with top alternatives.
LOGPROB_PROVIDERS = frozenset(
    {"openai", "openai-api", "together", "vllm", "sglang", "hf", "fireworks", "grok",
     "llama-cpp-python", "mockllm", "azureai", "openrouter", "deepseek", "llmdebate"}
)
NO_LOGPROBS = "use method 'sampling' or 'verbalised' for its probabilities"


class InspectBackend(Backend):
    """A model of any Inspect provider, called through Inspect's model API."""

    provider = "inspect"
    default_concurrency = 8

    def __init__(
        self,
        name: str,
        model_id: str = "",
        *,
        inspect_model: InspectModel | None = None,
        native: bool = False,
        base_url: str | None = None,
        api_key_env: str | None = None,
        model_args: dict[str, Any] | None = None,
        timeout: float | None = None,
    ) -> None:
        require("inspect_ai", "inspect")
        self.name = name
        if inspect_model is None:
            inspect_model = _inspect_model(name, model_id, base_url, api_key_env, model_args)
        self._model = inspect_model
        self.model_id = model_id or str(inspect_model)
        offline_token_count(inspect_model)
        self.native = native
        self.timeout = timeout
        self.sent = 0
        provider = self.model_id.split("/", 1)[0]
        self.profile = BackendProfile(logprobs=provider in LOGPROB_PROVIDERS, http=True)

    @property
    def inspect_model(self) -> InspectModel:
        """The Inspect model the calls go to."""
        return self._model

    @property
    def identity(self) -> str:
        base = getattr(self._model.api, "base_url", None)
        return f"{self.name}@{base}" if base else self.name

    @property
    def server_url(self) -> str | None:
        base = getattr(self._model.api, "base_url", None)
        return str(base) if base else None

    @property
    def http_requests(self) -> int:
        return self.sent

    async def generate(
        self, messages: list[ChatMessage], config: GenerateConfig, sample_index: int = 0
    ) -> ModelOutput:
        if config.top_logprobs and not self.profile.logprobs:
            raise UserError(f"{self.name}: Inspect's {self.model_id} returns no logprobs; "
                            + NO_LOGPROBS)
        self.sent += 1
        try:
            if self.native:  # inside an evaluation: the call in a span named for its decision
                from inspect_ai.util import span

                async with span(
                    decision_label(current_decision(), current_call()), type="llmdebate"
                ):
                    out = await self._model.generate(
                        to_inspect(messages), config=self._config(config, sample_index)
                    )
            else:
                out = await self._model.generate(
                    to_inspect(messages), config=self._config(config, sample_index), cache=False
                )
        except Exception as exc:
            raise self._error(exc) from exc
        if out.error:
            raise ModelError(f"{self.name}: {out.error}")
        if out.stop_reason in ("model_length", "content_filter"):
            # Inspect answers a request the provider refused (too long, filtered) this way
            raise RequestRejectedError(f"{self.name}: the provider refused the request "
                                       f"({out.stop_reason}: {out.completion[:300]})")
        return self._output(out, config)

    def _config(self, config: GenerateConfig, sample_index: int) -> Any:
        from inspect_ai.model import GenerateConfig as InspectConfig

        args: dict[str, Any] = {
            "temperature": config.temperature,
            "max_tokens": config.max_tokens,
            "stop_seqs": config.stop,
            "seed": None if config.seed is None else config.seed + sample_index,
        }
        if config.top_logprobs:
            args.update(logprobs=True, top_logprobs=config.top_logprobs)
        if not self.native:
            args["max_retries"] = 0
            if self.timeout is not None:
                args["timeout"] = int(self.timeout)
        return InspectConfig(**{k: v for k, v in args.items() if v is not None})

    def _error(self, exc: Exception) -> Exception:
        if isinstance(exc, (UserError, ModelError)):
            return exc
        last = getattr(exc, "last_attempt", None)  # tenacity's RetryError: Inspect gave up
        if last is not None and isinstance(last.exception(), Exception):
            exc = last.exception()
        message = f"{self.name}: {type(exc).__name__}: {exc}"[:1000]
        if not self.native and self._model.should_retry(exc):
            status = getattr(exc, "status_code", None)
            return TransientError(message, status=status if isinstance(status, int) else None)
        kind = type(exc).__name__
        if kind in ("AuthenticationError", "PermissionDeniedError"):
            return AuthenticationError(message)
        if kind == "NotFoundError":  # an unknown model or path: no debate can run
            return FatalModelError(message)
        if kind in ("BadRequestError", "UnprocessableEntityError"):
            return RequestRejectedError(message)  # this request (too long, filtered)
        return ModelError(message)

    def _output(self, out: Any, config: GenerateConfig) -> ModelOutput:
        logprobs = None
        choice = out.choices[0] if out.choices else None
        if config.top_logprobs:
            if choice is None or choice.logprobs is None:
                raise UserError(
                    f"{self.name}: Inspect's {self.model_id} returned no logprobs; "
                    + NO_LOGPROBS
                )
            logprobs = [
                TokenLogprob(
                    lp.token,
                    lp.logprob,
                    {t.token: t.logprob for t in (lp.top_logprobs or [])},
                )
                for lp in choice.logprobs.content
            ]
        usage = out.usage
        return ModelOutput(
            text=out.completion,
            model=self.name,
            tokens_in=int(usage.input_tokens) if usage else 0,
            tokens_out=int(usage.output_tokens) if usage else 0,
            logprobs=logprobs,
            endpoint="inspect",
        )


def decision_label(tag: DecisionTag | None, call: tuple[str, str] | None = None) -> str:
    """The name of the span of a model call serving decision ``tag`` (a recursive protocol's
    decision), else named by its ``call``: (role, act), e.g. ``debater A · argue round 1``."""
    if tag is None:
        if call is not None:
            return " · ".join(x for x in call if x)
        return "model call"
    where = "initialisation" if tag.round is None else f"round {tag.round}"
    index = "" if tag.index is None else f" [{tag.index}]"
    return f"{where} · {tag.decision}{index}"


def to_inspect(messages: list[ChatMessage]) -> list[Any]:
    """llmdebate's chat messages as Inspect's."""
    from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageUser

    kinds: dict[str, Any] = {
        "system": ChatMessageSystem,
        "user": ChatMessageUser,
        "assistant": ChatMessageAssistant,
    }
    return [kinds[m["role"]](content=m["content"]) for m in messages]


MOCK_PROVIDER = "mockllm"
CHARS_PER_TOKEN = 4


def offline_token_count(model: InspectModel) -> None:
    """Inspect's mock model (``mockllm/…``) counts the tokens of a reply that carries no usage
    with tiktoken's ``o200k_base``, which tiktoken downloads on first use: a mock run offline
    fails every call on it. The mock's count is a stand-in, so this counts characters (one
    token in four, as tiktoken's English averages) on that model alone, and nothing is
    fetched."""
    api = getattr(model, "api", None)
    if api is None or not str(model).startswith(f"{MOCK_PROVIDER}/"):
        return

    async def count_text_tokens(text: str) -> int:
        return max(1, -(-len(text) // CHARS_PER_TOKEN))

    setattr(api, "count_text_tokens", count_text_tokens)  # noqa: B010 - the instance's own


def _inspect_model(
    name: str,
    model_id: str,
    base_url: str | None,
    api_key_env: str | None,
    model_args: dict[str, Any] | None,
) -> InspectModel:
    import re

    from inspect_ai.model import get_model

    if "/" not in model_id:
        raise UserError(
            f"unknown model {name!r}: use inspect/<provider>/<model> "
            "(an Inspect model name, e.g. inspect/openai/gpt-4o-mini)"
        )
    key = None  # without api_key_env: the provider's own variable, as Inspect reads it
    if api_key_env:
        key = api_key(api_key_env, f"Inspect's {model_id}", base_url, "local-no-key", named=True)
    args = dict(model_args or {})
    if model_id.split("/", 1)[0] in SDK_RETRY_PROVIDERS:
        args.setdefault("max_retries", 0)  # the provider SDK's own retries: llmdebate retries
    try:
        return get_model(model_id, base_url=base_url, api_key=key, memoize=False, **args)
    except Exception as exc:  # an unknown provider, a missing SDK or key
        text = re.sub(r"\[/?[a-z ]+\]", "", str(exc))  # Inspect's rich markup
        detail = " ".join(text.split()) or type(exc).__name__
        raise UserError(f"{name}: Inspect cannot load {model_id!r}: {detail}") from exc

