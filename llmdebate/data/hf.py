"""Hugging Face datasets (through the ``datasets`` library, the ``hf`` extra).

Three sources, read into the same :class:`~llmdebate.data.loader.Item` objects as a JSONL file:

* ``hf:<hub-name>`` — ``datasets.load_dataset(name, subset, split=split)``;
* a ``.parquet`` file — ``datasets.load_dataset("parquet", data_files=...)``;
* a folder written by ``save_to_disk`` (it holds ``dataset_info.json``/``state.json``, or
  ``dataset_dict.json`` for several splits) — ``datasets.load_from_disk``.

Everything after loading (choosing the split, mapping columns with ``fields``, validation) is
shared by the three. ``datasets`` is imported only when such a source is read.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from llmdebate.data.fields import check_columns, check_fields, check_required, map_row
from llmdebate.errors import DatasetError, MissingExtraError

HUB_PREFIX = "hf:"
DISK_MARKERS = ("dataset_info.json", "state.json", "dataset_dict.json")


def is_hub(path: str | Path) -> bool:
    """``hf:<hub-name>`` (a string, or a path made from one)."""
    return str(path).startswith(HUB_PREFIX)


def is_local_hf(path: Path) -> bool:
    """A ``.parquet`` file, or a folder written by ``save_to_disk``."""
    if path.is_file():
        return path.suffix == ".parquet"
    return path.is_dir() and any((path / m).is_file() for m in DISK_MARKERS)


def import_datasets() -> Any:
    """The ``datasets`` module, or :class:`MissingExtraError` naming the ``hf`` extra."""
    try:
        import datasets
    except ImportError:
        raise MissingExtraError("datasets", "hf") from None
    if not hasattr(datasets, "load_dataset"):  # a folder named datasets/ on sys.path
        raise MissingExtraError("datasets", "hf")
    return datasets


def _cannot_load(label: str, exc: Exception) -> DatasetError:
    first = (str(exc).strip().splitlines() or [""])[0]
    return DatasetError(f"{label}: cannot load ({type(exc).__name__}: {first})")


def load_table(
    source: str | Path, *, split: str | None = None, subset: str | None = None
) -> tuple[Any, str, str]:
    """(a ``datasets.Dataset``, a label for messages, a default dataset name) for a hub name
    (``hf:…``) or a local parquet file / ``save_to_disk`` folder."""
    hf = import_datasets()
    if is_hub(source):
        name = str(source)[len(HUB_PREFIX) :].strip()
        if not name:
            raise DatasetError(f"{source}: expected hf:<hub dataset name>")
        label = f"{HUB_PREFIX}{name}" + (f" ({subset})" if subset else "")
        try:
            loaded = hf.load_dataset(name, subset, split=split)
        except Exception as exc:  # network, unknown name or split: one line for the user
            raise _cannot_load(label, exc) from None
        default = name.rsplit("/", 1)[-1] + (f"-{subset}" if subset else "")
        return pick_split(loaded, split, label), label, default
    path = Path(source)
    label = str(path)
    if subset is not None:
        raise DatasetError(f"{label}: a subset applies only to a hub dataset (hf:<name>)")
    try:
        if path.is_file():
            name = split or "train"
            loaded = hf.load_dataset("parquet", data_files={name: str(path)}, split=name)
        else:
            loaded = hf.load_from_disk(str(path))
    except Exception as exc:  # a corrupt file: one line for the user
        raise _cannot_load(label, exc) from None
    return pick_split(loaded, split, label), label, path.stem if path.is_file() else path.name


def pick_split(loaded: Any, split: str | None, label: str) -> Any:
    """The one ``Dataset`` of ``loaded``: ``split`` of a ``DatasetDict``, or its only split."""
    if isinstance(loaded, Mapping):
        names = list(loaded.keys())
        if split is None:
            if len(names) != 1:
                raise DatasetError(
                    f"{label}: holds the splits {', '.join(names)}; choose one with split"
                )
            split = names[0]
        if split not in loaded:
            raise DatasetError(f"{label}: no split {split!r} (the splits are {', '.join(names)})")
        return loaded[split]
    own = getattr(loaded, "split", None)
    if split is not None and own is not None and str(own) != split:
        raise DatasetError(f"{label}: holds the split {own}, not {split!r}")
    return loaded


def rows_of(
    table: Any,
    label: str,
    default_name: str,
    *,
    fields: Mapping[str, str] | None = None,
    limit: int | None = None,
) -> list[tuple[int, dict[str, Any]]]:
    """(row number from 1, common-schema dict) for the rows of a ``Dataset``."""
    mapping = check_fields(fields, label)
    columns = list(table.column_names)
    check_columns(mapping, columns, label)
    check_required(mapping, columns, label)
    if limit is not None:
        table = table.select(range(min(limit, len(table))))
    out: list[tuple[int, dict[str, Any]]] = []
    for i, row in enumerate(table):
        try:
            data = map_row(row, mapping, default_id=str(i), default_dataset=default_name)
        except ValueError as exc:
            raise DatasetError(f"{label}: row {i + 1}: {exc}") from None
        out.append((i + 1, data))
    return out
