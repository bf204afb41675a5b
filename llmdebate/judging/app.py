"""The judges' web app (Starlette, server-rendered Jinja2 pages, a little JavaScript).

Each judge opens ``/login/<token>`` once: the server opens a session (stored, as a digest, in
the study database), puts its secret into an HttpOnly, SameSite=Strict cookie and sends the
browser on to ``/``, so the token never stays in the address bar and no access log is kept.
A link opened from another site, or while another judge is signed in in this browser, asks
first (a button that posts back to the same address): no page elsewhere can sign a browser
in or swap its judge. Signing out is a same-site POST with the form token, and revokes the
session in the database. A judge sees only their own assignments (any other id: 404); every
form carries a CSRF token derived from the session's secret; every page is autoescaped, its
model- and dataset-written strings isolated in direction (:mod:`.bidi`), and every response,
error pages and static files included, carries a strict Content-Security-Policy and the other
headers of :data:`.guard.HEADERS`. A second submission of an assignment — a double-click, a
reload, a second tab — is a 409 page that says the first answer counts. The study lead's
token opens ``/lead`` (progress per judge and per protocol) and the CSV export. Failed
sign-ins (unknown links or cookies) are limited per client address (then 429, with
Retry-After); a valid link or cookie always works.

With the study's stepped reveal, a speech-protocol page shows the turns revealed so far and a
"next turn" button in the same form (the answer typed so far is kept): the count lives in the
database, so a reload, a second tab or a judge without JavaScript sees the same turns, and
the judgment records how many were shown.

An interactive debate (``judge.interactive`` with a person judging, :mod:`.asking`) shows,
after the speeches heard so far, a question box ("Ask the debaters") and "End and decide"
(a POST, like every action): a question is stored (the page then says it waits for the
debaters' answer, which ``llmdebate answer`` writes, and asks ``/a/<id>/wait`` every few
seconds whether it has come, reloading itself when it has), and ending opens the verdict
form. Every post (and every wait) reports the page's active seconds, which the assignment
keeps (``Assignment.active_s``), so the clock survives asking, waiting and reloads.
"""

from __future__ import annotations

import hashlib
import hmac
import math
from collections.abc import AsyncIterator, Callable, Collection
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from sqlalchemy.orm import Session, sessionmaker
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import MutableHeaders
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import Message, Receive, Scope, Send

from llmdebate.core.schemas import Transcript
from llmdebate.judging.asking import ask_state, questions_of, shown_debate
from llmdebate.judging.bidi import bdi
from llmdebate.judging.complete import (
    Conflict,
    Invalid,
    NotFound,
    Submission,
    ask,
    keep_active,
    reveal_next,
    still_waiting,
    study_settings,
    submit,
    sync,
    view_for,
    waiting_by_id,
)
from llmdebate.judging.db import (
    Assignment,
    Judge,
    app_secret,
    connect,
    judge_by_session,
    judge_by_token,
    open_session,
    queue,
    revoke_session,
    utcnow,
)
from llmdebate.judging.guard import (
    HEADERS,
    BadForm,
    LoginLimiter,
    client_address,
    cross_site,
    is_https,
    parse_id,
    read_form,
)
from llmdebate.judging.lead import export_csv, lead_progress

COOKIE = "llmdebate_judge"
MAX_SEEN = 10**6

Queue = list[tuple[Assignment, bool]]

MESSAGES: dict[str, tuple[int, str, str]] = {
    "sign_in": (401, "Please open your link", "Open the personal link the study lead gave you."),
    "bad_link": (
        403,
        "Link not recognised",
        "This link is not valid. Ask the study lead for yours.",
    ),
    "too_many": (
        429,
        "Too many attempts",
        "Too many links or sessions that were not recognised. Wait a minute and retry.",
    ),
    "expired": (403, "Form expired", "This form was not sent from your page. Reload and retry."),
    "not_found": (404, "Not found", "There is no such item in your queue."),
    "answered": (200, "Already answered", "You have answered this one."),
    "conflict": (
        409,
        "Already submitted",
        "This answer was already recorded; your first answer counts.",
    ),
    "lead_only": (403, "Study lead only", "This page needs the study lead's link."),
    "bad_form": (400, "Form not accepted", "The form could not be read."),
    "signed_out": (200, "Signed out", "You are signed out."),
}


