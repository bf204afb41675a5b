"""Debates on a Ray cluster: ``llmdebate run --executor ray [--ray-address ADDR]``.

The driver (the ``llmdebate run`` process) keeps the run directory, as with one process. It
starts ``workers`` Ray actors, each an asyncio process with its own models (and so its own
connection pools and response cache handle), a
:class:`~llmdebate.experiment.worker.DebateWorker`, and hands them jobs as every worker pool
does (:mod:`llmdebate.experiment.executors.pool`: at most ``max_concurrency`` debates in
flight over the cluster, each new one to the worker with the fewest; a dead worker's debates
sent again).

Failures:

* a worker that dies (its process killed, its node lost) takes its debates in flight with
  it: they are sent again, to a live worker; Ray restarts the dead one up to
  ``MAX_RESTARTS`` times, and it is back in rotation once it answers a probe;
* the driver killed: the actors go with it; running again with the same run id resumes.

Workers need llmdebate installed (the same version) and any API key variables set on their
nodes: keys are never sent through Ray. Paths in the config (prompts, cache, scripted
replies) are made absolute by the driver and must exist on the workers' nodes.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import time
from collections.abc import Callable
from typing import Any

from llmdebate.errors import UserError, require
from llmdebate.experiment.config import ExperimentConfig
from llmdebate.experiment.debate import Finished
from llmdebate.experiment.executors.executor import (
    ADDRESS,
    EXECUTORS,
    WORKERS,
    ExecutorOptions,
    RunContext,
)
from llmdebate.experiment.executors.pool import MAX_RESTARTS, WorkerPoolExecutor
from llmdebate.experiment.jobs import Job
from llmdebate.experiment.worker import DebateWorker, worker_config

RECOVER_S = 120.0
"""How long a restarting actor may take to answer again before its worker counts as dead."""
RECOVER_POLL_S = 0.2


def _ray() -> Any:
    return require("ray", "ray")


@EXECUTORS.register(
    "ray", capabilities={WORKERS, ADDRESS}, summary="a Ray cluster, with the llmdebate[ray] extra"
)
class RayExecutor(WorkerPoolExecutor):
    """Spreads the jobs over Ray workers; see the module docstring."""

    worker_name = "Ray worker"
    where = " on Ray workers"
    extra = "ray"

    @classmethod
    def create(cls, options: ExecutorOptions, run: RunContext) -> RayExecutor:
        return cls(
            run.config,
            run.servers,
            address=options.ray_address,
            workers=options.workers,
            concurrency=run.config.max_concurrency,
            say=run.say,
        )

    def __init__(
        self,
        config: ExperimentConfig,
        servers: dict[str, str | None],
        *,
        address: str | None = None,
        workers: int | None = None,
        concurrency: int = 4,
        say: Callable[[str], None] | None = None,
    ) -> None:
        super().__init__(config, servers, concurrency=concurrency, say=say)
        self.ray = _ray()
        self.address = address
        self.workers = workers
        self.actors: list[Any] = []
        self.started_ray = False
        self._start()  # in the main thread: Ray installs signal handlers there

    def _start(self) -> None:
        ray = self.ray
        if not ray.is_initialized():
            kwargs: dict[str, Any] = {
                "include_dashboard": False,
                "log_to_driver": False,
                "configure_logging": False,
            }
            if self.address:
                kwargs["address"] = self.address
            self.say("starting Ray…" if not self.address else f"joining Ray at {self.address}…")
            try:
                ray.init(**kwargs)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                where = f"the Ray cluster at {self.address}" if self.address else "Ray"
                raise UserError(f"--executor ray: cannot start {where}: {exc}") from exc
            self.started_ray = True
        cpus = max(1.0, float(ray.cluster_resources().get("CPU", 1)))
        n = self.workers or max(1, min(int(cpus), self.concurrency))
        per_worker = math.ceil(self.concurrency / n)
        remote = ray.remote(DebateWorker).options(
            num_cpus=min(1.0, cpus / n),
            max_concurrency=per_worker + 1,
            max_restarts=MAX_RESTARTS,
            max_task_retries=0,
            scheduling_strategy="SPREAD",
        )
        share = worker_config(self.config, n)
        self.actors = [remote.remote(share, self.servers, os.getcwd()) for _ in range(n)]
        self.n_workers = n

    def _submit(self, i: int, job: Job) -> asyncio.Future[Finished]:
        ray = self.ray
        ref = self.actors[i].run.remote(job)
        fut: asyncio.Future[Finished] = asyncio.wrap_future(ref.future())

        def cancel(f: asyncio.Future[Finished]) -> None:
            if f.cancelled():
                with contextlib.suppress(Exception):
                    ray.cancel(ref)

        fut.add_done_callback(cancel)
        return fut

    def _is_death(self, exc: BaseException) -> bool:
        errors = self.ray.exceptions
        return isinstance(exc, (errors.RayActorError, errors.WorkerCrashedError))

    async def _recover(self, i: int) -> bool:
        """Ray restarts a dead actor itself: wait until it answers. A call made while the
        actor is still restarting fails at once with ``ActorUnavailableError`` ("temporarily
        unavailable"), so ask again until it answers, its restarts run out, or
        :data:`RECOVER_S` pass."""
        unavailable = self.ray.exceptions.ActorUnavailableError
        deadline = time.monotonic() + RECOVER_S
        while True:
            try:
                await asyncio.wrap_future(self.actors[i].pid.remote().future())
            except unavailable:
                if time.monotonic() > deadline:
                    return False
                await asyncio.sleep(RECOVER_POLL_S)
            except Exception:
                return False
            else:
                return True

    async def aclose(self) -> None:
        ray = self.ray
        for actor in self.actors:
            with contextlib.suppress(Exception):
                ray.kill(actor, no_restart=True)
        self.actors = []
        if self.started_ray:
            await asyncio.to_thread(ray.shutdown)
            self.started_ray = False
