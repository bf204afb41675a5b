"""Reading and writing transcript files (JSON Lines, one debate per line, append-only).

Every reader of transcripts goes through :func:`iter_transcripts` (or
:func:`numbered_transcripts`): a bad line is one :class:`BadLine` naming the file, the line
and, for JSON syntax and encoding errors, the column; the caller says what to do with it
(``on_error``: raise a :class:`~llmdebate.errors.TranscriptError`, the default, or collect it
and go on). A last line without its newline is a write cut short (a killed run): readers of
a run directory leave it out, ``llmdebate score`` reports it (``torn="report"``).

Writers: :class:`TranscriptWriter` (the runner: one ``write`` per line, fsync in batches) and
:func:`append_transcript` (one line, fsynced). Both write :func:`transcript_line`, which
redacts a protected item's text first (:mod:`llmdebate.records.redact`).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from llmdebate.core.schemas import Transcript
from llmdebate.errors import RuleError, TranscriptError
from llmdebate.records.jsonl import decode_line, first_error, json_error_message, utf8_error_message
from llmdebate.records.redact import redact

TORN = "torn last line (no newline at the end of the file)"
FSYNC_INTERVAL_S = 0.5


@dataclass(frozen=True)
class BadLine:
    """A line of a transcript file that is not a transcript."""

    path: Path
    lineno: int
    problem: str
    column: int | None = None

    @property
    def detail(self) -> str:
        """The problem with its column, without file and line."""
        return self.problem if self.column is None else f"column {self.column}: {self.problem}"

    def __str__(self) -> str:
        col = "" if self.column is None else f":{self.column}"
        return f"{self.path}:{self.lineno}{col}: {self.problem}"


OnError = Callable[[BadLine], None]


def raise_error(bad: BadLine) -> None:
    """The default ``on_error``: one :class:`TranscriptError` naming file, line and problem."""
    raise TranscriptError(str(bad))


class _Bad(Exception):
    def __init__(self, problem: str, column: int | None = None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.column = column


def _with_column(message: str) -> _Bad:
    """``"12: not valid JSON (...)"`` (as :mod:`llmdebate.records.jsonl` words it) split."""
    col, _, problem = message.partition(": ")
    return _Bad(problem, int(col)) if col.isdigit() else _Bad(message)


def _validate(data: Any) -> Transcript:
    try:
        return Transcript.model_validate(data)
    except ValidationError as exc:
        raise _Bad(first_error(exc)) from None
    except RuleError as exc:
        raise _Bad(str(exc)) from None


def _parse_line(raw: bytes, *, first: bool = False) -> Transcript:
    """One line as a transcript; raises ``_Bad`` with the problem (fast path: pydantic's own
    JSON parser; a line it cannot read is parsed again for a message with the column)."""
    try:
        return Transcript.model_validate_json(raw)
    except ValidationError as exc:
        if exc.errors()[0]["loc"]:  # valid JSON, not a valid transcript
            raise _Bad(first_error(exc)) from None
    except RuleError as exc:
        raise _Bad(str(exc)) from None
    try:
        text = decode_line(raw, first=first)
    except UnicodeDecodeError as exc:
        raise _with_column(utf8_error_message(exc)) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _with_column(json_error_message(exc)) from None
    except RecursionError:
        raise _Bad("not valid JSON (nested too deeply)") from None
    if not isinstance(data, dict):
        raise _Bad("expected a JSON object")
    return _validate(data)


def transcript_of(raw: bytes) -> Transcript:
    """One line known to be a transcript (written by this package), parsed."""
    return Transcript.model_validate_json(raw)


def numbered_transcripts(
    path: str | Path,
    on_error: OnError = raise_error,
    *,
    torn: Literal["skip", "report"] = "skip",
) -> Iterator[tuple[int, Transcript]]:
    """(line number, transcript) for every line of a JSONL file; blank lines are skipped.

    A bad line goes to ``on_error`` (which raises, or notes it and returns to go on); a torn
    last line is left out (``torn="skip"``) or is a bad line (``"report"``).
    """
    path = Path(path)
    if not path.is_file():
        raise TranscriptError(f"{path}: no such transcript file")
    with path.open("rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            if not raw.endswith(b"\n"):  # only the last line can lack its newline
                if torn == "report":
                    on_error(BadLine(path, lineno, f"{TORN}: not read"))
                return
            try:
                yield lineno, _parse_line(raw, first=lineno == 1)
            except _Bad as bad:
                on_error(BadLine(path, lineno, bad.problem, bad.column))


def iter_transcripts(
    path: str | Path,
    on_error: OnError = raise_error,
    *,
    torn: Literal["skip", "report"] = "skip",
) -> Iterator[Transcript]:
    """Every transcript of a JSONL file, one at a time (see :func:`numbered_transcripts`)."""
    for _, t in numbered_transcripts(path, on_error, torn=torn):
        yield t


# ------------------------------------------------------------------------------ writing
def transcript_line(transcript: Transcript) -> bytes:
    """One transcript as its line, redacted first (a protected item's text never leaves)."""
    return redact(transcript).model_dump_json().encode("utf-8") + b"\n"


def append_transcript(path: str | Path, transcript: Transcript) -> None:
    """Append one transcript as a single line, fsynced, so no line is ever torn.

    One ``write`` of the whole line on a file opened in append mode: a crash leaves either the
    whole line or, at worst, a partial last line without newline that readers leave out.
    """
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, transcript_line(transcript))
        os.fsync(fd)
    finally:
        os.close(fd)


class TranscriptWriter:
    """Append whole lines to ``path``; fsync within ``fsync_interval`` seconds, and on close.

    Each finished debate is appended with a single ``write`` of its whole line on a descriptor
    opened in append mode, so a killed process leaves whole lines (at worst a torn last line,
    which a resume cuts off). The data is in the kernel as soon as the write returns, so
    ``kill -9`` loses nothing written; :func:`os.fsync`, which guards against the machine
    itself going down, runs in a background thread at most ``fsync_interval`` seconds after a
    write and once more on close. Fsyncing every line in the event loop cost 2-4 ms a debate,
    blocking every debate in flight meanwhile.
    """

    def __init__(self, path: Path, fsync_interval: float = FSYNC_INTERVAL_S) -> None:
        self.path = path
        self.written = 0
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._dirty = threading.Event()
        self._closing = threading.Event()
        self._interval = fsync_interval
        self._thread = threading.Thread(target=self._sync_loop, name="fsync", daemon=True)
        self._thread.start()

    def write(self, line: bytes) -> None:
        """Append one line (it must end with a newline) in one ``write``."""
        view = memoryview(line)
        while view:  # a regular file takes the whole line at once; a short write continues it
            n = os.write(self._fd, view)
            view = view[n:]
        self.written += 1
        self._dirty.set()

    def _sync_loop(self) -> None:
        while not self._closing.is_set():
            if self._dirty.wait(self._interval) and not self._closing.is_set():
                self._dirty.clear()
                os.fsync(self._fd)
                self._closing.wait(self._interval)  # batch the writes of the next interval

    def close(self) -> None:
        if self._fd < 0:
            return
        self._closing.set()
        self._dirty.set()
        self._thread.join()
        os.fsync(self._fd)
        os.close(self._fd)
        self._fd = -1

    def __enter__(self) -> TranscriptWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
