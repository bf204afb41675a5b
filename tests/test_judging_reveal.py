"""Stepped reveal, protocol names by study setting, sign-out by POST, and the login limit."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from judging_study import assign, make_run, write_judges
from sqlalchemy import select
from starlette.testclient import TestClient

from llmdebate.commands.score import score_file
from llmdebate.core.scoring import reveal_cost
from llmdebate.judging import report_section as report_judges
from llmdebate.judging.app import COOKIE, LoginLimiter, create_app
from llmdebate.judging.complete import (
    Invalid,
    Submission,
    reveal_next,
    study_settings,
    submit,
    view_for,
    waiting_by_id,
)
from llmdebate.judging.db import Assignment, Judgment, connect
from llmdebate.records.rundir import JUDGED_FILE, load_transcripts

CSRF = re.compile(r'name="csrf" value="([0-9a-f]+)"')
SHOWN = re.compile(r"(\d+) of (\d+) turns shown")


@pytest.fixture(scope="module")
def stepped(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two-sided debates of 2 rounds (4 turns) and leaves, judged with stepped reveal."""
    tmp = tmp_path_factory.mktemp("stepped")
    return make_run(tmp, ["prover-estimator", "two-sided"], limit=2, rounds=2)


def _study(tmp: Path, run_dir: Path, judges: list[str], **study: object) -> dict[str, str]:
    for p in run_dir.glob("judging.db*"):
        p.unlink()
    (run_dir / JUDGED_FILE).unlink(missing_ok=True)
    return assign(run_dir, write_judges(tmp / "j.yaml", judges, **study), 1)


def test_stepped_reveal_records_turns_and_cost(stepped: Path, tmp_path: Path) -> None:
    _study(tmp_path, stepped, ["a", "b", "c", "d"], reveal="stepped", turn_cost=0.05)
    sessions, waiting = connect(stepped), waiting_by_id(stepped)
    with sessions() as s:
        rows = list(s.scalars(select(Assignment)))
        study = study_settings(s)
    assert study["reveal"] == "stepped" and study["turn_cost"] == 0.05
    speech = [a for a in rows if a.protocol == "two-sided"]
    leaf = next(a for a in rows if a.protocol == "prover-estimator")
    assert len(speech) == 4
    full = [x for x in waiting[speech[0].debate_id].turns if x.role != "judge"]
    assert len(full) == 4

    a = speech[0]
    view = view_for(waiting[a.debate_id], a, study)
    assert view["stepped"] and len(view["turns"]) == 1 and view["turns_total"] == 4
    assert view["turns"][0]["text"] == full[0].text and view["turn_cost"] == 0.05
    assert reveal_next(sessions, waiting, a.judge_id, a.id, seen=1) == 2
    assert reveal_next(sessions, waiting, a.judge_id, a.id, seen=1) == 2  # a reload: no more
    assert reveal_next(sessions, waiting, a.judge_id, a.id) == 3
    with pytest.raises(Invalid):  # leaves show everything at once
        reveal_next(sessions, waiting, leaf.judge_id, leaf.id)
    submit(sessions, stepped, waiting, a.judge_id, a.id, Submission(0.7, None, 0.7, "x"))

    b = speech[1]  # everything revealed: capped at the number of turns
    for _ in range(6):
        reveal_next(sessions, waiting, b.judge_id, b.id)
    submit(
        sessions, stepped, waiting, b.judge_id, b.id, Submission(p_shown_first=0.4, explanation="y")
    )
    c = speech[2]  # nothing more asked for: the first turn only, free
    submit(
        sessions, stepped, waiting, c.judge_id, c.id, Submission(p_shown_first=0.6, explanation="z")
    )
    with sessions() as s:
        got = {j.assignment_id: j for j in s.scalars(select(Judgment))}
    assert [got[x.id].turns_revealed for x in (a, b, c)] == [3, 4, 1]
    assert got[a.id].settings["reveal"] == "stepped" and got[a.id].settings["turn_cost"] == 0.05
    judged = {t.meta["judgment"]["assignment"]: t for t in load_transcripts(stepped, judged=True)}
    for x, turns in ((a, 3), (b, 4), (c, 1)):
        rv = judged[x.id].meta["judgment"]["reveal"]
        assert rv == {"turns": turns, "of": 4, "turn_cost": 0.05, "cost": reveal_cost(0.05, turns)}
    assert judged[a.id].meta["judgment"]["reveal"]["cost"] == pytest.approx(0.10)
    assert judged[c.id].meta["judgment"]["reveal"]["cost"] == 0.0
    res = score_file(stepped / JUDGED_FILE)
    assert res.ok and res.scored == 3

    sec = report_judges.section(list(judged.values()), n_boot=50)
    st = sec["per_protocol"]["two-sided"]
    assert st["stepped"] == 3 and st["mean_turns_revealed"] == pytest.approx(8 / 3)
    assert st["mean_reveal_cost"] == pytest.approx((0.10 + 0.15 + 0.0) / 3)

    # a recorded cost that the scoring module does not recompute is a mismatch
    path = stepped / JUDGED_FILE
    lines = path.read_text().splitlines(keepends=True)
    data = json.loads(lines[0])
    data["meta"]["judgment"]["reveal"]["cost"] = (
        0.0 if data["meta"]["judgment"]["reveal"]["cost"] else 1.0
    )
    lines[0] = json.dumps(data) + "\n"
    path.write_text("".join(lines))
    assert any("reveal cost" in m for m in score_file(path).mismatches)


