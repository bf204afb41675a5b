"""What stands between the judges' web app and a hostile client.

* :class:`LoginLimiter`: failed sign-ins (wrong links, unknown cookies) per client address;
* :func:`client_address` and :func:`is_https`: the client as the socket says, or as a
  configured reverse proxy says (``X-Forwarded-For`` / ``-Proto`` from a trusted address only);
* :func:`cross_site`: whether a browser sent the request from another site
  (``Sec-Fetch-Site``, else ``Origin``, else ``Referer``);
* :func:`read_form`: a url-encoded form of UTF-8 text, bounded, with no NUL, or :class:`BadForm`
  (multipart bodies, and so uploaded files, are refused: the pages never send one);
* :func:`parse_id`: a path or form number in the database's range, or None;
* :data:`HEADERS`: the security headers every response carries (the app adds them).
"""

from __future__ import annotations

import re
import time
from collections import OrderedDict
from collections.abc import Callable, Collection
from urllib.parse import parse_qsl, urlsplit

from starlette.requests import Request

HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}
MAX_FORM_BYTES = 128 * 1024  # 5,000 four-byte characters, percent-encoded, fit
MAX_FIELDS = 32
DIGITS = re.compile(r"[0-9]{1,18}", re.ASCII)  # below 2**63: every database's integer


class BadForm(Exception):
    """The form cannot be read; the message says why (answered 400, or 413 when too large)."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def parse_id(raw: str) -> int | None:
    """A positive whole number written in ASCII digits that fits the database, else None."""
    return int(raw) if DIGITS.fullmatch(raw) else None


async def read_form(request: Request) -> dict[str, str]:
    """The request's url-encoded form (each field's last value); see the module doc."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/x-www-form-urlencoded":
        raise BadForm("this form is sent url-encoded; files and other bodies are refused")
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            raise BadForm(f"the form is larger than {MAX_FORM_BYTES // 1024} KiB", 413)
    try:
        pairs = parse_qsl(
            body.decode("ascii"),
            keep_blank_values=True,
            encoding="utf-8",
            errors="strict",
            max_num_fields=MAX_FIELDS,
        )
    except UnicodeDecodeError:
        raise BadForm("the form is not url-encoded UTF-8 text") from None
    except ValueError:
        raise BadForm(f"the form has more than {MAX_FIELDS} fields") from None
    form = dict(pairs)
    for key, value in form.items():
        if "\x00" in key or "\x00" in value:
            raise BadForm(f"the field {key[:40]!r} contains a NUL character")
    return form


def _forwarded(request: Request, trusted: Collection[str]) -> bool:
    return bool(trusted) and request.client is not None and request.client.host in trusted


def client_address(request: Request, trusted: Collection[str] = ()) -> str:
    """The client's address: the socket's peer, or, when that is a trusted proxy, the last
    address in ``X-Forwarded-For`` that is not a trusted proxy itself."""
    peer = request.client.host if request.client else "?"
    if not _forwarded(request, trusted):
        return peer
    hops = [h.strip() for h in request.headers.get("x-forwarded-for", "").split(",") if h.strip()]
    for hop in reversed(hops):
        if hop not in trusted:
            return hop[:64]
    return peer


def is_https(request: Request, trusted: Collection[str] = ()) -> bool:
    """Whether the browser reached us over TLS (directly, or through a trusted proxy)."""
    if request.url.scheme == "https":
        return True
    proto = request.headers.get("x-forwarded-proto", "").split(",")[0].strip().lower()
    return _forwarded(request, trusted) and proto == "https"


def cross_site(request: Request) -> bool:
    """Whether a browser sent this request from a page of another site (or an opaque one).

    A request with none of the three headers (a script, an old browser) is not cross-site."""
    fetch_site = request.headers.get("sec-fetch-site")
    if fetch_site is not None:
        return fetch_site not in ("same-origin", "none")
    host = request.headers.get("host", "")
    for header in ("origin", "referer"):
        value = request.headers.get(header)
        if value is not None:
            return value == "null" or urlsplit(value).netloc != host
    return False


class LoginLimiter:
    """At most ``limit`` failed sign-ins per client address in any ``window`` seconds.

    Only failures count and only failures are refused: a valid link or cookie always works,
    so judges behind one shared address are not locked out by someone guessing."""

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
