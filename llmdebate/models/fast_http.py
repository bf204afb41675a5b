"""A lean HTTP path for OpenAI-compatible servers: an O(1) connection pool, and requests that
skip the SDK's per-request body transformation and response models.

Why: with hundreds of requests in flight, the openai SDK spent 3-5 ms of CPU per call, a
fifth of it in its recursive transformation of the request body
(``_async_transform_recursive``) and another fifth in the HTTP pool's scan of every
connection for every request (which probes each idle socket with a system call). Neither is
needed to send a JSON body we built ourselves.

* :func:`http_client` builds the ``httpx`` client handed to ``AsyncOpenAI(http_client=...)``:
  the SDK's usual settings, but its transport takes an idle connection from a per-origin
  stack in O(1) (probing only that one socket) and puts it back once the response is read.
  TLS, HTTP/1.1 parsing and timeouts stay ``httpcore``'s. When the environment names a proxy
  (``HTTPS_PROXY``...) it returns None, and the SDK builds its own client, which honours it.
* :func:`post_json` sends one request through the SDK client's own ``post`` (headers, API
  key, timeouts, and the SDK's exceptions for 4xx/5xx and connection failures, so error
  handling is unchanged) with the body as given, and returns the JSON reply as plain dicts
  and lists (encoded and decoded by ``orjson`` when it is installed, 5-7 times faster than
  the standard library on these bodies, which matters at thousands of calls a second).
* :class:`RawPost` is the same request built ahead, for the model's
  :class:`~llmdebate.models.slots.Slots` to send the moment a place frees up.

The openai SDK 3.x talks ``httpx2``/``httpcore2``, older ones ``httpx``/``httpcore``: the
modules are taken from the SDK itself.
"""

from __future__ import annotations

import functools
import importlib
import json
import urllib.request
import weakref
from collections.abc import AsyncIterator
from types import ModuleType
from typing import Any

import anyio

from llmdebate.models.http1 import Done, HTTP1Pool, HTTPConnectionError, HTTPTimeout, Reply

MAX_KEEPALIVE = 1000  # idle connections kept per origin
KEEPALIVE_EXPIRY_S = 5.0


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


@functools.cache
def httpx_modules() -> tuple[ModuleType, ModuleType]:
    """(httpx, httpcore) as the installed openai SDK uses them."""
    from openai import _base_client

    httpx: ModuleType = getattr(_base_client, "httpx2", None) or getattr(_base_client, "httpx")  # noqa: B009
    core = importlib.import_module("httpcore2" if httpx.__name__ == "httpx2" else "httpcore")
    return httpx, core


async def post_json(client: Any, path: str, body: dict[str, Any]) -> Any:
    """POST ``body`` to ``path`` (relative to the base URL) with the openai SDK client
    ``client``; the JSON reply, as dicts and lists.

    A plain ``http://`` server is sent the request by :mod:`llmdebate.models.http1` when
    ``client`` was built with :func:`http_client`; anything else goes through the SDK's own
    ``post``. Either way failures raise the SDK's exceptions, as
    ``client.chat.completions.create`` would (``APIStatusError`` and its subclasses,
    ``APIConnectionError``, ``APITimeoutError``, and ``APIResponseValidationError`` for a
    reply that is not JSON).
    """
    lane = raw_lane(client)
    if lane is None:
        httpx, _ = httpx_modules()
        resp = await client.post(path, body=body, cast_to=httpx.Response)
        return _json(client, path, resp.content)
    post = RawPost(client, lane, path, body)
    try:
        reply: Reply | BaseException = await lane.post_reply(post.full_path, post.data)
    except (HTTPTimeout, HTTPConnectionError) as exc:
        reply = exc
    return post.finish(reply)


class RawPost:
    """One JSON POST on the plain-http lane, built before it is sent: a
    :class:`~llmdebate.models.slots.Prepared` request, which the model's
    :class:`~llmdebate.models.slots.Slots` send the moment a place frees up. ``finish``
    gives the JSON reply or raises what :func:`post_json` would."""

    __slots__ = ("client", "data", "full_path", "lane", "path")

    def __init__(self, client: Any, lane: HTTP1Pool, path: str, body: dict[str, Any]) -> None:
        self.client = client
        self.lane = lane
        self.path = path
        self.full_path = lane.prefix + "/" + path.lstrip("/")
        self.data = dumps(body)

    def send(self, done: Done) -> None:
        self.lane.send(self.full_path, self.data, done)

    def finish(self, reply: Reply | BaseException) -> Any:
        return _json(self.client, self.path, _body(self.client, self.path, reply))


def _body(client: Any, path: str, reply: Reply | BaseException) -> bytes:
    """The body of a raw-lane reply, or the SDK's exception for a failed one."""
    if isinstance(reply, BaseException):
        import openai

        httpx, _ = httpx_modules()
        if isinstance(reply, HTTPTimeout):
            raise openai.APITimeoutError(request=_request(httpx, client, path)) from reply
        if isinstance(reply, HTTPConnectionError):
            raise openai.APIConnectionError(
                message=f"Connection error: {reply}", request=_request(httpx, client, path)
            ) from reply
        raise reply
    if reply.status >= 400:
        httpx, _ = httpx_modules()
        response = httpx.Response(
            reply.status,
            headers=reply.headers,
            content=reply.body,
            request=_request(httpx, client, path),
        )
        raise client._make_status_error_from_response(response)
    return reply.body


