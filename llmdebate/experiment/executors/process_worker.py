"""One local worker process of ``--executor processes``, and the frames it exchanges.

The driver and each worker hold the two ends of a ``socket.socketpair()`` and read and write
it with asyncio streams, so neither blocks its event loop. A frame is a 4-byte big-endian
length and a pickled list of messages; every message put in one turn of the event loop goes
out in one frame (:class:`Outbox`), so hundreds of small messages a second cost a few
system calls.

Messages, driver to worker: ``("job", key, Job)``, ``("stop",)``. Worker to driver:
``("ready", pid)``, ``("done", key, Finished)``, ``("error", key, traceback)`` (a defect in
the runner: it propagates in the driver), ``("fatal", reason, exit code)`` (the worker could
not start: the run stops). A worker whose driver goes away (end of file on its socket, e.g.
the driver was killed) stops at once, so no worker outlives its run.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pickle
import signal
import socket
import struct
import traceback
from typing import Any

from llmdebate.errors import UserError
from llmdebate.experiment.config import ExperimentConfig
from llmdebate.experiment.debate import failure_reason
from llmdebate.experiment.jobs import Job
from llmdebate.experiment.worker import DebateWorker

HEADER = struct.Struct("!I")
STREAM_LIMIT = 1 << 22  # bytes a stream buffers before it stops reading the socket


def frame(messages: list[Any]) -> bytes:
    """``messages`` as one length-prefixed frame."""
    data = pickle.dumps(messages, protocol=pickle.HIGHEST_PROTOCOL)
    return HEADER.pack(len(data)) + data


async def read_frame(reader: asyncio.StreamReader) -> list[Any]:
    """The messages of the next frame (:class:`asyncio.IncompleteReadError` at the end)."""
    (size,) = HEADER.unpack(await reader.readexactly(HEADER.size))
    messages: list[Any] = pickle.loads(await reader.readexactly(size))
    return messages


def recv_frame(sock: socket.socket) -> list[Any]:
    """The messages of the next frame, read from a blocking socket (EOFError at the end)."""

    def exactly(n: int) -> bytes:
        data = bytearray()
        while len(data) < n:
            chunk = sock.recv(n - len(data))
            if not chunk:
                raise EOFError
            data += chunk
        return bytes(data)

    (size,) = HEADER.unpack(exactly(HEADER.size))
    messages: list[Any] = pickle.loads(exactly(size))
    return messages


class Outbox:
    """Messages to one peer, sent as one frame per turn of the event loop."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self.writer = writer
        self.items: list[Any] = []
        self._scheduled = False

    def put(self, message: tuple[Any, ...]) -> None:
        self.items.append(message)
        if not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self.flush)

    def flush(self) -> None:
        self._scheduled = False
        items, self.items = self.items, []
        if items and not self.writer.is_closing():
            self.writer.write(frame(items))


def main(
    sock: socket.socket, config: ExperimentConfig, servers: dict[str, str | None], cwd: str
) -> None:
    """A worker process: build the run's models, then run the jobs the driver sends."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the driver's: it stops us
    try:
        worker = DebateWorker(config, servers, cwd)
    except Exception as exc:
        reason, code = (str(exc), 2) if isinstance(exc, UserError) else (failure_reason(exc), 1)
        with contextlib.suppress(OSError):
            sock.sendall(frame([("fatal", f"a worker process could not start: {reason}", code)]))
        sock.close()
        return
    asyncio.run(serve(sock, worker))


async def serve(sock: socket.socket, worker: DebateWorker) -> None:
    """Run every job the driver sends, concurrently, until it says stop or goes away."""
    reader, writer = await asyncio.open_connection(sock=sock, limit=STREAM_LIMIT)
    outbox = Outbox(writer)
    tasks: dict[int, asyncio.Task[None]] = {}

    async def one(key: int, job: Job) -> None:
        try:
            done = await worker.run(job)
        except Exception:
            outbox.put(("error", key, traceback.format_exc()))
        else:
            outbox.put(("done", key, done))
        finally:
            tasks.pop(key, None)

    outbox.put(("ready", os.getpid()))
    try:
        while True:
            try:
                batch = await read_frame(reader)
            except (asyncio.IncompleteReadError, ConnectionError):
                return  # the driver is gone
            for message in batch:
                if message[0] != "job":
                    return  # stop
                _, key, job = message
                tasks[key] = asyncio.ensure_future(one(key, job))
    finally:
        running = list(tasks.values())
        for t in running:
            t.cancel()
        await asyncio.gather(*running, return_exceptions=True)
        await worker.aclose()
        writer.close()
