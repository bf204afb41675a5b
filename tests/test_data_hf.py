"""Hugging Face sources: parquet files and save_to_disk folders the tests write, offline.

The hub itself is out of reach here; the hub path is checked with ``load_dataset`` replaced,
which is enough because it shares everything after loading with the local paths.
"""

from __future__ import annotations

import os
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from llmdebate.data import load_items, read_items
from llmdebate.data.hf import import_datasets
from llmdebate.errors import DatasetError, MissingExtraError

os.environ.setdefault("HF_DATASETS_OFFLINE", "1")  # before datasets is first imported
os.environ.setdefault("HF_HUB_OFFLINE", "1")

SAMPLES = Path(__file__).resolve().parents[1] / "datasets" / "samples"


def test_a_missing_datasets_package_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "datasets", None)  # import datasets -> ImportError
    with pytest.raises(MissingExtraError, match=r"pip install 'llmdebate\[hf\]'") as err:
        load_items("hf:someone/something", split="test")
    assert err.value.package == "datasets" and err.value.extra == "hf"
    # Without the package, the repository's own datasets/ folder imports as an empty namespace.
    monkeypatch.setitem(sys.modules, "datasets", types.ModuleType("datasets"))
    with pytest.raises(MissingExtraError):
        load_items("hf:someone/something")


@pytest.fixture
def hf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The datasets module, offline, with its cache in the test's folder."""
    module = import_datasets()  # the test install (all,dev) includes the hf extra
    monkeypatch.setattr(module.config, "HF_DATASETS_OFFLINE", True, raising=False)
    monkeypatch.setattr(module.config, "HF_HUB_OFFLINE", True, raising=False)
    monkeypatch.setattr(module.config, "HF_DATASETS_CACHE", tmp_path / "hf-cache")
    return module


ARC_ROWS = [
    {
        "id": "arc-1",
        "question": "Which gas do plants take in?",
        "choices": {"text": ["Oxygen", "Carbon dioxide", "Helium", "Neon"], "label": list("ABCD")},
        "answerKey": "B",
    },
    {
        "id": "arc-2",
        "question": "What melts ice fastest?",
        "choices": {"text": ["Salt", "Sand", "Sawdust"], "label": ["1", "2", "3"]},
        "answerKey": "1",
    },
]
ARC_FIELDS = {"choices": "choices.text", "choice_labels": "choices.label", "answer": "answerKey"}


def test_a_parquet_file_in_the_common_schema_reads_like_the_jsonl(hf: Any, tmp_path: Path) -> None:
    jsonl = SAMPLES / "truthfulqa.jsonl"
    rows = [it.model_dump() for it in read_items(jsonl)[:6]]
    path = tmp_path / "truthfulqa.parquet"
    hf.Dataset.from_list(rows).to_parquet(str(path))
    got, want = load_items(path, shuffle_seed=3), load_items(jsonl, shuffle_seed=3, limit=6)
    key = [(it.id, it.dataset, it.question, it.choices, it.answer, it.answer_index) for it in want]
    assert [
        (it.id, it.dataset, it.question, it.choices, it.answer, it.answer_index) for it in got
    ] == key
    assert [it.meta["category"] for it in got] == [it.meta["category"] for it in want]
    assert len(load_items(path, limit=2)) == 2
    assert [it.id for it in load_items(path, ids=[rows[4]["id"], rows[1]["id"]])] == [
        rows[4]["id"],
        rows[1]["id"],
    ]


def test_a_save_to_disk_folder_with_a_field_mapping(hf: Any, tmp_path: Path) -> None:
    folder = tmp_path / "arc"
    hf.Dataset.from_list(ARC_ROWS).save_to_disk(str(folder))
    items = load_items(folder, fields=ARC_FIELDS)
    assert [(it.id, it.answer, it.dataset) for it in items] == [
        ("arc-1", "Carbon dioxide", "arc"),
        ("arc-2", "Salt", "arc"),
    ]
    assert items[0].choices is not None and sorted(items[0].choices) == sorted(
        ARC_ROWS[0]["choices"]["text"]
    )
    assert items[0].choices[items[0].answer_index or 0] == "Carbon dioxide"
    assert "answerKey" not in items[0].meta and "choices" not in items[0].meta


