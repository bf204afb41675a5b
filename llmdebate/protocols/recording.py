"""Collecting the model calls of one debate into its transcript.

A :class:`~llmdebate.models.wrapper.Model` reports every call to its ``on_call`` hook. One model
serves many concurrent debates, so the hook routes each record to the list bound to the
current task by :func:`recording` (a context variable, inherited by tasks started inside it).
Any hook already installed keeps receiving every record.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from llmdebate.schemas import ModelCallRecord

_SINK: ContextVar[list[ModelCallRecord] | None] = ContextVar("llmdebate_debate_calls", default=None)
_MARK = "_llmdebate_routes_calls"


def attach(model: Any) -> None:
    """Install the routing hook on ``model`` once (chaining any hook already there)."""
    prev: Callable[[ModelCallRecord], None] | None = getattr(model, "on_call", None)
    if prev is not None and getattr(prev, _MARK, False):
        return

    def route(record: ModelCallRecord) -> None:
        sink = _SINK.get()
        if sink is not None:
            sink.append(record)
        if prev is not None:
            prev(record)

    setattr(route, _MARK, True)
    model.on_call = route


@contextmanager
def recording(calls: list[ModelCallRecord]) -> Iterator[list[ModelCallRecord]]:
    """Append every call made in this block (by attached models) to ``calls``."""
    token = _SINK.set(calls)
    try:
        yield calls
    finally:
        _SINK.reset(token)
