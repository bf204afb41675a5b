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
``summary.json`` is written however the run ends.

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
import gc
import json
import re
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError
from tqdm import tqdm

from llmdebate.agents.factory import Team, build_models
from llmdebate.errors import RuleError, TranscriptError, UserError, require
from llmdebate.experiment.config import ExperimentConfig
from llmdebate.experiment.debate import (
    CONTENT_FAILURES,
    Finished,
    RunStopped,
    failure_reason,
    run_one,
)
from llmdebate.experiment.executors import Executor, ExecutorOptions, make_executor
from llmdebate.experiment.items import load_run_items
from llmdebate.experiment.jobs import Job, make_jobs
from llmdebate.experiment.loading import differences, dump, validate
from llmdebate.experiment.sink import TranscriptWriter
from llmdebate.jsonl import first_error
from llmdebate.models import Model
from llmdebate.paths import resolve_path
from llmdebate.prompts import Prompts
from llmdebate.protocols.base import ProtocolSettings
from llmdebate.redact import is_protected
from llmdebate.report.metrics import summary_of, tally
from llmdebate.rundir import (
    CONFIG_FILE,
    SUMMARY_FILE,
    TRANSCRIPTS_FILE,
    read_run_config,
    repair_transcripts,
    retire_failed,
    statuses,
    write_atomic,
)
from llmdebate.schemas import Transcript

__all__ = [
    "CONTENT_FAILURES",
    "RunResult",
    "RunStopped",
    "check_resume",
    "default_run_id",
    "drive",
    "failure_reason",
    "run",
    "run_one",
    "servers_of",
]


@dataclass
class RunResult:
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


def _say(message: str, progress: bool) -> None:
    if progress:
        print(message, file=sys.stderr, flush=True)


def _prepare_models(models: dict[str, Model], progress: bool) -> None:
    """Load local weights before the clock starts, saying so (the first load takes a while)."""
    seen: set[int] = set()
    for m in models.values():
        load = getattr(m.backend, "load", None)
        if id(m) in seen or not callable(load):
            continue
        seen.add(id(m))
        weights = getattr(m.backend, "weights_dir", None)
        first = isinstance(weights, Path) and not weights.exists()
        _say(
            f"preparing {m.name}: "
            + (
                "dequantising the weights once (about a minute on 2 cores)…"
                if first
                else "loading the weights…"
            ),
            progress,
        )
        load()


def servers_of(models: dict[str, Model]) -> dict[str, str | None]:
    """The effective server URL of each role (None for local and scripted models)."""
    return {role: getattr(m, "base_url", None) for role, m in models.items()}


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


class Progress:
    """A progress bar of debates with the failures and model calls so far."""

    def __init__(self, total: int, initial: int, enabled: bool) -> None:
        self.failed = 0
        self.calls = 0
        self.bar = tqdm(
            total=total,
            initial=initial,
            desc="debates",
            unit="debate",
            file=sys.stderr,
            disable=not enabled,
            dynamic_ncols=True,
        )

    def __call__(self, f: Finished) -> None:
        self.failed += f.status == "failed"
        self.calls += f.calls
        self.bar.set_postfix(failed=self.failed, calls=self.calls, refresh=False)
        self.bar.update(1)

    def close(self) -> None:
        self.bar.close()


