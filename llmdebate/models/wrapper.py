"""The one wrapper around every backend: cache, retries, concurrency limit, accounting.

It is transport only: messages in, text/tokens/logprobs/usage out (probabilities are
:mod:`llmdebate.elicit`'s). The caller owns the call log: pass ``log=`` (a list) to
:meth:`Model.generate` / :meth:`Model.generate_many` and each call appends its
:class:`~llmdebate.core.schemas.ModelCallRecord` (labelled with ``role`` and ``act``) to it, on
success and on failure. Records never contain an API key.

Failures: :class:`~llmdebate.models.interface.TransientError` (429, 5xx, timeouts, malformed
bodies) is retried with backoff, honouring ``Retry-After``; when the retries are spent,
:class:`~llmdebate.models.interface.RetriesExhausted` (a
:class:`~llmdebate.errors.RetriesExhaustedError`) is raised. Everything else is raised at
once: :class:`~llmdebate.errors.RequestRejectedError` and other
:class:`~llmdebate.errors.ModelError` subclasses end one debate,
:class:`~llmdebate.errors.FatalModelError` (e.g. authentication) stops the run.
"""

from __future__ import annotations

import asyncio
import random
import weakref
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from llmdebate.core.decisions import calling, current_decision
from llmdebate.core.schemas import ModelCallRecord
from llmdebate.errors import ModelError, RequestRejectedError, UserError
from llmdebate.models.cache import ResponseCache, cache_key
from llmdebate.models.interface import (
    Backend,
    ChatMessage,
    GenerateConfig,
    ModelOutput,
    RetriesExhausted,
    TransientError,
    Usage,
    check_messages,
)
from llmdebate.models.pricing import Prices, lookup_price
from llmdebate.models.ratelimit import RateLimiter, estimate_tokens
from llmdebate.models.reply_budget import reply_tokens
from llmdebate.models.slots import Slots
from llmdebate.models.structured import OutputSchema
from llmdebate.qa.context_fit import context_fit, tokenizer_counter

T = TypeVar("T")


@dataclass
class _Tries:
    """Re-sends of one call (for its record)."""

    retries: int = 0


