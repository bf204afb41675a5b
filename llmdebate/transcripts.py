"""Reading and writing transcript files (JSON Lines, one debate per line, append-only)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from pydantic import ValidationError

from llmdebate.errors import RuleError, TranscriptError
from llmdebate.jsonl import first_error, iter_json_lines
from llmdebate.redact import redact
from llmdebate.schemas import Transcript


def read_transcripts(path: str | Path) -> Iterator[Transcript]:
    """Yield every transcript in a JSONL file; a bad line raises one error naming file and line.

    A last line without its newline (a write cut short) is reported, not silently skipped.
    """
    path = Path(path)
    if not path.is_file():
        raise TranscriptError(f"{path}: no such transcript file")
    for lineno, data in iter_json_lines(path, TranscriptError):
        try:
            yield Transcript.model_validate(data)
        except ValidationError as exc:
            raise TranscriptError(f"{path}:{lineno}: {first_error(exc)}") from None
        except RuleError as exc:
            raise TranscriptError(f"{path}:{lineno}: {exc}") from None


def append_transcript(path: str | Path, transcript: Transcript) -> None:
    """Append one transcript as a single line, flushed and fsynced, so no line is ever torn.

    A transcript of a protected item (GPQA) is redacted first (:mod:`llmdebate.redact`).
    One ``write`` of the whole line on a file opened in append mode: a crash leaves either the
    whole line or, at worst, a partial last line without newline that readers report.
    """
    line = redact(transcript).model_dump_json() + "\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)
