"""``assign`` with a judges file too small for the study says how many judges it needs; the
bundled judges file fits the documented study (configs/human-study-local.yaml, --per-item 2)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

from llmdebate.cli import main

try:
    from tests.judging_study import make_run, write_judges
except ImportError:  # pytest run from inside tests/
    sys.path.insert(0, str(Path(__file__).parent))
    from judging_study import make_run, write_judges  # type: ignore[no-redef]

REPO = Path(__file__).resolve().parents[1]


def test_too_few_judges_are_told_how_many_the_study_needs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = make_run(tmp_path, ["prover-estimator", "two-sided"], limit=2)
    capsys.readouterr()
    few = write_judges(tmp_path / "few.yaml", ["a", "b", "c"])
    args = ["assign", str(run_dir), "--judges", str(few), "--per-item", "2",
            "--links-out", str(tmp_path / "links.tsv")]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "wait for more judges" in out
    assert "this study needs at least 8 judges (4 debates of one item, 2 judges each)" in out
    enough = write_judges(tmp_path / "enough.yaml", [f"j{i}" for i in range(1, 9)])
    assert main([*args[:3], str(enough), *args[4:]]) == 0
    out = capsys.readouterr().out
    assert "wait for more judges" not in out and "needs at least" not in out


def test_the_bundled_judges_fit_the_documented_study() -> None:
    study = yaml.safe_load((REPO / "configs" / "human-study-local.yaml").read_text())
    judges = yaml.safe_load((REPO / "configs" / "human-judges.yaml").read_text())["judges"]
    per_item_debates = 2 * len(study["protocols"])  # paired: two variants of each protocol
    assert study["prover"]["assignment"] == "paired"
    assert len(judges) >= per_item_debates * 2  # the README's --per-item 2
