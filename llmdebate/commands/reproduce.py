"""``llmdebate reproduce``: write the formal engine's reproduction table (Markdown + JSON).

The files hold no timing and values rounded to a fixed precision, so rerunning on unchanged
code rewrites them identically, on any machine; the time taken (and each attack's) is
printed, not written.
"""

from __future__ import annotations

import time
from pathlib import Path

import click

from llmdebate.commands.verbs import VERBS
from llmdebate.formal.reproduce import write
from llmdebate.formal.reproduce_attack import TIMES


@VERBS.register("reproduce")
@click.command("reproduce")
@click.option(
    "--out",
    "out_dir",
    default="docs",
    show_default=True,
    type=click.Path(file_okay=False),
    help="Directory for reproduction.md and reproduction.json.",
)
@click.option("--quiet", is_flag=True, help="No progress lines (one per section, on stderr).")
def command(out_dir: str, quiet: bool) -> None:
    """Recompute completeness, obfuscation, soundness, attack, proof-audit and stability checks."""
    t0 = time.perf_counter()

    def say(line: str) -> None:
        click.echo(line, err=True)

    md, js, table = write(Path(out_dir), say=None if quiet else say)
    failed = sum(1 for r in table["rows"] if r["passed"] is False)
    click.echo(
        f"wrote {md} and {js}: {len(table['rows'])} rows, {failed} not passed "
        f"({time.perf_counter() - t0:.1f} s)"
    )
    for name, sec in TIMES.items():  # the attacks' times: printed, not written
        click.echo(f"  attack {name}: {sec:.2f} s")
