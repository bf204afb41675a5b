"""Loading QA items in the common JSONL schema (see ``datasets/README.md``).

Every line is one JSON object with ``id``, ``dataset``, ``question``, ``choices``, ``answer``,
``answer_index``, ``context``, ``decomposition``, ``facts``, ``meta``. Choices are shuffled with
a recorded seed (each item's order depends only on the seed and the item id), because in some
datasets the correct option is always first. A bad line raises one :class:`DatasetError`
naming the file and the line.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from llmdebate.errors import DatasetError
from llmdebate.jsonl import first_error, iter_json_lines


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


def read_items(path: str | Path) -> list[Item]:
    """Every item of a JSONL file, in file order (no shuffling)."""
    path = Path(path)
    if not path.is_file():
        raise DatasetError(f"{path}: no such dataset file")
    items: list[Item] = []
    seen: dict[str, int] = {}
    for lineno, data in iter_json_lines(path, DatasetError):
        try:
            item = Item.model_validate(data)
        except ValidationError as exc:
            raise DatasetError(f"{path}:{lineno}: {first_error(exc, 'item')}") from None
        if item.id in seen:
            raise DatasetError(
                f"{path}:{lineno}: duplicate id {item.id!r} (first on line {seen[item.id]})"
            )
        seen[item.id] = lineno
        items.append(item)
    if not items:
        raise DatasetError(f"{path}: the dataset has no items")
    return items


def load_items(
    path: str | Path,
    *,
    shuffle_seed: int = 0,
    limit: int | None = None,
    ids: list[str] | None = None,
    password: str | None = None,
) -> list[Item]:
    """Items of a dataset file (``.jsonl``, or GPQA's encrypted ``.zip``), choices shuffled.

    ``ids`` keeps only those items (in the given order); ``limit`` keeps the first N.
    """
    path = Path(path)
    if path.suffix == ".zip":
        from llmdebate.data.gpqa import read_zip_items

        items = read_zip_items(path, password=password)
    else:
        items = read_items(path)
    if ids is not None:
        by_id = {it.id: it for it in items}
        missing = [i for i in ids if i not in by_id]
        if missing:
            raise DatasetError(f"{path}: no item with id {missing[0]!r}")
        items = [by_id[i] for i in ids]
    if limit is not None:
        items = items[:limit]
    return [shuffle_choices(it, shuffle_seed) for it in items]
