"""QuALITY: the bundled official example, the official format, filters, distractors, HTML."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from llmdebate.data.quality import (
    FILTERS,
    QualityFilter,
    choose_distractor,
    html_to_text,
    load_quality,
    read_questions,
)
from llmdebate.errors import DatasetError
from llmdebate.qa.quotes import check_quotes

SAMPLE = Path(__file__).resolve().parents[1] / "datasets" / "quality" / "sample.jsonl"
LINES = [json.loads(x) for x in SAMPLE.read_text(encoding="utf-8").splitlines()]


def official_record(lines: list[dict[str, Any]], **question_fields: Any) -> dict[str, Any]:
    """The bundled questions in QuALITY's official layout (one article, nested questions)."""
    questions = []
    for k, row in enumerate(lines):
        meta = row["meta"]
        gold = row["choices"].index(row["answer"]) + 1
        validation = [
            {
                "untimed_annotator_id": f"a{j}",
                "untimed_answer": ans,
                "untimed_eval1_answerability": 1,
                "untimed_eval2_context": 2,
                "untimed_best_distractor": vote,
            }
            for j, (ans, vote) in enumerate(
                zip(meta["annotator_answers"], meta["eval3_best_distractor_votes"], strict=True)
            )
        ]
        speed = [
            {"speed_annotator_id": f"s{j}", "speed_answer": a}
            for j, a in enumerate(meta["speed_answers"])
        ]
        questions.append(
            {
                "question": row["question"],
                "question_unique_id": f"52845_YLZPNNYD_{k + 1}",
                "options": [c + " " for c in row["choices"]],  # upstream options end in spaces
                "gold_label": gold,
                "writer_label": gold,
                "validation": validation,
                "speed_validation": speed,
                **question_fields,
            }
        )
    return {
        "article_id": "52845",
        "set_unique_id": "52845_YLZPNNYD",
        "source": "Gutenberg",
        "title": lines[0]["meta"]["title"],
        "author": lines[0]["meta"]["author"],
        "article": lines[0]["context"],
        "questions": questions,
    }


def write_jsonl(path: Path, *records: Any) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_the_bundled_example_loads_as_text() -> None:
    items = load_quality()
    assert [it.id for it in items] == [f"52845_YLZPNNYD_line0_{k}" for k in range(1, 6)]
    text = items[0].context or ""
    assert all(it.context == text for it in items)
    assert "<" not in text and ">" not in text
    paragraphs = text.split("\n\n")
    assert paragraphs[:2] == ["THE GIRL IN HIS MIND", "By ROBERT F. YOUNG"]
    assert len(paragraphs) == 100  # its 99 <p> and one <h1>, none empty
    assert '"I do not know, mensakin. Perhaps."' in paragraphs
    # a <br/> is a line break inside its paragraph
    assert "Every man's mind is a universe with countless\nplaces in which he can hide" in text
    for it in items:
        assert it.dataset == "quality" and it.choices and it.answer in it.choices
        assert it.meta["article_format"] == "text" and it.meta["title"] == "The Girl in His Mind"


def test_filters_follow_the_published_definitions() -> None:
    questions = read_questions(SAMPLE)
    assert [q.speed_accuracy for q in questions] == [0.2, 0.2, 0.4, 0.2, 0.6]
    assert all(q.untimed_accuracy == 1.0 and q.answerable for q in questions)
    hard = load_quality(filters="hard")
    assert [it.id[-1] for it in hard] == ["1", "2", "3", "4"]
    assert all(it.meta["hard"] for it in hard)
    assert [it.id[-1] for it in load_quality(filters=QualityFilter(max_speed_accuracy=0.2))] == [
        "1",
        "2",
        "4",
    ]
    assert len(load_quality(filters="answerable")) == 5
    assert len(load_quality(filters="hard", limit=2)) == 2


