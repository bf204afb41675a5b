"""The built-in backends: each registered beside the lazy import of its module, with the
pydantic model of its options (what a config's ``options`` may hold for it; keys it does not
name pass through to the backend, and an unknown one is refused when the backend is built).

=====================  =========================================================  ============
model string           backend                                                    extra
=====================  =========================================================  ============
``openai/<model>``     OpenAI or a compatible server, chat completions            ``openai``
                       (``endpoint: completions``: text completions)
``openai-completions/  the text-completions endpoint (the same as ``openai/``     ``openai``
<model>``              with ``endpoint: completions``)
``anthropic/<model>``  Anthropic's messages API                                   ``anthropic``
``hf/<dir or .gguf>``  a local transformers model                                 ``local``
``local``              the embedded Gemma 3 270M base model                       ``local``
``inspect/<provider>/  any model provider of UK AISI's Inspect, through its       ``inspect``
<model>``              ``get_model()`` (``inspect/openai/gpt-4o``,
                       ``inspect/mockllm/model``)
``scripted``           the test double (``backend=ScriptedBackend(...)`` or its   --
                       keyword arguments)
=====================  =========================================================  ============
"""

from __future__ import annotations

import importlib.util
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from llmdebate.errors import MissingExtraError, UserError
from llmdebate.models.backends import BACKENDS, BackendSpec, construct
from llmdebate.models.enforcement import EnforcementOption
from llmdebate.models.interface import Backend
from llmdebate.models.structured import StructuredMode


class _Options(BaseModel):
    """Options of one backend; keys not named here go to the backend as they are."""

    model_config = ConfigDict(extra="allow", use_attribute_docstrings=True)


class OpenAICompletionsOptions(_Options):
    structured: StructuredMode | None = None
    """How a JSON schema is asked for (default response_format)."""
    chat_template: str | None = None
    """The model's chat template (a file, or a model directory holding one)."""
    enforcement: EnforcementOption | None = None
    """Whether the server applies the structured field: probe (one request finds out, the
    default except for OpenAI's own API), enforced, ignored."""
    grammars: dict[str, str] | None = None
    """GBNF grammars by schema name (structured: grammar, structured_outputs_grammar)."""
    batch_prompts: bool | None = None
    """Send concurrent prompts as one request (default true; llama-cpp-python: false); the
    completions endpoint only (a chat request holds one conversation: false changes nothing)."""
    max_batch: int | None = Field(default=None, ge=1)
    """With batch_prompts: the most prompts in one request (default 32)."""
    batch_wait_s: float | None = Field(default=None, ge=0.0)
    """With batch_prompts: seconds to gather prompts into one request (default 0.002)."""


CHAT_ONE_PROMPT = (
    "batch_prompts applies only with endpoint: completions (a chat request holds one "
    "conversation)"
)


class OpenAIOptions(OpenAICompletionsOptions):
    endpoint: Literal["chat", "completions"] | None = None
    """chat (the default) or completions (text completions, for base models)."""


class AnthropicOptions(_Options):
    structured: Literal["tool", "none"] | None = None
    """tool: a forced tool carries the schema; none: the plain prompt."""
    strict: bool | None = None
    """Strict tools (the API guarantees the schema)."""


class InspectOptions(_Options):
    model_args: dict[str, Any] | None = None
    """Keyword arguments of Inspect's get_model() (the provider's own model args); timeout
    (seconds per request) passes through as for the other HTTP backends."""


class LocalOptions(_Options):
    """Options of the local backends (``local``, ``hf/``): these alone (a sampling setting such
    as temperature is the role's, not the model's)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    structured: Literal["xgrammar", "none"] | None = None
    """xgrammar: constrained decoding; none: unconstrained."""
    adapter: str | None = None
    """A LoRA adapter: the name of one shipped under ``llmdebate/adapters/``, or a folder."""
    act_adapters: dict[str, str | None] | None = None
    """Another adapter for some acts (``belief``, ``decompose``, ``evidence``, ...), or null
    for the base model: e.g. ``{belief: null}``. The roles on one model share one copy of
    the weights; the adapters are switched per call."""
    device: str | None = None
    """cpu (the default), cuda or cuda:<n>."""
    threads: int | None = Field(default=None, ge=1)
    """torch's CPU threads, process-wide (default $LLMDEBATE_TORCH_THREADS or 1)."""
    max_batch: int | None = Field(default=None, ge=1)
    """The most prompts in one forward pass (default 32)."""
    batch_wait_s: float | None = Field(default=None, ge=0.0)
    """Seconds without a new request that close a batch (default 0.05)."""
    batch_window_s: float | None = Field(default=None, ge=0.0)
    """Seconds after its first request that close a batch (default 0.5)."""
    hold_s: float | None = Field(default=None, ge=0.0)
    """The longest wait of a batch of generations while short calls are pending (default 30)."""


