"""Debates on local worker processes: ``llmdebate run --executor processes [--workers N]``.

One ``llmdebate run`` process is one event loop, about one core's worth of model calls. On a
machine with many cores against a fast server, :class:`ProcessExecutor` runs the debates on
``N`` worker processes (default: the machine's CPUs, at most ``max_concurrency``), with no
extra dependency. The driver keeps the run directory, as with one process, and schedules
the debates as every worker pool does (:mod:`llmdebate.experiment.executors.pool`).

Each worker is started with ``multiprocessing``'s ``spawn`` method (the driver has threads,
SQLite handles and an event loop, which a fork would copy), builds the run's models and agents
once (a :class:`~llmdebate.experiment.worker.DebateWorker`, with the run's limits shared out:
``max_concurrency`` and ``model_concurrency`` stay totals) and runs its debates on its own
event loop. Jobs and finished transcripts travel over a socket pair per worker, in batched
frames (:mod:`llmdebate.experiment.executors.process_worker`).

Failures:

* a worker that dies (say, killed with SIGKILL) is noticed at once (end of file on its
  socket; its process sentinel as a backstop): its debates in flight are sent again to a
  live worker, and it is restarted, at most ``MAX_RESTARTS`` times;
* the driver killed: each worker sees its socket close and exits; running again with the
  same run id resumes;
* the run stopping (or ending): workers are told to stop, then joined (terminated after
  ``STOP_TIMEOUT`` seconds).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import multiprocessing
import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.process import BaseProcess
from typing import Any

from llmdebate.errors import UserError
from llmdebate.experiment.config import ExperimentConfig
from llmdebate.experiment.debate import Finished, RunStopped
from llmdebate.experiment.executors.executor import (
    EXECUTORS,
    WORKERS,
    ExecutorOptions,
    RunContext,
)
from llmdebate.experiment.executors.pool import MAX_RESTARTS, WorkerPoolExecutor
from llmdebate.experiment.executors.process_worker import (
    STREAM_LIMIT,
    Outbox,
    main,
    read_frame,
    recv_frame,
)
from llmdebate.experiment.jobs import Job
from llmdebate.experiment.worker import worker_config

START_TIMEOUT = 300.0  # seconds a worker has to build its models
STOP_TIMEOUT = 3.0  # seconds a worker has to stop before it is terminated
SENTINEL_GRACE = 0.5  # seconds after a worker's exit for its socket to say so, else closed


class WorkerDied(Exception):
    """The worker process running a debate died."""


class WorkerError(RuntimeError):
    """A defect met in a worker process (its traceback is the message)."""


@dataclass(eq=False)
class Link:
    """One worker process and the driver's end of its socket."""

    process: BaseProcess
    sock: socket.socket
    sentinel: int  # the process's sentinel (kept: the process object may be closed)
    restarts: int = 0
    outbox: Outbox | None = None
    writer: asyncio.StreamWriter | None = None
    reading: asyncio.Task[None] | None = None
    pending: dict[int, asyncio.Future[Finished]] = field(default_factory=dict)
    pid: int | None = None
    dead: bool = False


def default_workers(concurrency: int) -> int:
    return max(1, min(os.cpu_count() or 1, concurrency))


