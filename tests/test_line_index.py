"""The index of an append-only JSONL file: it reads only what was appended since (by this
process or another), leaves a line still being written for later, starts again when the
file shrank (a torn line cut) or was replaced, refuses a duplicate id, and an append that
checks its id against it writes each id once."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from llmdebate.errors import TranscriptError
from llmdebate.records.line_index import LineIndex, index_of, line_id


def row(tid: str, pad: int = 0) -> bytes:
    return (json.dumps({"schema_version": 1, "id": tid, "x": "y" * pad}) + "\n").encode()


def test_it_reads_only_appended_lines_and_waits_for_a_torn_one(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_bytes(row("a") + row('b "quoted" \\ id'))
    reads: list[bytes] = []
    index = LineIndex(path, lambda raw: reads.append(raw) or json.loads(raw))
    index.refresh()
    assert set(index.where) == {"a", 'b "quoted" \\ id'}
    with path.open("ab") as fh:
        fh.write(row("c")[:-5])  # a line being written
    index.refresh()
    assert "c" not in index
    with path.open("r+b") as fh:  # finished by another writer
        fh.seek(0, os.SEEK_END)
        fh.write(row("c")[-5:])
    index.refresh()
    assert index.get("c") == {"schema_version": 1, "id": "c", "x": ""}
    assert index.get("c") is not None and len(reads) == 1  # parsed once, then kept
    assert index.get("zzz") is None


def test_a_shrunk_or_replaced_file_is_read_again_and_duplicates_are_refused(
    tmp_path: Path,
) -> None:
    path = tmp_path / "a.jsonl"
    path.write_bytes(row("a", 100) + row("b"))
    index = LineIndex(path, json.loads)
    index.refresh()
    path.write_bytes(row("b"))  # shorter: read from the start
    index.refresh()
    assert set(index.where) == {"b"}
    replaced = tmp_path / "new.jsonl"
    replaced.write_bytes(row("x") + row("y") + row("z"))
    os.replace(replaced, path)
    index.refresh()
    assert set(index.where) == {"x", "y", "z"}
    with path.open("ab") as fh:
        fh.write(row("y"))
    with pytest.raises(TranscriptError, match="duplicate id 'y'"):
        index.refresh()


def test_line_ids_with_and_without_the_fast_path() -> None:
    assert line_id(row("plain")) == "plain"
    assert line_id(b'{"other": 1, "id": "late"}\n') == "late"
    assert line_id(b"[1, 2]\n") is None and line_id(b"{nope\n") is None


def test_one_index_per_path_in_the_process(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_bytes(row("a"))
    first = index_of(path, json.loads)
    with path.open("ab") as fh:
        fh.write(row("b"))
    again = index_of(tmp_path / "." / "a.jsonl", json.loads)
    assert again is first and "b" in again
