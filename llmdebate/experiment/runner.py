"""The one runner: every debate of an experiment, concurrent, resumable, with one failure policy.

Order of work: the config is validated, the dataset read, the prompts and the models built —
and only then is anything written, so a run that cannot start leaves nothing behind and can
be re-run under the same id with corrected settings.

Resume: debates already in ``transcripts.jsonl`` as complete (or awaiting a verdict) are
skipped; failed ones are moved to ``failures.jsonl`` and run again. After a SIGKILL only the
debates in flight are lost (a torn last line is cut off); nothing is duplicated.

Failure policy. A debate is recorded ``failed`` with its reason when the failure belongs to
it: invalid model output, a protocol violation, a request the server rejected (too long,
filtered), a call that exhausted its retries, an item with no wrong answer. The run stops —
cancelling the debates in flight, which a resume re-runs — only for what no debate can
survive: a :class:`~llmdebate.errors.FatalModelError` (bad credentials, unknown model), a
user error met at run time (a missing extra, a method the backend lacks), or
``max_consecutive_failures`` debates in a row failing on the server (the circuit breaker).
``summary.json`` is written however the run ends: Ctrl-C and SIGTERM stop it as the circuit
breaker does, with exit code 130 or 143 (:mod:`llmdebate.experiment.interrupts`).

Where debates run is an executor's business (:mod:`llmdebate.experiment.executors`: this
process, worker processes, or Ray workers); whichever it is, this process alone writes the run
directory (:func:`drive`), so all of the above holds for each. Finished transcripts stream to
disk as they come: memory stays flat however many debates a run holds, and the summary at the
end reads them back one at a time, keeping a few numbers of each
(:class:`~llmdebate.report.records.RunTally`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from llmdebate.agents.factory import Team, build_models
from llmdebate.core.schemas import Transcript
from llmdebate.data import Item
from llmdebate.errors import UserError
from llmdebate.experiment.config import ExperimentConfig
from llmdebate.experiment.debate import Finished, RunStopped
from llmdebate.experiment.estimate import refuse_large
from llmdebate.experiment.executors import (
    Executor,
    ExecutorOptions,
    RunContext,
    make_executor,
)
from llmdebate.experiment.interrupts import interrupted, main_task, sigterm_cancels, terminated
from llmdebate.experiment.items import load_run_items
from llmdebate.experiment.jobs import Job
from llmdebate.experiment.loading import check_templates, differences, dump, validate
from llmdebate.experiment.plan import Plan
from llmdebate.experiment.progress import Progress
from llmdebate.experiment.runtime import (
    begin_enforcement,
    enforcement_summary,
    lean_gc,
    protocol_settings,
    servers_of,
)
from llmdebate.experiment.warnings_log import warnings_to_log
from llmdebate.models import Model
from llmdebate.models.wrapper import requests_sent
from llmdebate.prompts import Prompts
from llmdebate.records.paths import resolve_path
from llmdebate.records.redact import is_protected
from llmdebate.records.rundir import (
    CONFIG_FILE,
    SUMMARY_FILE,
    TRANSCRIPTS_FILE,
    read_run_config,
    repair_transcripts,
    retire_failed,
    statuses,
    write_atomic,
)
from llmdebate.records.transcripts import TranscriptWriter, iter_transcripts
from llmdebate.report.metrics import summary_of, tally


@dataclass
class RunResult:
    """What one invocation of a run came to: ``ran`` debates finished now (complete, awaiting
    a verdict or failed), ``skipped`` already done before; the debates of the run with no
    line yet (never started, or cancelled when the run stopped) are ``summary["missing"]``."""

    run_dir: Path
    ran: int
    skipped: int
    wall_s: float
    summary: dict[str, Any]
    stopped: str | None = None
    stop_exit_code: int = 1

    @property
    def failed(self) -> int:
        return int(self.summary["status"].get("failed", 0))

    @property
    def awaiting(self) -> int:
        return int(self.summary["status"].get("awaiting_verdict", 0))

    @property
    def exit_code(self) -> int:
        """0: every debate complete or awaiting a person's verdict (the expected end of a
        human-judge run); 1: any failed or missing, or the run stopped; 2: user error (bad
        credentials met at run time)."""
        if self.stopped:
            return self.stop_exit_code
        return 1 if self.failed or self.summary["missing"] else 0


def default_run_id(config: ExperimentConfig) -> str:
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", config.name).strip("-") or "run"
    return f"{name}-{datetime.now().strftime('%Y%m%d-%H%M%S')}"


def _sayer(progress: bool) -> Callable[[str], None]:
    """Where the run's messages go: standard error, or nowhere with ``progress`` off."""

    def say(message: str) -> None:
        if progress:
            print(message, file=sys.stderr, flush=True)

    return say