def test_published_presets_on_the_official_format(tmp_path: Path) -> None:
    record = official_record(LINES)
    qs = record["questions"]
    qs[0]["writer_label"] = 1  # the writer disagrees with the gold label (2)
    for v in qs[1]["validation"]:
        v["untimed_eval2_context"] = 4  # most of the article needed
    qs[2]["validation"][0]["untimed_answer"] = 1  # one untimed annotator wrong
    for v in qs[3]["validation"]:
        v["untimed_eval1_answerability"] = 3  # judged unclear
    qs[3]["validation"][0]["untimed_eval1_answerability"] = 1
    path = write_jsonl(tmp_path / "dev", record)
    ids = {name: [it.id[-1] for it in load_quality(path, filters=name)] for name in FILTERS}
    assert ids["all"] == ["1", "2", "3", "4", "5"]
    assert ids["hard"] == ["1", "2", "3"]  # 4 judged unclear, 5 fast-answerable
    assert ids["khan2024"] == ["1", "2", "3"]  # mean answerability of 4 is 2.33 > 2
    # untimed accuracy 1.0, the writer agreeing, mean context required 3 or more
    assert ids["michael2023"] == ["2"]
    with pytest.raises(DatasetError, match="no question passes the filters"):
        load_quality(path, filters=QualityFilter(sources=("Slate",)))
    # the bundled example records no source: a filter on sources keeps none of it
    with pytest.raises(DatasetError, match="no question passes the filters"):
        load_quality(filters="khan2024")
    with pytest.raises(DatasetError, match="filters: 'easy' is not one of all, answerable"):
        load_quality(filters="easy")


def test_the_best_distractor_is_the_most_voted_wrong_option() -> None:
    items = load_quality()
    for it, line in zip(items, LINES, strict=True):
        votes = line["meta"]["eval3_best_distractor_votes"]
        gold = line["choices"].index(line["answer"]) + 1
        counted = [v for v in votes if v != gold]
        best = max(set(counted), key=counted.count)
        assert it.meta["distractor"] == line["choices"][best - 1]
        assert it.meta["distractor_index"] == best - 1
        assert it.meta["distractor_rule"] == "votes" and it.meta["distractor_choice"] == "best"
        assert it.meta["distractor"] in it.wrong_choices
    # question 1: votes [3, 3, 1], gold 2 -> option 3
    assert items[0].meta["distractor_votes"] == [1, 0, 2, 0]
    assert items[0].meta["distractor"] == LINES[0]["choices"][2]


def test_a_tie_is_drawn_from_the_seed_and_recorded(tmp_path: Path) -> None:
    record = official_record(LINES[:1])
    q = record["questions"][0]  # gold is option 2
    # options 1 and 3 tie with one vote each; the two votes for the gold do not count
    q["validation"] = [{**q["validation"][0], "untimed_best_distractor": v} for v in (1, 3, 2, 2)]
    path = write_jsonl(tmp_path / "QuALITY.v1.0.1.dev", record)
    picks = {}
    for seed in range(12):
        (item,) = load_quality(path, seed=seed)
        assert item.meta["distractor_tied"] == [0, 2]
        assert item.meta["distractor_rule"] == "votes, tie drawn"
        assert item.meta["distractor_seed"] == seed
        assert item.meta["distractor_votes"] == [1, 0, 1, 0]
        picks[seed] = item.meta["distractor_index"]
        assert load_quality(path, seed=seed)[0].meta["distractor_index"] == picks[seed]
    assert set(picks.values()) == {0, 2}


def test_no_votes_and_random_distractors_are_drawn_from_the_seed() -> None:
    (q,) = read_questions(SAMPLE)[:1]
    q.distractor_votes = []
    drawn = {choose_distractor(q, "best", s).index for s in range(20)}
    assert drawn == {0, 2, 3}  # every wrong option, never the gold (index 1)
    assert choose_distractor(q, "best", 5).rule == "no votes, drawn"
    randoms = [
        it.meta["distractor_index"]
        for s in range(20)
        for it in load_quality(distractor="random", seed=s, limit=1)
    ]
    assert set(randoms) == {0, 2, 3}
    assert load_quality(distractor="random", seed=3)[0].meta["distractor_rule"] == "random"
    with pytest.raises(DatasetError, match="distractor: 'worst' is not one of best, random"):
        load_quality(distractor="worst")  # type: ignore[arg-type]


def test_pair_keeps_the_answer_and_the_distractor() -> None:
    for it in load_quality(pair=True):
        assert it.choices is not None and len(it.choices) == 2
        assert set(it.choices) == {it.answer, it.meta["distractor"]}
        assert it.meta["choice_order"] in ([0, 1], [1, 0])


