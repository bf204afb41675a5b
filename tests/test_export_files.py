"""What ``llmdebate export`` writes where: the container by ``--out``'s suffix (``.csv`` is a
CSV file, not a datasets directory), a format's declared file types, and the row options a
whole-run format cannot honour, refused in one line."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from llmdebate.cli import main
from llmdebate.errors import UserError
from llmdebate.experiment.runner import run
from llmdebate.export import export_run
from llmdebate.export.format_registry import FORMATS, declare_files, files_of
from llmdebate.export.writers import KINDS, kind_for

try:
    from tests.export_fixtures import pe_config
except ImportError:  # pytest run from inside tests/
    from export_fixtures import pe_config  # type: ignore[no-redef]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("files") / "run"
    run(pe_config(dataset={"limit": 1}), out, progress=False)
    return out


def test_a_csv_out_is_a_csv_file_with_json_cells(run_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "rows.csv"
    res = export_run(run_dir, out, role="prover", fmt="trl-prompt-completion")
    assert out.is_file() and res.kind == "csv"
    with out.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == res.rows > 0
    prompt = json.loads(rows[0]["prompt"])  # a list of messages, as JSON
    assert prompt[-1]["role"] == "user" and rows[0]["role"] == "prover"


def test_the_container_follows_the_suffix_and_the_format(tmp_path: Path) -> None:
    assert [kind_for(Path(f"x{s}"), None) for s in (".jsonl", ".csv", ".parquet", "")] == [
        "jsonl", "csv", "parquet", "hf"]
    assert kind_for(Path("x.jsonl"), "csv") == "csv"
    with pytest.raises(UserError, match=r"^--out x\.jsonl: this format writes csv, not jsonl$"):
        kind_for(Path("x.jsonl"), None, ("csv",))
    FORMATS.add("sheet-only", lambda rows, ctx: [])
    try:
        declare_files("sheet-only", "csv")
        assert files_of("sheet-only") == ("csv",) and files_of("audit") == KINDS
        with pytest.raises(ValueError, match="file types"):
            declare_files("sheet-only", "xlsx")
    finally:
        FORMATS.remove("sheet-only")


@pytest.mark.parametrize("flag", [["--role", "prover"], ["--split", "test"],
                                  ["--include-pending"], ["--as", "jsonl"]])
def test_a_whole_run_format_refuses_row_options(
    run_dir: Path, tmp_path: Path, flag: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["export", str(run_dir), "--format", "inspect-log", "--out", str(tmp_path / "x.eval")]
    assert main([*argv, *flag]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: --format inspect-log writes the whole run: {flag[0]} do not apply"]
    assert not (tmp_path / "x.eval").exists()