def _count(n: int, noun: str) -> str:
    """``1 debate``, ``2 debates``."""
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _prepare_models(models: dict[str, Model], say: Callable[[str], None]) -> None:
    """Load local weights before the clock starts, saying so once per copy of the weights
    (the first load takes a while; the roles on the same weights share them)."""
    seen: set[int] = set()
    said: set[Path | None] = set()
    for m in models.values():
        if id(m) in seen or not m.backend.profile.load:
            continue
        seen.add(id(m))
        weights = m.backend.weights_dir
        if weights is not None and weights in said:
            m.backend.load()  # the same weights: only its adapters are added
            continue
        said.add(weights)
        first = weights is not None and not weights.exists()
        say(
            f"preparing {m.name}: "
            + (
                "dequantising the weights once (about a minute on 2 cores)…"
                if first
                else "loading the weights…"
            )
        )
        m.backend.load()


def check_resume(
    run_dir: Path,
    config: ExperimentConfig,
    servers: dict[str, str | None],
    allow_server_change: bool,
) -> bool:
    """Whether ``run_dir`` may take ``config``; True if it already holds debates to keep."""
    if not (run_dir / CONFIG_FILE).exists():
        return False
    saved = read_run_config(run_dir)
    saved_servers = saved.pop("servers", {}) or {}
    kept = {s for s in statuses(run_dir / TRANSCRIPTS_FILE).values() if s != "failed"}
    if not kept:  # nothing to keep: a run that failed at start takes new settings
        return False
    old = validate(saved, file=run_dir / CONFIG_FILE)
    diff = differences(old, config)
    if diff:
        raise UserError(
            f"{run_dir} was started with a different configuration ({', '.join(diff[:4])} "
            "differ): resume with the same settings or use a new run id"
        )
    moved = {
        r: (saved_servers.get(r), u)
        for r, u in servers.items()
        if r in saved_servers and saved_servers.get(r) != u
    }
    if moved and not allow_server_change:
        role, (was, now) = next(iter(moved.items()))
        raise UserError(
            f"{run_dir} was run against {was} for the {role}, now {now}: debates from two "
            "servers would mix; pass --allow-server-change to resume anyway"
        )
    return True


async def drive(
    executor: Executor,
    jobs: list[Job],
    out: Path,
    *,
    max_consecutive_failures: int,
    on_done: Callable[[Finished], None],
) -> None:
    """Run ``jobs`` on ``executor``, appending each transcript line as it finishes.

    The driver's half of every executor: it alone writes ``out``, counts the debates failing
    in a row on the server (the circuit breaker), and raises :class:`RunStopped` (after the
    executor cancelled the debates in flight) when the run cannot go on; every line already
    appended stays.
    """
    strikes = 0

    def on_finished(f: Finished) -> None:
        nonlocal strikes
        writer.write(f.line)
        on_done(f)
        strikes = strikes + 1 if f.server_failure else 0
        if strikes >= max_consecutive_failures:
            raise RunStopped(
                f"{strikes} debates in a row failed on the server (last: {f.failure}); "
                "stopped by max_consecutive_failures"
            )

    with TranscriptWriter(out) as writer:
        await executor.run(jobs, on_finished)


