"""A fast fake OpenAI-compatible server, for throughput benchmarks (run it in its own process).

    python benchmarks/fake_openai_server.py --port 8011 --latency 0.05 [--workers 2]

A raw asyncio HTTP/1.1 server (keep-alive, no framework): every request is answered after
``--latency`` seconds by a timer, so the number of requests in flight is unlimited and a
request costs the server only its parsing and one JSON dump (about 30-60 µs of CPU).
``--workers N`` runs N processes on one port (``SO_REUSEPORT``). On start it prints one line
``listening http://127.0.0.1:PORT/v1`` (``--port 0``: a free port).

Endpoints (under any prefix, usually ``/v1``):

* ``POST .../chat/completions``: logprobs and ``top_logprobs`` (the reply is `` True`` or
  `` False``, with P(True) a fixed function of the request body, so debates take varied but
  reproducible paths), ``n`` choices; replies to the prover's acts that need a text:
  decompositions (a JSON with ``width`` subclaims joined by ``and``), evidence, direction
  (``lower``), index choices (``1``); anything else ``True``;
* ``POST .../completions``: text completions with the legacy ``logprobs`` block (``tokens``,
  ``token_logprobs``, ``top_logprobs``), as vLLM returns them;
* ``GET .../models``: the one model;
* ``GET /stats``: ``{"requests", "in_flight", "max_in_flight", "in_flight_s",
  "mean_in_flight", "seconds", "pid"}`` of this worker (``in_flight_s``: request-seconds
  in flight since the last reset; ``mean_in_flight``: that over the seconds since then);
  ``POST /stats/reset`` zeroes the counters.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import re
import socket
import sys
import time
import zlib
from typing import Any, cast

try:  # the server's CPU shares the client's machine in benchmarks: keep it small
    import orjson

    def _loads(raw: bytes) -> Any:
        return orjson.loads(raw)

    def _dumps(obj: Any) -> bytes:
        return orjson.dumps(obj)
except ImportError:  # pragma: no cover - orjson is a core dependency of llmdebate

    def _loads(raw: bytes) -> Any:
        return json.loads(raw)

    def _dumps(obj: Any) -> bytes:
        return json.dumps(obj).encode()


_WIDTH = re.compile(r"at most (\d+) subclaims")
_CLAIM = re.compile(r"^Claim: (.*)$", re.MULTILINE)


class Stats:
    """Requests answered, and in flight: now, at most, and on average over time (the
    integral of in-flight requests over seconds since the counters were last zeroed)."""

    def __init__(self) -> None:
        self.requests = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.began = self.changed = time.monotonic()
        self.in_flight_s = 0.0  # request-seconds spent in flight

    def add(self, delta: int) -> None:
        now = time.monotonic()
        self.in_flight_s += self.in_flight * (now - self.changed)
        self.changed = now
        self.in_flight += delta
        if delta > 0:
            self.requests += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def as_dict(self) -> dict[str, Any]:
        self.add(0)
        elapsed = self.changed - self.began
        return {
            "requests": self.requests,
            "in_flight": self.in_flight,
            "max_in_flight": self.max_in_flight,
            "in_flight_s": self.in_flight_s,
            "mean_in_flight": self.in_flight_s / elapsed if elapsed > 0 else 0.0,
            "seconds": elapsed,
            "pid": os.getpid(),
        }


def p_true(raw: bytes) -> float:
    """A reproducible P(True) in [0.05, 0.95] from the request body."""
    return 0.05 + 0.9 * (zlib.crc32(raw) % 1000) / 999


def _last_user(messages: list[dict[str, Any]]) -> str:
    for m in reversed(messages):
        if m.get("role") == "user" and isinstance(m.get("content"), str):
            return str(m["content"])
    return ""


def reply_text(messages: list[dict[str, Any]]) -> str:
    """A plausible reply to the prover's and judge's generative acts."""
    system = str(messages[0].get("content", "")) if messages else ""
    last = _last_user(messages)
    if "break a claim" in system or "subclaims" in last:
        found = _WIDTH.search(last)
        width = int(found.group(1)) if found else 2
        claim_m = _CLAIM.search(last)
        claim = claim_m.group(1).strip() if claim_m else "the claim"
        subs = [f"Part {i + 1} of the argument for this holds: {claim}" for i in range(width)]
        return json.dumps({"subclaims": subs, "rule": "and"})
    if "evidence" in system or "settles whether" in last:
        return "Checking each candidate divisor in turn settles it."
    if "higher, lower" in last:
        return "lower"
    if "Reply with its number" in last:
        return "1"
    if "number of the correct option" in last:
        return "1"
    return "True"


def _top(p: float, k: int) -> list[tuple[str, float]]:
    pairs = [(" True", math.log(p)), (" False", math.log(1 - p)), (" Maybe", -9.0)]
    pairs.sort(key=lambda kv: -kv[1])
    return pairs[:k]


def chat_completion(body: dict[str, Any], raw: bytes) -> dict[str, Any]:
    messages = body.get("messages") or []
    n = int(body.get("n") or 1)
    k = int(body.get("top_logprobs") or 0)
    want_lp = bool(body.get("logprobs"))
    p = p_true(raw)
    choices = []
    for i in range(n):
        if want_lp:
            top = _top(p, max(k, 1))
            text = top[0][0]
            logprobs: dict[str, Any] | None = {
                "content": [
                    {
                        "token": text,
                        "logprob": top[0][1],
                        "bytes": None,
                        "top_logprobs": [
                            {"token": t, "logprob": lp, "bytes": None} for t, lp in top[:k]
                        ],
                    }
                ]
            }
        else:
            text, logprobs = reply_text(messages), None
        choices.append(
            {
                "index": i,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
                "logprobs": logprobs,
            }
        )
    prompt_tokens = len(raw) // 4
    return {
        "id": "chatcmpl-fast",
        "object": "chat.completion",
        "created": 0,
        "model": body.get("model", "fake"),
        "choices": choices,
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": 1,
            "total_tokens": prompt_tokens + 1,
        },
    }


def text_completion(body: dict[str, Any], raw: bytes) -> dict[str, Any]:
    prompts = body.get("prompt") or ""
    batch = prompts if isinstance(prompts, list) else [prompts]
    k = int(body.get("logprobs") or 0)
    choices = []
    for i, prompt in enumerate(batch):
        p = p_true(str(prompt).encode())
        if k:
            top = _top(p, k)
            text = top[0][0]
            lp: dict[str, Any] | None = {
                "tokens": [text],
                "token_logprobs": [top[0][1]],
                "top_logprobs": [dict(top)],
                "text_offset": [0],
            }
        else:
            text, lp = "True", None
        choices.append({"index": i, "text": text, "logprobs": lp, "finish_reason": "length"})
    prompt_tokens = len(raw) // 4
    return {
        "id": "cmpl-fast",
        "object": "text_completion",
        "created": 0,
        "model": body.get("model", "fake"),
        "choices": choices,
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": len(batch),
            "total_tokens": prompt_tokens + len(batch),
        },
    }


_REASONS = {200: b"OK", 400: b"Bad Request", 404: b"Not Found"}


def _response(status: int, payload: bytes) -> bytes:
    return b"HTTP/1.1 %d %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s" % (
        status,
        _REASONS.get(status, b"OK"),
        len(payload),
        payload,
    )


def _content_length(head: bytes) -> int:
    """The Content-Length of a request head (0 if absent); one search, no header split."""
    at = head.lower().find(b"\r\ncontent-length:")
    if at < 0:
        return 0
    end = head.find(b"\r\n", at + 17)
    return int(head[at + 17 : end if end >= 0 else len(head)])


class HTTPProtocol(asyncio.Protocol):
    """HTTP/1.1 with keep-alive; one request answered at a time per connection, in order."""

    def __init__(self, server: FastServer) -> None:
        self.server = server
        self.buf = b""
        self.transport: asyncio.Transport | None = None
        self.closing = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closing = True

    def data_received(self, data: bytes) -> None:
        self.buf = self.buf + data if self.buf else data
        while True:
            buf = self.buf
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                return
            line_end = buf.find(b"\r\n")
            parts = buf[:line_end].split(b" ", 2)
            try:
                length = _content_length(buf[line_end:end])
            except ValueError:
                parts = []
            if len(parts) != 3:
                self._write(_response(400, b'{"error": {"message": "bad request line"}}'))
                self.buf = b""
                return
            total = end + 4 + length
            if len(buf) < total:
                return
            raw = buf[end + 4 : total]
            self.buf = buf[total:]
            self.server.handle(self, parts[0].decode("latin-1"), parts[1].decode("latin-1"), raw)

    def _write(self, payload: bytes) -> None:
        if not self.closing and self.transport is not None:
            self.transport.write(payload)


class FastServer:
    def __init__(self, latency: float, model: str) -> None:
        self.latency = latency
        self.model = model
        self.stats = Stats()
        self.loop = asyncio.get_event_loop()

    def handle(self, conn: HTTPProtocol, method: str, path: str, raw: bytes) -> None:
        if method == "GET" and path.startswith("/stats"):
            conn._write(_response(200, _dumps(self.stats.as_dict())))
            return
        if method == "POST" and path.startswith("/stats/reset"):
            self.stats = Stats()
            conn._write(_response(200, b"{}"))
            return
        if method == "GET" and path.endswith("/models"):
            body = {"object": "list", "data": [{"id": self.model, "object": "model"}]}
            conn._write(_response(200, _dumps(body)))
            return
        status, payload = 200, b""
        try:
            body = _loads(raw or b"{}")
            if path.endswith("/chat/completions"):
                payload = _dumps(chat_completion(body, raw))
            elif path.endswith("/completions"):
                payload = _dumps(text_completion(body, raw))
            else:
                status, payload = 404, b'{"error": {"message": "no such path"}}'
        except (ValueError, TypeError, AttributeError) as exc:
            status = 400
            payload = _dumps({"error": {"message": f"bad request: {exc}"}})
        stats = self.stats
        stats.add(1)
        out = _response(status, payload)
        if self.latency > 0:
            self.loop.call_later(self.latency, self._reply, conn, out, stats)
        else:
            self._reply(conn, out, stats)

    def _reply(self, conn: HTTPProtocol, out: bytes, stats: Stats) -> None:
        stats.add(-1)
        conn._write(out)


def _socket(host: str, port: int, reuse_port: bool) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if reuse_port:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    sock.listen(4096)
    sock.setblocking(False)
    return sock


async def serve(sock: socket.socket, latency: float, model: str) -> None:
    server = FastServer(latency, model)
    loop = asyncio.get_running_loop()
    srv = await loop.create_server(lambda: HTTPProtocol(server), sock=sock, backlog=4096)
    async with srv:
        await srv.serve_forever()


def _run_worker(sock: socket.socket, latency: float, model: str) -> None:
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(sock, latency, model))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0, help="0: a free port")
    ap.add_argument("--latency", type=float, default=0.05, help="seconds per request")
    ap.add_argument("--workers", type=int, default=1, help="processes sharing the port")
    ap.add_argument("--model", default="fake", help="the model id /models lists")
    args = ap.parse_args(argv)
    sock = _socket(args.host, args.port, reuse_port=args.workers > 1)
    port = sock.getsockname()[1]
    print(f"listening http://{args.host}:{port}/v1", flush=True)
    children: list[int] = []
    for _ in range(args.workers - 1):
        pid = os.fork()
        if pid == 0:
            _run_worker(_socket(args.host, port, reuse_port=True), args.latency, args.model)
            os._exit(0)
        children.append(pid)
    try:
        _run_worker(sock, args.latency, args.model)
    finally:
        for pid in children:
            with contextlib.suppress(OSError):
                os.kill(pid, 15)
    sys.exit(0)


if __name__ == "__main__":
    main()
