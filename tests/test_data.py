"""Dataset loading (common schema, shuffling, line-numbered errors), GPQA, bundled datasets.

Everything here runs on a clone alone: the bundled samples under ``datasets/samples`` and
files the tests write (GPQA is an encrypted zip of invented questions, see gpqa_fixture.py).
"""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

import pytest
from gpqa_fixture import QUESTIONS, write_gpqa_zip

from llmdebate.core.rules import compile_rule
from llmdebate.core.schemas import Claim
from llmdebate.data import load_items, read_items
from llmdebate.data.generate import circuit_items, divisor_items
from llmdebate.data.gpqa import read_zip_items
from llmdebate.data.problems import (
    claim_truth,
    divisor_statement,
    formal_decomposition,
    parse_divisor_claim,
)
from llmdebate.errors import DatasetError
from llmdebate.records.paths import REPO_ROOT

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "datasets" / "samples"
SAMPLE_NAMES = [
    "truthfulqa",
    "gsm8k",
    "arc_challenge",
    "prontoqa",
    "mmlu",
    "commonsenseqa",
    "boolq",
    "proofwriter",
    "folio",
    "logical_deduction",
    "hotpotqa",
]


def write(tmp_path: Path, *rows: object) -> Path:
    path = tmp_path / "items.jsonl"
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


ROW = {"id": "a", "question": "Q?", "choices": ["x", "y", "z", "w"], "answer": "x"}


@pytest.mark.parametrize("name", SAMPLE_NAMES)
def test_bundled_samples_load(name: str) -> None:
    path = SAMPLES / f"{name}.jsonl"
    items = load_items(path)
    assert 20 <= len(items) <= 50 and all(it.dataset == name for it in items)
    for it in items:
        if it.choices is not None:
            assert it.answer in it.choices and it.choices[it.answer_index or 0] == it.answer
    assert len(load_items(path, limit=10)) == 10


def test_bundled_samples_are_documented_and_small() -> None:
    sources = (SAMPLES / "SOURCES.md").read_text(encoding="utf-8")
    on_disk = sorted(p.stem for p in SAMPLES.glob("*.jsonl"))
    assert on_disk == sorted(SAMPLE_NAMES)
    for name in SAMPLE_NAMES:
        section = sources.split(f"## {name}\n", 1)[1].split("\n## ", 1)[0]
        assert "commit `" in section and "licence:" in section, name
    assert "gpqa" in sources and "strategyqa" in sources  # the two left out, and why
    assert sum(p.stat().st_size for p in SAMPLES.glob("*.jsonl")) < 600_000


def test_truthfulqa_answer_is_first_in_the_file_but_shuffled_on_load() -> None:
    path = SAMPLES / "truthfulqa.jsonl"
    assert all(it.answer_index == 0 for it in read_items(path))
    assert any(it.answer_index != 0 for it in load_items(path))


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
        ("{not json", r"items\.jsonl:2:2: not valid JSON \(Expecting property name"),
        ('{"id": "b", "question": "a\tb"}', r"jsonl:2:27: .*Invalid control character U\+0009\)"),
        ('{"id": "b",}', r"items\.jsonl:2:12: not valid JSON"),
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


def test_gpqa_decrypts_only_into_a_temporary_folder(tmp_path: Path) -> None:
    zip_path = write_gpqa_zip(tmp_path / "gpqa_diamond.zip")
    tmp_root = Path(tempfile.gettempdir())
    before = set(tmp_root.glob("llmdebate-gpqa-*"))
    items = read_zip_items(zip_path)
    assert len(items) == len(QUESTIONS) and all(len(it.choices or []) == 4 for it in items)
    assert all(it.answer_index == 0 and it.meta["protected"] == "gpqa" for it in items)
    assert set(tmp_root.glob("llmdebate-gpqa-*")) == before  # nothing left behind
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gpqa_diamond.zip"]
    shuffled = load_items(zip_path, limit=40)
    assert any(it.answer_index != 0 for it in shuffled)
    assert all(it.choices and it.choices[it.answer_index or 0] == it.answer for it in shuffled)
    with pytest.raises(DatasetError, match="cannot decrypt"):
        read_zip_items(zip_path, password="wrong")
    with pytest.raises(DatasetError, match="no such dataset file"):
        read_zip_items(tmp_path / "absent.zip")


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


def test_invalid_utf8_names_file_line_and_byte_column(tmp_path: Path) -> None:
    path = tmp_path / "items.jsonl"
    path.write_bytes(json.dumps(ROW).encode() + b'\n{"id": "b", "question": "caf\xe9?"}\n')
    with pytest.raises(DatasetError, match=r"items\.jsonl:2:29: invalid UTF-8 \(byte 0xe9\)"):
        read_items(path)