def _login(c: TestClient, link: str) -> None:
    assert c.get(link[link.index("/login/") :], follow_redirects=True).status_code == 200


def _open(c: TestClient, aid: int) -> str:
    r = c.get(f"/a/{aid}")
    assert r.status_code == 200
    return r.text


def test_stepped_reveal_in_the_web_app_without_javascript(stepped: Path, tmp_path: Path) -> None:
    links = _study(tmp_path, stepped, ["a", "b", "c", "d"], reveal="stepped", turn_cost=0.25)
    with connect(stepped)() as s:
        mine = s.scalars(select(Assignment).where(Assignment.protocol == "two-sided")).first()
    assert mine is not None
    aid = mine.id
    with TestClient(create_app(stepped)) as c:
        _login(c, links[mine.judge_id])
        page = _open(c, aid)
        assert SHOWN.search(page).groups() == ("1", "4")  # type: ignore[union-attr]
        assert "Each further turn costs 0.25" in page and 'value="reveal"' in page
        assert page.count('class="turn"') == 1
        csrf = CSRF.search(page).group(1)  # type: ignore[union-attr]
        form = {"csrf": csrf, "p": "35", "explanation": "so far <i>so good</i>", "seen": "1"}
        assert (
            c.post(f"/a/{aid}", data={**form, "action": "reveal", "csrf": "0" * 32}).status_code
            == 403
        )
        r = c.post(f"/a/{aid}", data={**form, "action": "reveal", "active_s": "12.5"})
        assert r.status_code == 200 and SHOWN.search(r.text).groups() == ("2", "4")  # type: ignore[union-attr]
        # what the judge had typed is kept, escaped
        assert "so far &lt;i&gt;so good&lt;/i&gt;</textarea>" in r.text and 'value="35"' in r.text
        assert 'value="12.5"' in r.text
        # the same request again (a reload of that POST) reveals nothing more
        r = c.post(f"/a/{aid}", data={**form, "action": "reveal"})
        assert SHOWN.search(r.text).groups() == ("2", "4")  # type: ignore[union-attr]
        assert SHOWN.search(_open(c, aid)).groups() == ("2", "4")  # type: ignore[union-attr]
        r = c.post(f"/a/{aid}", data={**form, "seen": "2", "action": "reveal"})
        assert SHOWN.search(r.text).groups() == ("3", "4")  # type: ignore[union-attr]
        r = c.post(f"/a/{aid}", data={**form, "seen": "3"}, follow_redirects=False)
        assert r.status_code == 303
        r = c.post(f"/a/{aid}", data={**form, "action": "reveal"})
        assert r.status_code == 409
    with connect(stepped)() as s:
        j = s.scalars(select(Judgment).where(Judgment.assignment_id == aid)).one()
    assert j.turns_revealed == 3 and j.settings["turn_cost"] == 0.25


