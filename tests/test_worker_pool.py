"""The scheduler every multi-process executor shares (:mod:`llmdebate.experiment.executors.pool`),
with workers simulated on the event loop: whatever workers die and when, every job is reported
exactly once, in-flight work stays within ``concurrency``, and a stop cancels the rest."""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from llmdebate.data import load_items
from llmdebate.experiment.config import ExperimentConfig
from llmdebate.experiment.debate import Finished, RunStopped
from llmdebate.experiment.executors.pool import MAX_LOSSES, WorkerPoolExecutor
from llmdebate.experiment.jobs import Job, make_jobs
from llmdebate.experiment.loading import validate

DIVISORS = Path(__file__).resolve().parents[1] / "datasets" / "divisors.jsonl"


class Died(Exception):
    pass


class SimulatedPool(WorkerPoolExecutor):
    """Workers as coroutines: a job takes a few loop turns; the ``deaths`` script says which
    submissions kill their worker (every job it holds fails); ``lives`` restarts each."""

    def __init__(
        self,
        config: ExperimentConfig,
        workers: int,
        concurrency: int,
        deaths: set[int],
        lives: int,
    ) -> None:
        super().__init__(config, {}, concurrency=concurrency)
        self.n_workers = workers
        self.deaths = deaths
        self.lives = [lives] * workers
        self.held: list[list[asyncio.Future[Finished]]] = [[] for _ in range(workers)]
        self.down = [False] * workers
        self.submitted = 0
        self.all: list[asyncio.Future[Finished]] = []
        self.tasks: set[asyncio.Task[None]] = set()
        self.peak = 0
        self.rng = random.Random(0)

    def _submit(self, i: int, job: Job) -> asyncio.Future[Finished]:
        fut: asyncio.Future[Finished] = asyncio.get_running_loop().create_future()
        n, self.submitted = self.submitted, self.submitted + 1
        self.held[i].append(fut)
        self.all.append(fut)
        self.peak = max(self.peak, sum(not f.done() for f in self.all))
        task = asyncio.ensure_future(self._work(i, job, fut, dies=n in self.deaths))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return fut

    async def _work(self, i: int, job: Job, fut: asyncio.Future[Finished], dies: bool) -> None:
        for _ in range(self.rng.randint(1, 4)):
            await asyncio.sleep(0)
        if fut.done():
            return
        if dies:
            self.down[i] = True
            for f in self.held[i]:
                if not f.done():
                    f.set_exception(Died())
            self.held[i] = []
            return
        line = json.dumps({"id": job.spec.debate_id, "status": "complete"}).encode() + b"\n"
        fut.set_result(Finished(job.spec.debate_id, line, "complete", 1))

    def _is_death(self, exc: BaseException) -> bool:
        return isinstance(exc, Died)

    def _usable(self, i: int) -> bool:
        return not self.down[i]

    async def _recover(self, i: int) -> bool:
        await asyncio.sleep(0)
        if not self.down[i]:
            return True
        if self.lives[i] == 0:
            return False
        self.lives[i] -= 1
        self.down[i] = False
        return True


@pytest.fixture(scope="module")
def jobs_and_config() -> tuple[list[Job], ExperimentConfig]:
    config = validate({"dataset": {"path": str(DIVISORS), "limit": 10}})
    return make_jobs(load_items(DIVISORS, limit=10), config), config


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    workers=st.integers(1, 4),
    concurrency=st.integers(1, 8),
    deaths=st.sets(st.integers(0, 40), max_size=8),
    lives=st.integers(0, 3),
)
def test_every_job_is_reported_once_whatever_workers_die(
    jobs_and_config: tuple[list[Job], ExperimentConfig],
    workers: int,
    concurrency: int,
    deaths: set[int],
    lives: int,
) -> None:
    jobs, config = jobs_and_config
    pool = SimulatedPool(config, workers, concurrency, deaths, lives)
    got: list[Finished] = []
    try:
        asyncio.run(pool.run(jobs, got.append))
    except RunStopped as exc:
        event("every worker died")
        assert "every worker died" in exc.reason
        assert len(deaths) > lives  # only when the deaths outnumber the restarts
        assert all(pool.down[i] and pool.lives[i] == 0 for i in range(workers))
    else:
        assert sorted(f.debate_id for f in got) == sorted(j.spec.debate_id for j in jobs)
        lost = [f for f in got if f.status == "failed"]
        event(f"resent: {min(pool.resent, 3)}, lost: {min(len(lost), 1)}")
        assert all("WorkerLost" in (f.failure or "") and f.server_failure for f in lost)
        assert pool.submitted == len(jobs) + pool.resent  # each resend is one more submission
    ids = [f.debate_id for f in got]
    assert len(ids) == len(set(ids)), "a job was reported twice"
    assert pool.peak <= concurrency
    assert pool.stats()["workers"] == workers


def test_a_job_whose_worker_keeps_dying_is_recorded_lost(
    jobs_and_config: tuple[list[Job], ExperimentConfig],
) -> None:
    jobs, config = jobs_and_config
    pool = SimulatedPool(config, 1, 1, deaths={0, 1, 2}, lives=5)
    got: list[Finished] = []
    asyncio.run(pool.run(jobs[:2], got.append))
    first = next(f for f in got if f.debate_id == jobs[0].spec.debate_id)
    assert first.status == "failed" and first.server_failure
    assert f"WorkerLost: the worker running this debate died {MAX_LOSSES} times" in str(
        first.failure
    )
    assert b'"status":"failed"' in first.line
    assert pool.resent == MAX_LOSSES - 1
    assert [f.status for f in got if f is not first] == ["complete"]


def test_a_stop_cancels_the_jobs_in_flight(
    jobs_and_config: tuple[list[Job], ExperimentConfig],
) -> None:
    jobs, config = jobs_and_config
    pool = SimulatedPool(config, 2, 4, deaths=set(), lives=0)
    got: list[Finished] = []

    def on_finished(f: Finished) -> None:
        got.append(f)
        if len(got) == 3:
            raise RunStopped("enough", 3)

    async def go() -> list[asyncio.Future[Finished]]:
        with pytest.raises(RunStopped, match="enough"):
            await pool.run(jobs, on_finished)
        return [f for held in pool.held for f in held]

    held = asyncio.run(go())
    assert len(got) == 3 and pool.submitted < len(jobs)
    assert all(f.done() for f in held) and any(f.cancelled() for f in held)
