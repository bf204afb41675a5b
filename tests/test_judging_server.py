"""The judging server: escaping, refusals, 20 judges at once, and a kill -9 restart."""

from __future__ import annotations

import os
import re
import signal
import threading
from collections import Counter
from pathlib import Path

import httpx
from judging_study import (
    HOSTILE,
    assign,
    free_port,
    hostile_dataset,
    make_run,
    server,
    start_server,
    with_base,
    write_judges,
)
from sqlalchemy import select
from starlette.testclient import TestClient

from llmdebate.commands.score import score_file
from llmdebate.judging.app import create_app
from llmdebate.judging.db import Assignment, Judgment, connect
from llmdebate.records.rundir import JUDGED_FILE, load_transcripts

CSRF = re.compile(r'name="csrf" value="([0-9a-f]+)"')
KIND = re.compile(r'data-kind="(leaf|choice)"')


def _form(page: str, n: int = 0) -> dict[str, str]:
    csrf = CSRF.search(page)
    kind = KIND.search(page)
    assert csrf and kind, page[:500]
    if kind.group(1) == "leaf":
        return {"csrf": csrf.group(1), "verdict": str(n % 2), "active_s": "3.5"}
    return {"csrf": csrf.group(1), "p": str(30 + n % 40), "explanation": f"reason {n}"}


def _login(c: httpx.Client | TestClient, link: str) -> None:
    r = c.get(link[link.index("/login/") :], follow_redirects=True)
    assert r.status_code == 200


def test_markup_in_debates_is_shown_as_text_and_pages_are_guarded(tmp_path: Path) -> None:
    data = hostile_dataset(tmp_path)
    run_dir = make_run(
        tmp_path, ["prover-estimator", "two-sided"], dataset=data, depth=0,
        judge={"kind": "human", "passage": "shown"},  # the passage too is shown as text
    )
    links = assign(run_dir, write_judges(tmp_path / "j.yaml", ["a", "b"]), 1)
    with connect(run_dir)() as s:
        b_items = [x.id for x in s.scalars(select(Assignment).where(Assignment.judge_id == "b"))]
    with TestClient(create_app(run_dir)) as c:
        assert c.get("/a/1").status_code == 401  # no cookie, no page
        _login(c, links["a"])
        pages = []
        while True:
            r = c.get("/next", follow_redirects=True)
            if "/a/" not in str(r.url):
                break
            page = r.text
            pages.append(page)
            assert r.headers["content-security-policy"].startswith("default-src 'self'")
            assert "<script>alert" not in page and "&lt;script&gt;alert" in page
            assert "{{ 7*7 }}" in page and "{% if 1 %}J{% endif %}" in page
            aid = str(r.url).rsplit("/", 1)[1]
            assert c.post(f"/a/{aid}", data={**_form(page), "csrf": "0" * 32}).status_code == 403
            assert c.post(f"/a/{aid}", data={"verdict": "1"}).status_code == 403
            ok = c.post(f"/a/{aid}", data=_form(page), follow_redirects=False)
            assert ok.status_code == 303
        assert {KIND.search(p).group(1) for p in pages} == {"leaf", "choice"}  # type: ignore[union-attr]
        for aid in b_items:  # another judge's items answer as if they did not exist
            assert c.get(f"/a/{aid}").status_code == 404
            assert c.post(f"/a/{aid}", data=_form(pages[0])).status_code == 404
        assert c.get("/lead").status_code == 403
        assert c.get("/lead/judgments.csv").status_code == 403
        c.cookies.clear()
        _login(c, links["lead"])
        lead = c.get("/lead").text
        total = len(pages) + len(b_items)
        assert f"{len(pages)} of {total} assignments judged" in lead
        export = c.get("/lead/judgments.csv").text
        assert HOSTILE not in lead and len(export.splitlines()) >= 3
    judged = load_transcripts(run_dir, judged=True)
    assert judged and score_file(run_dir / JUDGED_FILE).ok


