"""The one transcript reader and its writers: every bad line named by file, line (and column)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from core_agents import ToyEstimator, ToyJudge, ToyProver

from llmdebate.core.engine import run_prover_estimator, run_sync
from llmdebate.core.schemas import Claim, DebateConfig, Transcript
from llmdebate.errors import TranscriptError
from llmdebate.records.rundir import TRANSCRIPTS_FILE, load_transcripts
from llmdebate.records.transcripts import (
    BadLine,
    TranscriptWriter,
    append_transcript,
    iter_transcripts,
    numbered_transcripts,
    transcript_line,
)


def transcript(seed: int) -> Transcript:
    cfg = DebateConfig(depth=1, width=2)
    return run_sync(
        run_prover_estimator(
            Claim(text="x", id="x"), ToyProver(q=2), ToyEstimator(), ToyJudge(), cfg, seed=seed
        )
    )


GOOD = [transcript(seed) for seed in range(3)]


def write(path: Path, lines: list[bytes]) -> Path:
    path.write_bytes(b"".join(lines))
    return path


def good(i: int) -> bytes:
    return GOOD[i].model_dump_json().encode() + b"\n"


def changed(**fields: object) -> bytes:
    """A whole transcript line with ``fields`` set to other values."""
    return json.dumps({**json.loads(good(0)), **fields}).encode() + b"\n"


@pytest.mark.parametrize(
    ("line", "where", "problem"),
    [
        (b'{"id": "x", oops}\n', ":2:13: ", "not valid JSON (Expecting property name"),
        (b'{"id": "caf\xe9"}\n', ":2:12: ", "invalid UTF-8 (byte 0xe9)"),
        (b"[1, 2]\n", ":2: ", "expected a JSON object"),
        (changed(seed="many"), ":2: ", "seed: Input should be a valid integer"),
        (changed(surprise=1), ":2: ", "surprise: unknown field"),
    ],
)
def test_a_bad_line_is_one_error_naming_file_line_and_column(
    tmp_path: Path, line: bytes, where: str, problem: str
) -> None:
    path = write(tmp_path / "t.jsonl", [good(0), line, good(1)])
    with pytest.raises(TranscriptError) as info:
        list(iter_transcripts(path))
    message = str(info.value)
    assert message.startswith(f"{path}{where}{problem}") and "\n" not in message


def test_on_error_collects_bad_lines_and_reading_goes_on(tmp_path: Path) -> None:
    path = write(
        tmp_path / "t.jsonl",
        [good(0), b"{oops\n", b"\n", good(1), b"[]\n", good(2)[:-20]],
    )
    bad: list[BadLine] = []
    got = list(numbered_transcripts(path, bad.append, torn="report"))
    assert [(n, t.id) for n, t in got] == [(1, GOOD[0].id), (4, GOOD[1].id)]
    assert [(b.lineno, b.column) for b in bad] == [(2, 2), (5, None), (6, None)]
    assert bad[0].detail.startswith("column 2: not valid JSON")
    assert str(bad[2]) == f"{path}:6: torn last line (no newline at the end of the file): not read"


def test_a_torn_last_line_is_left_out_by_readers_of_a_run(tmp_path: Path) -> None:
    (tmp_path / TRANSCRIPTS_FILE).write_bytes(good(0) + good(1) + good(2)[:-1])  # no newline
    assert [t.id for t in load_transcripts(tmp_path)] == [GOOD[0].id, GOOD[1].id]
    assert [t.id for t in iter_transcripts(tmp_path / TRANSCRIPTS_FILE)] == [
        GOOD[0].id,
        GOOD[1].id,
    ]


def test_a_byte_order_mark_on_the_first_line_is_read(tmp_path: Path) -> None:
    path = write(tmp_path / "t.jsonl", [b"\xef\xbb\xbf" + good(0), good(1)])
    assert [t.id for t in iter_transcripts(path)] == [GOOD[0].id, GOOD[1].id]


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(TranscriptError, match=r"t\.jsonl: no such transcript file"):
        list(iter_transcripts(tmp_path / "t.jsonl"))
    assert load_transcripts(tmp_path) == []


def test_what_the_writers_write_reads_back_equal(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    with TranscriptWriter(path, fsync_interval=0.01) as w:
        w.write(transcript_line(GOOD[0]))
        w.write(transcript_line(GOOD[1]))
    append_transcript(path, GOOD[2])
    assert list(iter_transcripts(path)) == GOOD
    assert path.read_bytes().count(b"\n") == 3
