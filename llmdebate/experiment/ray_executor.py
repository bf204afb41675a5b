"""Debates on a Ray cluster: ``llmdebate run --executor ray [--ray-address ADDR]``.

The driver (the ``llmdebate run`` process) keeps the run directory, as with one process. It
starts ``workers`` Ray actors, each an asyncio process with its own models (and so its own
connection pools and response cache handle), and hands them jobs: at most
``max_concurrency`` debates in flight over the cluster, each new one to the worker with the
fewest. A worker runs a debate and sends back its finished transcript line; the driver
appends it (:func:`llmdebate.experiment.runner.drive`).

Failures:

* a worker that dies (its process killed, its node lost) takes its debates in flight with
  it: they are sent again, to a live worker (Ray restarts the dead one up to
  ``MAX_RESTARTS`` times). Only the driver writes, and a job's result is taken once, from
  the one call that is still awaited for it, so no debate is written twice; a debate whose
  worker died ``MAX_LOSSES`` times is recorded failed (``WorkerLost``) and retried on resume;
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
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from llmdebate.errors import UserError, require
from llmdebate.experiment.config import ExperimentConfig
from llmdebate.experiment.debate import (
    Finished,
    RunStopped,
    failed_transcript,
    finished,
)
from llmdebate.experiment.executors import Executor, OnFinished
from llmdebate.experiment.jobs import Job
from llmdebate.paths import resolve_path
from llmdebate.protocols.base import ProtocolSettings

MAX_RESTARTS = 4  # per worker
MAX_LOSSES = 3  # deaths of the worker running one debate before it is recorded failed


def _ray() -> Any:
    return require("ray", "ray")


def protocol_settings(config: ExperimentConfig) -> ProtocolSettings:
    return ProtocolSettings(
        debate=config.debate.model_copy(update={"seed": config.seed}),
        rounds=config.rounds,
        mode=config.mode,
    )


RATE_OPTIONS = ("requests_per_minute", "tokens_per_minute")


def worker_config(config: ExperimentConfig, workers: int) -> ExperimentConfig:
    """What each of ``workers`` workers runs: the run's limits shared out (requests in flight
    per model, requests and tokens per minute), so the cluster keeps to them as one process
    would; and the paths a worker reads made absolute, as the driver resolves them."""
    config = portable(config)
    update: dict[str, Any] = {}
    if config.model_concurrency is not None:
        update["model_concurrency"] = max(1, math.ceil(config.model_concurrency / workers))
    for role in ("prover", "estimator", "judge"):
        section = getattr(config, role)
        opts = dict(section.options)
        shared = {k: opts[k] / workers for k in RATE_OPTIONS if opts.get(k)}
        if shared:
            update[role] = section.model_copy(update={"options": {**opts, **shared}})
    return config.model_copy(update=update)


def portable(config: ExperimentConfig) -> ExperimentConfig:
    """``config`` with the paths a worker reads made absolute (as the driver resolves them)."""
    update: dict[str, Any] = {}
    if config.prompts_dir:
        update["prompts_dir"] = str(resolve_path(config.prompts_dir).resolve())
    if config.cache_dir:
        update["cache_dir"] = str(resolve_path(config.cache_dir).resolve())
    for role in ("prover", "estimator", "judge"):
        section = getattr(config, role)
        opts = dict(section.options)
        changed = False
        for key, value in opts.items():
            if isinstance(value, str) and ".py:" in value:
                file, _, attr = value.rpartition(":")
                opts[key] = f"{resolve_path(file).resolve()}:{attr}"
                changed = True
        if changed:
            update[role] = section.model_copy(update={"options": opts})
    return config.model_copy(update=update)


class DebateWorker:
    """One Ray actor: the run's models and agents, built once, running debates concurrently."""

    def __init__(
        self, config: ExperimentConfig, servers: dict[str, str | None], cwd: str
    ) -> None:
        from llmdebate.agents.factory import Team, build_models
        from llmdebate.experiment.runner import servers_of
        from llmdebate.prompts import Prompts

        if os.path.isdir(cwd):
            os.chdir(cwd)  # relative paths as the driver sees them, where the node has them
        import gc

        from llmdebate.experiment.runner import GC_THRESHOLDS

        gc.freeze()  # as the driver does while debates run (runner.lean_gc)
        gc.set_threshold(*GC_THRESHOLDS)
        self.models = build_models(
            config.role_settings(),
            cache_dir=config.cache_dir,
            use_cache=config.use_cache,
            model_concurrency=config.model_concurrency,
            max_retries=config.max_retries,
        )
        mine = servers_of(self.models)
        self.mismatch = next(
            (
                f"a Ray worker on {os.uname().nodename} reaches the {role} at {mine.get(role)}, "
                f"the driver at {url}: set the same base URL (or $OPENAI_BASE_URL) on every node"
                for role, url in servers.items()
                if mine.get(role) != url
            ),
            None,
        )
        prompts = Prompts(config.prompts_dir)
        self.team = Team(self.models, prompts, config.prover, config.estimator, config.judge)
        self.settings = protocol_settings(config)
        self.servers = servers

    def pid(self) -> int:
        return os.getpid()

    async def run(self, job: Job) -> Finished:
        from llmdebate.experiment.debate import finish

        if self.mismatch:
            return Finished(job.spec.debate_id, b"", "", 0, stop=(self.mismatch, 2))
        return await finish(job, self.team, self.settings, self.servers)


