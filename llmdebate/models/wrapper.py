"""The one wrapper around every backend: cache, retries, concurrency limit, accounting, logging.

Attaching a role and an act to the :class:`~llmdebate.schemas.ModelCallRecord` of a call:
either pass ``role=``/``act=`` to :meth:`Model.generate` / :meth:`Model.probability`, or set
them for a whole block (including nested coroutines started inside it) with::

    with call_context(role="prover", act="decompose"):
        await model.generate(messages)

Keyword arguments win over the context. Records never contain an API key.
"""

from __future__ import annotations

import asyncio
import random
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict
from pathlib import Path
from typing import Any

from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception_type,
    stop_after_attempt,
)

from llmdebate.errors import InvalidOutputError, ModelError, UserError
from llmdebate.models.base import (
    Backend,
    ChatMessage,
    GenerateConfig,
    ModelOutput,
    ProbMethod,
    TransientError,
    Usage,
    check_messages,
)
from llmdebate.models.cache import ResponseCache, cache_key
from llmdebate.models.pricing import Prices, call_cost
from llmdebate.models.probability import (
    TF_INSTRUCTION,
    VERBALISED_INSTRUCTION,
    estimate_from_logprobs,
    estimate_from_samples,
    parse_probability,
    with_instruction,
)
from llmdebate.models.ratelimit import RateLimiter, estimate_tokens
from llmdebate.schemas import Estimate, ModelCallRecord

_CONTEXT: ContextVar[tuple[str, str]] = ContextVar("llmdebate_call_context", default=("", ""))

LOGPROBS_TOP = 20  # the most OpenAI returns
VERBALISED_ATTEMPTS = 3


@contextmanager
def call_context(role: str, act: str = "") -> Iterator[None]:
    """Label every model call made inside the block with ``role`` and ``act``."""
    token = _CONTEXT.set((role, act))
    try:
        yield
    finally:
        _CONTEXT.reset(token)