class Model:
    """A backend wrapped with cache, retries, a concurrency limit and usage accounting.

    Build it with :func:`llmdebate.models.get_model` or directly as ``Model(backend)``.
    ``max_concurrency`` bounds requests in flight through this instance (None: the backend's
    default). ``max_retries`` is the number of re-sends after the first attempt, with
    exponential backoff and jitter starting at ``retry_base_delay`` seconds, or the server's
    ``Retry-After`` when it sends one (capped at ``max_retry_after``).
    ``requests_per_minute`` / ``tokens_per_minute`` optionally pace the requests sent
    (:mod:`llmdebate.models.ratelimit`); cache hits are not paced.
    """

    def __init__(
        self,
        backend: Backend,
        *,
        cache_dir: Path | None = None,
        use_cache: bool = True,
        cache: ResponseCache | None = None,
        max_concurrency: int | None = None,
        max_retries: int = 4,
        prices: Prices | None = None,
        retry_base_delay: float = 0.5,
        retry_max_delay: float = 30.0,
        max_retry_after: float = 60.0,
        requests_per_minute: float | None = None,
        tokens_per_minute: float | None = None,
    ) -> None:
        if max_retries < 0:
            raise UserError(f"max_retries must be >= 0 (got {max_retries})")
        limit = backend.default_concurrency if max_concurrency is None else max_concurrency
        if limit < 1:
            raise UserError(f"max_concurrency must be >= 1 (got {limit})")
        self.backend = backend
        self.name: str = backend.name
        self.context_length: int | None = None
        """The context window in tokens (configured), else the backend's where it says; a
        prompt that cannot fit is refused before it is sent (:meth:`check_fit`)."""
        self.max_retries = max_retries
        self.max_concurrency = limit
        self.prices = prices
        self._price_for: tuple[str, Prices | None] | None = None
        self._price: tuple[float, float] | None = None
        self.usage = Usage()
        self._budgets: dict[tuple[str, int], int] = {}  # reply_tokens, by schema and floor
        self.rate = RateLimiter(requests_per_minute, tokens_per_minute)
        self.retry_base_delay = retry_base_delay
        self.retry_max_delay = retry_max_delay
        self.max_retry_after = max_retry_after
        # one set of slots per event loop: a Model may be reused across asyncio.run() calls
        self._loop_slots: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Slots]
        self._loop_slots = weakref.WeakKeyDictionary()
        self._last_slots: tuple[weakref.ref[asyncio.AbstractEventLoop], Slots] | None = None
        if not use_cache:
            self.cache: ResponseCache | None = None
        elif cache is not None:
            self.cache = cache
        elif backend.profile.persistent_cache:
            self.cache = ResponseCache.in_dir(cache_dir)
        else:
            self.cache = ResponseCache(Path(":memory:"))

    def __repr__(self) -> str:
        return f"Model({self.name!r})"

    @property
    def base_url(self) -> str | None:
        """The effective server URL of an HTTP backend (the ``base_url`` option, else
        ``$OPENAI_BASE_URL`` / ``$ANTHROPIC_BASE_URL``, else the provider's default); None
        for local and scripted backends."""
        return self.backend.server_url

    @property
    def http_requests(self) -> int:
        """HTTP requests the backend has sent (a batch of prompts is one; retries count)."""
        return self.backend.http_requests

    @property
    def supports_logprobs(self) -> bool:
        """Whether the backend returns token logprobs (Anthropic's API does not)."""
        return self.backend.supports_logprobs

    def reply_tokens(self, schema: OutputSchema, floor: int = 8) -> int:
        """The token budget that fits the longest reply ``schema`` admits, however it is
        spaced, in this model's tokenizer (:mod:`llmdebate.models.reply_budget`)."""
        key = (schema.schema_json, floor)
        if key not in self._budgets:
            self._budgets[key] = reply_tokens(schema, self.backend.count_tokens, floor)
        return self._budgets[key]

    def check_fit(self, messages: list[ChatMessage], config: GenerateConfig) -> None:
        """Refuse (:class:`RequestRejectedError`, the debate fails with the reason) a prompt
        that with ``max_tokens`` for the reply cannot fit the context window, counted with
        the backend's tokenizer when it has one, else estimated. No window known: no check."""
        loaded = getattr(getattr(self.backend, "model", None), "config", None)
        length = self.context_length or getattr(loaded, "max_position_embeddings", None)
        if not isinstance(length, int) or length <= 0:
            return
        tok: Any = getattr(self.backend, "tokenizer", None)
        counter = tokenizer_counter(tok) if callable(getattr(tok, "encode", None)) else None
        problem = context_fit(messages, length, counter=counter, reply_tokens=config.max_tokens)
        if problem is not None:
            raise RequestRejectedError(f"{self.name}: {problem}")

    def replays(self, role: str, rnd: int) -> bool:
        """Whether the speech of ``role`` in round ``rnd`` is answered from a recording rather
        than generated (a fork's replaying model says True; a live model never does)."""
        return False

    # ------------------------------------------------------------------ generation
    async def generate(
        self,
        messages: list[ChatMessage],
        config: GenerateConfig | None = None,
        *,
        sample_index: int = 0,
        role: str = "",
        act: str = "",
        log: list[ModelCallRecord] | None = None,
    ) -> ModelOutput:
        """One completion (from the cache when possible).

        ``sample_index`` tells apart samples of the same request (each is cached on its
        own). When ``log`` is given, the call's record is appended to it, also on failure.
        """
        config = config or GenerateConfig()
        tries = _Tries()
        try:
            with calling(role, act):
                out = await self._generate(messages, config, sample_index, tries)
        except Exception as exc:
            if log is not None:
                log.append(
                    self.record(
                        role,
                        act,
                        messages=messages,
                        error=describe_error(exc),
                        retries=tries.retries,
                    )
                )
            raise
        if log is not None:
            log.append(self.success_record(role, act, messages, config, out, tries.retries))
        return out

    async def generate_many(
        self,
        batch: Sequence[list[ChatMessage]],
        config: GenerateConfig | None = None,
        *,
        sample_indices: Sequence[int] | None = None,
        role: str = "",
        act: str = "",
        log: list[ModelCallRecord] | None = None,
    ) -> list[ModelOutput]:
        """:meth:`generate` for several conversations at once, outputs in input order.

        The calls are sent concurrently (bounded by ``max_concurrency``); a local model
        answers them in one padded forward pass. Every call runs to its end; then the
        records are appended to ``log`` in input order and the failure that matters most, if
        any, is raised (see :func:`worst_failure`).
        """
        indices = list(sample_indices) if sample_indices is not None else [0] * len(batch)
        if len(indices) != len(batch):
            raise UserError(
                f"generate_many: {len(batch)} conversations but {len(indices)} sample indices"
            )
        return await gather_logged(
            [
                partial(self.generate, m, config, sample_index=i, role=role, act=act)
                for m, i in zip(batch, indices, strict=True)
            ],
            log,
        )

    async def _generate(
        self,
        messages: list[ChatMessage],
        config: GenerateConfig,
        sample_index: int,
        tries: _Tries,
    ) -> ModelOutput:
        check_messages(messages)
        self.check_fit(messages, config)
        key = ident = None
        if self.cache is not None:
            ident = self.backend.identity_for(config)
            key = cache_key(ident, messages, config, sample_index)
            hit = self.cache.get(key)
            if hit is not None:  # ``constrained`` as it was when the reply was made
                hit.cached, hit.cost, hit.latency_s, hit.batch_size = True, 0.0, 0.0, 1
                self.usage.calls += 1
                self.usage.cached_calls += 1
                return hit
        self.usage.calls += 1
        try:
            out = await self._send(messages, config, sample_index, tries)
        except Exception:
            self.usage.errors += 1
            raise
        out.cached = False
        if self._price_for != (self.name, self.prices):  # looked up once, not per call
            self._price_for = (self.name, self.prices)
            self._price = lookup_price(self.name, self.prices)
        price = self._price
        out.cost = (
            0.0
            if price is None
            else (out.tokens_in * price[0] + out.tokens_out * price[1]) / 1_000_000
        )
        self.usage.tokens_in += out.tokens_in
        self.usage.tokens_out += out.tokens_out
        self.usage.cost += out.cost
        if self.cache is not None and key is not None:
            made_as = self.backend.identity_for(config)  # a mode dropped meanwhile: not asked
            if made_as != ident:
                key = cache_key(made_as, messages, config, sample_index)
            self.cache.put(key, out)
        return out

    def _slots(self) -> Slots:
        """The limit on requests in flight, for the running event loop."""
        loop = asyncio.get_running_loop()
        last = self._last_slots
        if last is not None and last[0]() is loop:  # the usual case: one loop per run
            return last[1]
        slots = self._loop_slots.get(loop)
        if slots is None:
            slots = self._loop_slots[loop] = Slots(self.max_concurrency)
        self._last_slots = (weakref.ref(loop), slots)
        return slots

    def retry_delay(self, attempt: int, exc: BaseException) -> float:
        """Seconds to wait before re-sending after failed attempt number ``attempt`` (1-based):
        the server's ``Retry-After`` (capped), else exponential backoff with full jitter."""
        after = exc.retry_after if isinstance(exc, TransientError) else None
        if after is not None:
            return min(float(after), self.max_retry_after)
        # base * 2^(n-1), capped, plus U(0, base)
        delay: float = self.retry_base_delay * 2 ** (attempt - 1)
        return min(delay, self.retry_max_delay) + random.uniform(0, self.retry_base_delay)

    async def _send(
        self,
        messages: list[ChatMessage],
        config: GenerateConfig,
        sample_index: int,
        tries: _Tries,
    ) -> ModelOutput:
        # A plain loop rather than a retry library: it costs nothing when the first attempt
        # succeeds, which at hundreds of calls a second is most of them.
        attempt = 0
        while True:
            attempt += 1
            try:
                if self.rate.active:
                    await self.rate.acquire(estimate_tokens(messages, config.max_tokens))
                # one path: the backend's request, sent the instant a place frees up
                return await self._slots().run(self.backend.prepare(messages, config, sample_index))
            except TransientError as exc:
                if attempt > self.max_retries:
                    raise RetriesExhausted(
                        f"{self.name}: {exc} (gave up after {attempt} attempts)", attempt, exc
                    ) from exc
                self.usage.retries += 1
                tries.retries += 1
                await asyncio.sleep(self.retry_delay(attempt, exc))

    # --------------------------------------------------------------------- plumbing
    def success_record(
        self,
        role: str,
        act: str,
        messages: list[ChatMessage],
        config: GenerateConfig,
        out: ModelOutput,
        retries: int,
    ) -> ModelCallRecord:
        """The record of a call that returned ``out`` (the one place it is made)."""
        return self.record(
            role,
            act,
            messages=messages,
            completion=out.text,
            logprobs=[
                {"token": lp.token, "logprob": lp.logprob, "top": dict(lp.top)}
                for lp in out.logprobs
            ]
            if out.logprobs
            else None,
            tokens_in=out.tokens_in,
            tokens_out=out.tokens_out,
            cost=out.cost,
            cached=out.cached,
            latency_s=out.latency_s,
            retries=retries,
            constrained=out.constrained if config.json_schema is not None else None,
            batch_size=out.batch_size if out.batch_size > 1 else None,
        )

    def record(self, role: str = "", act: str = "", **fields: Any) -> ModelCallRecord:
        """A :class:`~llmdebate.core.schemas.ModelCallRecord` of a call to this model.

        Built without validation (:meth:`~llmdebate.core.schemas.ModelCallRecord.trusted`): every
        field comes from this package's own typed values, and a record is made for every
        call (thousands a second). Tagged with the decision the protocol is asking for
        (:func:`~llmdebate.core.decisions.current_decision`)."""
        return ModelCallRecord.trusted(
            role=role, act=act, model=self.name, tag=current_decision(), **fields
        )

    async def aclose(self) -> None:
        """Close the backend's connections or worker; commit the cache's pending writes (the
        cache stays usable)."""
        if self.cache is not None:
            self.cache.flush()
        await self.backend.aclose()

    async def __aenter__(self) -> Model:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def requests_sent(models: Iterable[Model]) -> int:
    """HTTP requests sent by ``models`` (each model counted once)."""
    return sum(m.http_requests for m in {id(m): m for m in models}.values())


