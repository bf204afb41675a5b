"""Debates spread over worker processes: the scheduling every multi-process executor shares.

A :class:`WorkerPoolExecutor` hands jobs to ``n_workers`` workers (local processes, or Ray
actors across a cluster): at most ``concurrency`` debates in flight over all of them, each new
one to the live worker with the fewest. A worker sends back each debate's
:class:`~llmdebate.experiment.debate.Finished`; the driver appends it
(:func:`llmdebate.experiment.runner.drive`). A subclass says only how to reach its workers
(:meth:`~WorkerPoolExecutor._submit`, :meth:`~WorkerPoolExecutor._is_death`,
:meth:`~WorkerPoolExecutor._recover`, :meth:`~Executor.aclose`).

Failures:

* a worker that dies takes its debates in flight with it: they are sent again, to a live
  worker, while the dead one is restarted (or probed, where its platform restarts it) and
  put back in rotation when it answers. Only the driver writes, and a job's result is taken
  once, from the one call still awaited for it, so no debate is written twice; a debate whose
  worker died ``MAX_LOSSES`` times is recorded failed (``WorkerLost``) and retried on resume;
* ``on_finished`` raising :class:`~llmdebate.experiment.debate.RunStopped` (or a result that
  stops the run) cancels every debate in flight and re-raises it.
"""

from __future__ import annotations

import asyncio
from abc import abstractmethod
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from llmdebate.experiment.config import ExperimentConfig
from llmdebate.experiment.debate import Finished, RunStopped, failed_transcript, finished
from llmdebate.experiment.executors.executor import Executor, OnFinished
from llmdebate.experiment.jobs import Job
from llmdebate.experiment.runtime import protocol_settings

MAX_RESTARTS = 4  # per worker
MAX_LOSSES = 3  # deaths of the worker running one debate before it is recorded failed


class WorkerPoolExecutor(Executor):
    """Schedules jobs over workers; a subclass starts them and talks to them."""

    worker_name = "worker"
    """How messages name one worker (``Ray worker``, ``worker process``)."""

    def __init__(
        self,
        config: ExperimentConfig,
        servers: dict[str, str | None],
        *,
        concurrency: int,
        say: Callable[[str], None] | None = None,
    ) -> None:
        self.config = config
        self.servers = servers
        self.concurrency = concurrency
        self.say = say or (lambda message: None)
        self.n_workers = 0  # set by the subclass once its workers are started
        self.resent = 0

    # ------------------------------------------------------------------ the subclass's part
    @abstractmethod
    def _submit(self, i: int, job: Job) -> asyncio.Future[Finished]:
        """Send ``job`` to worker ``i``; a future of its result (cancelling it may cancel the
        job), failing with an exception :meth:`_is_death` accepts if the worker dies."""

    @abstractmethod
    def _is_death(self, exc: BaseException) -> bool:
        """Whether a job's failure means its worker died (else the error propagates)."""

    @abstractmethod
    async def _recover(self, i: int) -> bool:
        """Bring worker ``i`` back after a death (restart it, or wait until it answers):
        True once it takes jobs again, False if it never will."""

    def _usable(self, i: int) -> bool:
        """Whether worker ``i`` can take a job now (False: it died, unnoticed so far)."""
        return True

    async def _open(self) -> None:
        """Called on the event loop before the first job is sent."""

    # ------------------------------------------------------------------ scheduling
    def stats(self) -> dict[str, Any]:
        return {"workers": self.n_workers, "debates_resent": self.resent}

    async def run(self, jobs: Sequence[Job], on_finished: OnFinished) -> None:
        await self._open()
        rounds = _Rounds(self, jobs, on_finished)
        try:
            rounds.submit()
            while rounds.waiting or rounds.probes:
                await rounds.settle()
                rounds.submit()
                if rounds.queue and not rounds.waiting and not rounds.probes:
                    raise RunStopped(f"every {self.worker_name} died; run again to resume")
        finally:
            await rounds.cancel()

    def _lost(
        self, job: Job, losses: dict[str, int], queue: deque[Job], on_finished: OnFinished
    ) -> None:
        """A job whose worker died: run it again, or after MAX_LOSSES record it failed."""
        key = job.spec.debate_id
        losses[key] = losses.get(key, 0) + 1
        if losses[key] < MAX_LOSSES:
            queue.appendleft(job)
            self.resent += 1
            return
        t = failed_transcript(
            job,
            protocol_settings(self.config),
            [],
            f"WorkerLost: the {self.worker_name} running this debate died {losses[key]} times",
        )
        t.meta.update(job.spec.meta())
        on_finished(finished(t, self.servers, server_failure=True))