def _judge_queue(base: str, link: str, out: dict[str, Counter[int]], who: str) -> None:
    statuses: Counter[int] = Counter()
    with httpx.Client(base_url=base, timeout=60) as c:
        _login(c, link)
        first = True
        for n in range(30):  # bounded: more than any queue here
            r = c.get("/next", follow_redirects=True)
            if "/a/" not in str(r.url):
                break
            form = _form(r.text, n)
            aid = str(r.url).rsplit("/", 1)[1]
            if first:  # a double-click: the same form sent twice at once
                got: list[int] = []

                def send(url: str = f"/a/{aid}", data: dict[str, str] = form) -> None:
                    got.append(c.post(url, data=data).status_code)  # noqa: B023

                ts = [threading.Thread(target=send) for _ in range(2)]
                for t in ts:
                    t.start()
                for t in ts:
                    t.join()
                statuses.update(got)
                first = False
            else:
                statuses[c.post(f"/a/{aid}", data=form, follow_redirects=False).status_code] += 1
    out[who] = statuses


def test_twenty_judges_at_once_lose_and_duplicate_nothing(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path, ["two-sided", "direct"], limit=20)
    ids = [f"j{i:02d}" for i in range(20)]
    links = assign(run_dir, write_judges(tmp_path / "j.yaml", ids), 2)
    with connect(run_dir)() as s:
        total = len(list(s.scalars(select(Assignment))))
    assert total == 120
    out: dict[str, Counter[int]] = {}
    with server(run_dir) as base:
        threads = [
            threading.Thread(target=_judge_queue, args=(base, with_base(links[j], base), out, j))
            for j in ids
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
    assert set(out) == set(ids)
    for j, st in out.items():
        # every item answered once; the doubled first submission answered 409 (or, had the
        # first finished, 200 from its redirect target): never a second judgment, never a 500
        assert set(st) <= {200, 303, 409}, (j, st)
        assert st[409] == 1, (j, st)
    with connect(run_dir)() as s:
        judgments = list(s.scalars(select(Judgment)))
    assert len(judgments) == total == len({j.assignment_id for j in judgments})
    judged = load_transcripts(run_dir, judged=True)
    assert len(judged) == total and len({t.id for t in judged}) == total
    res = score_file(run_dir / JUDGED_FILE)
    assert res.ok and res.scored == total


def test_a_verdict_survives_kill_9(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path, ["prover-estimator", "direct"], limit=3)
    links = assign(run_dir, write_judges(tmp_path / "j.yaml", ["a", "b"]), 1)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    proc = start_server(run_dir, port)
    try:
        with httpx.Client(base_url=base, timeout=30) as c:
            _login(c, links["a"])
            r = c.get("/next", follow_redirects=True)
            aid = str(r.url).rsplit("/", 1)[1]
            assert c.post(f"/a/{aid}", data=_form(r.text)).status_code in (200, 303)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    # as if the process died between the commit and the append: the line is gone too
    (run_dir / JUDGED_FILE).write_bytes(b"")
    proc = start_server(run_dir, port)
    try:
        with httpx.Client(base_url=base, timeout=30) as c:
            _login(c, links["a"])
            assert c.get(f"/a/{aid}").text.count("You have answered this one") == 1
            while True:
                r = c.get("/next", follow_redirects=True)
                if "/a/" not in str(r.url):
                    break
                nxt = str(r.url).rsplit("/", 1)[1]
                assert c.post(f"/a/{nxt}", data=_form(r.text)).status_code == 303
    finally:
        proc.terminate()
        proc.wait(10)
    with connect(run_dir)() as s:
        mine = list(s.scalars(select(Judgment).where(Judgment.judge_id == "a")))
        assigned = list(s.scalars(select(Assignment).where(Assignment.judge_id == "a")))
    assert int(aid) in {j.assignment_id for j in mine} and len(mine) == len(assigned)
    judged = load_transcripts(run_dir, judged=True)
    assert {t.meta["judgment"]["id"] for t in judged} == {j.id for j in mine}
    assert score_file(run_dir / JUDGED_FILE).ok
