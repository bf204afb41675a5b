"""``llmdebate report RUN_DIR...``: tables, plots and report.html from runs' transcripts."""

from __future__ import annotations

from pathlib import Path

import click

from llmdebate.commands.verbs import VERBS


@VERBS.register("report")
@click.command("report")
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(file_okay=False))
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Where the report goes [default: RUN_DIR; with several runs <parent>/<a>+<b>].",
)
@click.option(
    "--formal/--no-formal",
    default=None,
    help="Add the formal obfuscation table [default: the run's report.formal].",
)
@click.option(
    "--bootstrap",
    type=click.IntRange(min=10),
    default=None,
    help="Bootstrap resamples [default: the run's report.bootstrap].",
)
@click.option(
    "--calibration-bins",
    type=click.IntRange(2, 100),
    default=None,
    help="Calibration bins [default: the run's report.calibration_bins].",
)
@click.option("--quiet", is_flag=True, help="No progress output.")
def command(
    run_dirs: tuple[str, ...],
    out_dir: str | None,
    formal: bool | None,
    bootstrap: int | None,
    calibration_bins: int | None,
    quiet: bool,
) -> None:
    """Write comparison.json, comparison.md, plots/ and report.html into RUN_DIR, reading its
    config.yaml and transcripts.jsonl only (no debate is run). Several RUN_DIRs over the same
    items and settings are reported as one (refused, naming the difference, otherwise); a
    section rates the debaters when more than one debater model held a seat."""
    from llmdebate.report.build import build_report

    for d in run_dirs:
        if not (Path(d) / "config.yaml").is_file():
            raise click.UsageError(f"{d}: not a run directory (no config.yaml)")
    path = build_report(
        [Path(d) for d in run_dirs],
        out_dir=Path(out_dir) if out_dir else None,
        formal=formal,
        bootstrap=bootstrap,
        calibration_bins=calibration_bins,
        progress=not quiet,
    )
    click.echo(f"report: {path}")