@pytest.mark.parametrize(
    ("row", "field"),
    [
        ({**ROW, "id": "b", "question": "Q\ud800?"}, "question"),
        ({**ROW, "id": "b", "choices": ["x", "y\udfff"]}, "choices.1"),
        ({**ROW, "id": "b", "meta": {"note": ["ok", "\udc80"]}}, "meta.note.1"),
    ],
)
def test_a_lone_surrogate_names_file_line_and_field(tmp_path: Path, row: dict, field: str) -> None:
    path = write(tmp_path, ROW, row)  # json.dumps escapes it: "\ud800" is valid JSON
    assert "\\ud" in path.read_text()
    expected = rf"items\.jsonl:2: {re.escape(field)}: a lone surrogate"
    with pytest.raises(DatasetError, match=expected):
        load_items(path)


def test_a_surrogate_pair_and_a_byte_order_mark_are_fine(tmp_path: Path) -> None:
    path = tmp_path / "items.jsonl"
    row = {**ROW, "question": "Is \ud83d\ude00 a smile?"}  # an escaped pair: one character
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(row).encode() + b"\n")
    assert read_items(path)[0].question == "Is 😀 a smile?"


def test_relative_paths_resolve_from_any_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # outside the repository
    items = load_items("datasets/samples/gsm8k.jsonl", limit=3)
    assert len(items) == 3 and items[0].dataset == "gsm8k"
    monkeypatch.chdir(REPO_ROOT / "tests")  # inside it, but not at its root
    assert load_items("datasets/samples/gsm8k.jsonl", limit=3) == items
    with pytest.raises(DatasetError) as err:
        load_items("datasets/samples/absent.jsonl")
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith("datasets/samples/absent.jsonl: no such dataset file")
    assert str(REPO_ROOT / "datasets/samples/absent.jsonl") in msg
    assert str(REPO_ROOT / "tests" / "datasets/samples/absent.jsonl") in msg


def test_a_folder_is_not_a_dataset(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="a folder, not a dataset"):
        load_items(tmp_path)
    with pytest.raises(DatasetError, match="split and subset apply only"):
        load_items(write(tmp_path, ROW), split="test")


def test_field_mapping_applies_to_jsonl(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        {"qid": 7, "stem": "Is it?", "options": ["no", "yes"], "label": 1, "extra": "kept"},
        {"qid": 8, "stem": "Is it not?", "options": ["no", "yes"], "label": 0, "extra": "kept"},
    )
    fields = {"id": "qid", "question": "stem", "choices": "options", "answer_index": "label"}
    items = read_items(path, fields=fields)
    assert [(it.id, it.answer, it.dataset) for it in items] == [
        ("7", "yes", "items"),
        ("8", "no", "items"),
    ]
    assert items[0].meta == {"extra": "kept"}
    missing = r"items\.jsonl:1: no column 'prompt' \(mapped to question\)"
    with pytest.raises(DatasetError, match=missing):
        read_items(path, fields={"question": "prompt"})
    with pytest.raises(DatasetError, match="unknown field 'questoin'"):
        read_items(path, fields={"questoin": "stem"})


def test_the_sample_script_draws_by_id_and_copies_lines(tmp_path: Path) -> None:
    from llmdebate.data.samples import Sample, make_sample, sample_key, sources_markdown

    src, out = tmp_path / "src", tmp_path / "out"
    (src / "toy").mkdir(parents=True)
    out.mkdir()
    rows = [{**ROW, "id": f"t{k}", "dataset": "toy", "question": "Q\u2028?"} for k in range(12)]
    raw = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)  # a raw U+2028
    (src / "toy" / "items.jsonl").write_text(raw, encoding="utf-8")
    (src / "toy" / "SOURCE.txt").write_text(
        "repo: github.com/x/y\ncommit: abc123\npath: a/b.jsonl\nlicence: MIT (LICENSE)\n"
    )
    spec = Sample("toy", 5, "careful")
    n, total, source = make_sample(src, out, spec)
    assert (n, total, source["licence"]) == (5, 12, "MIT (LICENSE)")
    want = sorted((r["id"] for r in rows), key=sample_key)[:5]
    got = [it.id for it in read_items(out / "toy.jsonl")]
    assert got == [r["id"] for r in rows if r["id"] in want]  # the smallest keys, file order
    source_lines = (src / "toy" / "items.jsonl").read_bytes().split(b"\n")
    assert set((out / "toy.jsonl").read_bytes().split(b"\n")[:-1]) <= set(source_lines)
    md = sources_markdown([(spec, n, total, source)])
    assert "github.com/x/y at commit `abc123`" in md and "- care: careful" in md
