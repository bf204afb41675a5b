"""The event loop that runs a run's debates: uvloop when it is installed, else asyncio's own.

A debate client spends much of its CPU in the event loop itself (socket reads and writes,
callbacks, timers); uvloop (``pip install 'llmdebate[fast]'``) does that work in C, which
cuts about a tenth of the CPU per model call against a fast local server. The choice changes
no result: every random draw comes from the run's seed, never from scheduling.

``--loop auto`` (the default) takes uvloop if it imports, ``asyncio`` never does, ``uvloop``
insists on it (one clear error naming the extra otherwise).
"""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from collections.abc import Coroutine
from typing import Any, TypeVar

from llmdebate.errors import UserError, require

LOOPS = ("auto", "asyncio", "uvloop")

T = TypeVar("T")


def loop_kind(choice: str = "auto") -> str:
    """The loop ``choice`` resolves to here: ``asyncio`` or ``uvloop``."""
    if choice not in LOOPS:
        raise UserError(f"--loop must be one of {', '.join(LOOPS)} (got {choice!r})")
    if choice == "auto":
        usable = sys.platform != "win32" and importlib.util.find_spec("uvloop") is not None
        return "uvloop" if usable else "asyncio"
    if choice == "uvloop":
        require("uvloop", "fast")
    return choice


def run_coroutine(coro: Coroutine[Any, Any, T], choice: str = "auto") -> T:
    """``asyncio.run(coro)`` on the loop ``choice`` names."""
    try:
        kind = loop_kind(choice)
    except BaseException:
        coro.close()  # never started: no "never awaited" warning
        raise
    if kind == "uvloop":
        uvloop: Any = require("uvloop", "fast")
        result: T = uvloop.run(coro)
        return result
    return asyncio.run(coro)
