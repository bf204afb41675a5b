"""Human-judge studies without a server: waiting debates, assignment, tokens, completion,
re-scoring, crash repair and the report's judges section."""

from __future__ import annotations

import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from judging_study import SCRIPTED, assign, make_run, write_judges
from sqlalchemy import select

from llmdebate.cli import main
from llmdebate.commands.score import score_file
from llmdebate.core.scoring import judgment_scores
from llmdebate.errors import MissingExtraError, ProtocolViolation
from llmdebate.judging import report_section as report_judges
from llmdebate.judging import require
from llmdebate.judging.complete import (
    Conflict,
    Invalid,
    NotFound,
    Submission,
    submit,
    sync,
    waiting_by_id,
)
from llmdebate.judging.db import Assignment, Judge, connect, judge_by_token, token_hash
from llmdebate.judging.view import build_view
from llmdebate.protocols.common import complete_choice
from llmdebate.records.rundir import JUDGED_FILE, load_transcripts
from llmdebate.report.metrics import decision_correct

ALL = ["prover-estimator", "naive-recursive", "two-sided", "consultancy", "direct"]


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_run(tmp_path_factory.mktemp("study"), ALL, limit=5)


def _answer(view: dict, n: int) -> Submission:
    if view["kind"] == "leaf":
        return Submission(verdict=n % 2, probability=(0.3, 0.8)[n % 2] if n % 3 else None)
    return Submission(p_shown_first=0.2 + 0.1 * (n % 6), explanation=f"reason {n}")


def _judge_everything(run_dir: Path) -> int:
    sessions = connect(run_dir)
    waiting = waiting_by_id(run_dir)
    with sessions() as s:
        rows = list(s.scalars(select(Assignment)))
    for n, a in enumerate(rows):
        view = build_view(waiting[a.debate_id], a.order_seed, a.context)
        submit(sessions, run_dir, waiting, a.judge_id, a.id, _answer(view, n))
    return len(rows)


def test_every_protocol_stops_for_a_person(study: Path) -> None:
    ts = load_transcripts(study)
    assert {t.protocol for t in ts} == set(ALL)
    assert all(t.status == "awaiting_verdict" for t in ts)
    speech = [t for t in ts if t.protocol in ("two-sided", "consultancy", "direct")]
    for t in speech:
        assert len(t.meta["options"]) == 2 and "decision" not in t.meta
        assert all(turn.role != "judge" for turn in t.turns)
        assert t.agents["judge"] == "human"
    t = speech[0]
    done = complete_choice(t, 0.25, "human:x")
    assert done.status == "complete" and done.meta["decision"] == t.meta["options"][1]
    assert done.meta["decision_probability"] == 0.75 and done.turns[-1].role == "judge"
    assert decision_correct(done) == float(t.meta["options"][1] == t.meta["gold"])
    with pytest.raises(ProtocolViolation):
        complete_choice(done, 0.5, "again")


def test_assignment_rules_hold_and_a_rerun_keeps_them(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path, ["prover-estimator", "two-sided", "direct"], limit=6)
    ids = [f"j{i}" for i in range(6)]
    links = assign(run_dir, write_judges(tmp_path / "j.yaml", ids), 2)
    assert set(links) == {*ids, "lead"}
    with connect(run_dir)() as s:
        rows = list(s.scalars(select(Assignment)))
    per_debate: dict[str, list[str]] = defaultdict(list)
    for a in rows:
        per_debate[a.debate_id].append(a.judge_id)
    assert all(len(js) == 2 for js in per_debate.values())  # K judges, or none yet
    seen = Counter((a.judge_id, a.item_id) for a in rows)
    assert max(seen.values()) == 1  # no judge sees an item twice
    loads = Counter(a.judge_id for a in rows)
    assert set(loads) == set(ids) and max(loads.values()) - min(loads.values()) <= 1
    for j in ids:  # protocols balanced per judge
        mine = Counter(a.protocol for a in rows if a.judge_id == j)
        assert max(mine.values()) - min(mine.values()) <= 1 and len(mine) == 3
    firsts = {
        min((a for a in rows if a.judge_id == j), key=lambda a: a.position).protocol for j in ids
    }
    assert len(firsts) == 3  # Latin square: judges start at different protocols
    # every waiting debate of an item gets judges in turn: the protocols' shares stay even
    by_protocol = Counter(a.protocol for a in rows)
    assert max(by_protocol.values()) - min(by_protocol.values()) <= 2 * 2

    before = {(a.id, a.judge_id, a.debate_id, a.position, a.order_seed) for a in rows}
    links2 = assign(run_dir, write_judges(tmp_path / "j.yaml", [*ids, "j6", "j7"]), 2)
    assert set(links2) == {"j6", "j7"}  # existing tokens are neither shown again nor changed
    with connect(run_dir)() as s:
        after = list(s.scalars(select(Assignment)))
    assert before <= {(a.id, a.judge_id, a.debate_id, a.position, a.order_seed) for a in after}
    assert len(after) > len(rows)  # the new judges take debates that waited for judges
    assert max(Counter((a.judge_id, a.item_id) for a in after).values()) == 1