class RayExecutor(Executor):
    """Spreads the jobs over Ray workers; see the module docstring."""

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
        self.ray = _ray()
        self.config = config
        self.servers = servers
        self.address = address
        self.workers = workers
        self.concurrency = concurrency
        self.say = say or (lambda message: None)
        self.actors: list[Any] = []
        self.started_ray = False
        self.resent = 0
        self.n_workers = 0
        self._start()  # in the main thread: Ray installs signal handlers there

    def stats(self) -> dict[str, Any]:
        return {"ray_workers": self.n_workers, "debates_resent": self.resent}

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

    async def run(self, jobs: Sequence[Job], on_finished: OnFinished) -> None:
        ray = self.ray
        queue: deque[Job] = deque(jobs)
        losses: dict[str, int] = {}
        load = [0] * len(self.actors)
        out: set[int] = set()  # workers that died: out of rotation until a probe answers
        dead: set[int] = set()  # workers Ray will not bring back
        waiting: dict[asyncio.Future[Any], tuple[Any, Job, int]] = {}
        probes: dict[asyncio.Future[Any], int] = {}

        def submit() -> None:
            while queue and len(waiting) < self.concurrency:
                alive = [i for i in range(len(self.actors)) if i not in out]
                if not alive:
                    if len(dead) == len(self.actors):
                        raise RunStopped("every Ray worker died; run again to resume")
                    return  # wait for a restarted worker
                i = min(alive, key=load.__getitem__)
                job = queue.popleft()
                ref = self.actors[i].run.remote(job)
                waiting[asyncio.wrap_future(ref.future())] = (ref, job, i)
                load[i] += 1

        def probe(i: int) -> None:
            if i not in out:
                out.add(i)
                probes[asyncio.wrap_future(self.actors[i].pid.remote().future())] = i

        try:
            submit()
            while waiting or probes:
                done, _ = await asyncio.wait(
                    [*waiting, *probes], return_when=asyncio.FIRST_COMPLETED
                )
                for fut in done:
                    if fut in probes:
                        i = probes.pop(fut)
                        if fut.exception() is None:
                            out.discard(i)  # restarted: back in rotation
                        else:
                            dead.add(i)
                        continue
                    _, job, i = waiting.pop(fut)
                    load[i] -= 1
                    try:
                        result: Finished = fut.result()
                    except (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError):
                        if i not in out:
                            self.say(f"Ray worker {i} died; its debates in flight run again")
                        probe(i)
                        self._lost(job, losses, queue, on_finished)
                        continue
                    if result.stop is not None:
                        raise RunStopped(*result.stop)
                    on_finished(result)
                submit()
                if queue and not waiting and not probes:
                    raise RunStopped("every Ray worker died; run again to resume")
        finally:
            for ref, _, _ in waiting.values():
                with contextlib.suppress(Exception):
                    ray.cancel(ref)
            for fut in [*waiting, *probes]:
                fut.cancel()

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
            f"WorkerLost: the Ray worker running this debate died {losses[key]} times",
        )
        t.meta.update(job.spec.meta())
        on_finished(finished(t, self.servers, server_failure=True))

    async def aclose(self) -> None:
        ray = self.ray
        for actor in self.actors:
            with contextlib.suppress(Exception):
                ray.kill(actor, no_restart=True)
        self.actors = []
        if self.started_ray:
            await asyncio.to_thread(ray.shutdown)
            self.started_ray = False
