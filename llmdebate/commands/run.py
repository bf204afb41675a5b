"""``llmdebate run``: run (or resume) the debates of an experiment into a run directory.

Exit status: 0 when every debate completed, 1 when any failed, awaits a verdict, or the run
stopped (the summary says how many and why), 2 for a user error.
"""

from __future__ import annotations

from typing import Any

import click

from llmdebate.commands.config_flags import config_from, config_options

RUN_OPTIONS = [
    click.option(
        "--config",
        "config_path",
        type=click.Path(dir_okay=False),
        default=None,
        help="YAML experiment config (default: every field at its default).",
    ),
    click.option(
        "--run-dir",
        type=click.Path(file_okay=False),
        default=None,
        help="Run directory (resumed if it exists).",
    ),
    click.option("--run-id", default=None, help="Run directory name under runs_dir."),
    click.option(
        "--limit", type=click.IntRange(min=1), default=None, help="Same as --dataset-limit."
    ),
    click.option("--no-cache", is_flag=True, help="Same as --use-cache false."),
    click.option("--quiet", is_flag=True, help="No progress output."),
    click.option(
        "--allow-server-change",
        is_flag=True,
        help="Resume although a role's server URL differs from the one the run started with.",
    ),
    click.option(
        "--executor",
        default="local",
        show_default=True,
        help="Where debates run: local (this process), processes (worker processes on this "
        "machine: many cores, a fast local server), ray (a Ray cluster, extra llmdebate[ray]).",
    ),
    click.option(
        "--workers",
        type=int,
        default=None,
        help="Worker processes for --executor processes or ray (default: the CPUs of this "
        "machine or cluster, at most max_concurrency).",
    ),
    click.option(
        "--ray-address",
        default=None,
        help="Ray cluster to join (e.g. auto, ray://head:10001); default: start one here.",
    ),
    click.option("--ray-workers", type=int, default=None, help="Old name of --workers."),
]


def run_options(func: Any) -> Any:
    for option in reversed(RUN_OPTIONS):
        func = option(func)
    return config_options(func)


def run_from_flags(
    config_path: str | None,
    run_dir: str | None,
    run_id: str | None,
    limit: int | None,
    no_cache: bool,
    quiet: bool,
    allow_server_change: bool,
    fields: dict[str, Any],
    extra: dict[str, Any] | None = None,
) -> Any:
    """Build the config from file and flags, run it, print one line; the RunResult."""
    from llmdebate.experiment.executors import ExecutorOptions
    from llmdebate.experiment.runner import run

    executor = ExecutorOptions(
        kind=fields.pop("executor", None) or "local",
        ray_address=fields.pop("ray_address", None),
        ray_workers=fields.pop("ray_workers", None),
        workers=fields.pop("workers", None),
    )
    overrides = dict(extra or {})
    if limit is not None:
        overrides["dataset.limit"] = limit
    if no_cache:
        overrides["use_cache"] = False
    config = config_from(config_path, fields, overrides)
    result = run(
        config,
        run_dir,
        run_id=run_id,
        progress=not quiet,
        allow_server_change=allow_server_change,
        executor=executor,
    )
    s = result.summary
    status = ", ".join(f"{n} {k}" for k, n in sorted(s["status"].items())) or "no debates"
    click.echo(
        f"{result.run_dir}: {result.ran} debates run, {result.skipped} already done; "
        f"{status} of {s['planned']}; {s['usage']['calls']} model calls, "
        f"{s['retries']} retries; {result.wall_s:.1f} s"
    )
    kinds = s["failures"]["by_kind"]
    if kinds:
        click.echo("failed: " + ", ".join(f"{n} {k}" for k, n in kinds.items()), err=True)
    if result.awaiting:
        click.echo(
            f"{result.awaiting} debates await a person's verdict: "
            f"llmdebate assign {result.run_dir} --judges JUDGES.yaml --per-item K"
        )
    if result.stopped:
        click.echo(f"run stopped: {result.stopped}", err=True)
    return result


@click.command("run")
@run_options
def command(
    config_path: str | None,
    run_dir: str | None,
    run_id: str | None,
    limit: int | None,
    no_cache: bool,
    quiet: bool,
    allow_server_change: bool,
    **fields: Any,
) -> int:
    """Run the debates of an experiment (any protocols) into a run directory."""
    result = run_from_flags(
        config_path, run_dir, run_id, limit, no_cache, quiet, allow_server_change, fields
    )
    return int(result.exit_code)
