"""Rows to JSONL, parquet, or a Hugging Face ``datasets`` directory."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from llmdebate.errors import UserError, require

KINDS = ("jsonl", "parquet", "hf")


def kind_for(out: Path, kind: str | None) -> str:
    """The container: ``kind`` if given, else by suffix (.jsonl, .parquet; else an HF dir)."""
    if kind is not None:
        if kind not in KINDS:
            raise UserError(f"--as {kind!r}: choose from {', '.join(KINDS)}")
        return kind
    if out.suffix == ".jsonl":
        return "jsonl"
    if out.suffix == ".parquet":
        return "parquet"
    return "hf"


def write_rows(rows: list[dict[str, Any]], out: Path, kind: str) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    if kind == "jsonl":
        tmp = out.with_name(f".{out.name}.tmp")
        with tmp.open("w", encoding="utf-8") as fh:
            for r in rows:
                fh.write(json.dumps(r, ensure_ascii=False) + "\n")
        tmp.replace(out)
        return
    if kind == "parquet":
        pa: Any = require("pyarrow", "hf")
        pq: Any = require("pyarrow.parquet", "hf")
        pq.write_table(pa.Table.from_pylist(rows), str(out))
        return
    datasets: Any = require("datasets", "hf")
    datasets.disable_progress_bars()
    if out.exists():
        shutil.rmtree(out)
    datasets.Dataset.from_list(rows).save_to_disk(str(out))
