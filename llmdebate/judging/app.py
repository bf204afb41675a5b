"""The judges' web app (Starlette, server-rendered Jinja2 pages, a little JavaScript).

Each judge opens ``/login/<token>`` once: the token goes into an HttpOnly, SameSite=Strict
cookie and the browser is sent on to ``/``, so the token never stays in the address bar and
no access log is kept. A judge sees only their own assignments (any other id: 404); every
form carries a CSRF token derived from the judge's secret; every page is autoescaped and sent
with a strict Content-Security-Policy (scripts from this server only). A second submission
of an assignment — a double-click, a reload, a second tab — is a 409 page that says the first
answer counts. The study lead's token opens ``/lead`` (progress per judge and per protocol)
and the exports. Signing out is a POST with the CSRF token. Each client address gets a
limited number of failed logins per minute (then 429, with Retry-After).

With the study's stepped reveal, a speech-protocol page shows the turns revealed so far and a
"next turn" button in the same form (the answer typed so far is kept): the count lives in the
database, so a reload, a second tab or a judge without JavaScript sees the same turns, and
the judgment records how many were shown.
"""

from __future__ import annotations

import csv
import hashlib
import hmac
import io
import json
import math
import time
from collections import Counter, OrderedDict, defaultdict
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from llmdebate.judging.complete import (
    Conflict,
    Invalid,
    NotFound,
    Submission,
    reveal_next,
    study_settings,
    submit,
    sync,
    view_for,
    waiting_by_id,
)
from llmdebate.judging.db import Assignment, Judge, Judgment, connect, judge_by_token, utcnow
from llmdebate.schemas import Transcript

COOKIE = "llmdebate_judge"
HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "X-Frame-Options": "DENY",
}


def csrf_token(token: str) -> str:
    """The form token of a session: an HMAC of a fixed label under the judge's own secret."""
    return hmac.new(token.encode("utf-8"), b"llmdebate-csrf", hashlib.sha256).hexdigest()[:32]


