"""The judging server against a hostile client: cross-site sign-out and sign-in, formula cells,
oversized numbers, headers on every response, files and bad bytes in forms, bidirectional
overrides, forwarded addresses and guessed cookies, revoked sessions."""

from __future__ import annotations

import csv
import io
import re
from html.parser import HTMLParser
from pathlib import Path

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from judging_study import RLO, assign, free_port, make_run, rlo_dataset, start_server, write_judges
from rich.console import Console
from sqlalchemy import select
from starlette.testclient import TestClient

from llmdebate.judging.app import COOKIE, create_app
from llmdebate.judging.bidi import CONTROLS as BIDI_CONTROLS
from llmdebate.judging.bidi import (
    EMBEDDINGS,
    ISOLATES,
    PDF,
    PDI,
    balanced,
    isolate,
)
from llmdebate.judging.complete import Submission, submit, waiting_by_id
from llmdebate.judging.db import Assignment, Judgment, connect
from llmdebate.judging.guard import HEADERS
from llmdebate.judging.lead import csv_cell
from llmdebate.judging.terminal import _show
from llmdebate.records.rundir import JUDGED_FILE

CSRF = re.compile(r'name="csrf" value="([0-9a-f]+)"')
CROSS = {"sec-fetch-site": "cross-site"}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("hostile")
    return make_run(
        tmp, ["prover-estimator", "two-sided"], dataset=rlo_dataset(tmp), depth=0,
        judge={"kind": "human", "passage": "shown"},  # the passage too is isolated
    )


def fresh(tmp: Path, run_dir: Path, judges: list[str], **study: object) -> dict[str, str]:
    """A new study on the run (database and judged file removed); links by judge id."""
    for p in run_dir.glob("judging.db*"):
        p.unlink()
    (run_dir / JUDGED_FILE).unlink(missing_ok=True)
    links = assign(run_dir, write_judges(tmp / "j.yaml", judges, **study), 1)
    return {j: link[link.index("/login/") :] for j, link in links.items()}


def signed_in_as(c: TestClient) -> str | None:
    r = c.get("/")
    m = re.search(r"Welcome, (\S+)</h1>", r.text)
    return m.group(1) if r.status_code == 200 and m else None


def csrf_of(page: str) -> str:
    m = CSRF.search(page)
    assert m, page[:400]
    return m.group(1)


def _aids(run_dir: Path, judge: str) -> list[int]:
    with connect(run_dir)() as s:
        q = select(Assignment.id).where(Assignment.judge_id == judge)
        return list(s.scalars(q.order_by(Assignment.position)))


def _judgments(run_dir: Path) -> int:
    with connect(run_dir)() as s:
        return len(list(s.scalars(select(Judgment))))


def test_sign_out_refuses_other_sites_and_revokes_the_session(
    run_dir: Path, tmp_path: Path
) -> None:
    links = fresh(tmp_path, run_dir, ["a"])
    with TestClient(create_app(run_dir)) as c:
        assert c.get(links["a"], follow_redirects=False).status_code == 303
        csrf = csrf_of(c.get("/").text)
        for headers in (CROSS, {"origin": "http://evil.example"}, {"referer": "http://x.test/"}):
            r = c.post("/logout", data={"csrf": csrf}, headers=headers)
            assert r.status_code == 403 and "set-cookie" not in r.headers, headers
        assert c.post("/logout", data={}).status_code == 403
        assert signed_in_as(c) == "a"
        stolen = c.cookies[COOKIE]
        r = c.post("/logout", data={"csrf": csrf}, headers={"sec-fetch-site": "same-origin"})
        assert r.status_code == 200 and "Max-Age=0" in r.headers["set-cookie"]
        c.cookies.clear()
        c.cookies.set(COOKIE, stolen)  # a copy of the cookie taken before signing out
        assert c.get("/").status_code == 401
    with TestClient(create_app(run_dir)) as anon:  # no session: nothing to delete
        r = anon.post("/logout", data={"csrf": csrf}, headers=CROSS)
        assert r.status_code == 403 and "set-cookie" not in r.headers


