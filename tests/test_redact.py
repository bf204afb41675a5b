"""GPQA text never reaches a file of a run (transcripts, summary, report) or the on-disk cache.

The GPQA stand-in is an encrypted zip of invented questions in GPQA's layout (gpqa_fixture.py),
written by the test; a control run over the same questions in plain JSONL shows that those
strings do reach the transcripts when an item is not protected.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gpqa_fixture import gpqa_items, write_gpqa_zip

from llmdebate.core.scoring import score_transcript
from llmdebate.data.gpqa import read_zip_items
from llmdebate.experiment.loading import validate
from llmdebate.experiment.runner import run
from llmdebate.records.rundir import TRANSCRIPTS_FILE, load_transcripts
from llmdebate.report.build import build_report

FIXTURE = str(Path(__file__).resolve().parent / "fixtures" / "llm_fixtures.py")
SCRIPTED = {
    "model": "scripted",
    "options": {
        "responder": f"{FIXTURE}:responder",
        "probabilities": f"{FIXTURE}:probabilities",
    },
}
PROTOCOLS = ["prover-estimator", "naive-recursive", "two-sided", "consultancy", "direct"]


def secrets(zip_path: Path, n: int) -> list[str]:
    items = read_zip_items(zip_path)[:n]
    out = []
    for it in items:
        assert it.meta["protected"] == "gpqa"
        out.append(it.question.strip())
        out += [c.strip() for c in it.choices or [] if len(c.strip()) >= 12]
    return out


def gpqa_run(dataset: Path, run_dir: Path) -> str:
    """Every protocol on 3 items; the text of every file the run and its report wrote."""
    cfg = validate(
        {
            "name": "gpqa",
            "protocols": PROTOCOLS,
            "dataset": {"path": str(dataset), "limit": 3},
            "debate": {"depth": 1, "width": 2},
            "prover": SCRIPTED,
            "estimator": SCRIPTED,
            "judge": {**SCRIPTED, "kind": "llm"},
            "report": {"bootstrap": 20},
        }
    )
    run(cfg, run_dir, progress=False)
    build_report(run_dir)
    files = sorted(p for p in run_dir.rglob("*") if p.is_file() and p.suffix != ".png")
    assert {p.name for p in files} >= {
        "config.yaml",
        TRANSCRIPTS_FILE,
        "summary.json",
        "comparison.json",
        "comparison.md",
        "report.html",
    }
    return "\n".join(p.read_text(encoding="utf-8") for p in files)


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
    ts = load_transcripts(tmp_path / "r")
    # 3 items x (2 prover-estimator + 2 naive + 2 two-sided + 2 consultancy + 1 direct)
    assert len(ts) == 27 and all(t.meta.get("redacted") for t in ts)
    assert {t.protocol for t in ts if t.status == "complete"} == set(PROTOCOLS)
    assert all(score_transcript(t).mismatches == [] for t in ts if t.status == "complete")
    assert any(t.status == "complete" for t in ts)

    # Control: the same questions, unprotected, do reach the files of the same run.
    plain = tmp_path / "plain.jsonl"
    plain.write_text("".join(json.dumps(it) + "\n" for it in gpqa_items()), encoding="utf-8")
    raw_plain = gpqa_run(plain, tmp_path / "plain-run")
    assert sum(s in raw_plain for s in hidden) == len(hidden)
