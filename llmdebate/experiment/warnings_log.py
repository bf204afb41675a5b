"""Other packages' warnings (transformers' FutureWarnings, deprecations) go to the run's log.

While a run executes, a warning raised from a module outside llmdebate is appended to
``<run dir>/warnings.log`` (once per message and place, as Python shows it) instead of being
printed over the progress lines; llmdebate's own warnings still print.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

WARNINGS_FILE = "warnings.log"
_LOCK = threading.Lock()


PACKAGE = Path(__file__).resolve().parents[1]


def _ours(filename: str) -> bool:
    try:
        return Path(filename).resolve().is_relative_to(PACKAGE)
    except (OSError, ValueError):
        return False


@contextmanager
def warnings_to_log(run_dir: Path) -> Iterator[Path]:
    """Within the block, append other packages' warnings to ``run_dir/warnings.log``."""
    path = run_dir / WARNINGS_FILE
    shown = warnings.showwarning
    seen: set[tuple[str, str, int]] = set()

    def show(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: TextIO | None = None,
        line: str | None = None,
    ) -> None:
        if _ours(filename):
            shown(message, category, filename, lineno, file, line)
            return
        key = (str(message), filename, lineno)
        with _LOCK:
            if key in seen:
                return
            seen.add(key)
            with path.open("a", encoding="utf-8") as out:
                out.write(warnings.formatwarning(message, category, filename, lineno, line))

    warnings.showwarning = show
    try:
        yield path
    finally:
        if warnings.showwarning is show:
            warnings.showwarning = shown