def _installed(package: str, extra: str) -> None:
    """Raise :class:`~llmdebate.errors.MissingExtraError` unless ``package`` is importable
    (without importing it)."""
    if importlib.util.find_spec(package) is None:
        raise MissingExtraError(package, extra)


def _http_kwargs(spec: BackendSpec) -> dict[str, object]:
    return {"base_url": spec.base_url, "api_key_env": spec.api_key_env, **spec.options}


@BACKENDS.register("openai", options=OpenAIOptions, capabilities={"http", "model-id"})
def openai(spec: BackendSpec) -> Backend:
    """OpenAI or an OpenAI-compatible server (chat; endpoint: completions for base models)."""
    _installed("openai", "openai")  # the extra that brings httpx, for https servers
    kwargs = _http_kwargs(spec)
    endpoint = kwargs.pop("endpoint", "chat")
    if endpoint == "completions":
        return _completions(spec, kwargs)
    if endpoint != "chat":
        raise UserError(
            f"{spec.model}: endpoint must be one of chat, completions (got {endpoint!r})"
        )
    if "chat_template" in kwargs:
        raise UserError(f"{spec.model}: chat_template applies only with endpoint: completions")
    if kwargs.pop("batch_prompts", None):  # false is what a chat endpoint does anyway
        raise UserError(f"{spec.model}: {CHAT_ONE_PROMPT}")
    from llmdebate.models.openai_chat import OpenAIChatBackend

    return construct(spec, OpenAIChatBackend, spec.model, spec.model_id, **kwargs)


@BACKENDS.register(
    "openai-completions", options=OpenAICompletionsOptions, capabilities={"http", "model-id"}
)
def openai_completions(spec: BackendSpec) -> Backend:
    """The text-completions endpoint of an OpenAI-compatible server (base models)."""
    _installed("openai", "openai")
    return _completions(spec, _http_kwargs(spec))


def _completions(spec: BackendSpec, kwargs: dict[str, object]) -> Backend:
    from llmdebate.models.openai_completions import OpenAICompletionsBackend

    return construct(spec, OpenAICompletionsBackend, spec.model, spec.model_id, **kwargs)


@BACKENDS.register(
    "anthropic", options=AnthropicOptions, capabilities={"http", "model-id", "no-logprobs"}
)
def anthropic(spec: BackendSpec) -> Backend:
    """Anthropic's messages API (no logprobs)."""
    from llmdebate.models.anthropic_backend import AnthropicBackend

    return construct(spec, AnthropicBackend, spec.model, spec.model_id, **_http_kwargs(spec))


@BACKENDS.register("inspect", options=InspectOptions, capabilities={"http", "model-id"})
def inspect(spec: BackendSpec) -> Backend:
    """Any provider of UK AISI's Inspect: inspect/<provider>/<model> (its get_model())."""
    _installed("inspect_ai", "inspect")
    from llmdebate.models.inspect_backend import InspectBackend

    return construct(spec, InspectBackend, spec.model, spec.model_id, **_http_kwargs(spec))


@BACKENDS.register("hf", options=LocalOptions, capabilities={"model-id"})
def hf(spec: BackendSpec) -> Backend:
    """A local transformers model: a model directory or a .gguf file."""
    from llmdebate.models.get_model import shared_local

    return shared_local(spec, spec.model_id)


@BACKENDS.register("local", options=LocalOptions, capabilities={"no-model-id"})
def local(spec: BackendSpec) -> Backend:
    """The embedded Gemma 3 270M base model."""
    from llmdebate.models.get_model import shared_local

    return shared_local(spec, None)


@BACKENDS.register("scripted", capabilities={"no-model-id"})
def scripted(spec: BackendSpec) -> Backend:
    """The test double: queued replies, a responder, scripted probabilities."""
    from llmdebate.models.scripted import ScriptedBackend

    options = dict(spec.options)
    backend = options.pop("backend", None)
    if backend is not None:
        if options:
            raise UserError(f"scripted: pass backend= or its options, not both ({options})")
        if not isinstance(backend, Backend):
            raise UserError(f"scripted: backend= must be a Backend (got {type(backend).__name__})")
        return backend
    return construct(spec, ScriptedBackend, **options)