def test_tokens_are_stored_only_hashed(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path, ["direct"], limit=2)
    links = assign(run_dir, write_judges(tmp_path / "j.yaml", ["ann", "ben"]), 1)
    tokens = {j: link.rsplit("/", 1)[1] for j, link in links.items()}
    raw = b"".join(p.read_bytes() for p in run_dir.glob("judging.db*"))
    sessions = connect(run_dir)
    with sessions() as s:
        for j, tok in tokens.items():
            assert len(tok) >= 32 and tok.encode() not in raw
            row = s.get(Judge, j)
            assert row is not None and row.token_hash == token_hash(tok) != tok
            found = judge_by_token(s, tok)
            assert found is not None and found.id == j
        assert judge_by_token(s, tokens["ann"] + "x") is None
        assert judge_by_token(s, "") is None
    for path in run_dir.iterdir():  # nor in any other file of the run directory
        if path.is_file():
            assert not any(t.encode() in path.read_bytes() for t in tokens.values())


def test_bad_judges_file_is_one_line_with_its_place(tmp_path: Path, capsys) -> None:
    run_dir = make_run(tmp_path, ["direct"], limit=1)
    bad = tmp_path / "judges.yaml"
    bad.write_text("judges:\n  - id: ok\n  - id: 'not ok!'\n")
    assert main(["assign", str(run_dir), "--judges", str(bad), "--per-item", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and f"{bad}:3:" in err and "judges.1.id" in err
    assert "--judges" in err
    bad.write_text("study: {context: some}\njudges: [a]\n")
    assert main(["assign", str(run_dir), "--judges", str(bad)]) == 2
    assert "study.context" in capsys.readouterr().err


def test_k_judgments_score_rescore_and_refuse_duplicates(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path, ALL, limit=3)
    assign(run_dir, write_judges(tmp_path / "j.yaml", [f"p{i}" for i in range(10)]), 2)
    n = _judge_everything(run_dir)
    judged = load_transcripts(run_dir, judged=True)
    assert len(judged) == n and len({t.id for t in judged}) == n
    per_debate = Counter(t.meta["debate_id"] for t in judged)
    assert set(per_debate.values()) == {2} and set(t.protocol for t in judged) == set(ALL)
    for t in judged:
        j = t.meta["judgment"]
        assert t.id == f"{t.meta['debate_id']}#{j['id']}" and j["judge"].startswith("p")
        assert j["scores"] == judgment_scores(t) and j["scores"]["correct"] is not None
        assert t.agents["judge"] == f"human:{j['judge']}"
    res = score_file(run_dir / JUDGED_FILE)
    assert res.ok and res.scored == n and res.mismatches == []
    assert main(["score", str(run_dir / JUDGED_FILE)]) == 0

    sessions, waiting = connect(run_dir), waiting_by_id(run_dir)
    with sessions() as s:
        a = s.scalars(select(Assignment)).first()
        other = s.scalars(select(Judge).where(Judge.id != a.judge_id, ~Judge.is_lead)).first()
    with pytest.raises(Conflict):
        submit(sessions, run_dir, waiting, a.judge_id, a.id, Submission(verdict=1))
    with pytest.raises(NotFound):
        submit(sessions, run_dir, waiting, other.id, a.id, Submission(verdict=1))
    assert len(load_transcripts(run_dir, judged=True)) == n

    # a tampered verdict is caught by the re-scoring
    path = run_dir / JUDGED_FILE
    lines = path.read_text().splitlines(keepends=True)
    k = next(i for i, t in enumerate(judged) if t.protocol == "prover-estimator")
    data = json.loads(lines[k])
    data["rounds"][-1]["verdict"]["value"] ^= 1
    lines[k] = json.dumps(data) + "\n"
    path.write_text("".join(lines))
    assert score_file(path).mismatches


def test_submissions_are_checked(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path, ["prover-estimator", "two-sided"], limit=1)
    assign(run_dir, write_judges(tmp_path / "j.yaml", ["a", "b"]), 1)
    sessions, waiting = connect(run_dir), waiting_by_id(run_dir)
    with sessions() as s:
        rows = list(s.scalars(select(Assignment)))
    kinds = {build_view(waiting[a.debate_id], a.order_seed)["kind"]: a for a in rows}
    leaf, choice = kinds["leaf"], kinds["choice"]
    for bad in (
        Submission(),
        Submission(verdict=1, probability=0.2),
        Submission(verdict=0, probability=0.995),
    ):
        with pytest.raises(Invalid):
            submit(sessions, run_dir, waiting, leaf.judge_id, leaf.id, bad)
    for bad in (Submission(p_shown_first=0.6), Submission(p_shown_first=1.0, explanation="x")):
        with pytest.raises(Invalid):
            submit(sessions, run_dir, waiting, choice.judge_id, choice.id, bad)
    j = submit(
        sessions,
        run_dir,
        waiting,
        choice.judge_id,
        choice.id,
        Submission(p_shown_first=0.9, explanation="clear"),
    )
    view = build_view(waiting[choice.debate_id], choice.order_seed)
    shown_first = view["answers"][0]
    options = waiting[choice.debate_id].meta["options"]
    # the judge's 90 % on the first answer *as shown* is kept in the protocol's own order
    assert j.p_first == pytest.approx(0.9 if options[0] == shown_first else 0.1)
    done = load_transcripts(run_dir, judged=True)[0]
    assert done.meta["decision"] == shown_first


def test_views_hide_what_a_judge_must_not_see(study: Path) -> None:
    waiting = waiting_by_id(study)
    flips = set()
    for t in waiting.values():
        for seed in range(4):
            view = build_view(t, seed, "full")
            text = json.dumps(view)
            flips.add(view["flipped"])
            for secret in ("truth", "gold", "honest", "scripted", t.id, t.protocol):
                assert secret not in text
            assert view == build_view(t, seed, "full")  # the recorded seed fixes the order
            if view["kind"] == "leaf":
                assert build_view(t, seed, "none")["path"] == []
                if t.rounds[:-1]:
                    assert build_view(t, seed, "path")["path"][0]["claim"] == t.rounds[0].claim.text
                    assert view["path"][0]["subclaims"]
    assert flips == {True, False}


def test_a_crash_before_the_append_is_repaired(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path, ["prover-estimator", "direct"], limit=2)
    assign(run_dir, write_judges(tmp_path / "j.yaml", ["a", "b"]), 1)
    n = _judge_everything(run_dir)
    path = run_dir / JUDGED_FILE
    whole = path.read_bytes()
    lines = whole.splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:-1]) + lines[-1][:40])  # the last line torn, as by kill -9
    assert sync(connect(run_dir), run_dir, waiting_by_id(run_dir)) == 1
    assert path.read_bytes() == whole and len(lines) == n
    assert sync(connect(run_dir), run_dir, waiting_by_id(run_dir)) == 0