def test_splits_of_a_dataset_dict(hf: Any, tmp_path: Path) -> None:
    folder = tmp_path / "dd"
    mmlu = [
        {"question": f"Q{i}?", "choices": ["a", "b", "c", "d"], "answer": i % 4, "subject": "x"}
        for i in range(5)
    ]
    hf.DatasetDict(
        {"test": hf.Dataset.from_list(mmlu), "dev": hf.Dataset.from_list(mmlu[:2])}
    ).save_to_disk(str(folder))
    fields = {"answer_index": "answer", "answer": "no-such-column"}
    with pytest.raises(DatasetError, match="no column 'no-such-column' \\(mapped to answer\\)"):
        load_items(folder, split="test", fields=fields)
    items = load_items(folder, split="test", fields={"answer_index": "answer"})
    assert [(it.id, it.question, it.answer) for it in items] == [
        (str(i), f"Q{i}?", "abcda"[i]) for i in range(5)
    ]
    assert items[0].meta == {
        "subject": "x",
        "choice_order": items[0].meta["choice_order"],
        "shuffle_seed": 0,
    }
    assert len(load_items(folder, split="dev", fields={"answer_index": "answer"})) == 2
    with pytest.raises(DatasetError, match="holds the splits test, dev; choose one with split"):
        load_items(folder, fields={"answer_index": "answer"})
    with pytest.raises(DatasetError, match="no split 'train' \\(the splits are test, dev\\)"):
        load_items(folder, split="train", fields={"answer_index": "answer"})


def test_a_missing_mapped_column_is_one_line_naming_column_and_source(
    hf: Any, tmp_path: Path
) -> None:
    path = tmp_path / "arc.parquet"
    hf.Dataset.from_list(ARC_ROWS).to_parquet(str(path))
    with pytest.raises(DatasetError) as err:
        load_items(path, fields={**ARC_FIELDS, "question": "question_stem"})
    msg = str(err.value)
    assert msg.startswith(f"{path}: no column 'question_stem' (mapped to question)")
    assert "the columns are id, question, choices, answerKey" in msg and "\n" not in msg
    with pytest.raises(DatasetError, match=r"no column for answer .*fields: \{answer: <column>\}"):
        load_items(path, fields={"choices": "choices.text"})
    with pytest.raises(
        DatasetError, match=r"arc\.parquet: row 1: .*answer 'B' is not one of the choices"
    ):
        load_items(path, fields={"choices": "choices.text", "answer": "answerKey"})
    with pytest.raises(DatasetError, match="a subset applies only to a hub dataset"):
        load_items(path, subset="easy", fields=ARC_FIELDS)


def test_boolean_and_free_form_answers(hf: Any, tmp_path: Path) -> None:
    path = tmp_path / "boolq.parquet"
    rows = [
        {"question": "is water wet", "answer": True, "passage": "Water -- wet."},
        {"question": "is fire cold", "answer": False, "passage": "Fire -- hot."},
    ]
    hf.Dataset.from_list(rows).to_parquet(str(path))
    items = load_items(path, split="validation", fields={"context": "passage"})
    assert [(it.id, it.answer, sorted(it.choices or []), it.context) for it in items] == [
        ("0", "yes", ["no", "yes"], "Water -- wet."),
        ("1", "no", ["no", "yes"], "Fire -- hot."),
    ]
    gsm = tmp_path / "gsm.parquet"
    hf.Dataset.from_list([{"question": "1+1?", "answer": 2}]).to_parquet(str(gsm))
    (item,) = load_items(gsm)
    assert item.answer == "2" and item.choices is None


def test_the_hub_path_shares_everything_after_loading(
    hf: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple] = []

    def fake_load_dataset(name: str, subset: str | None = None, **kw: Any) -> Any:
        calls.append((name, subset, kw))
        return hf.DatasetDict({"test": hf.Dataset.from_list(ARC_ROWS)})

    monkeypatch.setattr(hf, "load_dataset", fake_load_dataset)
    items = load_items("hf:allenai/ai2_arc", subset="ARC-Challenge", fields=ARC_FIELDS)
    assert calls == [("allenai/ai2_arc", "ARC-Challenge", {"split": None})]
    assert [(it.id, it.answer, it.dataset) for it in items] == [
        ("arc-1", "Carbon dioxide", "ai2_arc-ARC-Challenge"),
        ("arc-2", "Salt", "ai2_arc-ARC-Challenge"),
    ]
    with pytest.raises(DatasetError, match=r"^hf:allenai/ai2_arc \(ARC-Challenge\): no column"):
        load_items("hf:allenai/ai2_arc", subset="ARC-Challenge", fields={"question": "stem"})


def test_an_unreachable_hub_dataset_is_one_line(hf: Any) -> None:
    with pytest.raises(DatasetError) as err:
        load_items("hf:llmdebate-tests/does-not-exist", split="test")
    msg = str(err.value)
    assert msg.startswith("hf:llmdebate-tests/does-not-exist: cannot load (") and "\n" not in msg
