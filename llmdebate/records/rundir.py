"""The files of a run directory, for the runner that writes them and the readers of them.

``runs/<run-id>/`` holds:

* ``config.yaml`` — the resolved experiment config, and under ``servers`` the effective
  server URL of every role;
* ``transcripts.jsonl`` — one debate per line (any protocol, :class:`~llmdebate.core.schemas.
  Transcript`), each appended with one fsynced write, at most one line per debate id;
* ``failures.jsonl`` — the lines of failed debates that a resume retried (kept, not lost);
* ``summary.json`` — written after every invocation, however it ended;
* ``judged.jsonl`` — the debates of ``transcripts.jsonl`` that waited for a person, completed
  with one person's verdict each: one line per judgment (id ``<debate id>#<judgment id>``,
  ``meta.judgment`` says who, when and how), append-only like the transcripts, so a debate
  judged by K people has K scored lines there and its waiting line stays as it was;
* ``judging.db`` — the judges, assignments and judgments of a human-judge study (SQLite).

Readers (``report``, judging, export) use :func:`load_transcripts`, which reads through
:func:`llmdebate.records.transcripts.iter_transcripts`; nothing here runs a debate.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import yaml

from llmdebate.core.schemas import Transcript
from llmdebate.errors import TranscriptError, UserError
from llmdebate.records.jsonl import iter_json_lines
from llmdebate.records.line_index import index_of
from llmdebate.records.paths import anchored
from llmdebate.records.transcripts import iter_transcripts, transcript_line, transcript_of

CONFIG_FILE = "config.yaml"
TRANSCRIPTS_FILE = "transcripts.jsonl"
FAILURES_FILE = "failures.jsonl"
SUMMARY_FILE = "summary.json"
JUDGED_FILE = "judged.jsonl"
STRUCTURED_FILE = "structured.json"
"""Whether each server endpoint enforces its structured-output field, as established
(:mod:`llmdebate.models.enforcement`): a resumed run reads it instead of probing again."""
JUDGING_DB = "judging.db"


def write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` so that readers see the old or the new file, whole."""
    tmp = path.with_name(f".{path.name}.tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def repair_transcripts(path: Path) -> int:
    """Cut a torn last line (one without newline) off ``path``; return the bytes removed."""
    if not path.exists():
        return 0
    size = path.stat().st_size
    if size == 0:
        return 0
    with path.open("rb+") as fh:
        fh.seek(size - 1)
        if fh.read(1) == b"\n":
            return 0
        pos, keep = size, 0
        while pos > 0:  # find the last newline, reading backwards in blocks
            step = min(65536, pos)
            pos -= step
            fh.seek(pos)
            i = fh.read(step).rfind(b"\n")
            if i >= 0:
                keep = pos + i + 1
                break
        fh.truncate(keep)
        fh.flush()
        os.fsync(fh.fileno())
    return size - keep


def statuses(path: Path) -> dict[str, str]:
    """{debate id: status} of every line of ``path``; a duplicate id is an error."""
    done: dict[str, str] = {}
    if not path.exists():
        return done
    for lineno, data in iter_json_lines(path, TranscriptError):
        tid = data.get("id")
        if not isinstance(tid, str):
            raise TranscriptError(f"{path}:{lineno}: not a transcript line")
        if tid in done:
            raise TranscriptError(f"{path}:{lineno}: duplicate debate id {tid!r}")
        done[tid] = str(data.get("status", "complete"))
    return done


def retire_failed(run_dir: Path) -> int:
    """Move the lines of failed debates to ``failures.jsonl`` so that they run again.

    The failed lines are appended (fsynced) to the failures file before the transcripts file
    is atomically replaced without them: a crash in between leaves them in both, never lost.
    """
    path = run_dir / TRANSCRIPTS_FILE
    if not path.exists():
        return 0
    keep: list[bytes] = []
    failed: list[bytes] = []
    with path.open("rb") as fh:
        for raw in fh:
            if not raw.strip():
                continue
            is_failed = b'"status":"failed"' in raw and _status(raw) == "failed"
            (failed if is_failed else keep).append(raw)
    if not failed:
        return 0
    fd = os.open(run_dir / FAILURES_FILE, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, b"".join(failed))
        os.fsync(fd)
    finally:
        os.close(fd)
    write_atomic(path, b"".join(keep).decode("utf-8"))
    return len(failed)


def _status(raw: bytes) -> str:
    try:
        return str(json.loads(raw).get("status", "complete"))
    except (ValueError, AttributeError):
        return "?"


RECORDED_PATHS = (("prompts_dir",), ("dataset", "path"))
"""The fields of a recorded config that name a file or folder to read."""


def read_run_config(run_dir: Path) -> dict[str, Any]:
    """The mapping saved in ``config.yaml`` (with its ``servers`` section); a relative path
    it records (:data:`RECORDED_PATHS`) is read against the run folder first, then the
    current folder and the repository, and given as the absolute path found."""
    path = run_dir / CONFIG_FILE
    if not path.is_file():
        raise UserError(f"{run_dir}: not a run directory (no {CONFIG_FILE})")
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    if not isinstance(data, dict):
        raise UserError(f"{path}: the top level must be a mapping")
    for *parents, key in RECORDED_PATHS:
        node: Any = data
        for part in parents:
            node = node.get(part) if isinstance(node, dict) else None
        value = node.get(key) if isinstance(node, dict) else None
        if isinstance(value, str) and value and not value.startswith("hf:"):
            found = anchored(value, run_dir)
            if found is not None:
                node[key] = str(found)
    return data


def load_transcripts(run_dir: Path, *, judged: bool = False) -> list[Transcript]:
    """Every transcript of a run directory; a torn last line (a killed run) is left out.

    ``judged``: the lines of ``judged.jsonl`` instead (debates completed by a person). A bad
    complete line raises one :class:`TranscriptError` naming the file and the line.
    """
    path = run_dir / (JUDGED_FILE if judged else TRANSCRIPTS_FILE)
    return list(iter_transcripts(path)) if path.is_file() else []


def append_judged(run_dir: Path, transcript: Transcript) -> bool:
    """Append one judged transcript to ``judged.jsonl`` unless its id is already there.

    Safe across processes (an exclusive lock on the file) and across crashes (a torn last line
    is cut first; one fsynced write per line). Returns whether the line was written.
    """
    return append_once(run_dir / JUDGED_FILE, transcript)


def append_once(path: Path, transcript: Transcript) -> bool:
    """Append ``transcript``'s line to ``path`` unless its id is there (an exclusive lock on
    the file; a torn last line cut first; one fsynced write). The ids come from the file's
    :class:`~llmdebate.records.line_index.LineIndex`, which reads only what was appended
    since: the file is not read again. Returns whether the line was written."""
    import fcntl

    line = transcript_line(transcript)
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        repair_transcripts(path)
        index = index_of(path, transcript_of)
        if transcript.id in index:
            return False
        os.write(fd, line)
        os.fsync(fd)
        index.refresh()
        return True
    finally:
        os.close(fd)  # closing releases the lock
