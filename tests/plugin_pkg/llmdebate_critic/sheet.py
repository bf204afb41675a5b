"""Export format ``critic-sheet``: one line per decision (who, which debate and round, the
prompt's last message, the reply), written as CSV only."""

from __future__ import annotations

from typing import Any

from llmdebate.export.format_registry import FORMATS, FormatContext, declare_files
from llmdebate.export.rows import Row


@FORMATS.register("critic-sheet")
def critic_sheet(rows: list[Row], ctx: FormatContext) -> list[dict[str, Any]]:
    """A sheet of decisions: debate, round, speaker, the last prompt message, the reply."""
    return [
        {
            "debate_id": r.debate_id,
            "round": r.round_k,
            "speaker": r.speaker,
            "role": r.role,
            "asked": r.prompt[-1]["content"],
            "reply": r.completion[-1]["content"],
        }
        for r in rows
    ]


declare_files("critic-sheet", "csv")
