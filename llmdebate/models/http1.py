"""A small keep-alive HTTP/1.1 client on asyncio protocols, for plain ``http://`` servers.

It sends one POST with a JSON body and returns the status, headers and body; nothing else
(no TLS, proxies, redirects or streaming: ``https://`` and proxied URLs go through the SDK's
client). It exists for throughput: one ``write`` per request, a response parsed from a
buffer, and an idle connection taken from a stack in O(1), about 0.1 ms of CPU per call
where the SDK's stack spends 2-5 ms. A local inference server (vLLM, llama.cpp, SGLang)
answering hundreds of requests a second is where that matters.

Failures raise :class:`HTTPConnectionError` (refused, reset, closed before the reply) or
:class:`HTTPTimeout` (no full reply within ``timeout`` seconds); nothing is re-sent here
(the model wrapper retries). Idle connections are dropped after ``IDLE_EXPIRY_S``, before
servers usually close them.
"""

from __future__ import annotations

import asyncio
import time
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


class _Reply:
    __slots__ = ("body", "headers", "keep_alive", "status")

    def __init__(self, status: int, headers: Headers, body: bytes, keep_alive: bool) -> None:
        self.status = status
        self.headers = headers
        self.body = body
        self.keep_alive = keep_alive


class _Connection(asyncio.Protocol):
    """One TCP connection; at most one request at a time."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.transport: asyncio.Transport | None = None
        self.buf = bytearray()
        self.waiter: asyncio.Future[_Reply] | None = None
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
        w = self.waiter
        if w is not None and not w.done():
            if self._head is not None and self._until_close():
                self._finish(bytes(self.buf[self._head[2] :]), keep_alive=False)
            else:
                got = "after part of the reply" if self.buf else "before the reply"
                w.set_exception(
                    HTTPConnectionError(f"the server closed the connection {got}")
                    if exc is None
                    else HTTPConnectionError(f"connection lost {got}: {exc}")
                )

    def data_received(self, data: bytes) -> None:
        self.buf += data
        if self.waiter is None or self.waiter.done():
            return
        try:
            self._parse()
        except ValueError as exc:
            self.waiter.set_exception(HTTPConnectionError(f"malformed HTTP reply: {exc}"))
            self.close()

    # -- request / reply
    def send(self, request: bytes) -> asyncio.Future[_Reply]:
        assert self.transport is not None
        self.buf.clear()
        self._head = None
        self.used += 1
        self.waiter = self.loop.create_future()
        self.transport.write(request)
        return self.waiter

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
        assert self._head is not None and self.waiter is not None
        status, headers, _ = self._head
        self.waiter.set_result(_Reply(status, headers, body, keep_alive))

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
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

    async def _connect(self) -> _Connection:
        loop = asyncio.get_running_loop()
        try:
            _, conn = await asyncio.wait_for(
                loop.create_connection(lambda: _Connection(loop), self.host, self.port),
                self.timeout,
            )
        except asyncio.TimeoutError:
            raise HTTPTimeout(f"connecting to {self.host}:{self.port} timed out") from None
        except OSError as exc:
            raise HTTPConnectionError(f"cannot connect to {self.host}:{self.port}: {exc}") from exc
        self._all.add(conn)
        return conn

    def _take(self) -> _Connection | None:
        now = time.monotonic()
        while self._idle:
            conn = self._idle.pop()
            transport = conn.transport
            if (
                conn.closed
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
        conn.waiter = None
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

    async def post(self, path: str, body: bytes) -> tuple[int, Headers, bytes]:
        """POST ``body`` to ``path``; (status, lower-case headers, body)."""
        if self._bad is not None:
            raise LocalProtocolError(f"illegal header value in {self._bad!r}; nothing was sent")
        request = self.request_bytes(path, body)
        deadline = time.monotonic() + self.timeout
        conn = self._take() or await self._connect()
        try:
            reply = await self._exchange(conn, request, deadline)
        except BaseException:  # failed, timed out or cancelled: the connection's state is unknown
            self._drop(conn)
            raise
        if reply.keep_alive:
            self._give_back(conn)
        else:
            self._drop(conn)
        return reply.status, reply.headers, reply.body

    async def _exchange(self, conn: _Connection, request: bytes, deadline: float) -> _Reply:
        waiter = conn.send(request)
        loop = conn.loop
        timer = loop.call_at(
            loop.time() + max(0.0, deadline - time.monotonic()), _expire, waiter, self.timeout
        )
        try:
            return await waiter
        finally:
            timer.cancel()

    async def aclose(self) -> None:
        for conn in list(self._all):
            conn.close()
        self._all.clear()
        self._idle.clear()


def _expire(waiter: asyncio.Future[_Reply], timeout: float) -> None:
    if not waiter.done():
        waiter.set_exception(HTTPTimeout(f"no reply within {timeout:g} s"))
