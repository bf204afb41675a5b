"""A run stopped by a person or the system: Ctrl-C (SIGINT) and SIGTERM end the debates in
flight the way asyncio ends them on Ctrl-C: the run's main task is cancelled, the models and
the executor are closed, and the run goes on to write ``summary.json`` and say what it kept
and the command that resumes it (exit 130 for Ctrl-C, 143 for SIGTERM).

:func:`sigterm_cancels` is held around a run (main thread only: a signal handler can only be
set there), from before its config is read: a SIGTERM while a run's event loop is running
cancels its main task, registered with :func:`main_task` (asyncio does the same for SIGINT);
one outside it raises :class:`Terminated`, a :class:`KeyboardInterrupt`, at once. Held again
further in, it changes nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from llmdebate.experiment.debate import RunStopped

CTRL_C_EXIT = 130  # 128 + SIGINT
SIGTERM_EXIT = 143  # 128 + SIGTERM


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived outside a run's event loop."""


class _State:
    task: asyncio.Task[Any] | None = None
    loop: asyncio.AbstractEventLoop | None = None
    terminated = False


_STATE = _State()


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    task, loop = _STATE.task, _STATE.loop
    _STATE.terminated = True
    if task is None or loop is None or loop.is_closed() or task.done():
        raise Terminated()
    loop.call_soon_threadsafe(task.cancel)


@contextlib.contextmanager
def sigterm_cancels() -> Iterator[None]:
    """While held (in the main thread; elsewhere it does nothing): SIGTERM stops the run as
    Ctrl-C does (see the module docstring)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    if signal.getsignal(signal.SIGTERM) is _on_sigterm:  # held already, further out
        yield
        return
    _STATE.terminated = False
    before = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


@contextlib.contextmanager
def main_task() -> Iterator[None]:
    """Within the run's main coroutine: the task SIGTERM cancels."""
    _STATE.task, _STATE.loop = asyncio.current_task(), asyncio.get_running_loop()
    try:
        yield
    finally:
        _STATE.task = _STATE.loop = None


def terminated() -> bool:
    """Whether SIGTERM arrived since :func:`sigterm_cancels` was entered."""
    return _STATE.terminated


def interrupted(exc: BaseException | None) -> RunStopped:
    """The stop of a run that ``exc`` (a :class:`KeyboardInterrupt`, or None after SIGTERM
    cancelled the run) interrupted."""
    from llmdebate.experiment.debate import RunStopped

    if isinstance(exc, Terminated) or terminated():
        return RunStopped("interrupted by SIGTERM", SIGTERM_EXIT)
    return RunStopped("interrupted by Ctrl-C", CTRL_C_EXIT)
