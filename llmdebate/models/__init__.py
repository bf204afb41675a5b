"""Model backends behind one wrapper: OpenAI (and compatible servers), Anthropic, local
transformers models (the embedded Gemma 3 270M), and a scripted test double.

Every caller uses :class:`Model` (from :func:`get_model`), which adds an on-disk cache,
retries with backoff, a concurrency limit, token/cost accounting and per-call records.
Label the records of a block of calls with ``with call_context(role=..., act=...):`` or
pass ``role=``/``act=`` to ``generate``/``probability``.
"""

from llmdebate.models.base import (
    Backend,
    ChatMessage,
    GenerateConfig,
    ModelOutput,
    ProbMethod,
    TokenLogprob,
    TransientError,
    Usage,
)
from llmdebate.models.cache import ResponseCache, default_cache_dir
from llmdebate.models.pricing import DEFAULT_PRICES, call_cost
from llmdebate.models.probability import (
    estimate_from_logprobs,
    estimate_from_samples,
    parse_bool,
    parse_probability,
)
from llmdebate.models.registry import ACCEPTED, create_backend, get_model
from llmdebate.models.scripted import ScriptedBackend
from llmdebate.models.wrapper import Model, call_context, current_call_context

__all__ = [
    "ACCEPTED",
    "DEFAULT_PRICES",
    "Backend",
    "ChatMessage",
    "GenerateConfig",
    "Model",
    "ModelOutput",
    "ProbMethod",
    "ResponseCache",
    "ScriptedBackend",
    "TokenLogprob",
    "TransientError",
    "Usage",
    "call_context",
    "call_cost",
    "create_backend",
    "current_call_context",
    "default_cache_dir",
    "estimate_from_logprobs",
    "estimate_from_samples",
    "get_model",
    "parse_bool",
    "parse_probability",
]
