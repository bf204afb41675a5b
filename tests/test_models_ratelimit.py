"""Requests and tokens per minute: waits computed on a fake clock, and wired into the wrapper."""

from __future__ import annotations

import pytest

from llmdebate.errors import UserError
from llmdebate.models import GenerateConfig, get_model
from llmdebate.models.ratelimit import RateLimiter, estimate_tokens


class FakeTime:
    def __init__(self) -> None:
        self.now = 0.0
        self.waits: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, s: float) -> None:
        self.waits.append(s)


async def test_requests_per_minute_allow_a_minute_of_burst_then_pace() -> None:
    ft = FakeTime()
    rl = RateLimiter(requests_per_minute=60, clock=ft.clock, sleep=ft.sleep)
    waits = [await rl.acquire() for _ in range(63)]
    assert waits[:60] == [0.0] * 60
    assert waits[60:] == pytest.approx([1.0, 2.0, 3.0])
    ft.now = 10.0  # ten seconds later the bucket has refilled by ten requests, less the 3 owed
    assert await rl.acquire() == 0.0


async def test_tokens_per_minute_pace_by_the_larger_wait() -> None:
    ft = FakeTime()
    rl = RateLimiter(
        requests_per_minute=1000, tokens_per_minute=600, clock=ft.clock, sleep=ft.sleep
    )
    waits = [await rl.acquire(100) for _ in range(8)]
    assert waits[:6] == [0.0] * 6
    assert waits[6:] == pytest.approx([10.0, 20.0])


def test_bad_limits_are_one_line_errors() -> None:
    with pytest.raises(UserError, match="requests_per_minute must be > 0"):
        RateLimiter(requests_per_minute=0)


def test_token_estimate() -> None:
    assert estimate_tokens([{"role": "user", "content": "x" * 40}], 5) == 15


async def test_the_wrapper_paces_requests_but_not_cache_hits() -> None:
    model = get_model("scripted", replies=["a", "b", "c"], requests_per_minute=2)
    ft = FakeTime()
    model.rate = RateLimiter(requests_per_minute=2, clock=ft.clock, sleep=ft.sleep)
    cfg = GenerateConfig(max_tokens=4)
    for i in range(3):
        await model.generate([{"role": "user", "content": f"q{i}"}], cfg)
    assert ft.waits == pytest.approx([30.0])  # the third request waits half a minute
    await model.generate([{"role": "user", "content": "q0"}], cfg)  # a cache hit
    assert len(ft.waits) == 1 and model.usage.cached_calls == 1
