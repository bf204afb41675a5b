"""GPQA text never reaches a transcript file or the on-disk cache.

The GPQA stand-in is an encrypted zip of invented questions in GPQA's layout (gpqa_fixture.py),
written by the test; a control run over the same questions in plain JSONL shows that those
strings do reach the transcripts when an item is not protected.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gpqa_fixture import gpqa_items, write_gpqa_zip
from llmdebate.runner import TRANSCRIPTS_FILE, run
from test_runner import make_config, scripted_section

from llmdebate.data.gpqa import read_zip_items
from llmdebate.scoring import score_transcript
from llmdebate.transcripts import read_transcripts


def secrets(zip_path: Path, n: int) -> list[str]:
    items = read_zip_items(zip_path)[:n]
    out = []
    for it in items:
        assert it.meta["protected"] == "gpqa"
        out.append(it.question.strip())
        out += [c.strip() for c in it.choices or [] if len(c.strip()) >= 12]
    return out


def gpqa_run(dataset: Path, run_dir: Path) -> str:
    cfg = make_config(
        dataset,
        dataset={"limit": 3},
        judge={**scripted_section(), "kind": "llm"},
        debate={"depth": 1, "width": 2},
    )
    run(cfg, run_dir, progress=False)
    return (run_dir / TRANSCRIPTS_FILE).read_text(encoding="utf-8")


def test_a_gpqa_run_writes_no_plain_text_and_keeps_no_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    zip_path = write_gpqa_zip(tmp_path / "gpqa_diamond.zip")
    cache = tmp_path / "cache"
    monkeypatch.setenv("LLMDEBATE_CACHE_DIR", str(cache))
    raw = gpqa_run(zip_path, tmp_path / "r")
    hidden = secrets(zip_path, 3)
    leaked = sum(s in raw for s in hidden)  # never print the strings themselves
    assert hidden and leaked == 0, f"{leaked} protected strings found in the transcripts"
    assert not any(cache.rglob("*.sqlite"))
    ts = list(read_transcripts(tmp_path / "r" / TRANSCRIPTS_FILE))
    assert len(ts) == 3 and all(t.meta.get("redacted") for t in ts)
    assert all(score_transcript(t).mismatches == [] for t in ts if t.status == "complete")
    assert any(t.status == "complete" for t in ts)

    # Control: the same questions, unprotected, do reach the transcripts of the same run.
    plain = tmp_path / "plain.jsonl"
    plain.write_text("".join(json.dumps(it) + "\n" for it in gpqa_items()), encoding="utf-8")
    raw_plain = gpqa_run(plain, tmp_path / "plain-run")
    assert sum(s in raw_plain for s in hidden) == len(hidden)
