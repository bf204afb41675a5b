"""Model backends behind one wrapper: OpenAI (and compatible servers), Anthropic, local
transformers models (the embedded Gemma 3 270M), a scripted test double, and any backend
registered in :data:`~llmdebate.models.backends.BACKENDS` (what each can do: its
:class:`~llmdebate.models.profile.BackendProfile`).

Transport only: messages in, text/tokens/logprobs/usage out. Every caller uses
:class:`Model` (from :func:`get_model`), which adds an on-disk cache, retries with backoff,
a concurrency limit, token/cost accounting and failure classification. The caller keeps the
call log: pass ``log=`` (a list of :class:`~llmdebate.core.schemas.ModelCallRecord`) and
``role=``/``act=`` to :meth:`Model.generate` / :meth:`Model.generate_many`. Probabilities
are :mod:`llmdebate.elicit`'s.
"""

from llmdebate.models.backends import BACKENDS, BackendSpec
from llmdebate.models.cache import ResponseCache, default_cache_dir
from llmdebate.models.get_model import ACCEPTED, create_backend, get_model
from llmdebate.models.interface import (
    Backend,
    ChatMessage,
    GenerateConfig,
    ModelOutput,
    RetriesExhausted,
    TokenLogprob,
    TransientError,
    Usage,
)
from llmdebate.models.pricing import DEFAULT_PRICES, call_cost
from llmdebate.models.profile import BackendProfile
from llmdebate.models.scripted import ScriptedBackend
from llmdebate.models.wrapper import Model, describe_error

__all__ = [
    "ACCEPTED",
    "BACKENDS",
    "DEFAULT_PRICES",
    "Backend",
    "BackendProfile",
    "BackendSpec",
    "ChatMessage",
    "GenerateConfig",
    "Model",
    "ModelOutput",
    "ResponseCache",
    "RetriesExhausted",
    "ScriptedBackend",
    "TokenLogprob",
    "TransientError",
    "Usage",
    "call_cost",
    "create_backend",
    "default_cache_dir",
    "describe_error",
    "get_model",
]