def test_a_link_from_another_site_or_over_a_session_asks_first(
    run_dir: Path, tmp_path: Path
) -> None:
    links = fresh(tmp_path, run_dir, ["a", "b"])
    with TestClient(create_app(run_dir)) as c:
        r = c.get(links["b"], headers=CROSS)  # a page elsewhere signing this browser in
        assert r.status_code == 200 and "set-cookie" not in r.headers
        assert 'id="confirm"' in r.text and signed_in_as(c) is None
        assert c.get(links["a"], follow_redirects=False).status_code == 303
        r = c.get(links["b"], headers={"sec-fetch-site": "same-origin"})
        assert 'id="swap"' in r.text and "signed in as a" in r.text
        assert "set-cookie" not in r.headers and signed_in_as(c) == "a"
        token = csrf_of(r.text)
        assert c.post(links["b"], data={"csrf": "0" * 32}).status_code == 403
        assert c.post(links["b"], data={"csrf": token}, headers=CROSS).status_code == 403
        assert c.post(links["a"], data={"csrf": token}).status_code == 403  # another link's
        assert signed_in_as(c) == "a"
        old = c.cookies[COOKIE]
        r = c.post(links["b"], data={"csrf": token}, follow_redirects=False)
        assert r.status_code == 303 and signed_in_as(c) == "b"
        c.cookies.clear()
        c.cookies.set(COOKIE, old)
        assert c.get("/").status_code == 401  # the swap revoked a's session
        # the same judge's link again: no question, no new session
        c.cookies.clear()
        assert c.get(links["a"], follow_redirects=False).status_code == 303
        same = c.get(links["a"], follow_redirects=False)
        assert same.status_code == 303 and "set-cookie" not in same.headers


def test_export_cells_never_start_a_formula(run_dir: Path, tmp_path: Path) -> None:
    links = fresh(tmp_path, run_dir, ["a", "b", "c", "d"])
    hostile = ['=HYPERLINK("http://x")', "+1+1", "-2", "@SUM(A1)", "\tx", "\rx"]
    sessions, waiting = connect(run_dir), waiting_by_id(run_dir)
    with sessions() as s:
        rows = list(s.scalars(select(Assignment)))
    for a, text in zip(rows, hostile * 4, strict=False):
        sub = Submission(verdict=1, p_shown_first=0.6, explanation=text)
        submit(sessions, run_dir, waiting, a.judge_id, a.id, sub)
    with TestClient(create_app(run_dir)) as c:
        c.get(links["lead"])
        r = c.get("/lead/judgments.csv")
    assert r.status_code == 200 and r.headers["x-content-type-options"] == "nosniff"
    table = list(csv.reader(io.StringIO(r.text, newline="")))
    assert len(table) == len(rows) + 1
    cells = [cell for row in table for cell in row]
    assert not [c for c in cells if c.startswith(("=", "+", "-", "@", "\t", "\r"))]
    got = [row[table[0].index("explanation")] for row in table[1:]]
    with sessions() as s:
        stored = list(s.scalars(select(Judgment.explanation).order_by(Judgment.id)))
    assert got == [("'" + t if t[:1] in "=+-@" else t) for t in stored]
    assert sum(t[:1] in "=+-@" for t in stored) >= 4
    assert [csv_cell(v) for v in ("\tx", "\rx", "x=1", 1.5, -2)] == ["'\tx", "'\rx", "x=1", 1.5, -2]
    assert all(line.startswith('"') for line in r.text.splitlines() if line)


def test_the_lead_page_title_is_its_title(run_dir: Path, tmp_path: Path) -> None:
    links = fresh(tmp_path, run_dir, ["a"])
    with TestClient(create_app(run_dir)) as c:
        page = c.get(links["lead"], follow_redirects=True).text
    title = re.search(r"<title>(.*?)</title>", page, re.S)
    assert title and title.group(1) == "Study progress"
    assert page.count('action="/logout"') == 1


def test_numbers_out_of_range_answer_404_or_400(run_dir: Path, tmp_path: Path) -> None:
    links = fresh(tmp_path, run_dir, ["a"], reveal="stepped")
    with TestClient(create_app(run_dir), raise_server_exceptions=False) as c:
        c.get(links["a"])
        csrf = csrf_of(c.get("/").text)
        for aid in ("99999999999999999999999", "9" * 5000, "²", "-1", "0x1", "1e3"):
            assert c.get(f"/a/{aid}").status_code == 404, aid[:30]
            assert c.post(f"/a/{aid}", data={"csrf": csrf}).status_code == 404, aid[:30]
        speech = [a for a in _aids(run_dir, "a") if "Show the next turn" in c.get(f"/a/{a}").text]
        assert speech
        speech_id = speech[0]
        for seen in ("²", "9" * 5000, "-1", "99999999999999999999999", "1.5"):
            form = {"csrf": csrf, "action": "reveal", "seen": seen, "p": "50"}
            r = c.post(f"/a/{speech_id}", data=form)
            assert r.status_code == 400 and "seen must be a whole number" in r.text, seen[:30]
        form = {"csrf": csrf, "action": "reveal", "seen": "1", "p": "50"}
        assert c.post(f"/a/{speech_id}", data=form).status_code == 200


