"""A model judge and the oracle beside the people on the same waiting debates; the report's
people / model / oracle comparison and per-judge calibration; an older study database."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from pathlib import Path

import pytest
import yaml
from judging_study import SCRIPTED, assign, make_run, write_judges
from sqlalchemy import select

from llmdebate.cli import main
from llmdebate.commands.score import score_file
from llmdebate.core.scoring import judgment_scores
from llmdebate.judging import report_section as report_judges
from llmdebate.judging.complete import Submission, submit, waiting_by_id
from llmdebate.judging.db import Assignment, Judgment, connect
from llmdebate.judging.machine import oracle_ruling
from llmdebate.judging.view import build_view
from llmdebate.records.rundir import JUDGED_FILE, load_transcripts

PROTOCOLS = ["prover-estimator", "naive-recursive", "two-sided", "direct"]
MODEL_FLAGS = ["--model", "scripted", "--model-options", json.dumps(SCRIPTED["options"])]


def _people_judge(run_dir: Path) -> int:
    sessions, waiting = connect(run_dir), waiting_by_id(run_dir)
    with sessions() as s:
        rows = list(s.scalars(select(Assignment)))
    for n, a in enumerate(rows):
        view = build_view(waiting[a.debate_id], a.order_seed, a.context)
        if view["kind"] == "leaf":
            sub = Submission(verdict=n % 2, probability=(0.3, 0.7)[n % 2])
        else:
            sub = Submission(p_shown_first=0.25 + 0.1 * (n % 5), explanation="because")
        submit(sessions, run_dir, waiting, a.judge_id, a.id, sub)
    return len(rows)


@pytest.fixture(scope="module")
def judged_study(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("machine")
    run_dir = make_run(tmp, PROTOCOLS, limit=3)
    assign(run_dir, write_judges(tmp / "j.yaml", ["ann", "ben", "cat"]), 1)
    _people_judge(run_dir)
    return run_dir


def test_model_and_oracle_rule_on_every_waiting_debate(judged_study: Path, capsys) -> None:
    run_dir = judged_study
    waiting = waiting_by_id(run_dir)
    with connect(run_dir)() as s:
        before = [(a.id, a.judge_id, a.debate_id) for a in s.scalars(select(Assignment))]
    people = len(load_transcripts(run_dir, judged=True))

    assert main(["judge", str(run_dir), *MODEL_FLAGS, "--method", "logprobs"]) == 0
    assert f"llm:scripted judged {len(waiting)} waiting debates" in capsys.readouterr().out
    assert main(["judge", str(run_dir), "--oracle"]) == 0
    out = capsys.readouterr().out
    known = [t for t in waiting.values() if oracle_ruling(t) is not None]
    assert known and f"oracle judged {len(known)} waiting debates" in out

    # again: nothing is judged twice
    assert main(["judge", str(run_dir), *MODEL_FLAGS]) == 0
    assert f"judged 0 waiting debates ({len(waiting)} already judged" in capsys.readouterr().out

    with connect(run_dir)() as s:
        after = [(a.id, a.judge_id, a.debate_id) for a in s.scalars(select(Assignment))]
        rows = list(s.scalars(select(Judgment)))
    assert after == before  # no person's assignment is taken or added
    kinds = Counter(j.kind for j in rows)
    assert kinds == {"human": people, "llm": len(waiting), "oracle": len(known)}
    assert all(j.assignment_id is None for j in rows if j.kind != "human")

    judged = load_transcripts(run_dir, judged=True)
    assert len(judged) == len(rows) and len({t.id for t in judged}) == len(rows)
    res = score_file(run_dir / JUDGED_FILE)
    assert res.ok and res.scored == len(rows) and res.mismatches == []
    by_id = {j.id: j for j in rows}
    for t in judged:
        j = t.meta["judgment"]
        row = by_id[j["id"]]
        assert t.id == f"{row.debate_id}#{row.id}" and j["kind"] == row.kind
        assert j["scores"] == judgment_scores(t)
        if row.kind == "llm":
            assert t.agents["judge"] == "llm:scripted"
            judge_calls = [c for c in t.calls if c.role == "judge"]
            assert judge_calls and row.calls is not None and len(row.calls) == len(judge_calls)
            assert j["settings"]["method"] == "logprobs"
        if row.kind == "oracle":
            assert t.agents["judge"] == "oracle" and j["scores"]["correct"] in (1.0, None)
            if t.protocol in ("two-sided", "direct"):
                assert t.meta["decision"].lower() == t.meta["gold"].lower()
    leaf_llm = [
        t
        for t in judged
        if t.meta["judgment"]["kind"] == "llm" and t.protocol == "prover-estimator"
    ]
    assert leaf_llm and all(t.rounds[-1].verdict.probability in (0.85, 0.15) for t in leaf_llm)
    for t in leaf_llm:  # one judge: the model ruled by argmax, and the expectation takes its O
        leaf = t.rounds[-1]
        assert leaf.verdict.ruling == "argmax"
        assert leaf.verdict.value == int(leaf.verdict.probability >= 0.5)
        assert leaf.expected_reward == leaf.reward
    people = [t for t in judged if t.meta["judgment"]["kind"] == "human" and t.rounds]
    assert all(t.rounds[-1].verdict.ruling is None for t in people)

    # the model judge was asked exactly what the run's own model judge would have been asked
    cfg = yaml.safe_load((run_dir.parent / "study.yaml").read_text())
    cfg["judge"] = {**SCRIPTED, "kind": "llm"}
    (run_dir.parent / "llm.yaml").write_text(yaml.safe_dump(cfg))
    other = run_dir.parent / "llm-run"
    args = ["run", "--config", str(run_dir.parent / "llm.yaml"), "--run-dir", str(other)]
    assert main([*args, "--quiet"]) == 0
    reference = {t.id: t for t in load_transcripts(other)}
    for t in judged:
        if t.meta["judgment"]["kind"] != "llm":
            continue
        ref = reference[t.meta["debate_id"]]
        asked = [c.messages for c in t.calls if c.role == "judge"]
        assert asked == [c.messages for c in ref.calls if c.role == "judge"]
        assert t.meta.get("judge") == ref.meta.get("judge")
        if t.rounds:
            assert t.rounds[-1].verdict.value == ref.rounds[-1].verdict.value
            assert t.total == ref.total


def test_report_sets_people_model_and_oracle_side_by_side(judged_study: Path) -> None:
    run_dir = judged_study
    # (idempotent: whatever the test above judged is not judged again)
    assert main(["judge", str(run_dir), *MODEL_FLAGS]) == 0
    assert main(["judge", str(run_dir), "--oracle"]) == 0
    assert main(["report", str(run_dir), "--quiet"]) == 0
    sec = json.loads((run_dir / "comparison.json").read_text())["judges"]
    judged = load_transcripts(run_dir, judged=True)
    kind = report_judges.kind
    assert sec["by_kind"] == dict(Counter(kind(t) for t in judged))
    same = sec["same_debates"]
    assert set(same) == {*PROTOCOLS, "all"}
    people = [t for t in judged if kind(t) == "human"]
    assert same["all"]["debates"] == len({t.meta["debate_id"] for t in people})
    for p in PROTOCOLS:
        mine = [t for t in people if t.protocol == p]
        correct = [judgment_scores(t)["correct"] for t in mine]
        assert same[p]["human_accuracy"] == pytest.approx(sum(correct) / len(correct))
        assert same[p]["oracle_accuracy"] in (1.0, None)
        llm = {t.meta["debate_id"]: t for t in judged if kind(t) == "llm" and t.protocol == p}
        agree = [
            report_judges._answer(t) == report_judges._answer(llm[t.meta["debate_id"]])
            for t in mine
        ]
        assert same[p]["human_llm_agreement"] == pytest.approx(sum(agree) / len(agree))
    # calibration per judge: every person, the model and the oracle, each from their own points
    per = sec["calibration_per_judge"]
    assert {"ann", "ben", "cat", "llm:scripted", "oracle"} <= set(per)
    for judge, cal in per.items():
        mine = [t for t in judged if t.meta["judgment"]["judge"] == judge]
        pts = [p for p in map(report_judges._p_true, mine) if p is not None]
        assert cal["n"] == len(pts) and sum(b["n"] for b in cal["bins"]) == len(pts)
    assert per["oracle"]["brier"] == 0.0
    model_lines = [s for s in sec["per_judge"].values() if s["judge"] == "llm:scripted"]
    assert model_lines and all(s["kind"] == "llm" for s in model_lines)
    # leaf claims and answer choices judged by one judge: a line per figure
    assert {s["figure"] for s in model_lines} <= {"judge accuracy", "leaf-claim accuracy"}
    assert set(sec["per_protocol"]) == set(PROTOCOLS)  # people only
    assert sum(s["judgments"] for s in sec["per_protocol"].values()) == len(people)
    page = (run_dir / "report.html").read_text()
    assert "People, model judge and oracle on the same debates" in page
    assert "llm:scripted (llm)" in page
    md = (run_dir / "comparison.md").read_text()
    assert "### People, model judge and oracle on the same debates" in md


def test_judge_flags_are_checked(judged_study: Path, capsys) -> None:
    run = str(judged_study)
    for args in ([], ["--oracle", "--judge-id", "ann"], [*MODEL_FLAGS, "--oracle"]):
        assert main(["judge", run, *args]) == 2
        assert "exactly one of --judge-id, --model and --oracle" in capsys.readouterr().err
    assert main(["judge", run, "--model", "scripted", "--model-options", "{bad"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--model-options: not valid JSON" in err
    assert main(["judge", run, "--model", "scripted", "--model-options", '{"api_key": 1}']) == 2
    assert "--model-options" in capsys.readouterr().err


def test_an_older_study_database_gains_the_new_columns(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path, ["direct"], limit=2)
    assign(run_dir, write_judges(tmp_path / "j.yaml", ["a"]), 1)
    _people_judge(run_dir)
    db = run_dir / "judging.db"
    con = sqlite3.connect(db)
    for table, col in (
        ("judgments", "kind"),
        ("judgments", "turns_revealed"),
        ("judgments", "calls"),
        ("assignments", "revealed"),
    ):
        con.execute(f"ALTER TABLE {table} DROP COLUMN {col}")
    con.commit()
    con.close()
    with connect(run_dir)() as s:
        rows = list(s.scalars(select(Judgment)))
        assert len(rows) == 2 and {j.kind for j in rows} == {"human"}
        assert {a.revealed for a in s.scalars(select(Assignment))} == {0}
    assert main(["judge", str(run_dir), "--oracle"]) == 0
    assert len(load_transcripts(run_dir, judged=True)) == 4
