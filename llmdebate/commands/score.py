"""``llmdebate score FILE``: re-score every transcript with the shared scoring.

Every complete line is scored; each bad line is reported by number (a torn last line, invalid
JSON with line and column, a line that is not a valid transcript) and so is every repeated
debate id. Exit status: 0 when everything re-scored exactly, 1 when anything was wrong
(a mismatch, a bad line, a duplicate id) or when no transcript completed (nothing to score:
one line says so), 2 when the file does not exist.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from llmdebate.commands.verbs import VERBS

if TYPE_CHECKING:
    from llmdebate.core.schemas import Transcript
    from llmdebate.records.transcripts import BadLine


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
    from llmdebate.core.scoring import score_transcript

    res = FileScore()
    seen: dict[str, int] = {}

    def note(bad: BadLine) -> None:
        res.bad_lines.append((bad.lineno, bad.detail))

    for lineno, t in _transcripts(path, note):
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


def _transcripts(path: Path, note: Callable[[BadLine], None]) -> Iterator[tuple[int, Transcript]]:
    """A transcript file's (line, transcript); an Inspect eval log's (``.eval``, ``.json``:
    :mod:`llmdebate.inspect_ext.logs`) (number in the log, transcript)."""
    if path.suffix in (".eval", ".json"):
        from llmdebate.inspect_ext.logs import log_transcripts

        return log_transcripts(path, note)
    from llmdebate.records.transcripts import numbered_transcripts

    return numbered_transcripts(path, note, torn="report")


@VERBS.register("score")
@click.command("score")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def command(file: str, as_json: bool) -> None:
    """Re-score every transcript in FILE (a run's transcripts.jsonl, or an Inspect eval log,
    .eval or .json) and report mismatches, bad lines and duplicate ids."""
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
        if res.ok and not res.scored:
            what = (f"none of its {res.transcripts} transcripts" if res.transcripts
                    else "no transcript")
            click.echo(f"error: {file}: {what} completed: nothing was scored", err=True)
            raise SystemExit(1)
        click.echo(
            f"{file}: {res.transcripts} transcripts, {res.scored} scored, "
            f"{len(res.mismatches)} mismatches, {len(bad)} bad lines, {len(dups)} duplicate ids"
        )
    if not res.ok:
        raise SystemExit(1)
    if not res.scored:  # --json: the object says it (scored 0)
        raise SystemExit(1)