def run(
    config: ExperimentConfig,
    run_dir: str | Path | None = None,
    *,
    run_id: str | None = None,
    models: dict[str, Model] | None = None,
    progress: bool = True,
    allow_server_change: bool = False,
    executor: ExecutorOptions | None = None,
    allow_large: bool = True,
) -> RunResult:
    """Run (or resume) every debate of ``config`` in ``run_dir``; write the summary.

    ``executor`` says where the debates run (default: this process); ``models`` (prebuilt
    models, e.g. scripted ones) work only in an executor that runs debates in this process.
    ``allow_large`` false: a run whose debates would make very many model calls is refused
    with the estimate (:mod:`llmdebate.experiment.estimate`).
    """
    start = time.perf_counter()
    executor = executor or ExecutorOptions()
    if not executor.in_process and models is not None:
        raise UserError(f"prebuilt models run only in this process, not on {executor.kind}")
    executor.executor.check()  # a missing extra is named before anything runs
    run_dir = Path(run_dir) if run_dir is not None else (
        Path(config.runs_dir) / (run_id or default_run_id(config))
    )
    prompts = Prompts(resolve_path(config.prompts_dir) if config.prompts_dir else None)
    check_templates(config)  # a topology's template that cannot render stops it here
    items = _items(config)
    if any(is_protected(it) for it in items):  # no on-disk cache of protected text
        config = config.model_copy(update={"use_cache": False})
    plan = Plan(items, config)
    jobs = plan.jobs()
    if not allow_large:  # refused with its estimate before any model is loaded
        refuse_large(jobs, config)
    own_models = models is None
    models = models if models is not None else _build_models(config)
    servers = servers_of(models)
    resuming = check_resume(run_dir, config, servers, allow_server_change)
    # --- from here on, the run directory is written
    retried = _open_run_dir(run_dir, config, servers, resuming)
    out = run_dir / TRANSCRIPTS_FILE
    jobs = plan.jobs(out)
    done = statuses(out)
    todo = [j for j in jobs if j.spec.debate_id not in done]
    skipped = len(jobs) - len(todo)
    context = RunContext(
        config=config,
        team=Team(models, prompts, config.prover, config.estimator, config.judge),
        settings=protocol_settings(config),
        servers=servers,
        say=_sayer(progress),
    )
    invocation = Invocation()
    sent_before = requests_sent(models.values())
    if todo:
        invocation = _run_todo(
            plan, jobs, todo, run_dir, executor, context, progress,
            models=models, closing=models if own_models else {}, retried=retried,
        )
        jobs = plan.jobs(out)
    summary = write_summary(run_dir, jobs, config, invocation.stopped)
    _record_invocation(
        summary, invocation, executor, models, sent_before,
        debates=len(jobs), skipped=skipped, retried=retried, start=start,
    )
    write_atomic(run_dir / SUMMARY_FILE, json.dumps(summary, indent=2) + "\n")
    stopped = invocation.stopped
    return RunResult(
        run_dir,
        invocation.finished,
        skipped,
        time.perf_counter() - start,
        summary,
        stopped=stopped.reason if stopped else None,
        stop_exit_code=stopped.exit_code if stopped else 1,
    )


def _open_run_dir(
    run_dir: Path, config: ExperimentConfig, servers: dict[str, str | None], resuming: bool
) -> int:
    """Start writing ``run_dir``: its config (with the servers), its transcripts repaired
    after a crash and its failed debates set aside to run again; how many were set aside."""
    run_dir.mkdir(parents=True, exist_ok=True)
    begin_enforcement(run_dir, resuming)
    write_atomic(
        run_dir / CONFIG_FILE,
        yaml.safe_dump({**dump(config), "servers": servers}, sort_keys=False),
    )
    repair_transcripts(run_dir / TRANSCRIPTS_FILE)
    return retire_failed(run_dir)


def _run_todo(
    plan: Plan,
    jobs: list[Job],
    todo: list[Job],
    run_dir: Path,
    executor: ExecutorOptions,
    context: RunContext,
    progress: bool,
    *,
    models: dict[str, Model],
    closing: dict[str, Model],
    retried: int,
) -> Invocation:
    """Load the models (in this process), say what is to run, and run ``todo`` with the other
    packages' warnings in the run's log; ``closing``: the models to close afterwards (those the
    run built). Ctrl-C while the models load ends the invocation as stopped."""
    invocation = Invocation()
    say = context.say
    with warnings_to_log(run_dir), sigterm_cancels():
        try:
            if executor.in_process:
                _prepare_models(models, say)
            say(
                f"{run_dir}: {_count(len(todo), 'debate')} to run "
                f"({len(jobs) - len(todo)} done"
                + (f", {retried} failed ones retried" if retried else "")
                + f"), {context.config.max_concurrency} at a time{executor.executor.where}"
            )
            invocation = _execute_plan(
                plan, jobs, todo, executor, context, run_dir / TRANSCRIPTS_FILE, progress,
                closing,
            )
        except KeyboardInterrupt as exc:  # before the debates began (loading the models)
            invocation.stopped = interrupted(exc)
    return invocation


def _record_invocation(
    summary: dict[str, Any],
    invocation: Invocation,
    executor: ExecutorOptions,
    models: dict[str, Model],
    sent_before: int,
    *,
    debates: int,
    skipped: int,
    retried: int,
    start: float,
) -> None:
    """Add to ``summary`` what this invocation did (``last_invocation``: debates run, not run,
    skipped and retried, where, the requests sent, the time) and, run in this process, the
    structured outputs' verdicts."""
    verdicts, probes = enforcement_summary()  # this process's: workers keep their own
    summary["structured_outputs"] = verdicts if executor.in_process else None
    summary["last_invocation"].update(
        probe_requests=probes if executor.in_process else None,
        debates_run=invocation.finished,
        debates_not_run=debates - skipped - invocation.finished,
        debates_skipped=skipped,
        failed_retried=retried,
        executor=executor.kind,
        debates_s=round(invocation.debates_s, 3),
        http_requests=requests_sent(models.values()) - sent_before
        if executor.in_process
        else None,
        wall_s=round(time.perf_counter() - start, 3),
        **invocation.stats,
    )