def test_protocol_names_are_shown_only_when_the_study_says_so(
    stepped: Path, tmp_path: Path
) -> None:
    for show in (False, True):
        links = _study(tmp_path, stepped, ["a"], show_protocol=show)
        with TestClient(create_app(stepped)) as c:
            _login(c, links["a"])
            with connect(stepped)() as s:
                aids = [x.id for x in s.scalars(select(Assignment))]
            pages = [_open(c, aid) for aid in aids]
            for aid, page in zip(aids, pages, strict=True):
                csrf = CSRF.search(page).group(1)  # type: ignore[union-attr]
                form = {"csrf": csrf, "verdict": "1", "p": "50", "explanation": "e"}
                assert c.post(f"/a/{aid}", data=form, follow_redirects=False).status_code == 303
        names = ("Prover-estimator debate", "Two-sided debate")
        text = "".join(pages)
        assert all((n in text) == show for n in names)
        assert not any("prover-estimator" in p or "two-sided" in p for p in pages)
        with connect(stepped)() as s:
            done = list(s.scalars(select(Judgment)))
        assert len(done) == len(aids) == 2
        assert all(j.settings["show_protocol"] is show for j in done)


def test_sign_out_is_a_post_with_the_form_token(stepped: Path, tmp_path: Path) -> None:
    links = _study(tmp_path, stepped, ["a"])
    with TestClient(create_app(stepped)) as c:
        _login(c, links["a"])
        home = c.get("/").text
        assert 'action="/logout"' in home and 'href="/logout"' not in home
        assert c.get("/logout").status_code == 405
        assert c.post("/logout", data={"csrf": "0" * 32}).status_code == 403
        assert c.get("/").status_code == 200  # still signed in
        csrf = CSRF.search(home).group(1)  # type: ignore[union-attr]
        r = c.post("/logout", data={"csrf": csrf})
        assert r.status_code == 200 and "signed out" in r.text
        assert COOKIE in r.headers.get("set-cookie", "") and "Max-Age=0" in r.headers["set-cookie"]
        c.cookies.clear()
        assert c.get("/").status_code == 401


def test_failed_logins_are_limited_per_address(stepped: Path, tmp_path: Path) -> None:
    links = _study(tmp_path, stepped, ["a"])
    good = links["a"][links["a"].index("/login/") :]
    with TestClient(create_app(stepped, login_limit=3, login_window=60)) as c:
        assert c.get(good, follow_redirects=False).status_code == 303  # successes do not count
        for n in range(3):
            assert c.get(f"/login/wrong-{n}").status_code == 403
        r = c.get("/login/wrong-3")
        assert r.status_code == 429 and 1 <= int(r.headers["retry-after"]) <= 60
        c.cookies.clear()
        assert c.get(good, follow_redirects=False).status_code == 303  # a valid link still works
        assert c.get("/login/wrong-4").status_code == 429  # a wrong one does not
    with TestClient(create_app(stepped, login_limit=3), client=("10.0.0.9", 1)) as other:
        assert other.get(good, follow_redirects=False).status_code == 303  # another address

    now = [0.0]
    lim = LoginLimiter(2, 60.0, clock=lambda: now[0], max_clients=3)
    lim.failed("x")
    now[0] = 30.0
    lim.failed("x")
    assert lim.retry_after("x") == pytest.approx(30.0)
    now[0] = 60.5  # the first failure has left the window
    assert lim.retry_after("x") is None
    for addr in ("p", "q", "r", "s"):
        lim.failed(addr)
    assert len(lim.failures) <= 3  # bounded memory