def csrf_token(secret: str, label: str = "llmdebate-csrf") -> str:
    """A form token: an HMAC of ``label`` under a secret (a session's, or the server's)."""
    return hmac.new(secret.encode("utf-8"), label.encode("utf-8"), hashlib.sha256).hexdigest()[:32]


def _same(sent: str | None, want: str) -> bool:
    return hmac.compare_digest((sent or "").encode("utf-8"), want.encode("utf-8"))


def templates() -> Environment:
    env = Environment(
        loader=PackageLoader("llmdebate.judging", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
    )
    env.filters["bdi"] = bdi
    return env


class Study:
    """What every request needs: the database, the waiting debates, the templates, the limiter
    and the addresses of trusted reverse proxies."""

    def __init__(
        self,
        run_dir: Path,
        db_url: str | None = None,
        limiter: LoginLimiter | None = None,
        trusted_proxies: Collection[str] = (),
    ) -> None:
        self.run_dir = run_dir
        self.sessions: sessionmaker[Session] = connect(run_dir, db_url)
        self.waiting: dict[str, Transcript] = waiting_by_id(run_dir)
        self.env = templates()
        self.limiter = limiter or LoginLimiter()
        self.trusted = frozenset(trusted_proxies)
        with self.sessions.begin() as s:
            self.secret = app_secret(s)

    def page(self, name: str, status: int = 200, **ctx: Any) -> HTMLResponse:
        body = self.env.get_template(name).render(**ctx)
        return HTMLResponse(body, status_code=status)

    def message(self, key: str, text: str | None = None, **ctx: Any) -> HTMLResponse:
        """The one page of every refusal and notice: :data:`MESSAGES` ``[key]``."""
        status, title, default = MESSAGES[key]
        return self.page("message.html", status, title=title, text=text or default, **ctx)

    def bad_form(self, exc: BadForm) -> HTMLResponse:
        page = self.message("bad_form", str(exc))
        page.status_code = exc.status
        return page

    def too_many(self, wait: float) -> HTMLResponse:
        page = self.message("too_many")
        page.headers["Retry-After"] = str(math.ceil(wait))
        return page


def _study(request: Request) -> Study:
    study: Study = request.app.state.study
    return study


@dataclass
class Signed:
    """A signed-in request: its judge and its session's secret (the cookie)."""

    judge: Judge
    secret: str

    @property
    def csrf(self) -> str:
        return csrf_token(self.secret)


def _by_token(study: Study, token: str) -> Judge | None:
    with study.sessions() as s:
        return judge_by_token(s, token)


def _by_session(study: Study, secret: str) -> Judge | None:
    with study.sessions() as s:
        return judge_by_session(s, secret)


async def _current(request: Request) -> Signed | None:
    """The live session of this request, if any (nothing counted against the client)."""
    secret = request.cookies.get(COOKIE, "")
    if not secret:
        return None
    judge = await run_in_threadpool(_by_session, _study(request), secret)
    return None if judge is None else Signed(judge, secret)


async def _signed(request: Request, *, lead: bool = False) -> Signed | Response:
    """The signed-in judge, or the page that refuses the request (an unknown cookie counts
    as a failed sign-in of the client's address)."""
    study = _study(request)
    who = await _current(request)
    if who is None:
        if request.cookies.get(COOKIE):
            addr = client_address(request, study.trusted)
            wait = study.limiter.retry_after(addr)
            if wait is not None:
                return study.too_many(wait)
            study.limiter.failed(addr)
        return study.message("lead_only" if lead else "sign_in")
    if who.judge.is_lead != lead:
        return study.message("lead_only") if lead else RedirectResponse("/lead", 303)
    return who


def _sign_in(study: Study, request: Request, judge: Judge) -> Response:
    def opened() -> str:
        with study.sessions.begin() as s:
            old = request.cookies.get(COOKIE, "")
            if old:
                revoke_session(s, old)
            return open_session(s, judge.id)

    secret = opened()
    resp = RedirectResponse("/lead" if judge.is_lead else "/", status_code=303)
    resp.set_cookie(
        COOKIE,
        secret,
        httponly=True,
        samesite="strict",
        max_age=90 * 86400,
        secure=is_https(request, study.trusted),
    )
    return resp


async def login(request: Request) -> Response:
    """A judge's link: signs in at once when opened directly; from another site, or while
    another judge is signed in here, a page asks first (see :func:`confirm_login`)."""
    study = _study(request)
    token = str(request.path_params["token"])
    judge = await run_in_threadpool(_by_token, study, token)
    if judge is None:
        return _failed_login(study, request)
    who = await _current(request)
    if who is not None and who.judge.id == judge.id:
        return RedirectResponse("/lead" if judge.is_lead else "/", status_code=303)
    if who is None and not cross_site(request):
        return await run_in_threadpool(_sign_in, study, request, judge)
    return study.page(
        "login.html",
        token=token,
        csrf=csrf_token(study.secret, "login:" + token),
        current=None if who is None else who.judge.id,
    )


def _failed_login(study: Study, request: Request) -> Response:
    addr = client_address(request, study.trusted)
    wait = study.limiter.retry_after(addr)
    if wait is not None:
        return study.too_many(wait)
    study.limiter.failed(addr)
    return study.message("bad_link")


async def confirm_login(request: Request) -> Response:
    """The sign-in page's button: a same-site POST with the server's form token for the link."""
    study = _study(request)
    token = str(request.path_params["token"])
    try:
        form = await read_form(request)
    except BadForm as exc:
        return study.bad_form(exc)
    if cross_site(request) or not _same(
        form.get("csrf"), csrf_token(study.secret, "login:" + token)
    ):
        return study.message("expired")
    judge = await run_in_threadpool(_by_token, study, token)
    if judge is None:
        return _failed_login(study, request)
    return await run_in_threadpool(_sign_in, study, request, judge)


async def logout(request: Request) -> Response:
    """Sign out: a same-site POST with the form token; the session is revoked server-side."""
    study = _study(request)
    who = await _current(request)
    try:
        form = await read_form(request)
    except BadForm:
        form = {}
    if who is None or cross_site(request) or not _same(form.get("csrf"), who.csrf):
        return study.message("expired")

    def revoke() -> None:
        with study.sessions.begin() as s:
            revoke_session(s, who.secret)

    await run_in_threadpool(revoke)
    resp = study.message("signed_out")
    resp.delete_cookie(COOKIE, httponly=True, samesite="strict")
    return resp


def _queue(study: Study, judge_id: str) -> Queue:
    with study.sessions() as s:
        return queue(s, judge_id)


def _progress(q: Queue) -> dict[str, int]:
    return {"done": sum(d for _, d in q), "total": len(q)}


def _next_open(q: Queue) -> int | None:
    return next((a.id for a, d in q if not d), None)


async def home(request: Request) -> Response:
    study = _study(request)
    who = await _signed(request)
    if not isinstance(who, Signed):
        return who
    q = await run_in_threadpool(_queue, study, who.judge.id)
    return study.page(
        "home.html",
        csrf=who.csrf,
        judge=who.judge.id,
        progress=_progress(q),
        next_id=_next_open(q),
        queue=[(n + 1, a.id, d) for n, (a, d) in enumerate(q)],
    )


async def next_item(request: Request) -> Response:
    who = await _signed(request)
    if not isinstance(who, Signed):
        return who
    q = await run_in_threadpool(_queue, _study(request), who.judge.id)
    nxt = _next_open(q)
    return RedirectResponse(f"/a/{nxt}" if nxt else "/", status_code=303)


def _load(study: Study, judge_id: str, aid: int) -> tuple[Assignment, bool, Queue]:
    """An own assignment (marked started), whether it is answered, and the judge's queue."""
    with study.sessions.begin() as s:
        a = s.get(Assignment, aid)
        if a is None or a.judge_id != judge_id:
            raise NotFound(aid)
        if a.started_at is None:
            a.started_at = utcnow()
    q = _queue(study, judge_id)
    return a, next(d for x, d in q if x.id == aid), q


def _item_page(
    study: Study,
    who: Signed,
    aid: int,
    status: int = 200,
    error: str | None = None,
    form: dict[str, str] | None = None,
) -> HTMLResponse:
    a, done, q = _load(study, who.judge.id, aid)
    if done and status == 200:
        return study.message("answered", next_link=True)
    form = dict(form or {})
    if not form.get("active_s") and a.active_s is not None:  # the clock survives asking
        form["active_s"] = f"{a.active_s:.1f}"
    shown = shown_debate(study.run_dir, study.waiting[a.debate_id], a.id)
    with study.sessions() as s:
        settings = study_settings(s)
        asking = ask_state(shown, questions_of(s, a.id))
    return study.page(
        "item.html",
        status,
        view=view_for(shown, a, settings),
        asking=asking,
        # the verdict form: not while a question waits for the debaters (?decide=1 or not)
        deciding=asking is None
        or ((form or {}).get("decide") == "1" and not asking["pending"]),
        aid=a.id,
        csrf=who.csrf,
        progress=_progress(q),
        position=next(n for n, (x, _) in enumerate(q, start=1) if x.id == a.id),
        error=error,
        form=form or {},
    )


async def item(request: Request) -> Response:
    study = _study(request)
    who = await _signed(request)
    if not isinstance(who, Signed):
        return who
    aid = parse_id(str(request.path_params["aid"]))
    if aid is None:
        return study.message("not_found")
    decide = {"decide": "1"} if request.query_params.get("decide") == "1" else {}
    return await _attempt(study, who, aid, decide, lambda: None)


@dataclass(frozen=True)
class ItemPost:
    """A signed judge's post about one of their assignments, its CSRF token checked."""

    study: Study
    who: Signed
    aid: int
    form: dict[str, str]


async def _item_post(request: Request) -> ItemPost | Response:
    """The post's study, judge, assignment id and form; the page to answer with otherwise."""
    study = _study(request)
    who = await _signed(request)
    if not isinstance(who, Signed):
        return who
    aid = parse_id(str(request.path_params["aid"]))
    if aid is None:
        return study.message("not_found")
    try:
        form = await read_form(request)
    except BadForm as exc:
        return study.bad_form(exc)
    if not _same(form.get("csrf"), who.csrf):
        return study.message("expired")
    return ItemPost(study, who, aid, form)


async def post_item(request: Request) -> Response:
    """A verdict, or (stepped reveal) a request for the next turn."""
    post = await _item_post(request)
    if not isinstance(post, ItemPost):
        return post
    study, who, aid, form = post.study, post.who, post.aid, post.form

    def keep() -> None:
        keep_active(study.sessions, who.judge.id, aid, _seconds(form.get("active_s")))

    # every post reports the page's active time: it is kept whatever the post does (a
    # verdict keeps it in its own transaction, and here only when it is refused)
    if form.get("action") in ("decide", "ask", "reveal"):
        try:
            await run_in_threadpool(keep)
        except NotFound:
            return study.message("not_found")
    if form.get("action") == "decide":  # end the asking: the verdict form
        return RedirectResponse(f"/a/{aid}?decide=1", status_code=303)
    if form.get("action") == "ask":
        return await _attempt(study, who, aid, form, lambda: _ask(study, who, aid, form))
    if form.get("action") == "reveal":
        seen_raw = form.get("seen", "")
        seen = parse_id(seen_raw) if seen_raw else None
        if seen_raw and (seen is None or seen > MAX_SEEN):
            return study.message("bad_form", "seen must be a whole number of turns")
        return await _attempt(
            study,
            who,
            aid,
            form,
            lambda: reveal_next(study.sessions, study.waiting, who.judge.id, aid, seen),
        )

    def save() -> Response:
        try:
            sub = _submission(form)
            submit(study.sessions, study.run_dir, study.waiting, who.judge.id, aid, sub)
        except Invalid:
            keep()
            raise
        return RedirectResponse("/next", status_code=303)

    return await _attempt(study, who, aid, form, save)


def _seconds(raw: str | None) -> float | None:
    """A page's active seconds, None when missing or not a finite number."""
    try:
        v = float(raw or "")
    except ValueError:
        return None
    return v if math.isfinite(v) else None


async def wait_answer(request: Request) -> Response:
    """The asking judge's page, while their question waits: keeps the page's active time and
    says whether the answer has arrived (``{"pending": false}``: reload the page)."""
    post = await _item_post(request)
    if not isinstance(post, ItemPost):
        return post
    study, who, aid, form = post.study, post.who, post.aid, post.form

    def state() -> bool:
        return still_waiting(
            study.sessions, study.run_dir, study.waiting, who.judge.id, aid,
            _seconds(form.get("active_s")),
        )

    try:
        pending = await run_in_threadpool(state)
    except NotFound:
        return study.message("not_found")
    return JSONResponse({"pending": pending}, headers={"Cache-Control": "no-store"})


def _ask(study: Study, who: Signed, aid: int, form: dict[str, str]) -> Response:
    """An interactive debate's question: stored, then the page again (it says it waits)."""
    ask(study.sessions, study.run_dir, study.waiting, who.judge.id, aid, form.get("question", ""))
    return RedirectResponse(f"/a/{aid}", status_code=303)


async def _attempt(
    study: Study, who: Signed, aid: int, form: dict[str, str], action: Callable[[], Any]
) -> Response:
    """Run ``action`` (in a thread); the response it returns, else the item page as it is
    now, or the page that refuses it."""

    def run() -> Response:
        done = action()
        return done if isinstance(done, Response) else _item_page(study, who, aid, form=form)

    try:
        return await run_in_threadpool(run)
    except NotFound:
        return study.message("not_found")
    except Conflict:
        return study.message("conflict", next_link=True)
    except Invalid as exc:
        return await run_in_threadpool(_item_page, study, who, aid, 400, str(exc), form)


async def lead(request: Request) -> Response:
    study = _study(request)
    who = await _signed(request, lead=True)
    if not isinstance(who, Signed):
        return who
    data = await run_in_threadpool(lead_progress, study.sessions)
    return study.page("lead.html", csrf=who.csrf, **data)


async def export(request: Request) -> Response:
    study = _study(request)
    who = await _signed(request, lead=True)
    if not isinstance(who, Signed):
        return who
    text = await run_in_threadpool(export_csv, study.sessions)
    disposition = 'attachment; filename="judgments.csv"'
    return Response(text, media_type="text/csv", headers={"Content-Disposition": disposition})


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
    verdict = {"1": 1, "0": 0}.get(form.get("verdict") or "")
    p = _number(form, "probability") if form.get("use_probability") == "on" else None
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


class JudgingApp(Starlette):
    """Starlette that adds :data:`.guard.HEADERS` to every response it sends (pages,
    redirects, static files, error pages, a 500 included) unless the response set its own."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def send_guarded(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for key, value in HEADERS.items():
                    if key not in headers:
                        headers[key] = value
            await send(message)

        await super().__call__(scope, receive, send_guarded if scope["type"] == "http" else send)


ROUTES = [
    Route("/", home),
    Route("/login/{token}", login, methods=["GET"]),
    Route("/login/{token}", confirm_login, methods=["POST"]),
    Route("/logout", logout, methods=["POST"]),
    Route("/next", next_item),
    Route("/a/{aid}", item, methods=["GET"]),
    Route("/a/{aid}", post_item, methods=["POST"]),
    Route("/a/{aid}/wait", wait_answer, methods=["POST"]),
    Route("/lead", lead),
    Route("/lead/judgments.csv", export),
    Mount("/static", StaticFiles(directory=Path(__file__).with_name("static")), name="static"),
]


def create_app(
    run_dir: Path,
    db_url: str | None = None,
    *,
    login_limit: int = 10,
    login_window: float = 60.0,
    trusted_proxies: Collection[str] = (),
) -> Starlette:
    """The app of one study (the run directory's waiting debates and its database).

    ``login_limit``: failed sign-ins allowed per client address in ``login_window`` seconds;
    ``trusted_proxies``: addresses whose ``X-Forwarded-For``/``-Proto`` are believed."""
    study = Study(run_dir, db_url, LoginLimiter(login_limit, login_window), trusted_proxies)

    @asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        await run_in_threadpool(sync, study.sessions, run_dir, study.waiting)
        yield

    app = JudgingApp(routes=ROUTES, lifespan=lifespan)
    app.state.study = study
    return app
