"""One way to send a JSON request to a model server: :class:`Transport`.

``transport.send(request, done)`` sends an :class:`HTTPRequest` now and calls ``done`` once,
with the :class:`~llmdebate.models.http1.Reply` (any status) or the
:class:`~llmdebate.models.http1.HTTPConnectionError` / :class:`~llmdebate.models.http1.HTTPTimeout`
that ended it; ``await transport.post(request)`` is the same, awaited. Two implementations:

* :class:`RawTransport`, for plain ``http://`` servers with no proxy configured: the
  HTTP/1.1 client of :mod:`llmdebate.models.http1` (about 0.07 ms of CPU per call, a reply
  completes in the socket's callback, so the model's :class:`~llmdebate.models.slots.Slots`
  hand its place to the next prepared request at once);
* :class:`HttpxTransport`, for ``https://`` (TLS), proxies (``HTTPS_PROXY``...) and
  redirects: ``httpx`` (``httpx2`` where the installed openai SDK uses it).

Both count the requests they send (:attr:`Transport.sent`). Status codes and bodies are
turned into exceptions in one place, :func:`llmdebate.models.http_errors.reply_error`.
:class:`PreparedPost` is a request built ahead for the slots, parsed by the backend's reader.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
import time
import urllib.request
from collections.abc import Callable
from types import ModuleType
from typing import Any, Generic, TypeVar
from urllib.parse import urlsplit

from llmdebate.errors import MissingExtraError
from llmdebate.models.http1 import (
    Done,
    HTTP1Pool,
    HTTPConnectionError,
    HTTPTimeout,
    LocalProtocolError,
    Reply,
)

T = TypeVar("T")

try:
    import orjson
except ImportError:  # pragma: no cover - a platform without orjson wheels
    orjson = None  # type: ignore[assignment]


def loads(raw: bytes | str) -> Any:
    """A JSON document as dicts and lists (``ValueError`` if it is not JSON)."""
    if orjson is not None:
        return orjson.loads(raw)  # orjson.JSONDecodeError is a ValueError
    return json.loads(raw)


def dumps(obj: Any) -> bytes:
    """Compact UTF-8 JSON of a request body (non-ASCII text as is)."""
    if orjson is not None:
        return orjson.dumps(obj, option=orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY)
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


class HTTPRequest:
    """A JSON POST: the path below the base URL and the encoded body."""

    __slots__ = ("data", "path")

    def __init__(self, path: str, body: dict[str, Any]) -> None:
        self.path = "/" + path.lstrip("/")
        self.data = dumps(body)


class Transport:
    """Sends :class:`HTTPRequest` s to one base URL (see the module docstring)."""

    base_url: str = ""
    sent: int = 0

    def send(self, request: HTTPRequest, done: Done) -> None:
        """Send ``request`` now; ``done`` is called once when it is over, never from within
        this call."""
        raise NotImplementedError

    async def post(self, request: HTTPRequest) -> Reply:
        """Send ``request`` and await its reply (raising what ended it instead)."""
        fut: asyncio.Future[Reply | BaseException] = asyncio.get_running_loop().create_future()

        def done(result: Reply | BaseException) -> None:
            if not fut.done():
                fut.set_result(result)

        self.send(request, done)
        result = await fut
        if isinstance(result, BaseException):
            raise result
        return result

    async def aclose(self) -> None:
        """Close the connections."""


class RawTransport(Transport):
    """Plain ``http://`` through :class:`~llmdebate.models.http1.HTTP1Pool`."""

    def __init__(self, base_url: str, headers: dict[str, str], timeout: float) -> None:
        parts = urlsplit(base_url)
        self.base_url = base_url.rstrip("/")
        self.pool = HTTP1Pool(parts.hostname or "localhost", parts.port or 80, headers, timeout)
        self.prefix = parts.path.rstrip("/")
        self.sent = 0

    def send(self, request: HTTPRequest, done: Done) -> None:
        self.sent += 1
        self.pool.send(self.prefix + request.path, request.data, done)

    async def aclose(self) -> None:
        await self.pool.aclose()


