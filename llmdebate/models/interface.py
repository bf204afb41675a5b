"""Data types shared by every model backend, and the small interface a backend implements.

A *backend* talks to one provider and does nothing else: no retries, no cache, no accounting.
Those live once, in :class:`llmdebate.models.wrapper.Model`, which wraps every backend.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from llmdebate.errors import ModelError, RequestRejectedError, RetriesExhaustedError, UserError
from llmdebate.models.profile import BackendProfile
from llmdebate.models.slots import Call, Prepared
from llmdebate.models.structured import OutputSchema

ChatMessage = dict[str, str]
"""One chat message: ``{"role": "system" | "user" | "assistant", "content": str}``."""

ROLES = ("system", "user", "assistant")
BASE_MODEL_HINT = (
    "a base model (one without a chat template) answers a chat prompt with anything: serve it "
    'with the role option {"endpoint": "completions"}'
)
"""What a reply from a chat endpoint that misses the expected tokens may mean."""


@dataclass
class GenerateConfig:
    """Sampling parameters of one call. ``top_logprobs`` asks for that many alternatives.

    ``logprob_tokens`` asks, with ``top_logprobs``, for these tokens' logprobs at every
    position as well, top-k or not; only backends with ``reports_logprob_tokens`` (local
    models) can, the others ignore it. It enters the cache key only when set.

    ``json_schema`` asks for a reply in that schema with the backend's structured-output
    mechanism (:mod:`llmdebate.models.structured`); it enters the cache key only when set.
    """

    temperature: float = 0.0
    max_tokens: int = 256
    top_logprobs: int | None = None
    stop: list[str] | None = None
    seed: int | None = None
    logprob_tokens: tuple[str, ...] | None = None
    json_schema: OutputSchema | None = None


@dataclass
class TokenLogprob:
    """One generated token, its log-probability, and the top alternatives at its position."""

    token: str
    logprob: float
    top: dict[str, float] = field(default_factory=dict)


@dataclass
class ModelOutput:
    """What one call returned. ``cost`` is in USD; ``cached`` marks a cache hit (cost 0).

    ``constrained``: the backend enforced the requested ``json_schema`` (structured outputs,
    a forced tool, or constrained decoding). ``batch_size``: how many prompts went in the
    request that answered this call (1: a request of its own). ``endpoint``: the server
    endpoint that answered (``chat``, ``completions``; '' for backends without one).
    """

    text: str
    model: str
    tokens_in: int = 0
    tokens_out: int = 0
    logprobs: list[TokenLogprob] | None = None
    cached: bool = False
    latency_s: float = 0.0
    cost: float = 0.0
    constrained: bool = False
    batch_size: int = 1
    endpoint: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelOutput:
        data = dict(data)
        lps = data.pop("logprobs", None)
        out = cls(**data)
        if lps is not None:
            out.logprobs = [TokenLogprob(**lp) for lp in lps]
        return out


@dataclass
class Usage:
    """Running totals of one :class:`Model`.

    ``calls`` counts every ``generate`` (cache hits included); ``cached_calls`` the hits;
    tokens and cost count only requests actually sent; ``retries`` counts re-sent requests.
    """

    tokens_in: int = 0
    tokens_out: int = 0
    calls: int = 0
    cached_calls: int = 0
    cost: float = 0.0
    retries: int = 0
    errors: int = 0

    @property
    def requests(self) -> int:
        """Calls that reached the backend (not answered from the cache)."""
        return self.calls - self.cached_calls


class TransientError(ModelError):
    """A failure worth retrying (408/409/425/429, 5xx, timeout, connection error, malformed
    body). The wrapper retries it; it never escapes :class:`~llmdebate.models.Model`, which
    raises :class:`RetriesExhausted` once the retries are spent.

    ``retry_after`` is the server's ``Retry-After`` in seconds, when it sent one; ``status``
    the HTTP status of the reply (None: no reply, e.g. a timeout).
    """

    def __init__(
        self, message: str, retry_after: float | None = None, status: int | None = None
    ) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.status = status


class RetriesExhausted(RetriesExhaustedError):
    """:class:`~llmdebate.errors.RetriesExhaustedError` with ``attempts`` (requests sent)
    and ``last_error`` (the last :class:`TransientError`)."""

    def __init__(self, message: str, attempts: int, last_error: TransientError) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.last_error = last_error


class Backend(ABC):
    """One provider. Subclasses implement :meth:`generate` (and may offer :meth:`prepare`);
    the wrapper does the rest.

    ``name`` is the model string the user gave (e.g. ``openai/gpt-4o-mini``); ``identity``
    is what the cache key uses (it adds e.g. a non-default base URL, never a key).
    ``profile`` says what the backend can do (:class:`~llmdebate.models.profile.BackendProfile`);
    a backend narrows it when its server shows less.
    """

    name: str = ""
    provider: str = ""
    profile: BackendProfile = BackendProfile()
    default_concurrency: int = 8

    @property
    def supports_logprobs(self) -> bool:
        """Replies carry token logprobs (``profile.logprobs``)."""
        return self.profile.logprobs

    @property
    def reports_logprob_tokens(self) -> bool:
        """Honours ``GenerateConfig.logprob_tokens`` (``profile.logprob_tokens``)."""
        return self.profile.logprob_tokens

    @property
    def identity(self) -> str:
        return self.name

    def identity_for(self, config: GenerateConfig) -> str:
        """The identity in the cache key of a call with ``config``: :attr:`identity` plus
        every setting of this backend that changes such a call's reply (e.g. how a schema
        is asked for)."""
        return self.identity

    @property
    def server_url(self) -> str | None:
        """The effective URL of the server this backend talks to (None: no server)."""
        return None

    @property
    def http_requests(self) -> int:
        """HTTP requests sent so far (0 for backends without a server)."""
        return 0

    @property
    def weights_dir(self) -> Path | None:
        """Where the weights live (backends with ``profile.load``), else None."""
        return None

    def load(self) -> object:
        """Load the weights before the first call (backends with ``profile.load``)."""
        return None

    def count_tokens(self, text: str) -> int | None:
        """The tokens of ``text`` in the model's own tokenizer; None where it is not here
        (a server's model). Budgets of structured replies are counted with it
        (:mod:`llmdebate.models.reply_budget`)."""
        return None

    @abstractmethod
    async def generate(
        self, messages: list[ChatMessage], config: GenerateConfig, sample_index: int = 0
    ) -> ModelOutput:
        """One completion. Raise :class:`TransientError` for retryable failures, a
        :class:`~llmdebate.errors.ModelError` subclass for the debate's own failures, a
        :class:`~llmdebate.errors.FatalModelError` for those no debate survives."""

    def prepare(
        self, messages: list[ChatMessage], config: GenerateConfig, sample_index: int = 0
    ) -> Prepared[ModelOutput]:
        """The call as a request built ahead, for the wrapper's
        :class:`~llmdebate.models.slots.Slots` to send the instant a place frees up (its
        output's ``latency_s`` counting from when it was sent). The default runs
        :meth:`generate` once a place is granted; an HTTP backend returns the request itself
        (:class:`~llmdebate.models.transport.PreparedPost`)."""
        return Call(lambda: self._timed(messages, config, sample_index))

    async def _timed(
        self, messages: list[ChatMessage], config: GenerateConfig, sample_index: int
    ) -> ModelOutput:
        start = time.perf_counter()
        out = await self.generate(messages, config, sample_index)
        out.latency_s = time.perf_counter() - start
        return out

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release connections, threads or weights."""


def parse_retry_after(headers: Any) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``retry-after`` (seconds), if present."""
    if headers is None:
        return None
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        raw = headers.get(name)
        if raw is None:
            continue
        try:
            value = float(raw) / scale
        except (TypeError, ValueError):
            continue  # an HTTP date: fall back to exponential backoff
        if value >= 0:
            return value
    return None


def check_messages(messages: list[ChatMessage]) -> None:
    """Validate the message list: its shape (else :class:`~llmdebate.errors.UserError`) and
    that every text encodes as UTF-8 (else :class:`~llmdebate.errors.RequestRejectedError`:
    e.g. a lone surrogate from a dataset; the debate fails, nothing is sent or retried)."""
    if not messages:
        raise UserError("a model call needs at least one message")
    for i, m in enumerate(messages):
        if (
            not isinstance(m, dict)
            or m.get("role") not in ROLES
            or not isinstance(m.get("content"), str)
        ):
            raise UserError(
                f"message {i} must be {{'role': 'system'|'user'|'assistant', 'content': str}}"
            )
        if m["content"].isascii():
            continue
        try:
            m["content"].encode("utf-8")
        except UnicodeEncodeError as exc:
            raise RequestRejectedError(
                f"message {i} cannot be sent: {exc.reason} at character {exc.start} "
                f"({m['content'][max(0, exc.start - 20) : exc.start]!r} comes before it)"
            ) from None


def structured_identity(identity: str, config: GenerateConfig, mode: str) -> str:
    """``identity`` with the structured-output ``mode`` a call with ``config`` is made under
    (the mode in use, ``none`` when the reply is unconstrained; nothing without a schema)."""
    if config.json_schema is None:
        return identity
    return f"{identity}#structured:{mode}"
