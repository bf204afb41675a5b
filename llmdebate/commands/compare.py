"""``llmdebate compare --config FILE``: run protocols on the same items and write the report."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import click

from llmdebate.errors import UserError


def _roles(cfg, prompts_dir: str | None, use_cache: bool = True):  # type: ignore[no-untyped-def]
    from llmdebate.models import get_model
    from llmdebate.prompts import Prompts
    from llmdebate.protocols.common import RoleModels

    cache: dict[str, object] = {}
    for name in (cfg.models.debater, cfg.models.estimator, cfg.models.judge):
        if name not in cache:
            cache[name] = get_model(name, use_cache=use_cache)
    return RoleModels(
        debater=cache[cfg.models.debater],
        estimator=cache[cfg.models.estimator],
        judge=cache[cfg.models.judge],
        prompts=Prompts(prompts_dir or cfg.prompts_dir),
        method=cfg.method,
        samples=cfg.samples,
        max_tokens=cfg.max_tokens,
        temperature=cfg.temperature,
        decomposer=cfg.decomposer,
    )


@click.command("compare")
@click.option(
    "--config",
    "config_path",
    required=True,
    type=click.Path(dir_okay=False),
    help="A comparison config (configs/compare-*.yaml).",
)
@click.option("--run-id", default=None, help="Run directory name (default: the config's name).")
@click.option("--runs-dir", default="runs", show_default=True, type=click.Path(file_okay=False))
@click.option("--limit", type=int, default=None, help="Override the number of items.")
@click.option("--formal", is_flag=True, help="Add the formal obfuscation table to the report.")
@click.option("--report-only", is_flag=True, help="Rebuild the outputs from transcripts.jsonl.")
@click.option("--prompts-dir", default=None, type=click.Path(file_okay=False))
def command(
    config_path: str,
    run_id: str | None,
    runs_dir: str,
    limit: int | None,
    formal: bool,
    report_only: bool,
    prompts_dir: str | None,
) -> None:
    """Run the chosen protocols on the same items (paired) and write comparison.json,
    comparison.md, plots/ and report.html into the run directory. Resumable: debates already
    in transcripts.jsonl are skipped."""
    from llmdebate.report.build import write_outputs
    from llmdebate.report.comparison import (
        CompareConfig,
        latest,
        load_items,
        run_comparison,
        save_config,
    )

    start = time.perf_counter()
    cfg = CompareConfig.from_yaml(config_path)
    if limit is not None:
        cfg = cfg.model_copy(update={"limit": limit})
    run_dir = Path(runs_dir) / (run_id or cfg.name)
    items = load_items(cfg, Path(config_path).resolve().parent.parent)
    if report_only:
        if not (run_dir / "transcripts.jsonl").is_file():
            raise UserError(f"{run_dir} has no transcripts.jsonl to report on")
        transcripts = latest(run_dir / "transcripts.jsonl", cfg, items)
    else:
        save_config(cfg, run_dir)
        from llmdebate.redact import is_protected

        # no on-disk response cache for protected items (GPQA)
        roles = _roles(cfg, prompts_dir, use_cache=not any(is_protected(it) for it in items))
        click.echo(f"run directory: {run_dir} ({len(items)} items, {', '.join(cfg.protocols)})")
        transcripts = asyncio.run(
            run_comparison(cfg, roles, items, run_dir, progress=lambda s: click.echo(s, err=True))
        )
    wall = round(time.perf_counter() - start, 1)
    failed = sum(t.status == "failed" for t in transcripts)
    from llmdebate.protocols.registry import get_protocol

    planned = len(items) * sum(len(get_protocol(p)[1]) for p in cfg.protocols)
    done = sum(t.status == "complete" for t in transcripts)
    facts = {
        "items": len(items),
        "wall_s": wall,
        "debates_planned": planned,
        "debates_complete": done,
    }
    m = write_outputs(cfg, transcripts, run_dir, facts=facts, formal=formal)
    for proto, e in m["protocols"].items():
        acc = "–" if e["accuracy"] is None else f"{e['accuracy']:.3f}"
        click.echo(f"{proto:18s} accuracy {acc} ({e['items']} items)")
    click.echo(
        f"{len(transcripts)} debates ({failed} failed) in {wall} s; "
        f"report: {run_dir / 'report.html'}"
    )
