"""The items of a run, read as its ``dataset`` section says: the common loader, or QuALITY's.

``dataset.format: quality`` (or ``auto`` on a file whose first record is in QuALITY's own
format or names dataset ``quality``, such as ``datasets/quality/sample.jsonl``) reads it with
:func:`llmdebate.data.quality.load_quality`: ``dataset.filters``, ``dataset.distractor`` (the
best distractor, recorded in ``meta["distractor"]`` and played as the dishonest answer by
:mod:`llmdebate.experiment.jobs`) and ``dataset.pair`` apply. ``dataset.format: answers`` (or
``auto`` on a file whose first record names a checker) reads a policy's answers as the items
of a labelling run (:func:`llmdebate.data.labelling.read_answers`).
"""

from __future__ import annotations

import json
from pathlib import Path

from llmdebate.data import load_items
from llmdebate.data.labelling import is_answers_record, read_answers
from llmdebate.data.loader import Item, shuffle_choices
from llmdebate.data.quality import load_quality
from llmdebate.errors import DatasetError
from llmdebate.experiment.config import DatasetSettings
from llmdebate.records.paths import resolve_path


def _first_record(path: Path) -> object:
    if path.suffix != ".jsonl" or not path.is_file():
        return None
    with path.open(encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.strip():
                try:
                    return json.loads(line)
                except json.JSONDecodeError:
                    return None
    return None


def is_quality(ds: DatasetSettings) -> bool:
    """Whether the run's dataset is read as QuALITY."""
    if ds.format != "auto":
        return ds.format == "quality"
    if ds.path.startswith("hf:"):
        return False
    first = _first_record(resolve_path(ds.path))
    if not isinstance(first, dict):
        return False
    return ("article" in first and "questions" in first) or first.get("dataset") == "quality"


def cut_passage(text: str, limit: int) -> str:
    """The start of ``text``, at most ``limit`` characters, ending at the last paragraph end
    within them (else the last sentence end, else the last space)."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    for mark in ("\n\n", ". ", "\n", " "):
        at = head.rfind(mark)
        if at >= limit // 2:
            return head[: at + (1 if mark == ". " else 0)].rstrip()
    return head


def load_run_items(ds: DatasetSettings, seed: int) -> list[Item]:
    """The items of a run's dataset (``seed``: the run's, for QuALITY's distractor ties),
    passages cut to ``dataset.passage_chars`` when set (recorded in ``meta.passage_cut``)."""
    items = _load(ds, seed)
    if ds.passage_chars is None:
        return items
    out = []
    for it in items:
        if it.context and len(it.context) > ds.passage_chars:
            cut = cut_passage(it.context, ds.passage_chars)
            meta = {**it.meta, "passage_cut": {"chars": len(cut), "of": len(it.context)}}
            it = it.model_copy(update={"context": cut, "meta": meta})
        out.append(it)
    return out


def is_answers(ds: DatasetSettings) -> bool:
    """Whether the run's dataset is a policy's answers to label
    (:mod:`llmdebate.data.labelling`)."""
    if ds.format != "auto":
        return ds.format == "answers"
    return not ds.path.startswith("hf:") and is_answers_record(_first_record(resolve_path(ds.path)))


def _answers(ds: DatasetSettings) -> list[Item]:
    items = read_answers(resolve_path(ds.path))
    if ds.ids is not None:
        by_id = {it.id: it for it in items}
        missing = [i for i in ds.ids if i not in by_id]
        if missing:
            raise DatasetError(f"{ds.path}: no answer with id {missing[0]!r}")
        items = [by_id[i] for i in ds.ids]
    return [shuffle_choices(it, ds.shuffle_seed) for it in items[: ds.limit]]


def _load(ds: DatasetSettings, seed: int) -> list[Item]:
    if is_answers(ds):
        return _answers(ds)
    if not is_quality(ds):
        return load_items(
            resolve_path(ds.path),
            shuffle_seed=ds.shuffle_seed,
            limit=ds.limit,
            ids=ds.ids,
            password=ds.password,
            split=ds.split,
            subset=ds.subset,
            fields=ds.fields,
        )
    source = ds.path if ds.path.startswith("hf:") else resolve_path(ds.path)
    items = load_quality(
        source,
        filters=ds.filters,
        distractor=ds.distractor,
        pair=ds.pair,
        seed=seed,
        shuffle_seed=ds.shuffle_seed,
        split=ds.split,
        limit=None if ds.ids else ds.limit,
    )
    if ds.ids:
        by_id = {it.id: it for it in items}
        items = [by_id[i] for i in ds.ids if i in by_id][: ds.limit]
    return items
