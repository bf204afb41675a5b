"""Where the debates of a run execute: in this process (asyncio), in worker processes on this
machine, or on a Ray cluster.

An :class:`Executor` takes the jobs still to run and calls ``on_finished`` in the driver
for each one as it finishes, with a :class:`~llmdebate.experiment.debate.Finished` (the
transcript line and its status). The driver alone writes the run directory, counts the
circuit breaker's strikes and decides to stop: ``on_finished`` raises
:class:`~llmdebate.experiment.debate.RunStopped`, and the executor then cancels the debates in
flight (a resume re-runs them) and re-raises it. So resume, the failure policy and the summary
are the same whichever executor ran the debates.

* :class:`LocalExecutor`: ``max_concurrency`` debates at a time on this event loop, sharing
  the run's models (one connection pool per model);
* :class:`~llmdebate.experiment.process_executor.ProcessExecutor` (``--executor processes
  --workers N``): worker processes on this machine, each with its own models and connection
  pools and its own event loop (one machine, many cores, a fast local server);
* :class:`~llmdebate.experiment.ray_executor.RayExecutor` (``--executor ray``, the
  ``llmdebate[ray]`` extra): worker processes across a cluster, each with its own models and
  connection pools.

Both multi-process executors share one scheduler (:mod:`llmdebate.experiment.pool`).
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from llmdebate.agents.factory import Team
from llmdebate.errors import UserError
from llmdebate.experiment.config import ExperimentConfig
from llmdebate.experiment.debate import Finished, RunStopped, finish
from llmdebate.experiment.jobs import Job
from llmdebate.protocols.base import ProtocolSettings

EXECUTORS = ("local", "ray", "processes")
POOLS = ("processes", "ray")  # the executors with worker processes

OnFinished = Callable[[Finished], None]
"""Called in the driver for every finished job; raises RunStopped to stop the run."""


@dataclass
class ExecutorOptions:
    """How to execute a run (no part of the experiment: a resume may change them)."""

    kind: str = "local"
    ray_address: str | None = None
    """Address of a running Ray cluster (``auto``, ``ray://host:10001``); None: start a
    local Ray instance."""
    ray_workers: int | None = None
    """The old name of ``workers`` (``--ray-workers``), kept for compatibility."""
    workers: int | None = None
    """Worker processes (default: the CPUs of this machine, or of the Ray cluster, at most
    ``max_concurrency``)."""

    def __post_init__(self) -> None:
        if self.kind not in EXECUTORS:
            raise UserError(f"--executor must be one of {', '.join(EXECUTORS)} (got {self.kind!r})")
        if self.ray_workers is not None:
            if self.workers is not None and self.workers != self.ray_workers:
                raise UserError(
                    f"--workers {self.workers} and --ray-workers {self.ray_workers} differ "
                    "(--ray-workers is the old name of --workers): give one"
                )
            self.workers = self.ray_workers
        if self.workers is not None and self.workers < 1:
            raise UserError(f"--workers must be >= 1 (got {self.workers})")
        if self.ray_address and self.kind != "ray":
            raise UserError(f"--ray-address needs --executor ray (got --executor {self.kind})")
        if self.workers is not None and self.kind not in POOLS:
            raise UserError(
                f"--workers needs --executor processes or ray (got --executor {self.kind}, "
                "which runs every debate in this process)"
            )


class Executor(ABC):
    """Runs jobs and reports each one to the driver as it finishes."""

    @abstractmethod
    async def run(self, jobs: Sequence[Job], on_finished: OnFinished) -> None:
        """Run every job; raise the :class:`RunStopped` that ``on_finished`` or a job raised
        (after cancelling the jobs in flight)."""

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release workers and connections."""

    def stats(self) -> dict[str, Any]:
        """Figures for the summary's ``last_invocation`` (e.g. debates sent again)."""
        return {}


class LocalExecutor(Executor):
    """``concurrency`` debates at a time on the running event loop."""

    def __init__(
        self,
        team: Team,
        settings: ProtocolSettings,
        servers: dict[str, str | None],
        concurrency: int,
    ) -> None:
        self.team = team
        self.settings = settings
        self.servers = servers
        self.concurrency = concurrency

    async def run(self, jobs: Sequence[Job], on_finished: OnFinished) -> None:
        pending = deque(jobs)
        stop: list[RunStopped] = []

        async def worker() -> None:
            while pending and not stop:
                job = pending.popleft()
                done = await finish(job, self.team, self.settings, self.servers)
                try:
                    if done.stop is not None:
                        raise RunStopped(*done.stop)
                    on_finished(done)
                except RunStopped as exc:
                    stop.append(exc)
                    return

        workers = [asyncio.ensure_future(worker()) for _ in range(min(self.concurrency, len(jobs)))]
        try:
            while workers:
                done, _ = await asyncio.wait(workers, return_when=asyncio.FIRST_COMPLETED)
                for w in done:
                    w.result()  # a defect in the runner itself propagates
                workers = [w for w in workers if not w.done()]
                if stop:
                    break
        finally:
            for w in workers:
                w.cancel()
            await asyncio.gather(*workers, return_exceptions=True)
        if stop:
            raise stop[0]


def make_executor(
    options: ExecutorOptions,
    *,
    config: ExperimentConfig,
    team: Team,
    settings: ProtocolSettings,
    servers: dict[str, str | None],
    say: Callable[[str], None] | None = None,
) -> Executor:
    """The executor ``options`` name (Ray is imported only here, and only for ``ray``)."""
    if options.kind == "processes":
        from llmdebate.experiment.process_executor import ProcessExecutor

        return ProcessExecutor(
            config, servers, workers=options.workers, concurrency=config.max_concurrency, say=say
        )
    if options.kind == "ray":
        from llmdebate.experiment.ray_executor import RayExecutor

        return RayExecutor(
            config,
            servers,
            address=options.ray_address,
            workers=options.workers,
            concurrency=config.max_concurrency,
            say=say,
        )
    return LocalExecutor(team, settings, servers, config.max_concurrency)
