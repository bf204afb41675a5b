"""The terminal judge's screens as a terminal shows them (rich's own render to text): no
control or format character (bidirectional controls included) and every box's right border
in the column of its left border's corner, for leaf claims with evidence and for speeches."""

from __future__ import annotations

import sys
import unicodedata
from pathlib import Path

import pytest
from rich.console import Console
from sqlalchemy import select

from llmdebate.judging.complete import study_settings, view_for, waiting_by_id
from llmdebate.judging.db import Assignment, connect
from llmdebate.judging.terminal import _show

try:
    from tests.judging_study import assign, make_run, rlo_dataset, write_judges
except ImportError:  # pytest run from inside tests/
    sys.path.insert(0, str(Path(__file__).parent))
    from judging_study import (  # type: ignore[no-redef]
        assign,
        make_run,
        rlo_dataset,
        write_judges,
    )

WIDTH = 72
CORNERS = {"╭": "╮", "│": "│", "╰": "╯"}


@pytest.fixture(scope="module")
def screens(tmp_path_factory: pytest.TempPathFactory) -> str:
    tmp = tmp_path_factory.mktemp("render")
    run_dir = make_run(tmp, ["prover-estimator", "two-sided"], dataset=rlo_dataset(tmp),
                       depth=1, judge={"kind": "human", "passage": "hidden"})
    assign(run_dir, write_judges(tmp / "j.yaml", ["a", "b", "c", "d"]), 1)
    sessions, waiting = connect(run_dir), waiting_by_id(run_dir)
    with sessions() as s:
        rows = list(s.scalars(select(Assignment)))
        settings = study_settings(s)
    console = Console(record=True, width=WIDTH, color_system=None, force_terminal=True)
    for n, a in enumerate(rows, start=1):
        _show(console, view_for(waiting[a.debate_id], a, settings), n, len(rows))
    return console.export_text()


def test_no_control_or_format_character_is_drawn(screens: str) -> None:
    drawn = [(hex(ord(ch)), unicodedata.name(ch, "?")) for ch in screens
             if ch != "\n" and unicodedata.category(ch) in ("Cc", "Cf")]
    assert drawn == []
    assert "Claim" in screens and "Evidence" in screens and "Answer 1" in screens


def test_every_box_is_aligned(screens: str) -> None:
    boxes = 0
    for line in screens.splitlines():
        start = line[:1]
        if start not in CORNERS:
            continue
        boxes += start == "╭"
        assert len(line.rstrip()) == WIDTH, line
        assert line.rstrip()[-1] == CORNERS[start], line
        assert all(unicodedata.east_asian_width(ch) not in ("W", "F") for ch in line), line
    assert boxes >= 4
