"""``llmdebate score FILE``: re-score every transcript with the shared scoring."""

from __future__ import annotations

import json

import click

from llmdebate.scoring import score_transcript
from llmdebate.transcripts import read_transcripts


@click.command("score")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def command(file: str, as_json: bool) -> None:
    """Re-score every transcript in FILE and report any mismatch with the recorded rewards."""
    n = scored = 0
    mismatches: list[str] = []
    for t in read_transcripts(file):
        n += 1
        if t.status != "complete":
            continue
        scored += 1
        mismatches.extend(str(m) for m in score_transcript(t).mismatches)
    if as_json:
        click.echo(
            json.dumps({"file": file, "transcripts": n, "scored": scored, "mismatches": mismatches})
        )
    else:
        for m in mismatches:
            click.echo(m)
        click.echo(f"{file}: {n} transcripts, {scored} scored, {len(mismatches)} mismatches")
    if mismatches:
        raise SystemExit(1)
