"""The limit on requests in flight (llmdebate.models.slots): a freed place goes to the next
waiter inside the callback that freed it, in arrival order, and never more than the limit
are out."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llmdebate.models import GenerateConfig, get_model
from llmdebate.models.slots import Done, Slots

try:
    from tests.fixtures.fake_server import FakeServer
except ImportError:  # pytest run from inside tests/
    from fixtures.fake_server import FakeServer  # type: ignore[no-redef]


class Wire:
    """Prepared requests that a test answers by hand; records what was sent, in order,
    and what was in flight at each send."""

    def __init__(self, slots: Slots) -> None:
        self.slots = slots
        self.out: dict[int, Done] = {}
        self.sent: list[int] = []
        self.peak = 0

    def request(self, i: int, fail: bool = False) -> Any:
        wire = self

        class Request:
            def send(self, done: Done) -> None:
                if fail:
                    raise OSError(f"request {i} cannot be sent")
                wire.out[i] = done
                wire.sent.append(i)
                wire.peak = max(wire.peak, len(wire.out))

            def finish(self, reply: Any) -> Any:
                if isinstance(reply, BaseException):
                    raise reply
                return reply

        return Request()

    def answer(self, i: int, reply: Any) -> None:
        self.out.pop(i)(reply)


async def test_a_freed_place_sends_the_next_request_in_the_same_callback() -> None:
    slots = Slots(2)
    wire = Wire(slots)
    tasks = [asyncio.create_task(slots.run(wire.request(i))) for i in range(5)]
    await asyncio.sleep(0)
    assert wire.sent == [0, 1] and slots.used == 2 and slots.waiting == 3
    wire.answer(1, "one")
    assert wire.sent == [0, 1, 2]  # no turn of the event loop in between
    wire.answer(0, "zero")
    wire.answer(2, "two")
    assert wire.sent == [0, 1, 2, 3, 4]
    wire.answer(4, "four")
    wire.answer(3, ValueError("three"))
    results = await asyncio.gather(*tasks, return_exceptions=True)
    assert results[:3] == ["zero", "one", "two"] and results[4] == "four"
    assert isinstance(results[3], ValueError)
    assert slots.used == 0 and slots.waiting == 0 and wire.peak == 2


async def test_cancelled_waiters_are_skipped_and_a_failed_send_frees_its_place() -> None:
    slots = Slots(1)
    wire = Wire(slots)
    first = asyncio.create_task(slots.run(wire.request(0)))
    queued = asyncio.create_task(slots.run(wire.request(1)))
    broken = asyncio.create_task(slots.run(wire.request(2, fail=True)))
    last = asyncio.create_task(slots.run(wire.request(3)))
    await asyncio.sleep(0)
    queued.cancel()
    await asyncio.sleep(0)
    wire.answer(0, "a")  # 1 was cancelled, 2 cannot be sent: the place reaches 3
    assert wire.sent == [0, 3]
    wire.answer(3, "d")
    assert await first == "a" and await last == "d"
    with pytest.raises(OSError, match="cannot be sent"):
        await broken
    with pytest.raises(asyncio.CancelledError):
        await queued
    assert slots.used == 0


async def test_plain_waiters_share_the_queue_in_arrival_order() -> None:
    slots = Slots(1)
    wire = Wire(slots)
    order: list[str] = []

    async def plain(name: str) -> None:
        async with slots:
            order.append(name)
            await asyncio.sleep(0)

    a = asyncio.create_task(slots.run(wire.request(0)))
    b = asyncio.create_task(plain("b"))
    c = asyncio.create_task(slots.run(wire.request(1)))
    await asyncio.sleep(0)
    assert wire.sent == [0] and order == []
    wire.answer(0, "x")
    await b
    assert order == ["b"] and wire.sent == [0, 1]
    wire.answer(1, "y")
    assert (await a, await c) == ("x", "y") and slots.used == 0


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    limit=st.integers(1, 4),
    script=st.lists(st.tuples(st.integers(0, 2), st.integers(0, 50)), min_size=1, max_size=40),
)
def test_never_more_than_the_limit_and_every_request_ends(
    limit: int, script: list[tuple[int, int]]
) -> None:
    """Random arrivals, answers in any order and cancellations: at most ``limit`` requests
    out, sent in arrival order (cancelled ones skipped), every place given back."""

    async def main() -> None:
        slots = Slots(limit)
        wire = Wire(slots)
        tasks: dict[int, asyncio.Task[Any]] = {}
        for op, pick in script:
            if op == 0:
                i = len(tasks)
                tasks[i] = asyncio.create_task(slots.run(wire.request(i)))
            elif op == 1 and wire.out:
                wire.answer(sorted(wire.out)[pick % len(wire.out)], pick)
            elif op == 2 and tasks:
                tasks[pick % len(tasks)].cancel()
            await asyncio.sleep(0)
            assert len(wire.out) <= limit
        while wire.out:  # answer everything still out
            wire.answer(next(iter(wire.out)), 0)
            await asyncio.sleep(0)
        await asyncio.gather(*tasks.values(), return_exceptions=True)
        assert wire.sent == sorted(wire.sent)
        assert slots.used == 0 and slots.waiting == 0
        cancelled_before_sent = {i for i, t in tasks.items() if t.cancelled()} - set(wire.sent)
        assert set(wire.sent) | cancelled_before_sent == set(tasks)

    asyncio.run(main())


async def test_a_model_keeps_its_limit_on_the_fast_path() -> None:
    with FakeServer() as server:
        server.latency = 0.02
        model = get_model("openai/fake", base_url=server.url, use_cache=False, max_concurrency=3)
        cfg = GenerateConfig(max_tokens=1, top_logprobs=2)
        outs = await asyncio.gather(
            *(model.generate([{"role": "user", "content": f"q{i}"}], cfg) for i in range(12))
        )
        assert len(outs) == 12 and all(o.latency_s >= 0.015 for o in outs)
        assert server.max_in_flight == 3
        await model.aclose()
