"""The export format ``inspect-log``: a run directory as one Inspect eval log, for
``inspect view`` (``llmdebate export RUN --format inspect-log --out run.eval``)."""

from __future__ import annotations

from pathlib import Path

from llmdebate.export.format_registry import FORMATS, WHOLE_RUN


@FORMATS.register("inspect-log", capabilities={WHOLE_RUN})
def inspect_log(run_dir: Path, out: Path) -> str:
    """The whole run as an Inspect eval log (.eval or .json) for Inspect's log viewer."""
    from llmdebate.errors import require
    from llmdebate.inspect_ext.logs import write_run_log

    require("inspect_ai", "inspect")
    return write_run_log(run_dir, out)