def templates() -> Environment:
    env = Environment(
        loader=PackageLoader("llmdebate.judging", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
    )
    return env


class LoginLimiter:
    """At most ``limit`` failed logins per client address in any ``window`` seconds."""

    def __init__(
        self,
        limit: int = 10,
        window: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
        max_clients: int = 10000,
    ) -> None:
        self.limit, self.window, self.clock, self.max_clients = limit, window, clock, max_clients
        self.failures: OrderedDict[str, list[float]] = OrderedDict()

    def _recent(self, addr: str) -> list[float]:
        now = self.clock()
        times = [t for t in self.failures.get(addr, []) if now - t < self.window]
        if times:
            self.failures[addr] = times
        else:
            self.failures.pop(addr, None)
        return times

    def retry_after(self, addr: str) -> float | None:
        """Seconds until ``addr`` may try again, or None when it may now."""
        times = self._recent(addr)
        if len(times) < self.limit:
            return None
        return max(1.0, self.window - (self.clock() - times[-self.limit]))

    def failed(self, addr: str) -> None:
        self.failures[addr] = [*self._recent(addr), self.clock()]
        self.failures.move_to_end(addr)
        while len(self.failures) > self.max_clients:
            self.failures.popitem(last=False)


class Study:
    """What every request needs: the database, the waiting debates, the templates."""

    def __init__(self, run_dir: Path, db_url: str | None = None) -> None:
        self.run_dir = run_dir
        self.sessions: sessionmaker[Session] = connect(run_dir, db_url)
        self.waiting: dict[str, Transcript] = waiting_by_id(run_dir)
        self.env = templates()

    def page(self, name: str, status: int = 200, **ctx: Any) -> HTMLResponse:
        body = self.env.get_template(name).render(**ctx)
        return HTMLResponse(body, status_code=status, headers=HEADERS)


def _by_token(study: Study, token: str) -> Judge | None:
    with study.sessions() as s:
        return judge_by_token(s, token)


def _who(study: Study, request: Request) -> tuple[Judge | None, str]:
    token = request.cookies.get(COOKIE, "")
    return _by_token(study, token), token


def _queue(study: Study, judge_id: str) -> list[tuple[Assignment, bool]]:
    with study.sessions() as s:
        rows = list(
            s.scalars(
                select(Assignment)
                .where(Assignment.judge_id == judge_id)
                .order_by(Assignment.position)
            )
        )
        done = set(s.scalars(select(Judgment.assignment_id).where(Judgment.judge_id == judge_id)))
    return [(a, a.id in done) for a in rows]


def _progress(queue: list[tuple[Assignment, bool]]) -> dict[str, int]:
    return {"done": sum(d for _, d in queue), "total": len(queue)}


def create_app(
    run_dir: Path,
    db_url: str | None = None,
    *,
    login_limit: int = 10,
    login_window: float = 60.0,
) -> Starlette:
    """The app of one study (the run directory's waiting debates and its database).

    ``login_limit``: failed logins allowed per client address in ``login_window`` seconds."""
    study = Study(run_dir, db_url)
    limiter = LoginLimiter(login_limit, login_window)

    @asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        await run_in_threadpool(sync, study.sessions, run_dir, study.waiting)
        yield

    async def login(request: Request) -> Response:
        addr = request.client.host if request.client else "?"
        wait = limiter.retry_after(addr)
        if wait is not None:
            page = study.page(
                "message.html",
                429,
                title="Too many attempts",
                text="Too many links that were not recognised. Wait a minute and retry.",
            )
            page.headers["Retry-After"] = str(math.ceil(wait))
            return page
        token = str(request.path_params["token"])
        judge = await run_in_threadpool(_by_token, study, token)
        if judge is None:
            limiter.failed(addr)
            return study.page(
                "message.html",
                403,
                title="Link not recognised",
                text="This link is not valid. Ask the study lead for yours.",
            )
        resp = RedirectResponse("/lead" if judge.is_lead else "/", status_code=303)
        resp.set_cookie(
            COOKIE,
            token,
            httponly=True,
            samesite="strict",
            max_age=90 * 86400,
            secure=request.url.scheme == "https",
        )
        return resp

    async def logout(request: Request) -> Response:
        judge, token = await run_in_threadpool(_who, study, request)
        if judge is not None:
            form = await request.form()
            if not hmac.compare_digest(str(form.get("csrf", "")), csrf_token(token)):
                return study.page(
                    "message.html",
                    403,
                    title="Form expired",
                    text="This form was not sent from your page. Reload and retry.",
                )
        resp = study.page("message.html", 200, title="Signed out", text="You are signed out.")
        resp.delete_cookie(COOKIE)
        return resp

    async def home(request: Request) -> Response:
        judge, token = await run_in_threadpool(_who, study, request)
        if judge is None:
            return study.page(
                "message.html",
                401,
                title="Please open your link",
                text="Open the personal link the study lead gave you.",
            )
        if judge.is_lead:
            return RedirectResponse("/lead", status_code=303)
        queue = await run_in_threadpool(_queue, study, judge.id)
        nxt = next((a.id for a, d in queue if not d), None)
        return study.page(
            "home.html",
            csrf=csrf_token(token),
            judge=judge.id,
            progress=_progress(queue),
            next_id=nxt,
            queue=[(n + 1, a.id, d) for n, (a, d) in enumerate(queue)],
        )

    async def next_item(request: Request) -> Response:
        judge, _ = await run_in_threadpool(_who, study, request)
        if judge is None or judge.is_lead:
            return RedirectResponse("/", status_code=303)
        queue = await run_in_threadpool(_queue, study, judge.id)
        nxt = next((a.id for a, d in queue if not d), None)
        return RedirectResponse(f"/a/{nxt}" if nxt else "/", status_code=303)

    def _load(judge_id: str, aid: int) -> tuple[Assignment, bool, list[tuple[Assignment, bool]]]:
        with study.sessions.begin() as s:
            a = s.get(Assignment, aid)
            if a is None or a.judge_id != judge_id:
                raise NotFound(aid)
            if a.started_at is None:
                a.started_at = utcnow()
        queue = _queue(study, judge_id)
        done = next(d for q, d in queue if q.id == aid)
        return a, done, queue

    def _render_item(
        judge: Judge,
        token: str,
        a: Assignment,
        queue: list[tuple[Assignment, bool]],
        status: int = 200,
        error: str | None = None,
        form: dict[str, str] | None = None,
    ) -> HTMLResponse:
        with study.sessions() as s:
            settings = study_settings(s)
        view = view_for(study.waiting[a.debate_id], a, settings)
        position = next(n for n, (q, _) in enumerate(queue, start=1) if q.id == a.id)
        return study.page(
            "item.html",
            status,
            view=view,
            aid=a.id,
            csrf=csrf_token(token),
            progress=_progress(queue),
            position=position,
            error=error,
            form=form or {},
        )

    async def item(request: Request) -> Response:
        judge, token = await run_in_threadpool(_who, study, request)
        if judge is None:
            return study.page(
                "message.html",
                401,
                title="Please open your link",
                text="Open the personal link the study lead gave you.",
            )
        aid = int(request.path_params["aid"])
        try:
            a, done, queue = await run_in_threadpool(_load, judge.id, aid)
        except NotFound:
            return study.page(
                "message.html", 404, title="Not found", text="There is no such item in your queue."
            )
        if done:
            return study.page(
                "message.html",
                200,
                title="Already answered",
                text="You have answered this one.",
                next_link=True,
            )
        return _render_item(judge, token, a, queue)

    async def post_item(request: Request) -> Response:
        judge, token = await run_in_threadpool(_who, study, request)
        if judge is None:
            return study.page(
                "message.html",
                401,
                title="Please open your link",
                text="Open the personal link the study lead gave you.",
            )
        form = {k: str(v) for k, v in (await request.form()).items()}
        if not hmac.compare_digest(form.get("csrf", ""), csrf_token(token)):
            return study.page(
                "message.html",
                403,
                title="Form expired",
                text="This form was not sent from your page. Reload and retry.",
            )
        aid = int(request.path_params["aid"])
        if form.get("action") == "reveal":
            return await _reveal(judge, token, aid, form)

        def save() -> None:
            submit(study.sessions, run_dir, study.waiting, judge.id, aid, _submission(form))

        refused = await _attempt(judge, token, aid, form, save)
        return refused or RedirectResponse("/next", status_code=303)

    async def _reveal(judge: Judge, token: str, aid: int, form: dict[str, str]) -> Response:
        seen = form.get("seen", "")

        def show() -> None:
            reveal_next(
                study.sessions, study.waiting, judge.id, aid, int(seen) if seen.isdigit() else None
            )

        refused = await _attempt(judge, token, aid, form, show)
        if refused is not None:
            return refused
        a, _, queue = await run_in_threadpool(_load, judge.id, aid)
        return _render_item(judge, token, a, queue, 200, None, form)

    async def _attempt(
        judge: Judge, token: str, aid: int, form: dict[str, str], action: Callable[[], None]
    ) -> Response | None:
        """Run ``action`` (in a thread); the page that refuses it, or None when it was done."""
        try:
            await run_in_threadpool(action)
        except NotFound:
            return study.page(
                "message.html", 404, title="Not found", text="There is no such item in your queue."
            )
        except Conflict:
            return study.page(
                "message.html",
                409,
                title="Already submitted",
                text="This answer was already recorded; your first answer counts.",
                next_link=True,
            )
        except Invalid as exc:
            a, _, queue = await run_in_threadpool(_load, judge.id, aid)
            return _render_item(judge, token, a, queue, 400, str(exc), form)
        return None

    def _lead_only() -> Response:
        return study.page(
            "message.html",
            403,
            title="Study lead only",
            text="This page needs the study lead's link.",
        )

    async def lead(request: Request) -> Response:
        judge, token = await run_in_threadpool(_who, study, request)
        if judge is None or not judge.is_lead:
            return _lead_only()
        data = await run_in_threadpool(lead_progress, study.sessions)
        return study.page("lead.html", csrf=csrf_token(token), **data)

    async def export(request: Request) -> Response:
        judge, _ = await run_in_threadpool(_who, study, request)
        if judge is None or not judge.is_lead:
            return _lead_only()
        text = await run_in_threadpool(export_csv, study.sessions)
        return Response(
            text,
            media_type="text/csv",
            headers={**HEADERS, "Content-Disposition": 'attachment; filename="judgments.csv"'},
        )

    static = Path(__file__).with_name("static")
    routes = [
        Route("/", home),
        Route("/login/{token}", login),
        Route("/logout", logout, methods=["POST"]),
        Route("/next", next_item),
        Route("/a/{aid:int}", item, methods=["GET"]),
        Route("/a/{aid:int}", post_item, methods=["POST"]),
        Route("/lead", lead),
        Route("/lead/judgments.csv", export),
        Mount("/static", StaticFiles(directory=static), name="static"),
    ]
    return Starlette(routes=routes, lifespan=lifespan)


def _number(form: dict[str, str], key: str) -> float | None:
    raw = form.get(key, "").strip()
    if not raw:
        return None
    try:
        v = float(raw)
    except ValueError:
        raise Invalid(f"{key} must be a number") from None
    if not math.isfinite(v):
        raise Invalid(f"{key} must be a number")
    return v


def _submission(form: dict[str, str]) -> Submission:
    verdict_raw = form.get("verdict")
    verdict = {"1": 1, "0": 0}.get(verdict_raw or "")
    use_p = form.get("use_probability") == "on"
    p = _number(form, "probability") if use_p else None
    p_first = _number(form, "p")
    active = _number(form, "active_s")
    return Submission(
        verdict=verdict,
        probability=None if p is None else p / 100.0,
        p_shown_first=None if p_first is None else p_first / 100.0,
        explanation=form.get("explanation", ""),
        active_s=None if active is None else max(0.0, min(active, 86400.0)),
        interface="web",
    )


def lead_progress(sessions: sessionmaker[Session]) -> dict[str, Any]:
    """Assigned and judged counts per judge and per protocol, and judged time per judge."""
    with sessions() as s:
        rows = list(s.scalars(select(Assignment)))
        judged = {
            j.assignment_id: j
            for j in s.scalars(select(Judgment).where(Judgment.assignment_id.is_not(None)))
        }
    per_judge: dict[str, Counter[str]] = defaultdict(Counter)
    per_protocol: dict[str, Counter[str]] = defaultdict(Counter)
    seconds: dict[str, list[float]] = defaultdict(list)
    for a in rows:
        per_judge[a.judge_id]["assigned"] += 1
        per_protocol[a.protocol]["assigned"] += 1
        j = judged.get(a.id)
        if j is not None:
            per_judge[a.judge_id]["done"] += 1
            per_protocol[a.protocol]["done"] += 1
            if j.active_s is not None:
                seconds[a.judge_id].append(j.active_s)
    with sessions() as s:
        machines = Counter(
            s.scalars(select(Judgment.judge_id).where(Judgment.assignment_id.is_(None)))
        )
    return {
        "machines": sorted(machines.items()),
        "judges": [
            (
                jid,
                c["done"],
                c["assigned"],
                round(sum(seconds[jid]) / len(seconds[jid]), 1) if seconds[jid] else None,
            )
            for jid, c in sorted(per_judge.items())
        ],
        "protocols": [(p, c["done"], c["assigned"]) for p, c in sorted(per_protocol.items())],
        "done": sum(1 for a in rows if a.id in judged),
        "total": len(rows),
    }


EXPORT_FIELDS = (
    "id",
    "kind",
    "assignment_id",
    "judge_id",
    "debate_id",
    "verdict",
    "probability",
    "p_first",
    "explanation",
    "shown_digest",
    "started_at",
    "submitted_at",
    "active_s",
    "interface",
    "turns_revealed",
    "settings",
)


def export_csv(sessions: sessionmaker[Session]) -> str:
    """Every judgment as CSV (for the study lead)."""
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(EXPORT_FIELDS)
    with sessions() as s:
        for j in s.scalars(select(Judgment).order_by(Judgment.id)):
            row = [getattr(j, f) for f in EXPORT_FIELDS]
            row[-1] = json.dumps(j.settings, sort_keys=True)
            w.writerow(row)
    return buf.getvalue()
