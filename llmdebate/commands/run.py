"""``llmdebate run``: run (or resume) the debates of an experiment into a run directory.

Exit status: 0 when every debate completed, 1 when any failed, awaits a verdict, or the run
stopped (the summary says how many and why), 2 for a user error, 130 after Ctrl-C and 143
after SIGTERM (one line says what was kept and the command that resumes).
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import click

from llmdebate.commands.choices import live
from llmdebate.commands.config_flags import config_from, config_options
from llmdebate.commands.help_table import EXECUTOR_HELP
from llmdebate.commands.verbs import VERBS

STATUS_WORDS = {
    "complete": "complete",
    "awaiting_verdict": "awaiting a verdict",
    "failed": "failed",
}


EXECUTOR_GROUP = "llmdebate.executors"
EXECUTOR_ONE = "Where debates run: {executors}."
WORKERS_HELP = ("Worker processes for --executor {workers} (default: the CPUs of this machine "
                "or cluster, at most max_concurrency).")
ADDRESS_HELP = ("Ray cluster to join with --executor {address} (e.g. auto, ray://head:10001); "
                "default: start one here.")


class ExecutorOption(click.Option):
    """An option whose help names executors from the registry, filled in when help is shown
    (so a broken executor plugin breaks ``run --help`` alone, not every verb):
    ``{executors}`` (each with its summary), ``{workers}``, ``{address}`` (those declaring
    that capability); the stored help of the built-in executors unless a plugin could add
    one."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.template = self.help  # filled in anew each time: executors registered since

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        if self.template and "{" in self.template:
            self.help = EXECUTOR_HELP.get(self.template)
            if self.help is None or live((EXECUTOR_GROUP,), "llmdebate.experiment.executors"):
                self.help = executor_help()[self.template]
        return super().get_help_record(ctx)


def executor_help() -> dict[str, str]:
    """Each executor option's help template, filled in from the registry."""
    from llmdebate.experiment.executors import EXECUTORS
    from llmdebate.experiment.executors.executor import ADDRESS, WORKERS

    filled = {
        "executors": "; ".join(f"{e.name} ({e.summary})" for e in EXECUTORS.entries()),
        "workers": " or ".join(EXECUTORS.with_capability(WORKERS)),
        "address": " or ".join(EXECUTORS.with_capability(ADDRESS)),
    }
    return {t: t.format(**filled) for t in (EXECUTOR_ONE, WORKERS_HELP, ADDRESS_HELP)}


def count(n: int, noun: str) -> str:
    """``1 debate``, ``2 debates``; ``1 retry``, ``2 retries``."""
    if n == 1:
        return f"{n} {noun}"
    return f"{n} {noun[:-1]}ies" if noun.endswith("y") else f"{n} {noun}s"


def outcome_line(result: Any) -> str:
    """``RUN: 12 debates: 2 complete, 8 failed, 2 not run; 10 run now, 0 already done; ...``:
    every planned debate counted once; those with no line in the run directory (never
    started, or cancelled in flight when the run stopped: a resume runs them) apart."""
    s = result.summary
    status: dict[str, int] = s["status"]
    order = [*STATUS_WORDS, *sorted(set(status) - set(STATUS_WORDS))]
    parts = [f"{status[k]} {STATUS_WORDS.get(k, k)}" for k in order if status.get(k)]
    if s["missing"]:  # never started, or cancelled in flight when the run stopped
        parts.append(f"{s['missing']} not run")
    return (
        f"{result.run_dir}: {count(s['planned'], 'debate')}: {', '.join(parts) or 'none'}; "
        f"{result.ran} run now, {result.skipped} already done; "
        f"{count(s['usage']['calls'], 'model call')}, {count(s['retries'], 'retry')}; "
        f"{result.wall_s:.1f} s"
    )

REASON_CHARS = 160


def failed_line(s: dict[str, Any]) -> str:
    """``failed: 8 RetriesExhaustedError (openai/x: ... connection refused)``: each kind of
    failure counted, with the reason of its first debate (the rest are in the run
    directory)."""
    from llmdebate.report.metrics import failure_kind

    first: dict[str, str] = {}
    for d in s["failures"].get("debates", []):
        reason = str(d.get("reason") or "")
        first.setdefault(failure_kind(reason), reason)
    parts = []
    for kind, n in s["failures"]["by_kind"].items():
        reason = first.get(kind, "")
        reason = reason.split(":", 1)[1].strip() if reason.startswith(kind + ":") else reason
        if len(reason) > REASON_CHARS:
            reason = reason[: REASON_CHARS - 1] + "…"
        parts.append(f"{n} {kind}" + (f" ({reason})" if reason else ""))
    return "failed: " + "; ".join(parts)


