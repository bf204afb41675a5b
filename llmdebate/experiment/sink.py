"""The run's transcript file as the driver writes it: one ``write`` per line, fsync in batches.

Each finished debate is appended with a single ``write`` of its whole line on a descriptor
opened in append mode, so a killed process leaves whole lines (at worst a torn last line,
which a resume cuts off). The data is in the kernel as soon as the write returns, so
``kill -9`` loses nothing written; :func:`os.fsync`, which guards against the machine itself
going down, runs in a background thread at most ``fsync_interval`` seconds after a write and
once more on close. Fsyncing every line in the event loop cost 2-4 ms a debate, blocking
every debate in flight meanwhile.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

FSYNC_INTERVAL_S = 0.5


class TranscriptWriter:
    """Append whole lines to ``path``; fsync within ``fsync_interval`` seconds, and on close."""

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