def httpx_module() -> ModuleType:
    """``httpx2`` (what openai SDK 3.x installs) or ``httpx``; the missing extra otherwise."""
    for name in ("httpx2", "httpx"):
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    raise MissingExtraError("httpx", "openai")


class HttpxTransport(Transport):
    """``https://``, proxies and redirects through an ``httpx`` client."""

    def __init__(self, base_url: str, headers: dict[str, str], timeout: float) -> None:
        self._httpx = httpx_module()
        self.base_url = base_url.rstrip("/")
        self.headers = headers
        self.timeout = timeout
        self.sent = 0
        self._clients: dict[asyncio.AbstractEventLoop, Any] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def _client_for(self, loop: asyncio.AbstractEventLoop) -> Any:
        client = self._clients.get(loop)
        if client is None:  # connections belong to one event loop
            for old in [old for old in self._clients if old.is_closed()]:
                del self._clients[old]
            limits = self._httpx.Limits(max_connections=None, max_keepalive_connections=1000)
            client = self._clients[loop] = self._httpx.AsyncClient(
                headers=self.headers,
                timeout=self.timeout,
                follow_redirects=True,
                limits=limits,
                trust_env=True,
            )
        return client

    def send(self, request: HTTPRequest, done: Done) -> None:
        self.sent += 1
        loop = asyncio.get_running_loop()
        task = loop.create_task(self._post(self._client_for(loop), request, done))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _post(self, client: Any, request: HTTPRequest, done: Done) -> None:
        httpx = self._httpx
        result: Reply | BaseException
        try:
            resp = await client.post(self.base_url + request.path, content=request.data)
            headers = {k.lower(): v for k, v in resp.headers.items()}
            result = Reply(resp.status_code, headers, resp.content, True)
        except httpx.TimeoutException as exc:
            result = HTTPTimeout(f"no reply within {self.timeout:g} s ({type(exc).__name__})")
        except httpx.LocalProtocolError as exc:
            result = LocalProtocolError("a request header holds a character HTTP does not allow")
            result.__cause__ = exc
        except httpx.TransportError as exc:
            result = HTTPConnectionError(f"{type(exc).__name__}: {exc}")
        except Exception as exc:  # a header or body that cannot be encoded
            result = exc
        done(result)

    async def aclose(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            with contextlib.suppress(RuntimeError):  # its event loop is gone
                await client.aclose()


def open_transport(base_url: str, headers: dict[str, str], timeout: float) -> Transport:
    """The transport for ``base_url``: raw HTTP/1.1 for ``http://`` without a proxy in the
    environment, ``httpx`` otherwise."""
    proxied = any(k in ("http", "all") for k in urllib.request.getproxies())
    if urlsplit(base_url).scheme == "http" and not proxied:
        return RawTransport(base_url, headers, timeout)
    return HttpxTransport(base_url, headers, timeout)


Reader = Callable[[Reply | BaseException, float], T]
"""A backend's reading of a reply (or of what ended the request) and its latency."""


class PreparedPost(Generic[T]):
    """A request built ahead: :class:`~llmdebate.models.slots.Slots` send it the moment a
    place frees up; ``read`` turns the reply (or failure) and the latency into the result."""

    __slots__ = ("read", "request", "sent_at", "transport")

    def __init__(self, transport: Transport, request: HTTPRequest, read: Reader[T]) -> None:
        self.transport = transport
        self.request = request
        self.read = read
        self.sent_at = 0.0

    def send(self, done: Done) -> None:
        self.sent_at = time.perf_counter()
        self.transport.send(self.request, done)

    def finish(self, reply: Any) -> T:
        return self.read(reply, time.perf_counter() - self.sent_at)
