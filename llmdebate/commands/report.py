"""``llmdebate report RUN_DIR``: tables, plots and report.html from a run's transcripts."""

from __future__ import annotations

from pathlib import Path

import click


@click.command("report")
@click.argument("run_dir", type=click.Path(file_okay=False))
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
    run_dir: str,
    formal: bool | None,
    bootstrap: int | None,
    calibration_bins: int | None,
    quiet: bool,
) -> None:
    """Write comparison.json, comparison.md, plots/ and report.html into RUN_DIR, reading its
    config.yaml and transcripts.jsonl only (no debate is run)."""
    from llmdebate.report.build import build_report

    path = build_report(
        Path(run_dir),
        formal=formal,
        bootstrap=bootstrap,
        calibration_bins=calibration_bins,
        progress=not quiet,
    )
    click.echo(f"report: {path}")