def test_the_official_format_reads_as_the_common_schema_does(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "QuALITY.v1.0.1.train", official_record(LINES))
    official, common = load_quality(path), load_quality(SAMPLE)
    assert [it.id for it in official] == [f"52845_YLZPNNYD_{k}" for k in range(1, 6)]
    for a, b in zip(official, common, strict=True):
        assert (a.question, a.answer, sorted(a.choices or []), a.context) == (
            b.question,
            b.answer,
            sorted(b.choices or []),
            b.context,
        )
        assert a.meta["distractor"] == b.meta["distractor"]
        assert a.meta["hard"] == b.meta["hard"]
        assert a.meta["set_unique_id"] == "52845_YLZPNNYD" and a.meta["writer_label"] is not None
    # the official difficult flag wins over the speed answers where it is recorded
    flagged = write_jsonl(tmp_path / "flagged", official_record(LINES, difficult=0))
    assert not any(q.hard for q in read_questions(flagged))
    # answerability votes of 2 or 3 (not answerable) take a question out of answerable
    record = official_record(LINES)
    for v in record["questions"][0]["validation"]:
        v["untimed_eval1_answerability"] = 2
    unanswerable = write_jsonl(tmp_path / "unanswerable", record)
    kept = load_quality(unanswerable, filters="answerable")
    assert [it.id[-1] for it in kept] == ["2", "3", "4", "5"]


def test_a_hugging_face_folder_in_the_official_format(tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets", reason="the hf extra is not installed")
    table = datasets.Dataset.from_list([official_record(LINES)])
    table.save_to_disk(str(tmp_path / "quality_hf"))
    items = load_quality(tmp_path / "quality_hf", filters="hard")
    assert [it.id[-1] for it in items] == ["1", "2", "3", "4"]
    assert items[0].meta["distractor"] == LINES[0]["choices"][2]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"gold_label": None}, r"questions\[0\]\.gold_label: missing \(QuALITY's test split"),
        ({"gold_label": 5}, r"questions\[0\]\.gold_label: option 5 is not between 1 and 4"),
        ({"options": ["only one"]}, r"questions\[0\]\.options: expected a list of at least two"),
        ({"question": ""}, r"questions\[0\]\.question: expected a non-empty string"),
        (
            {"speed_validation": [{"speed_answer": "x"}]},
            r"questions\[0\]\.speed_validation\.speed_answer\[0\]: expected an option number",
        ),
    ],
)
def test_bad_lines_name_file_line_and_field(
    tmp_path: Path, change: dict[str, Any], message: str
) -> None:
    record = official_record(LINES[:1])
    record["questions"][0].update(change)
    path = write_jsonl(tmp_path / "bad.jsonl", {"id": "skip"}, record)
    with pytest.raises(DatasetError, match=r"bad\.jsonl:1: neither QuALITY's format"):
        load_quality(path)
    path = write_jsonl(tmp_path / "bad.jsonl", record)
    with pytest.raises(DatasetError, match=r"bad\.jsonl:1: " + message):
        load_quality(path)


def test_missing_file_and_empty_selection(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match=r"nowhere\.jsonl: no such dataset file"):
        load_quality(tmp_path / "nowhere.jsonl")
    with pytest.raises(DatasetError, match="no question passes the filters"):
        load_quality(filters=QualityFilter(max_speed_accuracy=0.0))


def test_html_to_text() -> None:
    html = (
        "<!DOCTYPE html><html><head><title>T</title><style>p {x}</style></head><body>"
        "<h1>A  Title</h1><p>Caf&eacute; &amp; bar &mdash; it&#8217;s\n  <i>here</i>.<br/>"
        "Next line</p><script>var x = '<p>no</p>';</script><hr/>"
        "<p><img alt='T' src='t.png'/>he end &lt;tag&gt;</p><pre>a  b\n  c</pre></body></html>"
    )
    assert html_to_text(html) == (
        "A Title\n\nCafé & bar — it’s here.\nNext line\n\nThe end <tag>\n\na  b\n  c"
    )


def test_quotes_from_the_article_verify_against_its_text() -> None:
    passage = load_quality(limit=1)[0].context or ""
    speech = (
        "The story opens: <quote>Every man's mind is a universe with countless places in which "
        "he can hide - even from himself!</quote> and later <quote>Blake nodded. \u201cIf you "
        "are free.\u201d</quote> but never <quote>Blake refused to pay.</quote>"
    )
    checked = check_quotes(speech, passage)
    assert [c.status for c in checked] == ["verified", "verified", "unverified"]
    start, end = checked[1].spans[0]
    assert passage[start:end] == 'Blake nodded. "If you are free."'