def worst_failure(results: Sequence[object]) -> BaseException | None:
    """The exception to raise for a batch of results: the first one that stops the run
    (anything but a :class:`~llmdebate.errors.ModelError`: authentication, a user error, a
    bug), else the first :class:`~llmdebate.errors.ModelError`; None if nothing failed."""
    failures = [r for r in results if isinstance(r, BaseException)]
    severe = [f for f in failures if not isinstance(f, ModelError)]
    chosen = severe or failures
    return chosen[0] if chosen else None


async def gather_logged(
    calls: Sequence[Callable[..., Awaitable[T]]],
    log: list[ModelCallRecord] | None,
) -> list[T]:
    """Run ``calls`` concurrently, each given ``log=`` a list of its own; every call runs to its
    end, then the records are appended to ``log`` in input order and the failure that matters
    most, if any, is raised (:func:`worst_failure`). The results, in input order."""
    logs: list[list[ModelCallRecord]] = [[] for _ in calls]
    results = await asyncio.gather(
        *(call(log=own) for call, own in zip(calls, logs, strict=True)), return_exceptions=True
    )
    if log is not None:
        for own in logs:
            log.extend(own)
    failure = worst_failure(results)
    if failure is not None:
        raise failure
    return [r for r in results if not isinstance(r, BaseException)]


def describe_error(exc: BaseException) -> str:
    """``"<ErrorType>: <message>"``, as recorded in a call record's ``error``."""
    return f"{type(exc).__name__}: {exc}"