def test_every_response_carries_the_security_headers(run_dir: Path, tmp_path: Path) -> None:
    links = fresh(tmp_path, run_dir, ["a"])
    with TestClient(create_app(run_dir), raise_server_exceptions=False) as c:
        responses = [
            c.get("/static/judge.css"),
            c.get("/static/missing.js"),
            c.get("/nowhere"),
            c.get("/logout"),  # 405
            c.get("/login/wrong"),
            c.get("/"),
            c.get("/next", follow_redirects=False),
            c.get(links["a"], follow_redirects=False),
            c.get(links["lead"], follow_redirects=False),
            c.get("/lead/judgments.csv"),
        ]
    statuses = sorted({r.status_code for r in responses})
    assert statuses == [200, 303, 401, 403, 404, 405]
    for r in responses:
        for key, value in HEADERS.items():
            assert r.headers.get(key) == value, (r.url, r.status_code, key)


def test_files_multipart_bad_utf8_and_nul_are_refused(run_dir: Path, tmp_path: Path) -> None:
    links = fresh(tmp_path, run_dir, ["a"])
    with TestClient(create_app(run_dir)) as c:
        c.get(links["a"])
        csrf = csrf_of(c.get("/").text)
        aid = _aids(run_dir, "a")[0]
        base = {"csrf": csrf, "verdict": "1", "p": "40", "explanation": "fine"}
        r = c.post(f"/a/{aid}", data=base, files={"explanation": ("x.txt", b"=1+1", "text/plain")})
        assert r.status_code == 400 and "files" in r.text
        urlenc = {"content-type": "application/x-www-form-urlencoded"}
        bodies = {
            b"%FF%FE": "not url-encoded UTF-8",  # percent-encoded bytes that are not UTF-8
            "é".encode("latin-1"): "not url-encoded UTF-8",  # a raw byte
            b"a%00b": "NUL",
        }
        for bad, why in bodies.items():
            body = f"csrf={csrf}&verdict=1&p=40&explanation=".encode() + bad
            r = c.post(f"/a/{aid}", content=body, headers=urlenc)
            assert r.status_code == 400 and why in r.text, bad
        assert c.post(f"/a/{aid}", content=b"x=" + b"a" * 140000, headers=urlenc).status_code == 413
        assert _judgments(run_dir) == 0
        ok = c.post(f"/a/{aid}", data={**base, "explanation": "café ✓"}, follow_redirects=False)
        assert ok.status_code == 303
    with connect(run_dir)() as s:
        assert s.scalars(select(Judgment.explanation)).one() == "café ✓"


class _Isolation(HTMLParser):
    """Every text run of the page that holds a bidirectional control, and whether it sits in a
    ``<bdi>`` element."""

    def __init__(self) -> None:
        super().__init__()
        self.depth = 0
        self.runs: list[tuple[str, bool]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.depth += tag == "bdi"

    def handle_endtag(self, tag: str) -> None:
        self.depth -= tag == "bdi"

    def handle_data(self, data: str) -> None:
        if any(ch in EMBEDDINGS or ch in ISOLATES or ch in (PDF, PDI) for ch in data):
            self.runs.append((data, self.depth > 0))


def test_overrides_in_debates_are_isolated_on_pages_and_terminal(
    run_dir: Path, tmp_path: Path
) -> None:
    links = fresh(tmp_path, run_dir, ["a", "b"], context="full")
    pages = []
    with TestClient(create_app(run_dir)) as c:
        for judge in ("a", "b"):
            c.cookies.clear()
            c.get(links[judge])
            pages += [c.get(f"/a/{aid}").text for aid in _aids(run_dir, judge)]
    kinds = {m.group(1) for p in pages if (m := re.search(r'data-kind="(\w+)"', p))}
    assert kinds == {"leaf", "choice"}
    runs = []
    for page in pages:
        parser = _Isolation()
        parser.feed(page)
        runs += parser.runs
    assert len([r for r in runs if RLO in r[0]]) >= 3
    assert all(inside for _, inside in runs), [r for r in runs if not r[1]][:3]
    assert all(balanced(text) == text for text, _ in runs)  # nothing closes the bdi early
    # the terminal: no bidirectional control is drawn (a terminal shows them as characters),
    # so nothing is left that could reverse the text after it
    sessions, waiting = connect(run_dir), waiting_by_id(run_dir)
    from llmdebate.judging.complete import study_settings, view_for

    with sessions() as s:
        rows = list(s.scalars(select(Assignment)))
        settings = study_settings(s)
    console = Console(record=True, width=200, color_system=None)
    for n, a in enumerate(rows, start=1):
        _show(console, view_for(waiting[a.debate_id], a, settings), n, len(rows))
    text = console.export_text()
    assert not [ch for ch in text if ch in BIDI_CONTROLS]
    assert "this question reversed" in text and "yes indeed" in text


CONTROLS = st.sampled_from(sorted(EMBEDDINGS | ISOLATES | {PDF, PDI, "\n", "a", "ب"}))


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(CONTROLS, max_size=40).map("".join))
def test_balanced_text_opens_and_closes_in_pairs(text: str) -> None:
    out = balanced(text)
    assert [c for c in out if c not in EMBEDDINGS | ISOLATES | {PDF, PDI}] == [
        c for c in text if c not in EMBEDDINGS | ISOLATES | {PDF, PDI}
    ]
    for para in out.split("\n"):
        stack: list[str] = []
        for ch in para:
            if ch in EMBEDDINGS or ch in ISOLATES:
                stack.append(ch)
            elif ch == PDF:
                assert stack and stack.pop() in EMBEDDINGS
            elif ch == PDI:
                assert stack and stack.pop() in ISOLATES
        assert not stack
    assert balanced(out) == out
    assert isolate(text).startswith("\u2068") and isolate(text).endswith(PDI)


