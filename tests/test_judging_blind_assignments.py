"""Assignments keep judges blind: no judge sees a story they have read in full (the direct
expert baseline shows it), nor one question text twice (one question under two ids), nor more
questions of a story than the study allows; ``assign`` prints its design and the study keeps a
per-judge story log."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest
from judging_study import REPO, make_run, write_judges

from llmdebate.cli import main
from llmdebate.judging.assign import Loads, side, unstaffed_views, waiting_debates
from llmdebate.judging.blinding import STORY_LOG
from llmdebate.report.metrics import item_id

QUALITY = REPO / "datasets" / "quality" / "sample.jsonl"
HUMAN_QA = {"kind": "human", "passage": "hidden", "direct_passage": ["hidden", "shown"]}


def _assign(run_dir: Path, judges: Path, *flags: str) -> str:
    return _cli(["assign", str(run_dir), "--judges", str(judges), *flags,
                 "--links-out", str(run_dir.parent / "links.tsv")])


def _cli(argv: list[str]) -> str:
    import io
    from contextlib import redirect_stdout

    out = io.StringIO()
    with redirect_stdout(out):
        assert main(argv) == 0
    return out.getvalue()


def _log(run_dir: Path) -> dict[str, list[dict[str, object]]]:
    return dict(json.loads((run_dir / STORY_LOG).read_text())["judges"])


@pytest.fixture(scope="module")
def quality_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("quality")
    return make_run(
        tmp, ["direct", "consultancy"], limit=5, dataset=QUALITY, judge=HUMAN_QA, rounds=1
    )


def _fresh(run_dir: Path) -> None:
    for p in run_dir.glob("judging.db*"):
        p.unlink()


def test_on_the_quality_sample_no_judge_reads_the_story_and_then_judges_it_blind(
    quality_run: Path, tmp_path: Path
) -> None:
    _fresh(quality_run)
    judges = write_judges(tmp_path / "j.yaml", [f"j{n}" for n in range(8)])
    out = _assign(quality_run, judges, "--per-item", "1")
    assert (
        "design: debates awaiting a verdict: consultancy 10, direct 10; 5 items, 1 stories"
    ) in out
    assert "a story read in full or judged blind, never both" in out
    log = _log(quality_run)
    assert sum(len(v) for v in log.values()) > 0
    for judge, rows in log.items():
        ways = {(r["story"], r["reads_story_in_full"]) for r in rows}
        assert len({s for s, _ in ways}) == len(ways), (judge, rows)  # one way per story
        questions = [r["question"] for r in rows]
        assert len(questions) == len(set(questions)), judge


def test_one_question_per_story_holds_when_the_study_asks_for_it(
    quality_run: Path, tmp_path: Path
) -> None:
    _fresh(quality_run)
    judges = write_judges(tmp_path / "j.yaml", [f"j{n}" for n in range(8)])
    out = _assign(quality_run, judges, "--per-item", "1", "--per-story", "1")
    assert "at most 1 question(s) per story" in out
    log = _log(quality_run)
    assert len(log) == 8 and all(len(rows) == 1 for rows in log.values()), log
    again = _assign(quality_run, judges, "--per-item", "1")  # the bound is kept
    assert "0 new assignments" in again


def test_one_question_under_two_ids_reaches_no_judge_twice(tmp_path: Path) -> None:
    story = "The lighthouse keeper counted ships. " * 20
    rows = [
        {"id": f"{key}", "question": q, "choices": ["the keeper", "the captain"],
         "answer": "the keeper", "context": story}
        for key, q in [("a-1", "Who counted ships?"), ("b-7", "who  counted ships"),
                       ("c-2", "Who lit the lamp?")]
    ]
    data = tmp_path / "dup.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    run_dir = make_run(tmp_path, ["consultancy"], limit=3, dataset=data, judge=HUMAN_QA,
                       rounds=1)
    judges = write_judges(tmp_path / "j.yaml", ["a", "b", "c", "d"])
    _assign(run_dir, judges, "--per-item", "1")
    for judge, got in _log(run_dir).items():
        keys = [" ".join(str(r["question"]).casefold().replace("?", "").split()) for r in got]
        assert len(keys) == len(set(keys)), (judge, got)
    seen: dict[str, int] = defaultdict(int)
    for got in _log(run_dir).values():
        for r in got:
            seen[str(r["debate"])] += 1
    assert len(seen) == 6  # every debate still gets its judge


def test_a_view_no_judge_can_take_is_named_with_the_judges_that_would_staff_it(
    quality_run: Path,
) -> None:
    """Six judges who each judged the sample's one story blind: none can read it in full, so
    no direct (expert) debate can get a judge; the view is named in one line with how many
    judges would staff it (two per debate: two new judges, each on every item)."""
    debates = waiting_debates(quality_run)
    blind = [t for t in debates if t.protocol == "consultancy"]
    loads = Loads()
    active = [f"j{n}" for n in range(6)]
    for n, j in enumerate(active):
        t = blind[n % len(blind)]
        loads.add(j, item_id(t), t.id, t.protocol, side(t), t)
    lines = unstaffed_views(debates, active, 2, loads)
    assert lines == [
        "no judge can take direct (expert): its 5 debates wait, since each of the 6 judges "
        "has judged its items or read its stories the other way (blind or in full); 2 more "
        "judges would staff it (2 per debate)"
    ]
    loads.per_story = 2  # a judge sees two questions of a story at most: 5 x 2 / 2 = 5
    assert "5 more judges would staff it" in unstaffed_views(debates, active, 2, loads)[0]
    fresh = Loads()  # judges with nothing yet can take every view
    assert unstaffed_views(debates, active, 2, fresh) == []
