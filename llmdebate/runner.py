"""Run directories: many debates over a dataset, concurrent, resumable, append-only.

``runs/<run-id>/`` holds ``config.yaml`` (the resolved configuration), ``transcripts.jsonl``
(one complete debate per line, written with one fsynced append each) and ``summary.json``.

Resume: running again on the same directory skips every debate whose id is already in
``transcripts.jsonl`` (complete, failed or awaiting a verdict) and runs the rest. A run killed
with SIGKILL loses at most the debates in flight: a torn last line (no newline) is cut off
before anything new is appended, and every complete line is kept.

A debate whose model output never validates (or that breaks the protocol) is written with
status ``failed`` and its reason, and the run goes on. Errors that no debate can survive (an
unreachable server, a bad API key, a wrong option) stop the run with one line.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from tqdm import tqdm

from llmdebate.agents.factory import Agents, build_agents, build_models
from llmdebate.config import (
    RunConfig,
    config_differences,
    dump_config,
    read_config_file,
    validate_config,
)
from llmdebate.data.loader import load_items
from llmdebate.debate_jobs import Job, make_jobs, run_debate
from llmdebate.errors import ConfigError, ModelError, TranscriptError, UserError
from llmdebate.jsonl import iter_json_lines
from llmdebate.models import Model
from llmdebate.paths import resolve_path
from llmdebate.prompts import Prompts
from llmdebate.redact import is_protected
from llmdebate.run_summary import summarize
from llmdebate.schemas import Transcript
from llmdebate.transcripts import append_transcript

CONFIG_FILE = "config.yaml"
TRANSCRIPTS_FILE = "transcripts.jsonl"
SUMMARY_FILE = "summary.json"


class RunError(UserError):
    """A run that cannot go on (one line; the transcripts already written are kept)."""


# ---------------------------------------------------------------------------- files


def repair_transcripts(path: Path) -> int:
    """Cut a torn last line (one without newline) off ``path``; return the bytes removed."""
    if not path.exists():
        return 0
    size = path.stat().st_size
    if size == 0:
        return 0
    with path.open("rb+") as fh:
        fh.seek(size - 1)
        if fh.read(1) == b"\n":
            return 0
        # find the last newline, reading backwards in blocks
        pos, keep = size, 0
        while pos > 0:
            step = min(65536, pos)
            pos -= step
            fh.seek(pos)
            block = fh.read(step)
            i = block.rfind(b"\n")
            if i >= 0:
                keep = pos + i + 1
                break
        fh.truncate(keep)
        fh.flush()
        os.fsync(fh.fileno())
    return size - keep


def finished_ids(path: Path) -> dict[str, str]:
    """{debate id: status} of every line of ``path`` (each line must be valid JSON)."""
    done: dict[str, str] = {}
    if not path.exists():
        return done
    for lineno, data in iter_json_lines(path, TranscriptError):
        tid = data.get("id")
        if not isinstance(tid, str):
            raise TranscriptError(f"{path}:{lineno}: not a transcript line")
        if tid in done:
            raise TranscriptError(f"{path}:{lineno}: duplicate debate id {tid!r}")
        done[tid] = str(data.get("status", "complete"))
    return done


def write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def default_run_id(config: RunConfig) -> str:
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", config.name).strip("-") or "run"
    return f"{name}-{datetime.now().strftime('%Y%m%d-%H%M%S')}"


def prepare_run_dir(config: RunConfig, run_dir: Path) -> RunConfig:
    """Create ``run_dir`` or check it matches ``config`` for a resume; write config.yaml."""
    cfg_path = run_dir / CONFIG_FILE
    if cfg_path.exists():
        saved = validate_config(read_config_file(cfg_path), str(cfg_path))
        diff = config_differences(saved, config)
        if diff:
            raise ConfigError(
                f"{run_dir} was started with a different configuration "
                f"({', '.join(diff[:4])} differ): resume with the same settings or use a new "
                "run directory"
            )
    run_dir.mkdir(parents=True, exist_ok=True)
    write_atomic(cfg_path, dump_config(config))
    return config


# ---------------------------------------------------------------------------- the run


@dataclass
class RunResult:
    run_dir: Path
    ran: int
    skipped: int
    failed: int
    wall_s: float
    summary: dict[str, Any]


async def _run_jobs(
    jobs: list[Job],
    agents: Agents,
    config: RunConfig,
    prompts: Prompts,
    out: Path,
    progress: Callable[[Transcript], None],
) -> int:
    sem = asyncio.Semaphore(config.max_concurrency)
    failed = 0

    async def one(job: Job) -> None:
        nonlocal failed
        async with sem:
            t = await run_debate(job, agents, config, prompts)
        append_transcript(out, t)
        failed += t.status == "failed"
        progress(t)

    tasks = [asyncio.ensure_future(one(j)) for j in jobs]
    try:
        done, _pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        for task in done:
            exc = task.exception()
            if exc is not None:
                raise exc
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return failed


def run(
    config: RunConfig,
    run_dir: str | Path | None = None,
    *,
    run_id: str | None = None,
    models: dict[str, Model] | None = None,
    progress: bool = True,
) -> RunResult:
    """Run (or resume) every debate of ``config`` in ``run_dir``; write the summary."""
    start = time.perf_counter()
    if run_dir is None:
        run_dir = Path(config.runs_dir) / (run_id or default_run_id(config))
    run_dir = Path(run_dir)
    prompts = Prompts(resolve_path(config.prompts_dir) if config.prompts_dir else None)
    ds = config.dataset
    items = load_items(
        resolve_path(ds.path),
        shuffle_seed=ds.shuffle_seed,
        limit=ds.limit,
        ids=ds.ids,
        password=ds.password,
    )
    if any(is_protected(it) for it in items):  # no on-disk cache of protected text
        config = config.model_copy(update={"use_cache": False})
    prepare_run_dir(config, run_dir)
    out = run_dir / TRANSCRIPTS_FILE
    repair_transcripts(out)
    done = finished_ids(out)
    jobs = [j for j in make_jobs(items, config) if j.debate_id not in done]
    failed = 0
    if jobs:
        own_models = models is None
        models = build_models(config) if models is None else models
        agents = build_agents(config, models, prompts)
        bar = tqdm(
            total=len(items),
            initial=len(items) - len(jobs),
            desc="debates",
            unit="debate",
            file=sys.stderr,
            disable=not progress,
        )

        def tick(t: Transcript) -> None:
            bar.update(1)

        try:
            failed = asyncio.run(
                _close_after(
                    _run_jobs(jobs, agents, config, prompts, out, tick),
                    models if own_models else {},
                )
            )
        except ModelError as exc:
            raise RunError(f"run stopped: {exc} (finished debates are kept in {out})") from None
        finally:
            bar.close()
    summary = summarize(out, config)
    summary["last_invocation"] = {
        "debates_run": len(jobs),
        "debates_skipped": len(items) - len(jobs),
        "wall_s": round(time.perf_counter() - start, 3),
    }
    write_atomic(run_dir / SUMMARY_FILE, json.dumps(summary, indent=2) + "\n")
    return RunResult(
        run_dir, len(jobs), len(items) - len(jobs), failed, time.perf_counter() - start, summary
    )


async def _close_after(coro: Any, models: dict[str, Model]) -> int:
    try:
        return int(await coro)
    finally:
        for m in {id(m): m for m in models.values()}.values():
            with contextlib.suppress(Exception):  # closing is best effort
                await m.aclose()
