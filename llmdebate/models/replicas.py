"""Several servers for one model (``base_url`` a list): the usual shape of vLLM data-parallel
replicas behind no load balancer.

A :class:`ReplicaBackend` holds one backend per URL and sends each request to the healthy
replica with the fewest requests in flight from this process (ties go round-robin). A replica
whose request fails with a transient error (connection refused or reset, timeout, 5xx, 429,
a malformed body) is taken out for a cool-down, which doubles with each failure in a row
(``cooldown_s`` up to ``max_cooldown_s``; a ``Retry-After`` is honoured when it is longer),
and the request goes at once to another replica. When the cool-down ends, the next request
tries the replica again; one success puts it back for good. Only when every replica is out
does the error reach the wrapper, which retries with its own backoff. Errors that are not
the server's (a request rejected, bad credentials, an unknown model) are raised at once.

All replicas must serve the same model: the cache key names them all, so a response cached
from one is a hit for the others.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from llmdebate.errors import UserError
from llmdebate.models.interface import (
    Backend,
    ChatMessage,
    GenerateConfig,
    ModelOutput,
    TransientError,
)
from llmdebate.models.profile import BackendProfile

COOLDOWN_S = 1.0
MAX_COOLDOWN_S = 30.0


@dataclass
class Replica:
    """One server and what this process knows of it."""

    backend: Backend
    url: str
    in_flight: int = 0
    sent: int = 0
    failures: int = 0  # in a row
    out_until: float = 0.0  # monotonic time before which it takes no request

    def available(self, now: float) -> bool:
        return now >= self.out_until


class ReplicaBackend(Backend):
    """One model served by several replicas; see the module docstring."""

    def __init__(
        self,
        replicas: Sequence[Backend],
        *,
        cooldown_s: float = COOLDOWN_S,
        max_cooldown_s: float = MAX_COOLDOWN_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if len(replicas) < 2:
            raise UserError("a replica set needs at least two servers")
        first = replicas[0]
        names = {r.name for r in replicas}
        if len(names) != 1:
            raise UserError(f"replicas must serve one model, got {sorted(names)}")
        self.replicas = [Replica(r, r.server_url or r.identity) for r in replicas]
        urls = [r.url for r in self.replicas]
        if len(set(urls)) != len(urls):
            raise UserError(f"a server is listed twice in base_url: {urls}")
        self.name = first.name
        self.provider = first.provider
        self.profile = BackendProfile.common([r.profile for r in replicas])
        self.default_concurrency = sum(r.default_concurrency for r in replicas)
        self.cooldown_s = cooldown_s
        self.max_cooldown_s = max_cooldown_s
        self.clock = clock
        self._turn = 0

    @property
    def identity(self) -> str:
        return f"{self.name}@" + "|".join(sorted(r.url for r in self.replicas))

    @property
    def http_requests(self) -> int:
        return sum(r.backend.http_requests for r in self.replicas)

    @property
    def server_url(self) -> str:
        return ", ".join(r.url for r in self.replicas)

    def pick(self, exclude: set[int]) -> int | None:
        """The index of the least-loaded available replica not in ``exclude``, or None."""
        now = self.clock()
        n = len(self.replicas)
        best: int | None = None
        for k in range(n):
            i = (self._turn + k) % n
            r = self.replicas[i]
            if i in exclude or not r.available(now):
                continue
            if best is None or r.in_flight < self.replicas[best].in_flight:
                best = i
        if best is not None:
            self._turn = (best + 1) % n
        return best

    def _fail(self, r: Replica, exc: TransientError) -> None:
        r.failures += 1
        pause = min(self.cooldown_s * 2 ** (r.failures - 1), self.max_cooldown_s)
        if exc.retry_after is not None:
            pause = max(pause, min(exc.retry_after, self.max_cooldown_s))
        r.out_until = self.clock() + pause

    async def generate(
        self, messages: list[ChatMessage], config: GenerateConfig, sample_index: int = 0
    ) -> ModelOutput:
        tried: set[int] = set()
        last: TransientError | None = None
        while True:
            i = self.pick(tried)
            if i is None:
                if last is not None:
                    raise TransientError(
                        f"every replica failed or is cooling down (last: {last})",
                        retry_after=last.retry_after,
                    )
                soonest = min(r.out_until for r in self.replicas) - self.clock()
                raise TransientError(
                    "every replica is cooling down after failures",
                    retry_after=max(0.0, soonest),
                )
            tried.add(i)
            r = self.replicas[i]
            r.in_flight += 1
            r.sent += 1
            try:
                out = await r.backend.generate(messages, config, sample_index)
            except TransientError as exc:
                self._fail(r, exc)
                last = exc
                continue
            finally:
                r.in_flight -= 1
            r.failures = 0
            return out

    async def aclose(self) -> None:
        for r in self.replicas:
            await r.backend.aclose()
