"""``llmdebate export RUN_DIR``: one player's decisions as training data in a trainer's format.

Exit status: 0 when rows were written, 2 for a user error (no run directory, an unknown
format or role, no rows to write).
"""

from __future__ import annotations

from pathlib import Path
from typing import cast

import click

from llmdebate.commands.choices import LateHelpOption, StoredChoice, live
from llmdebate.commands.help_table import EXPORT_KINDS, FORMATS, PLAYERS
from llmdebate.commands.verbs import VERBS
from llmdebate.errors import UserError


def _players() -> tuple[str, ...]:
    """The players --role takes: the stored built-in ones unless a protocol could add one."""
    if not live(("llmdebate.protocols",), "llmdebate.protocols.registry"):
        return PLAYERS
    from llmdebate.export import players

    return players()


def _baseline(value: str) -> str | float:
    from llmdebate.export.formats import BASELINES

    if value in BASELINES:
        return value
    try:
        return float(value)
    except ValueError:
        raise click.BadParameter(
            f"{value!r}: use advantage, expected, mean or a number", param_hint="--baseline"
        ) from None


def _whole_run_options(fmt: str, **given: object) -> None:
    """A usage error naming the row options given to a whole-run format (it writes the whole
    run, and cannot honour them)."""
    flags = {"role": "--role", "kind": "--as", "include_pending": "--include-pending",
             "text": "--text", "split": "--split", "include_audit": "--include-audit"}
    refused = [flags[k] for k, v in given.items() if v not in (None, False)]
    if refused:
        raise UserError(f"--format {fmt} writes the whole run: {', '.join(refused)} do not apply")


@VERBS.register("export")
@click.command("export")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False))
@click.option(
    "--role", default=None, metavar="ROLE", cls=LateHelpOption,
    help="Whose decisions (required except for whole-run formats: inspect-log):",
    late_help=lambda: f"{', '.join(_players())}, or a role a protocol the run's transcripts "
    "record adds (a config topology's seat).",
)
@click.option(
    "--format", "fmt", type=StoredChoice(FORMATS, "llmdebate.formats",
                                         "llmdebate.export.format_registry:FORMATS"),
    default="trl-prompt-completion",
    show_default=True, help="Layout of the rows.",
)
@click.option("--out", "-o", "out", type=click.Path(), required=True,
              help="Output file or directory.")
@click.option(
    "--as", "kind", type=click.Choice(EXPORT_KINDS), default=None,
    help="Container (default by suffix: .jsonl, .csv, .parquet, else a datasets directory).",
)
@click.option("--include-pending", is_flag=True, help="Keep debates awaiting a verdict.")
@click.option(
    "--text", is_flag=True,
    help="Plain-text prompts as a base model sees them (no chat template needed).",
)
@click.option(
    "--baseline", default="advantage", show_default=True,
    help="trl-unpaired: label = the decision's advantage > 0 (advantage: its expected return "
         "against the mean of the decisions of its kind), or reward > expected / mean / a "
         "number.",
)
@click.option(
    "--test-fraction", type=click.FloatRange(0.0, 1.0), default=0.1, show_default=True,
    help="Share of items (by hash of the item id) in the test split.",
)
@click.option("--split", type=click.Choice(["train", "test"]), default=None,
              help="Write only this split.")
@click.option(
    "--include-audit", is_flag=True,
    help="Keep rows of decisions no model made (rejected replies, rule-made directions, "
    "assigned answers); the audit format always has them.",
)
def command(
    run_dir: str,
    role: str | None,
    fmt: str,
    out: str,
    kind: str | None,
    include_pending: bool,
    text: bool,
    baseline: str,
    test_fraction: float,
    split: str | None,
    include_audit: bool,
) -> None:
    """Write RUN_DIR's decisions of one player as training rows (or, with a whole-run format
    such as inspect-log, the whole run as one file)."""
    from llmdebate.export import FORMATS, export_run
    from llmdebate.export.format_registry import WHOLE_RUN, RunWriter

    entry = FORMATS.entry(fmt)
    if entry.can(WHOLE_RUN):
        _whole_run_options(fmt, role=role, kind=kind, include_pending=include_pending,
                           text=text, split=split, include_audit=include_audit)
        wrote = cast(RunWriter, entry.value)(Path(run_dir), Path(out))
        click.echo(f"{out}: {fmt}, {wrote}")
        return
    if role is None:
        raise click.UsageError(f"--role is required for --format {fmt}")
    res = export_run(
        run_dir,
        out,
        role=role,
        fmt=fmt,
        kind=kind,
        include_pending=include_pending,
        text=text,
        baseline=_baseline(baseline),
        test_fraction=test_fraction,
        split=split,
        include_audit=include_audit,
    )
    click.echo(f"{res.path}: {res.rows} {fmt} rows from {res.debates} debates ({res.kind})")
