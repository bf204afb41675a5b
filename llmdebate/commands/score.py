"""``llmdebate score FILE``: re-score every transcript with the shared scoring.

Every complete line is scored; each bad line is reported by number (a torn last line, invalid
JSON with line and column, a line that is not a valid transcript) and so is every repeated
debate id. Exit status: 0 when everything re-scored exactly, 1 when anything was wrong
(a mismatch, a bad line, a duplicate id), 2 when the file does not exist.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

from llmdebate.scoring import score_transcript
from llmdebate.transcripts import BadLine, numbered_transcripts


@dataclass
class FileScore:
    """What scoring one transcript file found."""

    transcripts: int = 0
    scored: int = 0
    mismatches: list[str] = field(default_factory=list)
    bad_lines: list[tuple[int, str]] = field(default_factory=list)
    duplicates: list[tuple[int, str, int]] = field(default_factory=list)  # line, id, first line

    @property
    def ok(self) -> bool:
        return not (self.mismatches or self.bad_lines or self.duplicates)


def score_file(path: Path) -> FileScore:
    """Score every complete line of a transcript file; never stops at a bad line."""
    res = FileScore()
    seen: dict[str, int] = {}

    def note(bad: BadLine) -> None:
        res.bad_lines.append((bad.lineno, bad.detail))

    for lineno, t in numbered_transcripts(path, note, torn="report"):
        res.transcripts += 1
        if t.id in seen:
            res.duplicates.append((lineno, t.id, seen[t.id]))
        else:
            seen[t.id] = lineno
        if t.status != "complete":
            continue
        res.scored += 1
        res.mismatches.extend(f"{path}:{lineno}: {m}" for m in score_transcript(t).mismatches)
    return res


@click.command("score")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def command(file: str, as_json: bool) -> None:
    """Re-score every transcript in FILE and report mismatches, bad lines and duplicate ids."""
    res = score_file(Path(file))
    bad = [f"{file}:{n}: {why}" for n, why in res.bad_lines]
    dups = [
        f"{file}:{n}: duplicate debate id {i!r} (first on line {first})"
        for n, i, first in res.duplicates
    ]
    if as_json:
        out: dict[str, Any] = {
            "file": file,
            "transcripts": res.transcripts,
            "scored": res.scored,
            "mismatches": res.mismatches,
            "bad_lines": [{"line": n, "error": why} for n, why in res.bad_lines],
            "duplicates": [{"line": n, "id": i, "first_line": f} for n, i, f in res.duplicates],
        }
        click.echo(json.dumps(out))
    else:
        for line in [*bad, *dups]:
            click.echo(f"error: {line}", err=True)
        for m in res.mismatches:
            click.echo(m)
        click.echo(
            f"{file}: {res.transcripts} transcripts, {res.scored} scored, "
            f"{len(res.mismatches)} mismatches, {len(bad)} bad lines, {len(dups)} duplicate ids"
        )
    if not res.ok:
        raise SystemExit(1)