def _items(config: ExperimentConfig) -> list[Item]:
    """The run's items (QuALITY's loader where the dataset section names it)."""
    return load_run_items(config.dataset, config.seed)


def _build_models(config: ExperimentConfig) -> dict[str, Model]:
    return build_models(
        config.role_settings(),
        cache_dir=config.cache_dir,
        use_cache=config.use_cache,
        model_concurrency=config.model_concurrency,
        max_retries=config.max_retries,
    )


def _execute_plan(
    plan: Plan,
    jobs: list[Job],
    todo: list[Job],
    options: ExecutorOptions,
    context: RunContext,
    out: Path,
    progress: bool,
    models: dict[str, Model],
) -> Invocation:
    """Run ``todo``, then the debates the plan adds as they finish (a Swiss schedule's next
    round: drawn from the transcripts written so far), in one event loop, until none is
    added or the run stops."""
    have = {j.spec.debate_id for j in jobs}
    bar = Progress(len(jobs), len(jobs) - len(todo), progress, models.values())

    def more() -> list[Job]:
        added = [j for j in plan.jobs(out) if j.spec.debate_id not in have]
        have.update(j.spec.debate_id for j in added)
        if added:
            bar.bar.total += len(added)
            context.say(f"{_count(len(added), 'debate')} more: the next round of the schedule")
        return added

    return _execute(
        make_executor(options, context), todo, out, bar,
        context.config.max_consecutive_failures, models, more=more if plan.grows else None,
    )


@dataclass
class Invocation:
    """What running the debates of one invocation came to."""

    finished: int = 0
    stopped: RunStopped | None = None
    debates_s: float = 0.0
    stats: dict[str, Any] = field(default_factory=dict)


def _execute(
    ex: Executor,
    todo: list[Job],
    out: Path,
    bar: Progress,
    max_consecutive_failures: int,
    models: dict[str, Model],
    more: Callable[[], list[Job]] | None = None,
) -> Invocation:
    """Run ``todo`` on ``ex``, then what ``more`` adds after each batch until it adds none
    (closing ``ex`` and ``models`` afterwards); what it came to."""
    result = Invocation()
    began = time.perf_counter()
    try:
        with lean_gc():
            asyncio.run(
                _close_after(
                    _batches(ex, todo, out, max_consecutive_failures, bar, more), models, ex
                )
            )
    except RunStopped as exc:
        result.stopped = exc
    except KeyboardInterrupt as exc:  # Ctrl-C: asyncio cancelled the debates in flight
        result.stopped = interrupted(exc)
    finally:
        result.debates_s = time.perf_counter() - began
        result.stats = ex.stats()
        result.finished = bar.finished
        bar.close()
    return result


async def _batches(
    ex: Executor,
    todo: list[Job],
    out: Path,
    max_consecutive_failures: int,
    bar: Progress,
    more: Callable[[], list[Job]] | None,
) -> None:
    async with bar.ticking():  # the calls and tokens move between debates too
        while todo:
            await drive(
                ex, todo, out, max_consecutive_failures=max_consecutive_failures, on_done=bar
            )
            todo = more() if more is not None else []


def write_summary(
    run_dir: Path, jobs: list[Job], config: ExperimentConfig, stopped: RunStopped | None
) -> dict[str, Any]:
    run = tally(_summary_transcripts(run_dir / TRANSCRIPTS_FILE))
    summary = summary_of(
        run, seed=config.seed, n_boot=config.report.bootstrap,
        n_bins=config.report.calibration_bins,
    )
    have = {r.id for r in run.records}
    missing = [j.spec.debate_id for j in jobs if j.spec.debate_id not in have]
    summary["settings"] = {  # what the closing lines name (what to change, which judge)
        "prover.assignment": config.prover.assignment,
        "judge.kind": config.judge.kind,
        "judge.ruling": config.judge.ruling,
    }
    summary["planned"] = len(jobs)
    summary["missing"] = len(missing)
    summary["stopped"] = stopped.reason if stopped else None
    summary["last_invocation"] = {}
    return summary


def _summary_transcripts(path: Path) -> Iterator[Transcript]:
    """The run's transcripts, one at a time (the summary folds each into a few numbers and
    drops it: memory does not grow with the run); a torn last line is left out."""
    if path.is_file():
        yield from iter_transcripts(path)


async def _close_after(coro: Any, models: dict[str, Model], executor: Executor) -> None:
    try:
        with main_task():
            await coro
    except asyncio.CancelledError:
        if terminated():  # SIGTERM cancelled the run (after the closing below)
            raise interrupted(None) from None
        raise
    finally:
        with contextlib.suppress(Exception):
            await executor.aclose()
        for m in {id(m): m for m in models.values()}.values():
            with contextlib.suppress(Exception):  # closing is best effort
                await m.aclose()
