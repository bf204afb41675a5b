"""The fast paths: the raw HTTP/1.1 client, the SDK glue around it, batched cache writes and
the transcript writer."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest

from llmdebate.errors import AuthenticationError
from llmdebate.models import GenerateConfig, ModelOutput, ResponseCache, get_model, transport
from llmdebate.models.http1 import HTTP1Pool, HTTPConnectionError, HTTPTimeout
from llmdebate.models.interface import RetriesExhausted
from llmdebate.records.transcripts import TranscriptWriter

try:
    from tests.fixtures.fake_server import FakeServer
except ImportError:  # pytest run from inside tests/
    from fixtures.fake_server import FakeServer  # type: ignore[no-redef]

Reply = Callable[[bytes], bytes]


class RawServer:
    """An asyncio TCP server answering each request with ``reply(request)``; counts the
    connections it accepted."""

    def __init__(self, reply: Reply, close_after: bool = False, delay: float = 0.0) -> None:
        self.reply = reply
        self.close_after = close_after
        self.delay = delay
        self.connections = 0
        self.requests: list[bytes] = []

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                body = await reader.readexactly(length)
                self.requests.append(head + body)
                if self.delay:
                    await asyncio.sleep(self.delay)
                writer.write(self.reply(body))
                await writer.drain()
                if self.close_after:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


@pytest.fixture()
async def raw_server() -> AsyncIterator[Callable[..., asyncio.Future[tuple[RawServer, int]]]]:
    servers: list[asyncio.base_events.Server] = []

    async def start(reply: Reply, **kw: object) -> tuple[RawServer, int]:
        rs = RawServer(reply, **kw)  # type: ignore[arg-type]
        srv = await asyncio.start_server(rs.handle, "127.0.0.1", 0)
        servers.append(srv)
        return rs, srv.sockets[0].getsockname()[1]

    yield start  # type: ignore[misc]
    for srv in servers:
        srv.close()


def ok(body: bytes) -> bytes:
    payload = json.dumps({"echo": json.loads(body)}).encode()
    return b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n%s" % (len(payload), payload)


def chunked(body: bytes) -> bytes:
    payload = json.dumps({"echo": json.loads(body)}).encode()
    half = len(payload) // 2
    parts = (payload[:half], payload[half:])
    chunks = b"".join(b"%x;ext=1\r\n%s\r\n" % (len(p), p) for p in parts)
    return b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n" + chunks + b"0\r\n\r\n"


def until_close(body: bytes) -> bytes:
    return b"HTTP/1.1 200 OK\r\nconnection: close\r\n\r\n" + body


async def test_keep_alive_reuses_one_connection(raw_server) -> None:
    rs, port = await raw_server(ok)
    pool = HTTP1Pool("127.0.0.1", port, {"authorization": "Bearer k"}, timeout=5)
    for i in range(5):
        status, _headers, body = await pool.post("/v1/x", json.dumps({"i": i}).encode())
        assert status == 200 and json.loads(body) == {"echo": {"i": i}}
    assert rs.connections == 1
    head = rs.requests[0].split(b"\r\n\r\n")[0].decode().lower()
    assert head.startswith("post /v1/x http/1.1") and "authorization: bearer k" in head
    await pool.aclose()


async def test_chunked_and_close_delimited_replies(raw_server) -> None:
    rs, port = await raw_server(chunked)
    pool = HTTP1Pool("127.0.0.1", port, {}, timeout=5)
    for i in range(3):
        _, _, body = await pool.post("/", json.dumps({"i": i}).encode())
        assert json.loads(body) == {"echo": {"i": i}}
    assert rs.connections == 1
    rs2, port2 = await raw_server(until_close, close_after=True)
    pool2 = HTTP1Pool("127.0.0.1", port2, {}, timeout=5)
    for i in range(3):
        _, _, body = await pool2.post("/", json.dumps({"i": i}).encode())
        assert json.loads(body) == {"i": i}
    assert rs2.connections == 3  # "connection: close": a new connection each time
    await pool.aclose()
    await pool2.aclose()


async def test_a_server_closing_idle_connections_is_noticed(raw_server) -> None:
    rs, port = await raw_server(ok, close_after=True)  # closes without saying so
    pool = HTTP1Pool("127.0.0.1", port, {}, timeout=5)
    for i in range(3):
        await pool.post("/", json.dumps({"i": i}).encode())
        await asyncio.sleep(0.05)  # the close arrives while the connection is idle
    assert rs.connections == 3
    await pool.aclose()


async def test_timeouts_and_refused_connections(raw_server) -> None:
    _rs, port = await raw_server(ok, delay=1.0)
    pool = HTTP1Pool("127.0.0.1", port, {}, timeout=0.1)
    with pytest.raises(HTTPTimeout):
        await pool.post("/", b"{}")
    await pool.aclose()
    srv = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    free = srv.sockets[0].getsockname()[1]
    srv.close()
    await srv.wait_closed()
    with pytest.raises(HTTPConnectionError, match="cannot connect"):
        await HTTP1Pool("127.0.0.1", free, {}, timeout=1).post("/", b"{}")


@pytest.fixture()
def server() -> Iterator[FakeServer]:
    with FakeServer() as s:
        yield s


async def test_the_fast_path_sends_what_the_sdk_would(server: FakeServer) -> None:
    m = get_model("openai/gpt-x", base_url=server.url, use_cache=False)
    cfg = GenerateConfig(temperature=0.5, max_tokens=7, top_logprobs=3, stop=["\n"], seed=4)
    out = await m.generate([{"role": "user", "content": "Is 7 prime? é"}], cfg)
    assert out.text == "True" and out.logprobs and out.logprobs[0].top
    assert server.bodies[-1] == {
        "model": "gpt-x",
        "messages": [{"role": "user", "content": "Is 7 prime? é"}],
        "temperature": 0.5,
        "max_tokens": 7,
        "logprobs": True,
        "top_logprobs": 3,
        "stop": ["\n"],
        "seed": 4,
    }
    headers = server.headers[-1]
    assert headers["authorization"].startswith("Bearer ")
    assert "openai" in headers["user-agent"].lower()
    assert headers["content-type"] == "application/json"
    await m.aclose()


async def test_malformed_replies_are_transient_and_bad_keys_stop(server, monkeypatch) -> None:
    m = get_model("openai/gpt-x", base_url=server.url, use_cache=False, max_retries=0)
    server.faults.append({"malformed": True})
    with pytest.raises(RetriesExhausted, match="malformed response: the reply is not JSON"):
        await m.generate([{"role": "user", "content": "q"}])
    await m.aclose()
    import llmdebate.models.http_errors as http_errors

    monkeypatch.setattr(http_errors, "check_key", lambda variable, key: None)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-abc\n")
    bad = get_model("openai/gpt-x", base_url=server.url, use_cache=False)
    with pytest.raises(AuthenticationError, match="header could not be sent") as info:
        await bad.generate([{"role": "user", "content": "q"}])
    assert "sk-abc" not in str(info.value)
    await bad.aclose()


def test_plain_http_takes_the_raw_lane_unless_a_proxy_is_set(monkeypatch) -> None:
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(var, raising=False)
    lane = transport.open_transport
    assert isinstance(lane("http://127.0.0.1:1/v1", {}, 5.0), transport.RawTransport)
    assert isinstance(lane("https://127.0.0.1:1/v1", {}, 5.0), transport.HttpxTransport)
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.invalid:3128")
    assert isinstance(lane("http://127.0.0.1:1/v1", {}, 5.0), transport.HttpxTransport)


def test_json_bodies_round_trip_with_text_as_is() -> None:
    body = {"messages": [{"role": "user", "content": "Is 7 \u2264 9? \u00e9"}], "n": 1.5}
    raw = transport.dumps(body)
    text = '{"messages":[{"role":"user","content":"Is 7 \u2264 9? \u00e9"}],"n":1.5}'
    assert raw == text.encode()
    assert transport.loads(raw) == body
    assert transport.loads(transport.dumps({1: [True, None]})) == {"1": [True, None]}
    with pytest.raises(ValueError):
        transport.loads(b"<html>")


def test_json_bodies_take_numpy_scalars() -> None:
    import numpy as np

    assert transport.loads(transport.dumps({"t": np.float64(0.5), "k": np.int64(3)})) == {
        "t": 0.5,
        "k": 3,
    }


def test_cache_writes_are_batched_and_visible_at_once(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    cache.put("k", ModelOutput("True", "m", 3, 1))
    other = ResponseCache(tmp_path / "c.sqlite")
    assert cache.get("k") is not None and cache.get("k").text == "True"  # type: ignore[union-attr]
    assert other.get("k") is None  # not committed yet
    cache.flush()
    assert other.get("k") is not None
    cache.put("k2", ModelOutput("False", "m"))
    cache.close()  # commits what is pending
    assert other.get("k2") is not None and len(other) == 2
    other.close()


def test_the_transcript_writer_appends_whole_lines(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"id": "old"}\n')
    with TranscriptWriter(path, fsync_interval=0.01) as w:
        for i in range(50):
            w.write(json.dumps({"id": i, "pad": "x" * 5000}).encode() + b"\n")
        assert w.written == 50
    lines = path.read_bytes().splitlines()
    assert len(lines) == 51 and json.loads(lines[-1])["id"] == 49


def test_the_fast_path_runs_on_uvloop(server: FakeServer) -> None:
    """Ray runs its async actors on uvloop when it is installed: the fast path must work on
    uvloop's transports (not subclasses of asyncio.Transport) as on asyncio's."""
    import uvloop

    async def calls() -> list[str]:
        m = get_model("openai/gpt-x", base_url=server.url, use_cache=False, max_retries=0)
        msgs = [{"role": "user", "content": f"Is {n} prime?"} for n in (7, 9, 11)]
        outs = await asyncio.gather(*(m.generate([x], GenerateConfig(max_tokens=3)) for x in msgs))
        await m.aclose()
        assert type(asyncio.get_running_loop()).__module__.startswith("uvloop")
        return [o.text for o in outs]

    texts = uvloop.run(calls())
    assert len(texts) == 3 and all(texts)


async def test_send_calls_back_with_the_connection_free_for_the_next_request(
    raw_server,
) -> None:
    rs, port = await raw_server(ok, delay=0.01)
    pool = HTTP1Pool("127.0.0.1", port, {}, timeout=5)
    replies: list[object] = []
    finished = asyncio.get_running_loop().create_future()

    def done(reply: object) -> None:  # sends the next request from within the callback
        replies.append(reply)
        if len(replies) < 4:
            pool.send("/", json.dumps({"i": len(replies)}).encode(), done)
        else:
            finished.set_result(None)

    pool.send("/", json.dumps({"i": 0}).encode(), done)
    assert replies == []  # never called from within send
    await asyncio.wait_for(finished, 5)
    bodies = [json.loads(r.body) for r in replies]  # type: ignore[attr-defined]
    assert bodies == [{"echo": {"i": i}} for i in range(4)]
    assert rs.connections == 1  # each next request went out on the connection just freed
    await pool.aclose()


async def test_a_cancelled_post_runs_to_its_end_and_keeps_its_connection(raw_server) -> None:
    rs, port = await raw_server(ok, delay=0.05)
    pool = HTTP1Pool("127.0.0.1", port, {}, timeout=5)
    task = asyncio.create_task(pool.post("/", b'{"i": 0}'))
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.sleep(0.1)  # the reply arrives; the connection goes back to the pool
    _, _, body = await pool.post("/", b'{"i": 1}')
    assert json.loads(body) == {"echo": {"i": 1}} and rs.connections == 1
    await pool.aclose()
