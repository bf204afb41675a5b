"""GPQA text never reaches a transcript file or the on-disk cache."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_runner import make_config, scripted_section

from llmdebate.data.gpqa import read_zip_items
from llmdebate.runner import TRANSCRIPTS_FILE, run
from llmdebate.scoring import score_transcript
from llmdebate.transcripts import read_transcripts

GPQA = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "gpqa" / "gpqa_diamond.zip"


def secrets(n: int) -> list[str]:
    items = read_zip_items(GPQA)[:n]
    out = []
    for it in items:
        assert it.meta["protected"] == "gpqa"
        out.append(it.question.strip())
        out += [c.strip() for c in it.choices or [] if len(c.strip()) >= 12]
    return out


def test_a_gpqa_run_writes_no_plain_text_and_keeps_no_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert GPQA.is_file(), f"shared datasets missing: expected {GPQA}"
    cache = tmp_path / "cache"
    monkeypatch.setenv("LLMDEBATE_CACHE_DIR", str(cache))
    cfg = make_config(
        GPQA,
        dataset={"limit": 3},
        judge={**scripted_section(), "kind": "llm"},
        debate={"depth": 1, "width": 2},
    )
    run(cfg, tmp_path / "r", progress=False)
    raw = (tmp_path / "r" / TRANSCRIPTS_FILE).read_text(encoding="utf-8")
    hidden = secrets(3)
    leaked = sum(s in raw for s in hidden)  # never print the strings themselves
    assert hidden and leaked == 0, f"{leaked} protected strings found in the transcripts"
    assert not any(cache.rglob("*.sqlite"))
    ts = list(read_transcripts(tmp_path / "r" / TRANSCRIPTS_FILE))
    assert len(ts) == 3 and all(t.meta.get("redacted") for t in ts)
    assert all(score_transcript(t).mismatches == [] for t in ts if t.status == "complete")
    assert any(t.status == "complete" for t in ts)
