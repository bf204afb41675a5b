"""Reading and writing transcript files (JSON Lines, one debate per line, append-only)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

from pydantic import ValidationError

from llmdebate.errors import TranscriptError
from llmdebate.schemas import Transcript


def read_transcripts(path: str | Path) -> Iterator[Transcript]:
    """Yield every transcript in a JSONL file; a bad line raises one error naming file and line.

    A last line without its newline (a write cut short) is reported, not silently skipped.
    """
    path = Path(path)
    if not path.is_file():
        raise TranscriptError(f"{path}: no such transcript file")
    with path.open("rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            try:
                data = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise TranscriptError(f"{path}:{lineno}: not valid JSON ({exc.msg})") from None
            try:
                yield Transcript.model_validate(data)
            except ValidationError as exc:
                err = exc.errors()[0]
                loc = ".".join(str(x) for x in err["loc"])
                raise TranscriptError(f"{path}:{lineno}: {loc}: {err['msg']}") from None


def append_transcript(path: str | Path, transcript: Transcript) -> None:
    """Append one transcript as a single line, flushed and fsynced, so no line is ever torn.

    One ``write`` of the whole line on a file opened in append mode: a crash leaves either the
    whole line or, at worst, a partial last line without newline that readers report.
    """
    line = transcript.model_dump_json() + "\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)