def current_call_context() -> tuple[str, str]:
    """The (role, act) labels in force for calls made now."""
    return _CONTEXT.get()


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
        on_call: Callable[[ModelCallRecord], None] | None = None,
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
        self.max_retries = max_retries
        self.max_concurrency = limit
        self.prices = prices
        self.on_call = on_call
        self.usage = Usage()
        self.rate = RateLimiter(requests_per_minute, tokens_per_minute)
        self.retry_base_delay = retry_base_delay
        self.retry_max_delay = retry_max_delay
        self.max_retry_after = max_retry_after
        # one semaphore per event loop: a Model may be reused across asyncio.run() calls
        self._semaphores: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore]
        self._semaphores = weakref.WeakKeyDictionary()
        if not use_cache:
            self.cache: ResponseCache | None = None
        elif cache is not None:
            self.cache = cache
        elif getattr(backend, "persistent_cache", True):
            self.cache = ResponseCache.in_dir(cache_dir)
        else:
            self.cache = ResponseCache(Path(":memory:"))

    def __repr__(self) -> str:
        return f"Model({self.name!r})"

    # ------------------------------------------------------------------ generation
    async def generate(
        self,
        messages: list[ChatMessage],
        config: GenerateConfig | None = None,
        *,
        sample_index: int = 0,
        role: str | None = None,
        act: str | None = None,
    ) -> ModelOutput:
        """One completion (from the cache when possible); logs one call record."""
        config = config or GenerateConfig()
        try:
            out = await self._generate(messages, config, sample_index)
        except Exception as exc:
            self._emit(role, act, messages=messages, error=_describe(exc))
            raise
        self._emit(
            role,
            act,
            messages=messages,
            completion=out.text,
            logprobs=[asdict(lp) for lp in out.logprobs] if out.logprobs else None,
            tokens_in=out.tokens_in,
            tokens_out=out.tokens_out,
            cost=out.cost,
            cached=out.cached,
            latency_s=out.latency_s,
        )
        return out

    async def _generate(
        self, messages: list[ChatMessage], config: GenerateConfig, sample_index: int
    ) -> ModelOutput:
        check_messages(messages)
        key = None
        if self.cache is not None:
            key = cache_key(self.backend.identity, messages, config, sample_index)
            hit = self.cache.get(key)
            if hit is not None:
                hit.cached, hit.cost, hit.latency_s = True, 0.0, 0.0
                self.usage.calls += 1
                self.usage.cached_calls += 1
                return hit
        self.usage.calls += 1
        try:
            out = await self._send(messages, config, sample_index)
        except Exception:
            self.usage.errors += 1
            raise
        out.cached = False
        out.cost = call_cost(self.name, out.tokens_in, out.tokens_out, self.prices)
        self.usage.tokens_in += out.tokens_in
        self.usage.tokens_out += out.tokens_out
        self.usage.cost += out.cost
        if self.cache is not None and key is not None:
            self.cache.put(key, out)
        return out

    def _semaphore(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        sem = self._semaphores.get(loop)
        if sem is None:
            sem = self._semaphores[loop] = asyncio.Semaphore(self.max_concurrency)
        return sem

    def _wait(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        after = getattr(exc, "retry_after", None)
        if after is not None:
            return min(float(after), self.max_retry_after)
        # exponential backoff with full jitter on top: base * 2^(n-1) + U(0, base)
        delay = self.retry_base_delay * 2 ** (state.attempt_number - 1)
        return min(delay, self.retry_max_delay) + random.uniform(0, self.retry_base_delay)

    def _before_sleep(self, state: RetryCallState) -> None:
        self.usage.retries += 1

    async def _send(
        self, messages: list[ChatMessage], config: GenerateConfig, sample_index: int
    ) -> ModelOutput:
        retrying = AsyncRetrying(
            retry=retry_if_exception_type(TransientError),
            stop=stop_after_attempt(self.max_retries + 1),
            wait=self._wait,
            before_sleep=self._before_sleep,
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    if self.rate.active:
                        await self.rate.acquire(estimate_tokens(messages, config.max_tokens))
                    async with self._semaphore():
                        start = time.perf_counter()
                        out = await self.backend.generate(messages, config, sample_index)
                        out.latency_s = time.perf_counter() - start
        except TransientError as exc:
            raise ModelError(
                f"{self.name}: {exc} (gave up after {self.max_retries + 1} attempts)"
            ) from exc
        return out

    # ---------------------------------------------------------------- probabilities
    async def probability(
        self,
        messages: list[ChatMessage],
        method: ProbMethod = "logprobs",
        *,
        samples: int = 8,
        temperature: float = 1.0,
        role: str | None = None,
        act: str | None = None,
    ) -> Estimate:
        """P(the True/False question ending ``messages`` is True); logs one call record.

        ``logprobs``: one answer token, top-20 logprobs, P = m_T / (m_T + m_F).
        ``sampling``: ``samples`` answers at ``temperature`` (each cached under its own
        sample index), P = (k + 1) / (n + 2). ``verbalised``: a stated number, re-asked with
        the parse error up to 3 times, then :class:`InvalidOutputError`.
        """
        start = time.perf_counter()
        outs: list[ModelOutput] = []
        sent: list[ChatMessage] = messages
        try:
            if method == "logprobs":
                if not self.backend.supports_logprobs:
                    raise UserError(
                        f"{self.name} returns no logprobs ({self.backend.provider} has none): "
                        "use method='sampling' or method='verbalised'"
                    )
                sent = with_instruction(messages, TF_INSTRUCTION)
                cfg = GenerateConfig(temperature=0.0, max_tokens=1, top_logprobs=LOGPROBS_TOP)
                outs.append(await self._generate(sent, cfg, 0))
                est = estimate_from_logprobs(outs[0])
            elif method == "sampling":
                if samples < 1:
                    raise UserError(f"samples must be >= 1 (got {samples})")
                sent = with_instruction(messages, TF_INSTRUCTION)
                cfg = GenerateConfig(temperature=temperature, max_tokens=4)
                outs = list(
                    await asyncio.gather(*(self._generate(sent, cfg, i) for i in range(samples)))
                )
                est = estimate_from_samples([o.text for o in outs], temperature)
            elif method == "verbalised":
                sent, est = await self._verbalised(messages, outs)
            else:
                raise UserError(
                    f"unknown probability method {method!r}: use logprobs, sampling or verbalised"
                )
        except Exception as exc:
            self._emit(role, act, messages=sent, error=_describe(exc), **_totals(outs))
            raise
        last = outs[-1]
        self._emit(
            role,
            act,
            messages=sent,
            completion=None if method == "sampling" else last.text,
            logprobs=[asdict(lp) for lp in last.logprobs]
            if method == "logprobs" and last.logprobs
            else None,
            samples=[o.text for o in outs] if method == "sampling" else None,
            latency_s=time.perf_counter() - start,
            **_totals(outs),
        )
        est.evidence.setdefault("model", self.name)
        return est

    async def _verbalised(
        self, messages: list[ChatMessage], outs: list[ModelOutput]
    ) -> tuple[list[ChatMessage], Estimate]:
        sent = with_instruction(messages, VERBALISED_INSTRUCTION)
        cfg = GenerateConfig(temperature=0.0, max_tokens=16)
        errors: list[str] = []
        for _ in range(VERBALISED_ATTEMPTS):
            out = await self._generate(sent, cfg, 0)
            outs.append(out)
            try:
                value = parse_probability(out.text)
            except ValueError as exc:
                errors.append(f"{out.text[:80]!r}: {exc}")
                sent = [
                    *sent,
                    {"role": "assistant", "content": out.text},
                    {
                        "role": "user",
                        "content": f"That reply could not be read ({exc}). "
                        + VERBALISED_INSTRUCTION,
                    },
                ]
                continue
            evidence = {"reply": out.text, "attempts": len(errors) + 1, "errors": errors}
            return sent, Estimate(value=value, method="verbalised", evidence=evidence)
        raise InvalidOutputError(
            f"{self.name} gave no probability in {VERBALISED_ATTEMPTS} attempts: "
            + "; ".join(errors)
        )

    async def probabilities(
        self, batch: list[list[ChatMessage]], method: ProbMethod = "logprobs", **kw: Any
    ) -> list[Estimate]:
        """:meth:`probability` for each conversation, concurrently (batched by local models)."""
        return list(await asyncio.gather(*(self.probability(m, method, **kw) for m in batch)))

    # --------------------------------------------------------------------- plumbing
    def _emit(self, role: str | None, act: str | None, **fields: Any) -> None:
        if self.on_call is None:
            return
        ctx_role, ctx_act = _CONTEXT.get()
        record = ModelCallRecord(
            role=role if role is not None else ctx_role,
            act=act if act is not None else ctx_act,
            model=self.name,
            **fields,
        )
        self.on_call(record)

    async def aclose(self) -> None:
        """Close the backend's connections or worker (the cache stays usable)."""
        await self.backend.aclose()

    async def __aenter__(self) -> Model:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _totals(outs: list[ModelOutput]) -> dict[str, Any]:
    return {
        "tokens_in": sum(o.tokens_in for o in outs),
        "tokens_out": sum(o.tokens_out for o in outs),
        "cost": sum(o.cost for o in outs),
        "cached": bool(outs) and all(o.cached for o in outs),
    }


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"
