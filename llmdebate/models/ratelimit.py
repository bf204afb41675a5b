"""Requests and tokens per minute: a token bucket with reservations, safe under concurrency.

Each call reserves its cost at once (the bucket may go negative) and then sleeps until the
bucket has refilled to cover it, so concurrent callers queue in the order they arrived and
never exceed the rate over any minute by more than the one-minute burst the bucket holds.
Tokens are counted before the call, as an estimate: the prompt's characters / 4 plus the
``max_tokens`` asked for.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable

from llmdebate.errors import UserError


class _Bucket:
    def __init__(self, per_minute: float, clock: Callable[[], float]) -> None:
        self.rate = per_minute / 60.0
        self.capacity = per_minute
        self.level = per_minute
        self.clock = clock
        self.stamp = clock()

    def reserve(self, cost: float) -> float:
        """Debit ``cost`` and return how long to wait before spending it."""
        now = self.clock()
        self.level = min(self.capacity, self.level + (now - self.stamp) * self.rate)
        self.stamp = now
        self.level -= cost
        return max(0.0, -self.level / self.rate)


class RateLimiter:
    """Optional limits on requests per minute and (estimated) tokens per minute."""

    def __init__(
        self,
        requests_per_minute: float | None = None,
        tokens_per_minute: float | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        for name, v in (
            ("requests_per_minute", requests_per_minute),
            ("tokens_per_minute", tokens_per_minute),
        ):
            if v is not None and v <= 0:
                raise UserError(f"{name} must be > 0 (got {v})")
        self._requests = _Bucket(requests_per_minute, clock) if requests_per_minute else None
        self._tokens = _Bucket(tokens_per_minute, clock) if tokens_per_minute else None
        self._lock = threading.Lock()
        self._sleep = sleep

    @property
    def active(self) -> bool:
        return self._requests is not None or self._tokens is not None

    async def acquire(self, tokens: int = 0) -> float:
        """Wait until one request of ``tokens`` tokens fits the limits; return the wait."""
        with self._lock:
            wait = 0.0
            if self._requests is not None:
                wait = max(wait, self._requests.reserve(1))
            if self._tokens is not None:
                wait = max(wait, self._tokens.reserve(min(tokens, self._tokens.capacity)))
        if wait > 0:
            await self._sleep(wait)
        return wait


def estimate_tokens(messages: list[dict[str, str]], max_tokens: int) -> int:
    """A provider-neutral estimate: four characters a token, plus the reply's budget."""
    return sum(len(m.get("content", "")) for m in messages) // 4 + max_tokens
