"""A small keep-alive HTTP/1.1 client on asyncio protocols, for plain ``http://`` servers.

It sends one POST with a JSON body and returns the status, headers and body; nothing else
(no TLS, proxies, redirects or streaming: ``https://`` and proxied URLs go through the SDK's
client). It exists for throughput: one ``write`` per request, a response parsed from a
buffer, and an idle connection taken from a stack in O(1), about 0.1 ms of CPU per call
where the SDK's stack spends 2-5 ms. A local inference server (vLLM, llama.cpp, SGLang)
answering hundreds of requests a second is where that matters.

:meth:`HTTP1Pool.send` is the one way a request goes out: it writes at once and calls back,
synchronously from the socket's callback, when the reply is complete, with the connection
already back in the pool, so the callback can send the next request on it without waiting
for the event loop (:mod:`llmdebate.models.slots`). :meth:`HTTP1Pool.post` awaits the same.

Failures are :class:`HTTPConnectionError` (refused, reset, closed before the reply) or
:class:`HTTPTimeout` (no full reply within ``timeout`` seconds); nothing is re-sent here
(the model wrapper retries). Idle connections are dropped after ``IDLE_EXPIRY_S``, before
servers usually close them.

A connection belongs to the event loop that opened it: a pool reused from another loop (each
``asyncio.run`` of a command that calls a model more than once, e.g. ``llmdebate answer``)
drops the old loop's connections and opens new ones on the running loop.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import cast

IDLE_EXPIRY_S = 4.0  # below the 5 s keep-alive of uvicorn (vLLM, SGLang) and most servers
MAX_IDLE = 1000
MAX_HEADER_BYTES = 65536

Headers = dict[str, str]


class HTTPConnectionError(ConnectionError):
    """The connection failed before a complete reply arrived."""


class HTTPTimeout(TimeoutError):
    """No complete reply within the timeout."""


class LocalProtocolError(ValueError):
    """The request cannot be sent: a header holds a character HTTP does not allow (named
    like ``h11``'s error, which the error mapping recognises; the value is never quoted)."""


def _bad_header(headers: Headers) -> str | None:
    for name, value in headers.items():
        if any(not (" " <= ch <= "~" or ch == "\t") for ch in f"{name}{value}"):
            return name
    return None


class Reply:
    """A complete HTTP reply: status, lower-case headers, body, and whether the connection
    stays open."""

    __slots__ = ("body", "headers", "keep_alive", "status")

    def __init__(self, status: int, headers: Headers, body: bytes, keep_alive: bool) -> None:
        self.status = status
        self.headers = headers
        self.body = body
        self.keep_alive = keep_alive


Done = Callable[[Reply | BaseException], None]
"""Called once, synchronously, when a request is over: with its reply or what ended it."""


class _Connection(asyncio.Protocol):
    """One TCP connection; at most one request at a time."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.transport: asyncio.Transport | None = None
        self.buf = bytearray()
        self.done: Done | None = None  # the request in flight's callback
        self.timer: asyncio.TimerHandle | None = None
        self.closed = False
        self.used = 0
        self.idle_since = time.monotonic()
        self._head: tuple[int, Headers, int] | None = None  # status, headers, body start

    # -- asyncio callbacks
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # a TCP transport (uvloop's is not a subclass of asyncio.Transport, but has its API)
        self.transport = cast(asyncio.Transport, transport)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.done is not None:
            if self._head is not None and self._until_close():
                self._finish(bytes(self.buf[self._head[2] :]), keep_alive=False)
            else:
                got = "after part of the reply" if self.buf else "before the reply"
                self._end(
                    HTTPConnectionError(f"the server closed the connection {got}")
                    if exc is None
                    else HTTPConnectionError(f"connection lost {got}: {exc}")
                )

    def data_received(self, data: bytes) -> None:
        self.buf += data
        if self.done is None:
            return
        try:
            self._parse()
        except ValueError as exc:
            self._end(HTTPConnectionError(f"malformed HTTP reply: {exc}"))

    # -- request / reply
    def start(self, request: bytes, done: Done, timeout: float) -> None:
        """Write ``request``; ``done`` gets the reply, or the error, when it is over."""
        assert self.transport is not None
        self.buf.clear()
        self._head = None
        self.used += 1
        self.done = done
        self.timer = self.loop.call_later(timeout, self._expire, timeout)
        self.transport.write(request)

    def _expire(self, timeout: float) -> None:
        self.timer = None
        self._end(HTTPTimeout(f"no reply within {timeout:g} s"))

    def _end(self, result: Reply | BaseException) -> None:
        done = self.done
        if done is None:
            return
        self.done = None
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        done(result)

    def _until_close(self) -> bool:
        assert self._head is not None
        h = self._head[1]
        return "content-length" not in h and "chunked" not in h.get("transfer-encoding", "")

    def _parse(self) -> None:
        if self._head is None:
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                if len(self.buf) > MAX_HEADER_BYTES:
                    raise ValueError("headers too long")
                return
            lines = bytes(self.buf[:end]).decode("latin-1").split("\r\n")
            parts = lines[0].split(" ", 2)
            if len(parts) < 2 or not parts[0].startswith("HTTP/"):
                raise ValueError(f"bad status line {lines[0][:80]!r}")
            status = int(parts[1])
            headers: Headers = {}
            for line in lines[1:]:
                name, sep, value = line.partition(":")
                if sep:
                    headers[name.strip().lower()] = value.strip()
            if 100 <= status < 200:  # an interim reply (100 Continue): skip it
                del self.buf[: end + 4]
                self._parse()
                return
            self._head = (status, headers, end + 4)
        status, headers, start = self._head
        if "chunked" in headers.get("transfer-encoding", ""):
            body = _dechunk(self.buf, start)
            if body is not None:
                self._finish(body, keep_alive=_keep_alive(headers))
        elif "content-length" in headers:
            length = int(headers["content-length"])
            if len(self.buf) - start >= length:
                self._finish(bytes(self.buf[start : start + length]), _keep_alive(headers))
        # else: the body ends when the server closes the connection (connection_lost)

    def _finish(self, body: bytes, keep_alive: bool) -> None:
        assert self._head is not None
        status, headers, _ = self._head
        self._end(Reply(status, headers, body, keep_alive))

    def close(self) -> None:
        self.closed = True
        if self.transport is None:
            return
        if self.loop.is_closed():  # its loop is gone: the transport cannot schedule a close
            sock = self.transport.get_extra_info("socket")  # asyncio's wrapper of the socket
            raw = getattr(sock, "_sock", sock)
            close = getattr(raw, "close", None)
            if close is not None:
                close()
            return
        self.transport.close()


def _keep_alive(headers: Headers) -> bool:
    return "close" not in headers.get("connection", "").lower()


def _dechunk(buf: bytearray, pos: int) -> bytes | None:
    """The body of a complete chunked message starting at ``pos``, or None if incomplete."""
    out = bytearray()
    while True:
        eol = buf.find(b"\r\n", pos)
        if eol < 0:
            return None
        size = int(bytes(buf[pos:eol]).split(b";", 1)[0].strip() or b"0", 16)
        pos = eol + 2
        if size == 0:
            # trailers end with an empty line
            end = buf.find(b"\r\n\r\n", pos - 2)
            return bytes(out) if end >= 0 else None
        if len(buf) < pos + size + 2:
            return None
        out += buf[pos : pos + size]
        pos += size + 2


class HTTP1Pool:
    """Keep-alive connections to one ``http://host:port`` origin."""

    def __init__(self, host: str, port: int, headers: Headers, timeout: float) -> None:
        self.host = host
        self.port = port
        self.timeout = timeout
        self.prefix = ""  # the base URL's path, e.g. "/v1"
        fixed = {"host": f"{host}:{port}", **{k.lower(): v for k, v in headers.items()}}
        fixed.pop("content-length", None)
        self._bad = _bad_header(fixed)
        self._fixed = "".join(f"{k}: {v}\r\n" for k, v in fixed.items()).encode(
            "latin-1", "replace"
        )
        self._idle: list[_Connection] = []
        self._all: set[_Connection] = set()
        self._connecting: set[asyncio.Task[None]] = set()

    async def _connect(self) -> _Connection:
        loop = asyncio.get_running_loop()
        try:
            _, conn = await asyncio.wait_for(
                loop.create_connection(lambda: _Connection(loop), self.host, self.port),
                self.timeout,
            )
        except asyncio.TimeoutError:
            raise HTTPTimeout(f"connecting to {self.host}:{self.port} timed out") from None
        except ConnectionRefusedError as exc:
            raise HTTPConnectionError(
                f"cannot connect to {self.host}:{self.port}: connection refused (no server "
                "listens there)"
            ) from exc
        except OSError as exc:
            raise HTTPConnectionError(f"cannot connect to {self.host}:{self.port}: {exc}") from exc
        self._all.add(conn)
        return conn

    def _take(self) -> _Connection | None:
        now = time.monotonic()
        loop = asyncio.get_running_loop()
        while self._idle:
            conn = self._idle.pop()
            transport = conn.transport
            if (
                conn.loop is not loop  # opened by an earlier event loop
                or conn.closed
                or transport is None
                or transport.is_closing()
                or now - conn.idle_since > IDLE_EXPIRY_S
            ):
                self._drop(conn)
                continue
            return conn
        return None

    def _drop(self, conn: _Connection) -> None:
        conn.close()
        self._all.discard(conn)

    def _give_back(self, conn: _Connection) -> None:
        if conn.closed or len(self._idle) >= MAX_IDLE:
            self._drop(conn)
            return
        conn.idle_since = time.monotonic()
        self._idle.append(conn)

    def request_bytes(self, path: str, body: bytes) -> bytes:
        return (
            b"POST "
            + path.encode("latin-1")
            + b" HTTP/1.1\r\n"
            + self._fixed
            + b"content-length: "
            + str(len(body)).encode()
            + b"\r\n\r\n"
            + body
        )

    def send(self, path: str, body: bytes, done: Done) -> None:
        """POST ``body`` to ``path`` now, on an idle connection (or a new one); ``done`` is
        called once with the :class:`Reply`, or the :class:`HTTPConnectionError` /
        :class:`HTTPTimeout` that ended the request, never from within this call. The
        connection is back in the pool (or closed) before ``done`` runs, so ``done`` can send
        the next request on it at once."""
        if self._bad is not None:
            raise LocalProtocolError(f"illegal header value in {self._bad!r}; nothing was sent")
        request = self.request_bytes(path, body)
        deadline = time.monotonic() + self.timeout  # for connecting and the reply together
        conn = self._take()
        if conn is not None:
            self._start(conn, request, done, self.timeout)
            return
        task = asyncio.get_running_loop().create_task(
            self._connect_and_send(request, done, deadline)
        )
        self._connecting.add(task)
        task.add_done_callback(self._connecting.discard)

    async def _connect_and_send(self, request: bytes, done: Done, deadline: float) -> None:
        try:
            conn = await self._connect()
        except asyncio.CancelledError:  # the pool was closed
            done(HTTPConnectionError(f"the connection to {self.host}:{self.port} was closed"))
            raise
        except Exception as exc:
            done(exc)
            return
        self._start(conn, request, done, max(0.0, deadline - time.monotonic()))

    def _start(self, conn: _Connection, request: bytes, done: Done, timeout: float) -> None:
        def over(result: Reply | BaseException) -> None:
            if isinstance(result, Reply) and result.keep_alive:
                self._give_back(conn)
            else:  # failed or timed out: the connection's state is unknown
                self._drop(conn)
            done(result)

        conn.start(request, over, timeout)

    async def post(self, path: str, body: bytes) -> tuple[int, Headers, bytes]:
        """POST ``body`` to ``path``; (status, lower-case headers, body)."""
        reply = await self.post_reply(path, body)
        return reply.status, reply.headers, reply.body

    async def post_reply(self, path: str, body: bytes) -> Reply:
        """POST ``body`` to ``path``; the :class:`Reply`. If the caller is cancelled, the
        request still runs to its end and its connection is kept."""
        fut: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()

        def done(result: Reply | BaseException) -> None:
            if fut.done():
                return
            if isinstance(result, BaseException):
                fut.set_exception(result)
            else:
                fut.set_result(result)

        self.send(path, body, done)
        return await fut

    async def aclose(self) -> None:
        for task in list(self._connecting):
            if not task.get_loop().is_closed():
                task.cancel()
        for conn in list(self._all):
            conn.close()
        self._all.clear()
        self._idle.clear()
