"""Rows to JSONL, CSV, parquet, or a Hugging Face ``datasets`` directory.

The container of ``--out`` is ``--as`` when given, else its suffix (:data:`SUFFIXES`: .jsonl,
.csv, .parquet; any other name is a ``datasets`` directory). A format declares the containers
its records fit (:func:`llmdebate.export.format_registry.files_of`); another one is refused.
In a CSV file a column whose value is not a string, a number or empty (a list of messages, a
dict) holds the value as JSON.
"""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path
from typing import Any

from llmdebate.errors import UserError, require

KINDS = ("jsonl", "csv", "parquet", "hf")
SUFFIXES = {".jsonl": "jsonl", ".csv": "csv", ".parquet": "parquet"}


def kind_for(out: Path, kind: str | None, allowed: tuple[str, ...] = KINDS) -> str:
    """The container: ``kind`` if given, else by suffix (.jsonl, .csv, .parquet; else an HF
    dir); a :class:`UserError` when it is not one of ``allowed`` (what the format writes)."""
    if kind is not None and kind not in KINDS:
        raise UserError(f"--as {kind!r}: choose from {', '.join(KINDS)}")
    chosen = kind if kind is not None else SUFFIXES.get(out.suffix, "hf")
    if chosen not in allowed:
        how = f"--as {kind}" if kind is not None else f"--out {out.name}"
        raise UserError(f"{how}: this format writes {', '.join(allowed)}, not {chosen}")
    return chosen


def _cell(value: Any) -> Any:
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return json.dumps(value, ensure_ascii=False)


def _write_csv(rows: list[dict[str, Any]], tmp: Path) -> None:
    columns = list(dict.fromkeys(k for r in rows for k in r))
    with tmp.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns)
        writer.writeheader()
        for r in rows:
            writer.writerow({k: _cell(v) for k, v in r.items()})


def write_rows(rows: list[dict[str, Any]], out: Path, kind: str) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    if kind in ("jsonl", "csv"):
        tmp = out.with_name(f".{out.name}.tmp")
        if kind == "csv":
            _write_csv(rows, tmp)
        else:
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
