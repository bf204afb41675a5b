"""Dataset loading (common schema, shuffling, line-numbered errors), GPQA, bundled datasets."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest

from llmdebate.data.generate import circuit_items, divisor_items
from llmdebate.data.gpqa import read_zip_items
from llmdebate.data.loader import load_items, read_items
from llmdebate.data.problems import (
    claim_truth,
    divisor_statement,
    formal_decomposition,
    parse_divisor_claim,
)
from llmdebate.errors import DatasetError
from llmdebate.rules import compile_rule
from llmdebate.schemas import Claim

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "datasets"


def write(tmp_path: Path, *rows: object) -> Path:
    path = tmp_path / "items.jsonl"
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


ROW = {"id": "a", "question": "Q?", "choices": ["x", "y", "z", "w"], "answer": "x"}


def test_shared_strategyqa_loads() -> None:
    path = SHARED / "strategyqa" / "items.jsonl"
    assert path.is_file(), f"shared datasets missing: expected {path}"
    items = load_items(path, limit=10)
    assert len(items) == 10 and all(it.answer in (it.choices or []) for it in items)


def test_shuffle_is_recorded_deterministic_and_keeps_the_answer(tmp_path: Path) -> None:
    rows = [{**ROW, "id": f"i{k}"} for k in range(20)]
    path = write(tmp_path, *rows)
    a, b = load_items(path, shuffle_seed=1), load_items(path, shuffle_seed=1)
    c = load_items(path, shuffle_seed=2)
    assert [it.choices for it in a] == [it.choices for it in b]
    assert [it.choices for it in a] != [it.choices for it in c]
    assert any(it.answer_index != 0 for it in a)  # not always first any more
    for it in a:
        assert it.choices is not None and it.choices[it.answer_index or 0] == "x"
        order = it.meta["choice_order"]
        assert [ROW["choices"][i] for i in order] == it.choices
        assert it.meta["shuffle_seed"] == 1


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("{not json", r"items\.jsonl:2: not valid JSON"),
        ({"id": "b", "choices": None, "answer": "1"}, r"items\.jsonl:2: question: Field required"),
        ({**ROW, "id": "b", "answer": "nope"}, r"items\.jsonl:2: .*not one of the choices"),
        ({**ROW}, r"items\.jsonl:2: duplicate id 'a' \(first on line 1\)"),
        ("[1, 2]", r"items\.jsonl:2: expected a JSON object"),
    ],
)
def test_bad_lines_name_file_and_line(tmp_path: Path, row: object, message: str) -> None:
    with pytest.raises(DatasetError, match=message):
        read_items(write(tmp_path, ROW, row))


def test_missing_file_and_unknown_id(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="no such dataset file"):
        load_items(tmp_path / "missing.jsonl")
    with pytest.raises(DatasetError, match="no item with id 'zz'"):
        load_items(write(tmp_path, ROW), ids=["zz"])


def test_gpqa_decrypts_only_into_a_temporary_folder() -> None:
    zip_path = SHARED / "gpqa" / "gpqa_diamond.zip"
    assert zip_path.is_file(), f"shared datasets missing: expected {zip_path}"
    tmp_root = Path(tempfile.gettempdir())
    before = set(tmp_root.glob("llmdebate-gpqa-*"))
    items = read_zip_items(zip_path)
    assert len(items) == 198 and all(len(it.choices or []) == 4 for it in items)
    assert set(tmp_root.glob("llmdebate-gpqa-*")) == before  # nothing left behind
    shuffled = load_items(zip_path, limit=40)
    assert any(it.answer_index != 0 for it in shuffled)
    with pytest.raises(DatasetError, match="cannot decrypt"):
        read_zip_items(zip_path, password="wrong")


def test_committed_bundled_datasets_match_the_generator() -> None:
    for name, items in (("divisors", divisor_items()), ("circuits", circuit_items())):
        committed = (REPO / "datasets" / f"{name}.jsonl").read_text().splitlines()
        assert [json.loads(x) for x in committed] == items
        assert 20 <= len(items) <= 50
        assert 0.3 <= sum(it["answer"] == "yes" for it in items) / len(items) <= 0.7


@pytest.mark.parametrize("path", ["divisors.jsonl", "circuits.jsonl"])
def test_bundled_truth_is_known_at_every_node(path: str) -> None:
    for item in load_items(REPO / "datasets" / path):
        meta = item.meta
        for answer, text in meta["claims"].items():
            truth = claim_truth(text, meta)
            assert truth == int(answer == item.answer), (item.id, text)
            frontier = [(Claim(text=text), truth)]
            for _ in range(3):  # three levels of the problem's own decomposition
                nxt = []
                for claim, t in frontier:
                    dec = formal_decomposition(claim, meta, 3)
                    assert dec is not None
                    z = [claim_truth(s.text, meta) for s in dec.subclaims]
                    assert None not in z
                    assert compile_rule(dec.rule, dec.width)(z) == t, (item.id, claim.text)
                    nxt.extend(zip(dec.subclaims, z, strict=True))
                frontier = nxt


def test_divisor_claims_parse_in_several_phrasings() -> None:
    assert parse_divisor_claim(divisor_statement(91, 2, 10)) == (91, 2, 10, True)
    assert parse_divisor_claim("91 has a divisor in [5, 8)") == (91, 5, 8, False)
    assert parse_divisor_claim("91 has no divisor d with 2 ≤ d < 7") == (91, 2, 7, True)
    assert claim_truth("91 has a divisor in [5, 8)", {"problem": "divisors"}) == 1
    assert claim_truth("91 is a lovely number", {"problem": "divisors"}) is None
