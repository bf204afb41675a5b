"""A person who asks and stops, at the server and the store: the ask form's CSRF token, the
question's length limit and bidirectional isolation, another judge's assignment, one question
at a time, no verdict while a question waits, no question past the last round, and the
continued debate of each judge kept apart (``asked.jsonl``; ``transcripts.jsonl`` untouched)."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

import pytest
from judging_study import RLO, assign, make_run, write_judges
from sqlalchemy import select
from starlette.testclient import TestClient

from llmdebate.cli import main
from llmdebate.judging.app import create_app
from llmdebate.judging.asking import MAX_QUESTION, continuation_id, load_asked
from llmdebate.judging.complete import Invalid, NotFound, ask, waiting_by_id, wall_s
from llmdebate.judging.db import Assignment, Question, connect
from llmdebate.records.rundir import TRANSCRIPTS_FILE

CSRF = re.compile(r'name="csrf" value="([0-9a-f]+)"')
JUDGE = {"kind": "human", "interactive": True, "turn_cost": 0.05, "log_base": 2}


@pytest.fixture()
def study(tmp_path: Path) -> tuple[Path, dict[str, str], dict[str, int]]:
    run_dir = make_run(tmp_path, ["consultancy"], limit=1, rounds=2, judge=JUDGE)
    links = assign(run_dir, write_judges(tmp_path / "j.yaml", ["a", "b"]), 1)
    with connect(run_dir)() as s:
        mine = {a.judge_id: a.id for a in s.scalars(select(Assignment))}
    return run_dir, {j: link[link.index("/login/"):] for j, link in links.items()}, mine


def _csrf(page: str) -> str:
    m = CSRF.search(page)
    assert m, page[:400]
    return m.group(1)


def test_the_ask_form_needs_its_token_and_limits_and_isolates_the_question(
    study: tuple[Path, dict[str, str], dict[str, int]],
) -> None:
    run_dir, links, mine = study
    with TestClient(create_app(run_dir)) as c:
        c.get(links["a"])
        page = c.get(f"/a/{mine['a']}")
        assert "Ask the debaters" in page.text and "End and decide" in page.text
        assert 'id="submit"' not in page.text
        csrf = _csrf(page.text)
        r = c.post(f"/a/{mine['a']}", data={"action": "ask", "question": "why?"})
        assert r.status_code == 403  # no form token
        r = c.post(f"/a/{mine['a']}", data={"action": "ask", "question": "why?", "csrf": "0" * 32})
        assert r.status_code == 403
        long = "x" * (MAX_QUESTION + 1)
        r = c.post(f"/a/{mine['a']}", data={"action": "ask", "question": long, "csrf": csrf})
        assert r.status_code == 400 and f"at most {MAX_QUESTION} characters" in r.text
        r = c.post(f"/a/{mine['a']}", data={"action": "ask", "question": "  ", "csrf": csrf})
        assert r.status_code == 400 and "type a question" in r.text
        # another judge's assignment answers as a missing one
        r = c.post(f"/a/{mine['b']}", data={"action": "ask", "question": "hi", "csrf": csrf})
        assert r.status_code == 404
        q = f"is {RLO}this reversed <b>x</b>?"
        r = c.post(f"/a/{mine['a']}", data={"action": "ask", "question": q, "csrf": csrf})
        assert r.status_code == 200 and "waiting for the debaters" in r.text
        assert f"<bdi>is {RLO}this reversed &lt;b&gt;x&lt;/b&gt;?\u202c</bdi>" in r.text
        assert "Ask the debaters</button>" not in r.text
        # one question at a time; no verdict while it waits
        page = c.get(f"/a/{mine['a']}?decide=1").text  # no verdict form while it waits
        assert 'id="submit"' not in page and "waiting for the debaters" in page
        r = c.post(f"/a/{mine['a']}", data={"action": "ask", "question": "more", "csrf": csrf})
        assert r.status_code == 400 and "waiting for the debaters" in r.text
        r = c.post(f"/a/{mine['a']}", data={"p": "60", "explanation": "x", "csrf": csrf})
        assert r.status_code == 400 and "waiting for the debaters" in r.text
    with connect(run_dir)() as s:
        assert [(x.assignment_id, x.text) for x in s.scalars(select(Question))] == [
            (mine["a"], q)
        ]


def test_each_judge_gets_their_own_continued_debate_up_to_the_last_round(
    study: tuple[Path, dict[str, str], dict[str, int]], capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir, _, mine = study
    before = (run_dir / TRANSCRIPTS_FILE).read_bytes()
    sessions, waiting = connect(run_dir), waiting_by_id(run_dir)
    with pytest.raises(NotFound):
        ask(sessions, run_dir, waiting, "a", mine["b"], "not mine")
    assert ask(sessions, run_dir, waiting, "a", mine["a"], "question of a") == 1
    assert ask(sessions, run_dir, waiting, "b", mine["b"], "question of b") == 1
    assert main(["answer", str(run_dir)]) == 0
    assert "answered 2 question(s)" in capsys.readouterr().out
    asked = load_asked(run_dir)
    with connect(run_dir)() as s:
        debate = {a.judge_id: a.debate_id for a in s.scalars(select(Assignment))}
    for who in ("a", "b"):
        t = asked[continuation_id(debate[who], mine[who], 1)]
        judge_turns = [x.text for x in t.turns if x.role == "judge"]
        assert judge_turns == [f"Question: question of {who}"]
        assert max(x.round for x in t.turns) == 2 and t.status == "awaiting_verdict"
    # both rounds heard: no further question
    with pytest.raises(Invalid, match="no rounds left"):
        ask(sessions, run_dir, waiting, "a", mine["a"], "again")
    assert (run_dir / TRANSCRIPTS_FILE).read_bytes() == before


def test_the_clock_survives_asking_and_waiting_and_end_and_decide_is_a_post(
    study: tuple[Path, dict[str, str], dict[str, int]], capsys: pytest.CaptureFixture[str]
) -> None:
    from llmdebate.judging.db import Judgment

    run_dir, links, mine = study
    aid = mine["a"]
    with TestClient(create_app(run_dir)) as c:
        c.get(links["a"])
        page = c.get(f"/a/{aid}").text
        csrf = _csrf(page)
        # the page's clock is the client's: a count beyond the wall time since the
        # assignment was opened is cut to it
        c.post(f"/a/{aid}/wait", data={"csrf": csrf, "active_s": "3e5"})
        with connect(run_dir).begin() as s:
            a = s.get(Assignment, aid)
            assert a is not None and a.started_at is not None
            assert a.active_s is not None and a.active_s <= wall_s(a) < 60
            a.started_at = a.started_at - timedelta(seconds=1000)  # opened 1000 s ago
            a.active_s = None
        assert f'href="/a/{aid}?decide=1"' not in page  # no GET link: a button of the form
        assert 'name="action" value="decide" id="end"' in page
        r = c.post(f"/a/{aid}", data={"action": "ask", "question": "why?", "csrf": csrf,
                                      "active_s": "30.0"}, follow_redirects=False)
        assert r.status_code == 303 and r.headers["location"] == f"/a/{aid}"
        page = c.get(f"/a/{aid}").text  # the page after the redirect keeps the clock
        assert 'id="active_s" value="30.0"' in page and 'data-wait="/a/' in page
        wait = c.post(f"/a/{aid}/wait", data={"csrf": csrf, "active_s": "55.5"})
        assert wait.status_code == 200 and wait.json() == {"pending": True}
        assert c.post(f"/a/{aid}/wait", data={"active_s": "1"}).status_code == 403  # token
        assert c.post(f"/a/{mine['b']}/wait", data={"csrf": csrf}).status_code == 404
        assert main(["answer", str(run_dir)]) == 0
        capsys.readouterr()
        assert c.post(f"/a/{aid}/wait", data={"csrf": csrf, "active_s": "80"}).json() == {
            "pending": False
        }
        page = c.get(f"/a/{aid}").text
        assert 'id="active_s" value="80.0"' in page and "round 2" in page
        r = c.post(f"/a/{aid}", data={"action": "decide", "csrf": csrf, "active_s": "95"},
                   follow_redirects=False)
        assert r.status_code == 303 and r.headers["location"] == f"/a/{aid}?decide=1"
        page = c.get(r.headers["location"]).text
        assert 'id="submit"' in page and 'id="active_s" value="95.0"' in page
        # a page that reports less (a stale tab) does not shrink the count
        r = c.post(f"/a/{aid}", data={"decide": "1", "p": "70", "explanation": "settled",
                                      "csrf": csrf, "active_s": "3.5"})
        assert r.status_code in (200, 303)
    with connect(run_dir)() as s:
        [j] = list(s.scalars(select(Judgment).where(Judgment.assignment_id == aid)))
        assert j.active_s == 95.0
