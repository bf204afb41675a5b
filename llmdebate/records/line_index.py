"""Where each id's line sits in an append-only JSONL file (``asked.jsonl``, ``judged.jsonl``),
kept up to date by reading only the bytes appended since: a reader finds one line without
parsing the file, and an append checks its id is new without re-reading it.

:func:`index_of` gives the process's index of a path. :meth:`LineIndex.refresh` stats the
file and reads what was appended since the last call (by this process or another: every
writer appends under ``flock``, one fsynced write per line); a file that shrank (a torn last
line cut) or was replaced is read again from the start. A line without its newline yet is
left for the next refresh. The id of a line is read from its start (a transcript line begins
``{"schema_version":N,"id":"..."``), else from the parsed line. :meth:`LineIndex.get` reads
and parses one line, and keeps the last :data:`PARSED` parsed ones (the lines never change).
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Generic, TypeVar

from llmdebate.errors import TranscriptError

T = TypeVar("T")
PARSED = 32
_ID = re.compile(rb'^\{(?:"schema_version":[0-9]+,)?"id":"((?:[^"\\]|\\.)*)"')


def line_id(raw: bytes) -> str | None:
    """The ``id`` of a JSON line (None: the line has none)."""
    m = _ID.match(raw)
    if m is not None:
        return str(json.loads(b'"' + m.group(1) + b'"'))
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    tid = data.get("id") if isinstance(data, dict) else None
    return tid if isinstance(tid, str) else None


class LineIndex(Generic[T]):
    """{id: (offset, length)} of one file's complete lines (see the module docstring)."""

    def __init__(self, path: Path, parse: Callable[[bytes], T]) -> None:
        self.path = path
        self.parse = parse
        self.lock = threading.Lock()
        self.where: dict[str, tuple[int, int]] = {}
        self._inode: tuple[int, int] | None = None
        self._end = 0
        self._lines = 0
        self._parsed: OrderedDict[str, T] = OrderedDict()

    def refresh(self) -> None:
        """Read the lines appended since the last refresh."""
        with self.lock:
            try:
                st = os.stat(self.path)
            except FileNotFoundError:
                self._reset(None)
                return
            inode = (st.st_dev, st.st_ino)
            if inode != self._inode or st.st_size < self._end:
                self._reset(inode)
            if st.st_size > self._end:
                self._read_from(self._end)

    def _reset(self, inode: tuple[int, int] | None) -> None:
        self._inode, self._end, self._lines = inode, 0, 0
        self.where.clear()
        self._parsed.clear()

    def _read_from(self, start: int) -> None:
        with self.path.open("rb") as fh:
            fh.seek(start)
            pos = start
            for raw in fh:
                if not raw.endswith(b"\n"):
                    break  # being written (or torn): read on a later refresh
                self._lines += 1
                if raw.strip():
                    tid = line_id(raw)
                    if tid is None:
                        raise TranscriptError(f"{self.path}: a line without an id at byte {pos}")
                    if tid in self.where:
                        raise TranscriptError(f"{self.path}:{self._lines}: duplicate id {tid!r}")
                    self.where[tid] = (pos, len(raw))
                pos += len(raw)
            self._end = pos

    def __contains__(self, tid: str) -> bool:
        return tid in self.where

    def get(self, tid: str) -> T | None:
        """The parsed line of ``tid`` (None: no such line at the last refresh)."""
        with self.lock:
            hit = self._parsed.get(tid)
            if hit is not None:
                self._parsed.move_to_end(tid)
                return hit
            at = self.where.get(tid)
        if at is None:
            return None
        with self.path.open("rb") as fh:
            fh.seek(at[0])
            raw = fh.read(at[1])
        value = self.parse(raw)
        with self.lock:
            self._parsed[tid] = value
            while len(self._parsed) > PARSED:
                self._parsed.popitem(last=False)
        return value


_INDEXES: dict[tuple[str, int], LineIndex[object]] = {}
_INDEXES_LOCK = threading.Lock()


def index_of(path: Path, parse: Callable[[bytes], T]) -> LineIndex[T]:
    """This process's index of ``path`` (one per path and parser), refreshed."""
    key = (str(Path(path).resolve()), id(parse))
    with _INDEXES_LOCK:
        index = _INDEXES.get(key)
        if index is None:
            index = _INDEXES[key] = LineIndex(Path(path), parse)
    index.refresh()
    return index  # type: ignore[return-value]