@EXECUTORS.register(
    "processes",
    capabilities={WORKERS},
    summary="worker processes on this machine, for many cores and a fast local server",
)
class ProcessExecutor(WorkerPoolExecutor):
    """Spreads the jobs over local worker processes; see the module docstring.

    Made outside the event loop: it starts the workers and waits until each has built its
    models (a worker that cannot start raises here, before any debate)."""

    worker_name = "worker process"
    where = " in worker processes"

    @classmethod
    def create(cls, options: ExecutorOptions, run: RunContext) -> ProcessExecutor:
        return cls(
            run.config,
            run.servers,
            workers=options.workers,
            concurrency=run.config.max_concurrency,
            say=run.say,
        )

    def __init__(
        self,
        config: ExperimentConfig,
        servers: dict[str, str | None],
        *,
        workers: int | None = None,
        concurrency: int = 4,
        say: Callable[[str], None] | None = None,
    ) -> None:
        super().__init__(config, servers, concurrency=concurrency, say=say)
        n = workers or default_workers(concurrency)
        self.share = worker_config(config, n)
        self.cwd = os.getcwd()
        self.context = multiprocessing.get_context("spawn")
        self.keys = itertools.count()
        self.fatal: RunStopped | None = None
        self.restarts = 0
        self.say(f"starting {n} worker processes…")
        self.links: list[Link] = []
        self.n_workers = n
        try:
            for i in range(n):
                self.links.append(self._spawn(i))
            self._await_ready(START_TIMEOUT)
        except BaseException:
            for link in self.links:
                link.sock.close()
            _reap([link.process for link in self.links], STOP_TIMEOUT)
            raise

    def _await_ready(self, timeout: float) -> None:
        """Wait (before the event loop runs) until every worker has built its models, so that
        a run's clock starts with workers that take jobs, and one that cannot start says why
        before any debate."""
        deadline = time.monotonic() + timeout
        for i, link in enumerate(self.links):
            link.sock.settimeout(max(0.001, deadline - time.monotonic()))
            try:
                messages = recv_frame(link.sock)
            except (OSError, EOFError) as exc:
                raise RuntimeError(
                    f"worker process {i} did not start ({str(exc) or 'it exited'}; "
                    f"exit code {link.process.exitcode})"
                ) from None
            finally:
                link.sock.settimeout(None)
            for message in messages:
                if message[0] == "fatal":
                    if message[2] == 2:
                        raise UserError(message[1])
                    raise RuntimeError(message[1])
                if message[0] == "ready":
                    link.pid = message[1]

    def stats(self) -> dict[str, Any]:
        return {**super().stats(), "worker_restarts": self.restarts}

    def pids(self) -> list[int]:
        """The worker processes' ids (those running now)."""
        return [link.process.pid for link in self.links if link.process.pid is not None]

    # ------------------------------------------------------------------ processes
    def _spawn(self, i: int) -> Link:
        mine, theirs = socket.socketpair()
        process = self.context.Process(
            target=main,
            args=(theirs, self.share, self.servers, self.cwd),
            name=f"llmdebate-worker-{i}",
            daemon=True,
        )
        try:
            process.start()
        finally:
            theirs.close()  # the worker's end lives in the worker only: its exit is our EOF
        return Link(process, mine, process.sentinel)

    async def _connect(self, link: Link) -> None:
        reader, writer = await asyncio.open_connection(sock=link.sock, limit=STREAM_LIMIT)
        link.writer = writer
        link.outbox = Outbox(writer)
        link.reading = asyncio.ensure_future(self._read(link, reader))
        loop = asyncio.get_running_loop()
        loop.add_reader(link.sentinel, self._exited, link)

    async def _open(self) -> None:
        for link in self.links:
            if link.outbox is None:
                await self._connect(link)

    def _exited(self, link: Link) -> None:
        """The worker's process ended: its socket says so at once, or is closed shortly."""
        loop = asyncio.get_running_loop()
        loop.remove_reader(link.sentinel)

        def close() -> None:
            if not link.dead and link.writer is not None:
                link.writer.transport.abort()

        loop.call_later(SENTINEL_GRACE, close)

    async def _read(self, link: Link, reader: asyncio.StreamReader) -> None:
        try:
            while True:
                for message in await read_frame(reader):
                    kind = message[0]
                    if kind == "done" or kind == "error":
                        fut = link.pending.pop(message[1], None)
                        if fut is None or fut.done():
                            continue
                        if kind == "done":
                            fut.set_result(message[2])
                        else:
                            fut.set_exception(WorkerError(message[2]))
                    elif kind == "ready":
                        link.pid = message[1]
                    elif kind == "fatal":
                        self.fatal = RunStopped(message[1], message[2])
        except (asyncio.IncompleteReadError, ConnectionError, OSError):
            pass  # the worker is gone
        except Exception as exc:  # a frame that cannot be read: as good as gone
            self.say(f"{self.worker_name} {link.pid}: unreadable reply ({exc!r}); stopping it")
            link.process.kill()
        self._down(link)

    def _down(self, link: Link) -> None:
        """The worker is gone: every debate it had in flight fails (and is sent again)."""
        link.dead = True
        for fut in link.pending.values():
            if not fut.done():
                fut.set_exception(self.fatal or WorkerDied())
        link.pending.clear()
        if link.writer is not None:
            link.writer.close()

    # ------------------------------------------------------------------ the pool's hooks
    def _submit(self, i: int, job: Job) -> asyncio.Future[Finished]:
        link = self.links[i]
        fut: asyncio.Future[Finished] = asyncio.get_running_loop().create_future()
        if self.fatal or link.dead or link.outbox is None:
            fut.set_exception(self.fatal or WorkerDied())
            return fut
        key = next(self.keys)
        link.pending[key] = fut
        link.outbox.put(("job", key, job))
        return fut

    def _is_death(self, exc: BaseException) -> bool:
        return isinstance(exc, WorkerDied)

    def _usable(self, i: int) -> bool:
        return not self.links[i].dead

    async def _recover(self, i: int) -> bool:
        """Start worker ``i`` again (at most MAX_RESTARTS times)."""
        old = self.links[i]
        if not old.dead:
            return True
        if self.fatal is not None or old.restarts >= MAX_RESTARTS:
            return False
        self._unlink(old)
        await asyncio.to_thread(_reap, [old.process], 1.0)
        link = self._spawn(i)
        link.restarts = old.restarts + 1
        self.links[i] = link
        self.restarts += 1
        await self._connect(link)
        self.say(f"{self.worker_name} {i} restarted ({link.restarts} of {MAX_RESTARTS})")
        return True

    async def aclose(self) -> None:
        """Tell every worker to stop, then join them (terminated after STOP_TIMEOUT)."""
        links, self.links = self.links, []
        for link in links:
            if link.outbox is not None and not link.dead:
                link.outbox.put(("stop",))
                link.outbox.flush()
        for link in links:
            if link.writer is not None and not link.dead:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(link.writer.drain(), STOP_TIMEOUT)
        for link in links:  # a worker that missed "stop" sees its socket close
            self._unlink(link)
        await asyncio.gather(
            *(link.reading for link in links if link.reading is not None),
            return_exceptions=True,
        )
        await asyncio.to_thread(_reap, [link.process for link in links], STOP_TIMEOUT)

    def _unlink(self, link: Link) -> None:
        """Stop watching a worker and close the driver's end of its socket."""
        with contextlib.suppress(Exception):
            asyncio.get_running_loop().remove_reader(link.sentinel)
        if link.reading is not None:
            link.reading.cancel()
        if link.writer is not None:
            link.writer.transport.abort()  # closes the socket it owns
        else:
            link.sock.close()


def _reap(processes: list[BaseProcess], timeout: float) -> None:
    """Join ``processes``: wait up to ``timeout`` seconds, then terminate, then kill."""
    deadline = time.monotonic() + timeout
    for p in processes:
        p.join(max(0.0, deadline - time.monotonic()))
    for p in processes:
        if p.is_alive():
            p.terminate()
            p.join(1.0)
        if p.is_alive():
            p.kill()
            p.join()
        with contextlib.suppress(ValueError):
            p.close()