def test_report_has_a_judges_section(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path, ["prover-estimator", "two-sided"], limit=4)
    assign(run_dir, write_judges(tmp_path / "j.yaml", ["a", "b", "c", "d"]), 2)
    _judge_everything(run_dir)
    assert main(["report", str(run_dir), "--quiet"]) == 0
    m = json.loads((run_dir / "comparison.json").read_text())
    sec = m["judges"]
    judged = load_transcripts(run_dir, judged=True)
    assert sec["judgments"] == len(judged)
    for stats in sec["per_judge"].values():
        leafy = stats["figure"] == "leaf-claim accuracy"
        mine = [t for t in judged if t.meta["judgment"]["judge"] == stats["judge"]
                and (t.protocol == "prover-estimator") == leafy]
        correct = [judgment_scores(t)["correct"] for t in mine]
        assert stats["judgments"] == len(mine)
        assert stats["accuracy"] == pytest.approx(sum(correct) / len(correct))
        # four items: too few for an interval, and the table says so
        assert stats["accuracy_ci95"] is None and "too few" in stats["accuracy_note"]
    # a judge of leaf claims and of answer choices: one line per figure, never pooled
    assert all(s["figure"] != "mixed" for s in sec["per_judge"].values())
    assert set(sec["per_protocol"]) == {"prover-estimator", "two-sided"}
    assert sec["per_protocol"]["prover-estimator"]["figure"] == "leaf-claim accuracy"
    assert sec["per_protocol"]["two-sided"]["figure"] == "judge accuracy"
    assert sec["agreement"]["debates"] > 0 and 0 <= sec["agreement"]["agreement"] <= 1
    page = (run_dir / "report.html").read_text()
    assert "Human judges" in page and "Agreement between judges" in page
    assert "## Human judges" in (run_dir / "comparison.md").read_text()

    # the same leaves ruled on by a model judge: people, model and oracle side by side
    cfg_dir = tmp_path / "llm"
    cfg_dir.mkdir()
    import yaml

    cfg = yaml.safe_load((tmp_path / "study.yaml").read_text())
    cfg["judge"] = {**SCRIPTED, "kind": "llm"}
    (cfg_dir / "c.yaml").write_text(yaml.safe_dump(cfg))
    assert (
        main(
            ["run", "--config", str(cfg_dir / "c.yaml"), "--run-dir", str(cfg_dir / "r"), "--quiet"]
        )
        == 0
    )
    others = load_transcripts(cfg_dir / "r")
    hlo = report_judges.human_llm_oracle(judged, others)
    assert hlo is not None and hlo["leaves"] == sum(
        t.protocol == "prover-estimator" for t in judged
    )
    assert 0 <= hlo["human_accuracy"] <= 1 and 0 <= hlo["llm_accuracy"] <= 1


def test_missing_extra_is_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "sqlalchemy", None)
    with pytest.raises(MissingExtraError, match=r"llmdebate\[judge\]"):
        require()
    run_dir = make_run(tmp_path, ["direct"], limit=1)
    judges = write_judges(tmp_path / "j.yaml", ["a"])
    assert main(["assign", str(run_dir), "--judges", str(judges)]) == 2
