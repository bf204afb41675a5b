"""What a worker of a multi-process executor runs: the run's models and agents, built once.

Every worker, a Ray actor (:mod:`llmdebate.experiment.executors.ray`) or a local process
(:mod:`llmdebate.experiment.executors.processes`), is a :class:`DebateWorker` built from
:func:`worker_config`: the run's limits shared out between the workers, the paths it reads
made absolute as the driver resolves them.
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Callable
from typing import Any

from llmdebate.agents.factory import Team, build_models
from llmdebate.agents.settings import ModelSettings
from llmdebate.experiment.config import ExperimentConfig
from llmdebate.experiment.debate import Finished, finish
from llmdebate.experiment.jobs import Job
from llmdebate.experiment.runtime import protocol_settings, quiet_gc, servers_of
from llmdebate.prompts import Prompts
from llmdebate.protocols.topology import register_topology
from llmdebate.records.paths import resolve_path

RATE_OPTIONS = ("requests_per_minute", "tokens_per_minute")


def each_model(
    config: ExperimentConfig, change: Callable[[ModelSettings], ModelSettings | None]
) -> ExperimentConfig:
    """``config`` with ``change`` applied to the model settings of every role, seat and roster
    model (None: unchanged)."""
    update: dict[str, Any] = {}
    for role in ("prover", "estimator", "judge"):
        changed = change(getattr(config, role))
        if changed is not None:
            update[role] = changed
    seats = {k: change(s) or s for k, s in config.seats.items()}
    if seats != config.seats:
        update["seats"] = seats
    t = config.tournament
    roster = {k: change(s) or s for k, s in t.roster.items()}
    if roster != t.roster:
        update["tournament"] = t.model_copy(update={"roster": roster})
    return config.model_copy(update=update)


def worker_config(config: ExperimentConfig, workers: int) -> ExperimentConfig:
    """What each of ``workers`` workers runs: the run's limits shared out (requests in flight
    per model, requests and tokens per minute), so the workers keep to them as one process
    would; and the paths a worker reads made absolute, as the driver resolves them."""
    config = portable(config)
    if config.model_concurrency is not None:
        config = config.model_copy(
            update={"model_concurrency": max(1, math.ceil(config.model_concurrency / workers))}
        )

    def share(section: ModelSettings) -> ModelSettings | None:
        opts = dict(section.options)
        shared = {k: opts[k] / workers for k in RATE_OPTIONS if opts.get(k)}
        return section.model_copy(update={"options": {**opts, **shared}}) if shared else None

    return each_model(config, share)


def _absolute(section: ModelSettings) -> ModelSettings | None:
    opts = dict(section.options)
    changed = False
    for key, value in opts.items():
        if isinstance(value, str) and ".py:" in value:
            file, _, attr = value.rpartition(":")
            opts[key] = f"{resolve_path(file).resolve()}:{attr}"
            changed = True
    return section.model_copy(update={"options": opts}) if changed else None


def portable(config: ExperimentConfig) -> ExperimentConfig:
    """``config`` with the paths a worker reads made absolute (as the driver resolves them)."""
    update: dict[str, Any] = {}
    if config.prompts_dir:
        update["prompts_dir"] = str(resolve_path(config.prompts_dir).resolve())
    if config.cache_dir:
        update["cache_dir"] = str(resolve_path(config.cache_dir).resolve())
    return each_model(config.model_copy(update=update), _absolute)


class DebateWorker:
    """One worker: the run's models and agents, built once, running debates concurrently.

    ``servers`` are the server URLs the driver reaches; a worker that reaches another one
    (a different ``$OPENAI_BASE_URL`` on its node) answers every job with a stop.
    """

    def __init__(
        self, config: ExperimentConfig, servers: dict[str, str | None], cwd: str
    ) -> None:
        if os.path.isdir(cwd):
            os.chdir(cwd)  # relative paths as the driver sees them, where the node has them
        quiet_gc()  # as the driver does while debates run (runtime.lean_gc)
        for name, topology in config.topologies.items():  # as reading the config did
            register_topology(name, topology)
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
                f"a worker on {os.uname().nodename} reaches the {role} at {mine.get(role)}, "
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
        if self.mismatch:
            return Finished(job.spec.debate_id, b"", "", 0, stop=(self.mismatch, 2))
        return await finish(job, self.team, self.settings, self.servers)

    async def aclose(self) -> None:
        """Close the models' connections (best effort)."""
        for m in {id(m): m for m in self.models.values()}.values():
            with contextlib.suppress(Exception):
                await m.aclose()