def run(
    config: ExperimentConfig,
    run_dir: str | Path | None = None,
    *,
    run_id: str | None = None,
    models: dict[str, Model] | None = None,
    progress: bool = True,
    allow_server_change: bool = False,
    executor: ExecutorOptions | None = None,
) -> RunResult:
    """Run (or resume) every debate of ``config`` in ``run_dir``; write the summary.

    ``executor`` says where the debates run (default: this process); ``models`` (prebuilt
    models, e.g. scripted ones) work only in this process.
    """
    start = time.perf_counter()
    executor = executor or ExecutorOptions()
    if executor.kind != "local":
        if models is not None:
            raise UserError(f"prebuilt models run only in this process, not on {executor.kind}")
        if executor.kind == "ray":
            require("ray", "ray")  # a missing extra is named before anything runs
    run_dir = Path(run_dir) if run_dir is not None else (
        Path(config.runs_dir) / (run_id or default_run_id(config))
    )
    prompts = Prompts(resolve_path(config.prompts_dir) if config.prompts_dir else None)
    items = load_run_items(config.dataset, config.seed)
    if any(is_protected(it) for it in items):  # no on-disk cache of protected text
        config = config.model_copy(update={"use_cache": False})
    jobs = make_jobs(items, config)
    own_models = models is None
    if models is None:
        models = build_models(
            config.role_settings(),
            cache_dir=config.cache_dir,
            use_cache=config.use_cache,
            model_concurrency=config.model_concurrency,
            max_retries=config.max_retries,
        )
    servers = servers_of(models)
    check_resume(run_dir, config, servers, allow_server_change)
    # --- from here on, the run directory is written
    run_dir.mkdir(parents=True, exist_ok=True)
    write_atomic(
        run_dir / CONFIG_FILE,
        yaml.safe_dump({**dump(config), "servers": servers}, sort_keys=False),
    )
    out = run_dir / TRANSCRIPTS_FILE
    repair_transcripts(out)
    retried = retire_failed(run_dir)
    done = statuses(out)
    todo = [j for j in jobs if j.spec.debate_id not in done]
    settings = ProtocolSettings(
        debate=config.debate.model_copy(update={"seed": config.seed}),
        rounds=config.rounds,
        mode=config.mode,
    )
    team = Team(models, prompts, config.prover, config.estimator, config.judge)
    stopped: RunStopped | None = None
    debates_s = 0.0
    executor_stats: dict[str, Any] = {}
    if todo:
        if executor.kind == "local":
            _prepare_models(models, progress)
        where = {"local": "", "processes": " in worker processes"}.get(
            executor.kind, f" on {executor.kind}"
        )
        _say(
            f"{run_dir}: {len(todo)} debates to run ({len(jobs) - len(todo)} done"
            + (f", {retried} failed ones retried" if retried else "")
            + f"), {config.max_concurrency} at a time{where}",
            progress,
        )
        bar = Progress(len(jobs), len(jobs) - len(todo), progress)
        ex = make_executor(
            executor,
            config=config,
            team=team,
            settings=settings,
            servers=servers,
            say=lambda message: _say(message, progress),
        )
        began = time.perf_counter()
        try:
            with lean_gc():
                asyncio.run(
                    _close_after(
                        drive(
                            ex,
                            todo,
                            out,
                            max_consecutive_failures=config.max_consecutive_failures,
                            on_done=bar,
                        ),
                        models if own_models else {},
                        ex,
                    )
                )
        except RunStopped as exc:
            stopped = exc
        finally:
            debates_s = time.perf_counter() - began
            executor_stats = ex.stats()
            bar.close()
    summary = write_summary(run_dir, jobs, config, stopped)
    summary["last_invocation"].update(
        debates_run=len(todo),
        debates_skipped=len(jobs) - len(todo),
        failed_retried=retried,
        executor=executor.kind,
        debates_s=round(debates_s, 3),
        wall_s=round(time.perf_counter() - start, 3),
        **executor_stats,
    )
    write_atomic(run_dir / SUMMARY_FILE, json.dumps(summary, indent=2) + "\n")
    return RunResult(
        run_dir,
        len(todo),
        len(jobs) - len(todo),
        time.perf_counter() - start,
        summary,
        stopped=stopped.reason if stopped else None,
        stop_exit_code=stopped.exit_code if stopped else 1,
    )


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
    summary["planned"] = len(jobs)
    summary["missing"] = len(missing)
    summary["stopped"] = stopped.reason if stopped else None
    summary["last_invocation"] = {}
    return summary


GC_THRESHOLDS = (20_000, 20, 20)


@contextlib.contextmanager
def lean_gc() -> Iterator[None]:
    """Fewer garbage collections while debates run: the objects made before (modules, config,
    jobs) are frozen out of the collector's scans, and the young generation is collected
    every 20,000 allocations instead of 700. Debates make many short-lived objects that
    reference counting frees; the collector's scans cost about a fifth of the client's CPU
    at hundreds of calls a second. The previous settings come back afterwards."""
    before = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*before)
        gc.unfreeze()


def _summary_transcripts(path: Path) -> Iterator[Transcript]:
    """The run's transcripts, one at a time (the summary folds each into a few numbers and
    drops it: memory does not grow with the run)."""
    if not path.is_file():
        return
    with path.open("rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            if not raw.endswith(b"\n") or not raw.strip():
                continue
            try:
                t = Transcript.model_validate_json(raw)
            except ValidationError as exc:
                raise TranscriptError(f"{path}:{lineno}: {first_error(exc)}") from None
            except RuleError as exc:
                raise TranscriptError(f"{path}:{lineno}: {exc}") from None
            yield t


async def _close_after(coro: Any, models: dict[str, Model], executor: Executor) -> None:
    try:
        await coro
    finally:
        with contextlib.suppress(Exception):
            await executor.aclose()
        for m in {id(m): m for m in models.values()}.values():
            with contextlib.suppress(Exception):  # closing is best effort
                await m.aclose()
