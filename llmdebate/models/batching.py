"""Gathering concurrent calls into one request: the prompts of a text-completions endpoint.

A text-completions endpoint (OpenAI's legacy ``/v1/completions``, vLLM, llama.cpp server)
takes a *list* of prompts and answers each in one choice. :class:`PromptBatcher` collects the
calls that arrive within ``wait_s`` of the first one (the estimator's 2^q - 1 conditional
probabilities and the prover's q beliefs of a round are issued together, so they arrive in
the same event-loop turn) and sends the calls with equal settings as one request, at most
``max_batch`` prompts each. A failed request fails every call in it; the wrapper retries
each call, so a retried call may join another batch.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

C = TypeVar("C")
R = TypeVar("R")


@dataclass
class _Pending(Generic[C, R]):
    groups: dict[str, tuple[C, list[tuple[str, asyncio.Future[R]]]]] = field(default_factory=dict)
    scheduled: bool = False


class PromptBatcher(Generic[C, R]):
    """``await batcher.submit(prompt, key, settings)``: calls with the same ``key`` (e.g. the
    settings as JSON) form a group; ``send(prompts, settings)`` answers the prompts of one
    group in one request and returns one result per prompt, in order."""

    def __init__(
        self,
        send: Callable[[list[str], C], Awaitable[list[R]]],
        *,
        max_batch: int = 32,
        wait_s: float = 0.002,
    ) -> None:
        self.send = send
        self.max_batch = max(1, max_batch)
        self.wait_s = max(0.0, wait_s)
        self.requests = 0  # requests sent
        self._tasks: set[asyncio.Task[None]] = set()  # held until done (the loop keeps weak refs)
        self._pending: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Pending[C, R]]
        self._pending = weakref.WeakKeyDictionary()

    async def submit(self, prompt: str, key: str, settings: C) -> R:
        loop = asyncio.get_running_loop()
        pending = self._pending.setdefault(loop, _Pending())
        fut: asyncio.Future[R] = loop.create_future()
        pending.groups.setdefault(key, (settings, []))[1].append((prompt, fut))
        if not pending.scheduled:
            pending.scheduled = True
            loop.call_later(self.wait_s, self._flush, loop)
        return await fut

    def _flush(self, loop: asyncio.AbstractEventLoop) -> None:
        pending = self._pending.get(loop)
        if pending is None:
            return
        groups, pending.groups, pending.scheduled = pending.groups, {}, False
        for settings, calls in groups.values():
            for start in range(0, len(calls), self.max_batch):
                chunk = calls[start : start + self.max_batch]
                task = loop.create_task(self._run(chunk, settings))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)

    async def _run(self, chunk: list[tuple[str, asyncio.Future[R]]], settings: C) -> None:
        self.requests += 1
        try:
            results = await self.send([p for p, _ in chunk], settings)
            if len(results) != len(chunk):
                raise ValueError(f"{len(chunk)} prompts but {len(results)} results")
        except BaseException as exc:  # every caller sees the request's failure
            for _, fut in chunk:
                if not fut.done():
                    fut.set_exception(exc)
            return
        for (_, fut), result in zip(chunk, results, strict=True):
            if not fut.done():
                fut.set_result(result)  # an exception too: the caller raises it