def _json(client: Any, path: str, raw: bytes) -> Any:
    try:
        return loads(raw)
    except ValueError as exc:
        from openai import APIResponseValidationError

        httpx, _ = httpx_modules()
        response = httpx.Response(
            200, content=raw, request=httpx.Request("POST", f"{client.base_url}{path}")
        )
        raise APIResponseValidationError(
            response=response, body=None, message=f"the reply is not JSON: {exc}"
        ) from exc


def raw_lane(client: Any) -> HTTP1Pool | None:
    """The plain-http lane of an SDK client built by :func:`http_client`, or None (https,
    a proxy, or a client built elsewhere)."""
    pool = _POOLS.get(getattr(client, "_client", None))
    if pool is None:
        return None
    if pool.raw is _UNSET:
        pool.raw = _raw_pool(client)
    return pool.raw


def _raw_pool(client: Any) -> HTTP1Pool | None:
    """A :class:`HTTP1Pool` for the client's base URL if it is plain http, else None."""
    url = client.base_url
    if url.scheme != "http" or not url.host:
        return None
    headers = {k: v for k, v in dict(client.default_headers).items() if isinstance(v, str)}
    if getattr(client, "api_key", None):
        headers["Authorization"] = f"Bearer {client.api_key}"
    timeout = client.timeout
    seconds = float(getattr(timeout, "read", None) or timeout) if timeout else 600.0
    pool = HTTP1Pool(url.host, url.port or 80, headers, seconds)
    pool.prefix = url.raw_path.decode("ascii").rstrip("/")
    return pool


def _request(httpx: ModuleType, client: Any, path: str) -> Any:
    return httpx.Request("POST", f"{str(client.base_url).rstrip('/')}/{path.lstrip('/')}")


def http_client(timeout: float, max_keepalive: int = MAX_KEEPALIVE) -> Any | None:
    """An async ``httpx`` client with the O(1) pool (and, for an ``http://`` base URL, the
    raw HTTP/1.1 path of :func:`post_json`); None when a proxy is configured (the SDK's
    default client then applies it)."""
    if any(k in ("http", "https", "all") for k in urllib.request.getproxies()):
        return None
    httpx, core = httpx_modules()
    transport = httpx.AsyncHTTPTransport()
    ssl_context = getattr(transport._pool, "_ssl_context", None)
    pool = FastPool(core, ssl_context, max_keepalive)
    transport._pool = pool
    client = httpx.AsyncClient(transport=transport, timeout=timeout, follow_redirects=True)
    _POOLS[client] = pool
    return client


_UNSET: Any = object()
_POOLS: weakref.WeakKeyDictionary[Any, FastPool] = weakref.WeakKeyDictionary()


class FastPool:
    """An ``httpcore`` pool without scans: a stack of idle connections per origin.

    It does not bound the number of connections (the model wrapper bounds requests in
    flight); it keeps at most ``max_keepalive`` idle connections per origin. An idle
    connection is probed (one ``has_expired``) only when it is taken.
    """

    def __init__(self, core: ModuleType, ssl_context: Any, max_keepalive: int) -> None:
        self._core = core
        self._ssl_context = ssl_context
        self._max_keepalive = max_keepalive
        self._idle: dict[Any, list[Any]] = {}
        self._busy: set[Any] = set()
        self._closing: list[Any] = []
        self.raw: HTTP1Pool | None = _UNSET  # the plain-http lane, made on first use

    def _take(self, origin: Any) -> Any:
        stack = self._idle.get(_key(origin))
        while stack:
            conn = stack.pop()
            if conn.is_idle() and not conn.has_expired():
                return conn
            self._closing.append(conn)
        return self._core.AsyncHTTPConnection(
            origin=origin, ssl_context=self._ssl_context, keepalive_expiry=KEEPALIVE_EXPIRY_S
        )

    async def handle_async_request(self, request: Any) -> Any:
        conn = self._take(request.url.origin)
        await self._close_pending()
        self._busy.add(conn)
        try:
            response = await conn.handle_async_request(request)
        except BaseException:
            self._busy.discard(conn)
            await self._close(conn)
            raise
        return self._core.Response(
            status=response.status,
            headers=response.headers,
            content=_ReleasingStream(response.stream, conn, self),
            extensions=response.extensions,
        )

    def release(self, conn: Any) -> None:
        """Back to the idle stack once its response is read (else closed soon)."""
        self._busy.discard(conn)
        stack = self._idle.setdefault(_key(conn._origin), [])
        if conn.is_idle() and len(stack) < self._max_keepalive:
            stack.append(conn)
        else:
            self._closing.append(conn)

    async def _close(self, conn: Any) -> None:
        try:
            with anyio.CancelScope(shield=True):
                await conn.aclose()
        except Exception:
            pass

    async def _close_pending(self) -> None:
        while self._closing:
            await self._close(self._closing.pop())

    async def aclose(self) -> None:
        if isinstance(self.raw, HTTP1Pool):
            await self.raw.aclose()
        conns = [c for stack in self._idle.values() for c in stack] + list(self._busy)
        self._idle.clear()
        self._busy.clear()
        self._closing.extend(conns)
        await self._close_pending()

    async def __aenter__(self) -> FastPool:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _key(origin: Any) -> tuple[bytes, bytes, int]:
    return (origin.scheme, origin.host, origin.port)


class _ReleasingStream:
    """A response body that gives its connection back to the pool when it is closed."""

    def __init__(self, stream: Any, conn: Any, pool: FastPool) -> None:
        self._stream = stream
        self._conn = conn
        self._pool = pool

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for part in self._stream:
            yield part

    async def aclose(self) -> None:
        try:
            if hasattr(self._stream, "aclose"):
                await self._stream.aclose()
        finally:
            self._pool.release(self._conn)
