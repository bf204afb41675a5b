"""The built-in speech protocols' transcripts on scripted runs, line for line.

``tests/fixtures/speech_golden/<case>.jsonl`` was written by the tree before two-sided debate
shipped as a topology (``two_sided.yaml``), from ``<case>.yaml`` beside it: word-limit
re-asks and a scratchpad, simultaneous speeches, a debater picking its side, an interactive
judge asking, quotes checked against a passage the judge does not see, a debate waiting for
a person, and the direct judge's blind and expert views. A run of each config today writes
the same bytes, call records included (only the timings are zeroed).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from llmdebate.cli import main

REPO = Path(__file__).resolve().parents[1]
GOLDEN = REPO / "tests" / "fixtures" / "speech_golden"
CASES = sorted(p.stem for p in GOLDEN.glob("*.yaml"))
TIMINGS = re.compile(r'"(wall_s|latency_s)":\s*[0-9.e+-]+')


def zeroed(text: str) -> str:
    """``text`` with every timing written as 0."""
    return TIMINGS.sub(r'"\1":0', text)


def test_zeroed_keeps_everything_but_the_timings() -> None:
    line = '{"wall_s": 1.5e-3,"latency_s":12,"text":"wall_s 3"}'
    assert zeroed(line) == '{"wall_s":0,"latency_s":0,"text":"wall_s 3"}'


def test_every_case_has_its_transcripts() -> None:
    assert {"two_sided_rules", "two_sided_simultaneous", "two_sided_chosen",
            "two_sided_interactive", "two_sided_passage", "direct_passage"} <= set(CASES)
    assert all((GOLDEN / f"{c}.jsonl").read_text().strip() for c in CASES)


@pytest.mark.parametrize("case", CASES)
def test_a_scripted_run_writes_the_recorded_transcripts(tmp_path: Path, case: str) -> None:
    run_dir = tmp_path / case
    assert main(["run", "--config", str(GOLDEN / f"{case}.yaml"), "--run-dir", str(run_dir)]) == 0
    written = zeroed((run_dir / "transcripts.jsonl").read_text()).splitlines()
    golden = (GOLDEN / f"{case}.jsonl").read_text().splitlines()
    assert len(written) == len(golden)
    for mine, theirs in zip(written, golden, strict=True):
        assert mine == theirs