def resume_command(run_dir: Path, config_path: str | None) -> str:
    """The command that resumes the run in ``run_dir``: this one, its run directory named."""
    from llmdebate.commands import verbs

    args = list(verbs.ARGV or ["run", *(["--config", config_path] if config_path else [])])
    kept: list[str] = []
    skip = False
    for a in args:
        if skip:
            skip = False
        elif a in ("--run-dir", "--run-id"):
            skip = True
        elif not a.startswith(("--run-dir=", "--run-id=")):
            kept.append(a)
    return shlex.join(["llmdebate", *kept, "--run-dir", str(run_dir)])


def stopped_line(result: Any, config_path: str | None) -> str:
    """``interrupted by Ctrl-C: 7 of 12 debates kept in RUN (summary.json written); resume:
    llmdebate run ... --run-dir RUN``."""
    s = result.summary
    kept = s["planned"] - s["missing"]
    return (
        f"{result.stopped}: {kept} of {count(s['planned'], 'debate')} kept in "
        f"{result.run_dir} (summary.json written); resume: "
        f"{resume_command(result.run_dir, config_path)}"
    )


def graded_lines(s: dict[str, Any]) -> list[str]:
    """The model's decompositions graded against computable truth, where the run has any
    (the estimator's probabilities are graded once, in the closing lines)."""
    dec = s.get("decompositions") or {}
    if dec.get("model_decompositions") or dec.get("calls"):
        return [f"decompositions: {dec['assessment']}"]
    return []


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
        "--allow-large",
        is_flag=True,
        help="Run although the debates would make more than 100 model calls each, or 10,000 "
        "together (estimated from the protocols, depth, width and rounds); without it such a "
        "run is refused with the estimate.",
    ),
    click.option(
        "--allow-server-change",
        is_flag=True,
        help="Resume although a role's server URL differs from the one the run started with.",
    ),
    click.option(
        "--executor",
        cls=ExecutorOption,
        metavar="NAME",
        default="local",
        show_default=True,
        help=EXECUTOR_ONE,
    ),
    click.option(
        "--workers",
        type=int,
        cls=ExecutorOption,
        default=None,
        help=WORKERS_HELP,
    ),
    click.option(
        "--ray-address",
        cls=ExecutorOption,
        default=None,
        help=ADDRESS_HELP,
    ),
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
    from llmdebate.experiment.interrupts import CTRL_C_EXIT, SIGTERM_EXIT, sigterm_cancels
    from llmdebate.experiment.runner import run
    from llmdebate.report.closing import closing_lines

    executor = ExecutorOptions(
        kind=fields.pop("executor", None) or "local",
        ray_address=fields.pop("ray_address", None),
        workers=fields.pop("workers", None),
    )
    allow_large = bool(fields.pop("allow_large", False))
    overrides = dict(extra or {})
    if limit is not None:
        overrides["dataset.limit"] = limit
    if no_cache:
        overrides["use_cache"] = False
    with sigterm_cancels():  # SIGTERM from here on ends the command as Ctrl-C does
        config = config_from(config_path, fields, overrides)
        result = run(
            config,
            run_dir,
            run_id=run_id,
            progress=not quiet,
            allow_server_change=allow_server_change,
            executor=executor,
            allow_large=allow_large,
        )
    s = result.summary
    if result.stopped and result.stop_exit_code in (CTRL_C_EXIT, SIGTERM_EXIT):
        click.echo(stopped_line(result, config_path), err=True)
        return result
    click.echo(outcome_line(result))
    for line in graded_lines(s):
        click.echo(line)
    for line in closing_lines(s):
        click.echo(line)
    if s["failures"]["by_kind"]:
        click.echo(failed_line(s), err=True)
    if result.awaiting:
        click.echo(
            f"{count(result.awaiting, 'debate')} {'awaits' if result.awaiting == 1 else 'await'}"
            " a person's verdict: "
            f"llmdebate assign {result.run_dir} --judges JUDGES.yaml --per-item K"
        )
    if result.stopped:
        click.echo(f"run stopped: {result.stopped}", err=True)
    return result


@VERBS.register("run")
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
