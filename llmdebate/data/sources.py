"""Where a dataset comes from: a JSONL file, GPQA's encrypted zip, or a Hugging Face dataset.

:func:`load_items` reads the path it is given with the reader that fits it and shuffles the
choices with the recorded seed.
"""

from __future__ import annotations

from pathlib import Path

from llmdebate.data.gpqa import read_zip_items
from llmdebate.data.hf import is_hub, is_local_hf, load_table, rows_of
from llmdebate.data.loader import Item, build_items, read_items, shuffle_choices
from llmdebate.errors import DatasetError
from llmdebate.records.paths import missing_path_message, resolve_path


def load_items(
    path: str | Path,
    *,
    shuffle_seed: int = 0,
    limit: int | None = None,
    ids: list[str] | None = None,
    password: str | None = None,
    split: str | None = None,
    subset: str | None = None,
    fields: dict[str, str] | None = None,
) -> list[Item]:
    """Items of a dataset, choices shuffled (see :func:`~llmdebate.data.loader.shuffle_choices`).

    ``path`` is a ``.jsonl`` file in the common schema, GPQA's encrypted ``.zip``, a
    ``.parquet`` file or ``save_to_disk`` folder, or ``hf:<hub-name>`` (the last three through
    the ``datasets`` library: ``split``, ``subset`` and the column mapping ``fields`` apply;
    ``fields`` applies to a JSONL file too). A relative path is looked up in the current
    folder, then in the repository (:func:`llmdebate.records.paths.resolve_path`).
    ``ids`` keeps only those items (in the given order); ``limit`` keeps the first N.
    """
    label = str(path)
    row_limit = None if ids else limit
    if is_hub(path):
        items = _hf_items(str(path), split, subset, fields, row_limit)
    else:
        found = resolve_path(path)
        if not found.exists():
            raise DatasetError(missing_path_message(path, "dataset file"))
        if is_local_hf(found):
            items = _hf_items(found, split, subset, fields, row_limit)
        else:
            items = _file_items(path, found, split, subset, fields, password)
    if ids is not None:
        by_id = {it.id: it for it in items}
        missing = [i for i in ids if i not in by_id]
        if missing:
            raise DatasetError(f"{label}: no item with id {missing[0]!r}")
        items = [by_id[i] for i in ids]
    if limit is not None:
        items = items[:limit]
    return [shuffle_choices(it, shuffle_seed) for it in items]


def _hf_items(
    source: str | Path,
    split: str | None,
    subset: str | None,
    fields: dict[str, str] | None,
    limit: int | None,
) -> list[Item]:
    """The items of a Hugging Face dataset (a hub name, a parquet file, a saved folder)."""
    table, label, name = load_table(source, split=split, subset=subset)
    rows = rows_of(table, label, name, fields=fields, limit=limit)
    return build_items(rows, label, unit="row")


def _file_items(
    path: str | Path,
    found: Path,
    split: str | None,
    subset: str | None,
    fields: dict[str, str] | None,
    password: str | None,
) -> list[Item]:
    """The items of a JSONL file or of GPQA's encrypted zip."""
    if split is not None or subset is not None:
        raise DatasetError(
            f"{path}: split and subset apply only to Hugging Face datasets "
            "(hf:<name>, a .parquet file or a save_to_disk folder)"
        )
    if found.is_dir():
        raise DatasetError(
            f"{found}: a folder, not a dataset (expected a .jsonl, .zip or .parquet "
            "file, or a folder written by datasets' save_to_disk)"
        )
    if found.suffix == ".zip":
        if fields:
            raise DatasetError(f"{path}: fields do not apply to an encrypted zip")
        return read_zip_items(found, password=password)
    return read_items(found, fields=fields)
