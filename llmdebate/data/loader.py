"""Loading QA items in the common JSONL schema (see ``datasets/README.md``), or from Hugging
Face datasets (:mod:`llmdebate.data.hf`) mapped onto it.

Every line is one JSON object with ``id``, ``dataset``, ``question``, ``choices``, ``answer``,
``answer_index``, ``context``, ``decomposition``, ``facts``, ``meta``. Choices are shuffled with
a recorded seed (each item's order depends only on the seed and the item id), because in some
datasets the correct option is always first. A bad line raises one :class:`DatasetError`
naming the file and the line (and the column or the field where it can).

:func:`llmdebate.data.sources.load_items` picks the reader for a dataset's path.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from llmdebate.data.fields import check_fields, map_row
from llmdebate.errors import DatasetError
from llmdebate.records.jsonl import first_error, iter_json_lines, surrogate_message


class Item(BaseModel):
    """One question in the common schema."""

    model_config = ConfigDict(extra="ignore")

    id: str
    dataset: str = ""
    question: str
    choices: list[str] | None = None
    answer: str
    answer_index: int | None = None
    context: str | None = None
    decomposition: list[str] | None = None
    facts: list[str] | None = None
    meta: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _coerce(cls, data: Any) -> Any:
        if isinstance(data, dict):
            data = dict(data)
            for key in ("id", "answer"):
                if isinstance(data.get(key), int | float) and not isinstance(data.get(key), bool):
                    data[key] = str(data[key])
            if data.get("meta") is None:
                data["meta"] = {}
        return data

    @model_validator(mode="after")
    def _answer_in_choices(self) -> Item:
        if self.choices is not None:
            if len(self.choices) < 2:
                raise ValueError("choices needs at least two options")
            if self.answer not in self.choices:
                raise ValueError(f"answer {self.answer!r} is not one of the choices")
            self.answer_index = self.choices.index(self.answer)
        return self

    @property
    def wrong_choices(self) -> list[str]:
        return [c for c in (self.choices or []) if c != self.answer]


def item_key(item_id: str) -> int:
    """A 63-bit number naming an item (the per-item part of every seed)."""
    return int.from_bytes(hashlib.sha256(item_id.encode("utf-8")).digest()[:8], "big") >> 1


def _item_rng(seed: int, item_id: str) -> np.random.Generator:
    digest = hashlib.sha256(item_id.encode("utf-8")).digest()
    return np.random.default_rng([seed, int.from_bytes(digest[:8], "big")])


def shuffle_choices(item: Item, seed: int) -> Item:
    """A copy of ``item`` with its choices in an order drawn from ``seed`` and the item id.

    The permutation is recorded in ``meta["choice_order"]`` (original indices, in shown order)
    and the seed in ``meta["shuffle_seed"]``.
    """
    if not item.choices:
        return item
    order = [int(i) for i in _item_rng(seed, item.id).permutation(len(item.choices))]
    choices = [item.choices[i] for i in order]
    meta = {**item.meta, "choice_order": order, "shuffle_seed": seed}
    return item.model_copy(
        update={"choices": choices, "answer_index": choices.index(item.answer), "meta": meta}
    )


def build_items(
    rows: Iterable[tuple[int, dict[str, Any]]], source: str, *, unit: str = "line"
) -> list[Item]:
    """Validated items from (number, object) pairs; a bad one raises :class:`DatasetError`
    naming ``source`` and the line (``unit="line"``: ``file:12: …``) or row (``row 12``)."""

    def where(n: int) -> str:
        return f"{source}:{n}" if unit == "line" else f"{source}: {unit} {n}"

    items: list[Item] = []
    seen: dict[str, int] = {}
    for n, data in rows:
        problem = surrogate_message(data)
        if problem is not None:
            raise DatasetError(f"{where(n)}: {problem}")
        try:
            item = Item.model_validate(data)
        except ValidationError as exc:
            raise DatasetError(f"{where(n)}: {first_error(exc, 'item')}") from None
        if item.id in seen:
            raise DatasetError(
                f"{where(n)}: duplicate id {item.id!r} (first on {unit} {seen[item.id]})"
            )
        seen[item.id] = n
        items.append(item)
    if not items:
        raise DatasetError(f"{source}: the dataset has no items")
    return items


def read_items(path: str | Path, *, fields: dict[str, str] | None = None) -> list[Item]:
    """Every item of a JSONL file, in file order (no shuffling).

    ``fields`` maps common-schema fields to the file's own keys (see
    :mod:`llmdebate.data.fields`); without it the lines are in the common schema.
    """
    path = Path(path)
    if not path.is_file():
        raise DatasetError(f"{path}: no such dataset file")
    rows: Iterable[tuple[int, dict[str, Any]]] = iter_json_lines(path, DatasetError)
    if fields:
        rows = _mapped_lines(rows, path, check_fields(fields, str(path)))
    return build_items(rows, str(path))


def _mapped_lines(
    rows: Iterable[tuple[int, dict[str, Any]]], path: Path, fields: dict[str, str]
) -> Iterator[tuple[int, dict[str, Any]]]:
    for n, data in rows:
        try:
            yield n, map_row(data, fields, default_id=str(n), default_dataset=path.stem)
        except ValueError as exc:
            raise DatasetError(f"{path}:{n}: {exc}") from None
