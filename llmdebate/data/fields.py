"""Mapping a source's columns onto the common item schema.

``fields`` maps a common-schema field to the source's column that holds it, e.g.
``{"question": "question_stem", "choices": "choices.text", "answer": "answerKey",
"choice_labels": "choices.label"}``. A dotted column reaches into nested objects
(``choices.text``). A schema field that is not mapped is read from the column of the same
name when there is one (unless that column is mapped to another field). Conversions, so that
common hub layouts need no code:

* a boolean answer becomes ``"yes"``/``"no"`` (choices default to ``["yes", "no"]``);
* ``answer_index`` alone gives the answer (``choices[answer_index]``);
* ``choice_labels`` (e.g. ``["A", "B", "C", "D"]``) turns an answer given as a label into
  the labelled choice;
* columns that feed no field are kept in ``meta`` when their values are plain JSON.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from llmdebate.errors import DatasetError

SCHEMA_FIELDS = (
    "id",
    "dataset",
    "question",
    "choices",
    "answer",
    "answer_index",
    "context",
    "decomposition",
    "facts",
    "meta",
)
EXTRA_FIELDS = ("choice_labels",)
MAPPABLE = SCHEMA_FIELDS + EXTRA_FIELDS

_MISSING = object()


def check_fields(fields: Mapping[str, str] | None, source: str) -> dict[str, str]:
    """``fields`` as a dict, after checking that every key is a field that can be mapped."""
    out = dict(fields or {})
    for key, col in out.items():
        if key not in MAPPABLE:
            raise DatasetError(
                f"{source}: fields: unknown field {key!r} (expected one of {', '.join(MAPPABLE)})"
            )
        if not isinstance(col, str) or not col:
            raise DatasetError(f"{source}: fields.{key}: expected a column name")
    return out


def check_columns(fields: Mapping[str, str], columns: Iterable[str], source: str) -> None:
    """Raise naming the column and the source when a mapped column is not in ``columns``."""
    have = list(columns)
    for key, col in fields.items():
        top = col.split(".", 1)[0]
        if col not in have and top not in have:
            raise DatasetError(
                f"{source}: no column {col!r} (mapped to {key}); "
                f"the columns are {', '.join(have) or 'none'}"
            )


def check_required(fields: Mapping[str, str], columns: Iterable[str], source: str) -> None:
    """Raise when no column gives the question or the answer (mapped or by its own name)."""
    have = list(columns)
    for key, alternatives in (("question", ()), ("answer", ("answer_index",))):
        if not any(k in fields or k in have for k in (key, *alternatives)):
            raise DatasetError(
                f"{source}: no column for {key} (the columns are {', '.join(have) or 'none'}); "
                f"name one in fields, e.g. fields: {{{key}: <column>}}"
            )


def _get(row: Mapping[str, Any], column: str) -> Any:
    if column in row:
        return row[column]
    value: Any = row
    for part in column.split("."):
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return _MISSING
    return value


def _jsonable(value: Any) -> bool:
    if value is None or isinstance(value, str | bool | int):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(_jsonable(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _jsonable(v) for k, v in value.items())
    return False


def map_row(
    row: Mapping[str, Any],
    fields: Mapping[str, str],
    *,
    default_id: str,
    default_dataset: str,
) -> dict[str, Any]:
    """A dict in the common schema from one source row (a :class:`ValueError` names the
    problem; the caller adds the file and row)."""
    out, used = _mapped_columns(row, fields)
    _resolve_answer(out)
    if out.get("id") is None:
        out["id"] = default_id
    if not out.get("dataset"):
        out["dataset"] = default_dataset

    meta = out.get("meta")
    meta = dict(meta) if isinstance(meta, Mapping) else {}
    for column, value in row.items():
        if column not in used and column not in meta and _jsonable(value):
            meta[column] = value
    out["meta"] = meta
    return out


def _mapped_columns(
    row: Mapping[str, Any], fields: Mapping[str, str]
) -> tuple[dict[str, Any], set[str]]:
    """The common-schema fields read from ``row``, and the columns they used."""
    out: dict[str, Any] = {}
    used: set[str] = set()
    sources = {col.split(".", 1)[0] for col in fields.values()}
    for key in MAPPABLE:
        column = fields.get(key)
        if column is None:
            if key in row and key not in sources:  # a column mapped elsewhere is not reused
                out[key] = row[key]
                used.add(key)
            continue
        value = _get(row, column)
        if value is _MISSING:
            raise ValueError(f"no column {column!r} (mapped to {key})")
        out[key] = value
        used.add(column.split(".", 1)[0])
    return out, used


def _resolve_answer(out: dict[str, Any]) -> None:
    """The answer as the text of a choice: from a yes/no bool, a choice label, or an index."""
    labels = out.pop("choice_labels", None)
    answer = out.get("answer")
    if isinstance(answer, bool):
        out["answer"] = "yes" if answer else "no"
        if out.get("choices") is None:
            out["choices"] = ["yes", "no"]
    elif labels is not None and out.get("choices") is not None:
        if not isinstance(labels, list):
            raise ValueError("choice_labels: expected a list")
        if answer in labels:
            out["answer"] = out["choices"][labels.index(answer)]
        elif str(answer) in [str(x) for x in labels]:
            out["answer"] = out["choices"][[str(x) for x in labels].index(str(answer))]
    index = out.get("answer_index")
    if out.get("answer") is None and index is not None:
        choices = out.get("choices")
        if not isinstance(choices, list):
            raise ValueError("answer_index: given without choices")
        if isinstance(index, bool) or not isinstance(index, int):
            raise ValueError(f"answer_index: expected an integer, got {index!r}")
        if not 0 <= index < len(choices):
            raise ValueError(f"answer_index: {index} is outside the {len(choices)} choices")
        out["answer"] = choices[index]
