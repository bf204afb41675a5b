"""The limit on requests in flight through one model: a FIFO of waiters that a freed place
goes to at once.

An ``asyncio.Semaphore`` hands a freed place to a *task*, which runs only when the event loop
comes round to it; with hundreds of requests in flight that wait is milliseconds, and the
place stands idle through it, and again while the finished request's own task waits to be
resumed before it releases the place. :class:`Slots` lets a request be *prepared* (its bytes
built) before it waits: when a reply completes, the transport calls back synchronously, the
place goes straight to the next waiter, and a prepared request is written in that same
callback. Places never wait for the event loop between one request and the next.

A call that is not a single HTTP request (a local model, a test double, an SDK call) is a
:class:`Call`: its coroutine runs in the caller's task once the place is granted, woken as by
a semaphore (as is a block under ``async with slots:``). Every kind waits in one queue, in
arrival order.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Coroutine
from typing import Any, Generic, Protocol, TypeVar

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)

Done = Callable[[Any], None]
"""What a transport calls, synchronously, when a sent request is over: with its reply, or
with the exception that ended it."""


class Prepared(Protocol[T_co]):
    """A request built before it waits for a place (see :class:`Slots`)."""

    def send(self, done: Done) -> None:
        """Send it now; call ``done(reply_or_exception)`` once, when it is over (not from
        within this call)."""

    def finish(self, reply: Any) -> T_co:
        """The result of what ``done`` was given, or of the exception that ``send`` raised:
        raise for a failed request."""


class Call(Generic[T]):
    """A coroutine as a :class:`Prepared` request. :meth:`Slots.run` awaits it in the
    caller's task once a place is granted (cancelled with its caller); elsewhere, ``send``
    starts it as a task."""

    __slots__ = ("factory", "task")

    def __init__(self, factory: Callable[[], Coroutine[Any, Any, T]]) -> None:
        self.factory = factory
        self.task: asyncio.Task[T] | None = None

    def send(self, done: Done) -> None:
        task = self.task = asyncio.get_running_loop().create_task(self.factory())

        def over(t: asyncio.Task[T]) -> None:
            if t.cancelled():
                done(asyncio.CancelledError())
            else:
                done(t.exception() or t.result())

        task.add_done_callback(over)

    def finish(self, reply: Any) -> T:
        if isinstance(reply, BaseException):
            raise reply
        result: T = reply
        return result

class Slots:
    """At most ``limit`` requests in flight, granted in arrival order."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        # each waiter starts its request when handed a place; False: it was cancelled
        self._waiters: deque[Callable[[], bool]] = deque()

    @property
    def waiting(self) -> int:
        return len(self._waiters)

    def release(self) -> None:
        """A request is over: its place goes to the next waiter, now."""
        waiters = self._waiters
        while waiters:
            if waiters.popleft()():
                return
        self.used -= 1

    async def run(self, request: Prepared[T]) -> T:
        """Send ``request`` when a place is free and return its result. The place is freed
        the moment its reply is complete (before this coroutine resumes). A :class:`Call`
        runs in the caller's task, holding its place as ``async with slots`` would."""
        if isinstance(request, Call):
            async with self:
                result: T = await request.factory()
            return result
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()

        def done(reply: Any) -> None:
            self.release()  # the next prepared request goes out now, in this callback
            if not fut.done():
                fut.set_result(reply)  # an exception too: ``finish`` says what it means

        def start() -> bool:
            if fut.done():  # cancelled while it waited
                return False
            try:
                request.send(done)
            except Exception as exc:  # nothing was sent: the place is free again
                self.release()
                fut.set_result(exc)
            return True

        if self.used < self.limit:
            self.used += 1
            start()
        else:
            self._waiters.append(start)
        return request.finish(await fut)

    async def __aenter__(self) -> Slots:
        if self.used < self.limit:
            self.used += 1
            return self
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def start() -> bool:
            if fut.done():
                return False
            fut.set_result(None)
            return True

        self._waiters.append(start)
        try:
            await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():  # handed a place, then cancelled
                self.release()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.release()
