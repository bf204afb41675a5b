"""``--executor local``: the debates on this process's event loop (the default)."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Sequence

from llmdebate.agents.factory import Team
from llmdebate.experiment.debate import RunStopped, finish
from llmdebate.experiment.executors.executor import (
    EXECUTORS,
    IN_PROCESS,
    Executor,
    ExecutorOptions,
    OnFinished,
    RunContext,
)
from llmdebate.experiment.jobs import Job
from llmdebate.protocols.spec import ProtocolSettings


@EXECUTORS.register("local", capabilities={IN_PROCESS}, summary="this process")
class LocalExecutor(Executor):
    """``concurrency`` debates at a time on the running event loop, sharing the run's models
    (one connection pool per model)."""

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

    @classmethod
    def create(cls, options: ExecutorOptions, run: RunContext) -> LocalExecutor:
        return cls(run.team, run.settings, run.servers, run.config.max_concurrency)

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