def test_forwarded_addresses_are_believed_from_trusted_proxies_only(
    run_dir: Path, tmp_path: Path
) -> None:
    links = fresh(tmp_path, run_dir, ["a"])
    local = ("127.0.0.1", 4000)
    with TestClient(create_app(run_dir, login_limit=3), client=local) as c:
        for n in range(3):
            c.get(f"/login/w{n}", headers={"x-forwarded-for": f"10.0.0.{n}"})
        r = c.get("/login/w9", headers={"x-forwarded-for": "10.0.0.99"})
        assert r.status_code == 429  # one address, whatever the header says
        assert c.get(links["a"], follow_redirects=False).status_code == 303  # a valid link
    app = create_app(run_dir, login_limit=3, trusted_proxies=["127.0.0.1"])
    with TestClient(app, client=local) as c:
        for n in range(6):  # six clients behind the proxy, one failure each
            xff = {"x-forwarded-for": f"203.0.113.{n}, 127.0.0.1"}
            assert c.get(f"/login/w{n}", headers=xff).status_code == 403
        one = {"x-forwarded-for": "198.51.100.7"}
        codes = [c.get(f"/login/v{n}", headers=one).status_code for n in range(4)]
        assert codes == [403, 403, 403, 429]
        r = c.get(links["a"], headers={**one, "x-forwarded-proto": "https"}, follow_redirects=False)
        assert r.status_code == 303 and "secure" in r.headers["set-cookie"].lower()
    with TestClient(create_app(run_dir), client=("10.9.9.9", 1)) as c:  # not a trusted proxy
        r = c.get(links["a"], headers={"x-forwarded-proto": "https"}, follow_redirects=False)
        assert "secure" not in r.headers["set-cookie"].lower()


def test_guessed_cookies_are_limited_and_valid_ones_are_not(run_dir: Path, tmp_path: Path) -> None:
    links = fresh(tmp_path, run_dir, ["a"])
    with TestClient(create_app(run_dir, login_limit=3)) as good:
        good.get(links["a"])
        with TestClient(create_app(run_dir, login_limit=3)) as c:  # same address "testclient"
            codes = []
            for n in range(5):
                c.cookies.set(COOKIE, f"guess-{n}")
                codes.append(c.get("/").status_code)
            assert codes == [401, 401, 401, 429, 429]
            c.cookies.set(COOKIE, good.cookies[COOKIE])
            assert c.get("/").status_code == 200  # a live session always works
            c.cookies.clear()
            assert c.get(links["a"], follow_redirects=False).status_code == 303


def test_the_real_server_ignores_forwarded_for_from_loopback(run_dir: Path, tmp_path: Path) -> None:
    fresh(tmp_path, run_dir, ["a"])
    port = free_port()
    proc = start_server(run_dir, port)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as c:
            codes = [
                c.get(f"/login/x{n}", headers={"x-forwarded-for": f"10.1.{n}.1"}).status_code
                for n in range(11)
            ]
    finally:
        proc.terminate()
        proc.wait(10)
    assert codes == [403] * 10 + [429]
