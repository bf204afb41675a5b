"""``llmdebate reproduce``: write the formal engine's reproduction table (Markdown + JSON)."""

from __future__ import annotations

from pathlib import Path

import click

from llmdebate.formal.reproduce import write


@click.command("reproduce")
@click.option(
    "--out",
    "out_dir",
    default="docs",
    show_default=True,
    type=click.Path(file_okay=False),
    help="Directory for reproduction.md and reproduction.json.",
)
def command(out_dir: str) -> None:
    """Recompute completeness, obfuscation, soundness and stability checks."""
    md, js, table = write(Path(out_dir))
    failed = sum(1 for r in table["rows"] if r["passed"] is False)
    click.echo(
        f"wrote {md} and {js}: {len(table['rows'])} rows, {failed} not passed "
        f"({table['seconds']:.1f} s)"
    )
