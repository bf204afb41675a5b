"""Debate transcripts as training data: one row per decision, in the trainers' formats.

:func:`export_run` writes a run directory's decisions for one player (``llmdebate export``);
:mod:`.credit` says which reward each decision is credited with (every number from
:mod:`llmdebate.core.scoring`); :mod:`.formats` holds the TRL, verl and OpenRLHF layouts, each
registered in :data:`.registry.FORMATS`.
"""

from llmdebate.export.api import Export, build, carrier_sums, decision_rows, export_run, run_info
from llmdebate.export.format_registry import FORMATS
from llmdebate.export.rows import PLAYERS, Row, RunInfo, players, transcript_rows

__all__ = [
    "FORMATS",
    "PLAYERS",
    "Export",
    "Row",
    "RunInfo",
    "build",
    "carrier_sums",
    "decision_rows",
    "export_run",
    "players",
    "run_info",
    "transcript_rows",
]