class _Rounds:
    """One :meth:`WorkerPoolExecutor.run`: the jobs queued and in flight, each worker's load,
    the workers out of rotation, and the futures completed since the last look."""

    def __init__(
        self, pool: WorkerPoolExecutor, jobs: Sequence[Job], on_finished: OnFinished
    ) -> None:
        self.pool = pool
        self.on_finished = on_finished
        self.n = pool.n_workers
        self.queue: deque[Job] = deque(jobs)
        self.losses: dict[str, int] = {}
        self.load = [0] * self.n
        self.out: set[int] = set()  # workers that died: out of rotation until they are back
        self.dead: set[int] = set()  # workers that will not come back
        self.waiting: dict[asyncio.Future[Finished], tuple[Job, int]] = {}
        self.probes: dict[asyncio.Future[bool], int] = {}
        # futures as they complete: O(1) a result, however many debates are in flight
        # (asyncio.wait would watch every one of them again at each wake-up)
        self.ready: deque[asyncio.Future[Any]] = deque()
        self.wake = asyncio.Event()

    def completed(self, fut: asyncio.Future[Any]) -> None:
        self.ready.append(fut)
        self.wake.set()

    def recover(self, i: int) -> None:
        """Take worker ``i`` out of rotation and bring it back (or learn it never will)."""
        if i not in self.out:
            self.out.add(i)
            probe = asyncio.ensure_future(self.pool._recover(i))
            self.probes[probe] = i
            probe.add_done_callback(self.completed)

    def submit(self) -> None:
        """Send queued jobs to the live workers with the fewest, up to the concurrency."""
        pool = self.pool
        for i in range(self.n):
            if i not in self.out and not pool._usable(i):
                pool.say(f"{pool.worker_name} {i} died")
                self.recover(i)
        while self.queue and len(self.waiting) < pool.concurrency:
            alive = [i for i in range(self.n) if i not in self.out]
            if not alive:
                if len(self.dead) == self.n:
                    raise RunStopped(f"every {pool.worker_name} died; run again to resume")
                return  # wait for a restarted worker
            i = min(alive, key=self.load.__getitem__)
            job = self.queue.popleft()
            fut = pool._submit(i, job)
            self.waiting[fut] = (job, i)
            fut.add_done_callback(self.completed)
            self.load[i] += 1

    async def settle(self) -> None:
        """Wait for completed futures and take each one's result."""
        if not self.ready:
            self.wake.clear()
            await self.wake.wait()
        while self.ready:
            fut = self.ready.popleft()
            if fut in self.probes:
                self._probed(fut)
            else:
                self._answered(fut)

    def _probed(self, fut: asyncio.Future[bool]) -> None:
        i = self.probes.pop(fut)
        if not fut.cancelled() and fut.exception() is None and fut.result():
            self.out.discard(i)  # back in rotation
        else:
            self.dead.add(i)

    def _answered(self, fut: asyncio.Future[Finished]) -> None:
        pool = self.pool
        job, i = self.waiting.pop(fut)
        self.load[i] -= 1
        try:
            result = fut.result()
        except Exception as exc:
            if not pool._is_death(exc):
                raise
            if i not in self.out:
                pool.say(f"{pool.worker_name} {i} died; its debates in flight run again")
            self.recover(i)
            pool._lost(job, self.losses, self.queue, self.on_finished)
            return
        if result.stop is not None:
            raise RunStopped(*result.stop)
        self.on_finished(result)

    async def cancel(self) -> None:
        """Cancel every debate still in flight and every probe."""
        left: list[asyncio.Future[Any]] = [*self.waiting, *self.probes]
        for fut in left:
            fut.cancel()
        if self.probes:
            await asyncio.gather(*self.probes, return_exceptions=True)
