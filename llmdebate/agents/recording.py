"""Routing model-call records into the debate that made them, and the item in scope.

A :class:`~llmdebate.models.Model` may be shared by many concurrent debates (and by several
roles); it reports every call to one ``on_call`` callback. :func:`record_call` appends the
record to the call list of the debate running in the current asyncio context, which the
agents set with :func:`recording` around each model call (child tasks inherit it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from llmdebate.schemas import ModelCallRecord

_CALLS: ContextVar[list[ModelCallRecord] | None] = ContextVar("llmdebate_calls", default=None)
_ITEM: ContextVar[dict[str, Any] | None] = ContextVar("llmdebate_item", default=None)
_ALL: ContextVar[list[ModelCallRecord] | None] = ContextVar("llmdebate_all_calls", default=None)


def record_call(record: ModelCallRecord) -> None:
    """The ``on_call`` callback: append ``record`` to the current debate's calls (if any)."""
    calls = _CALLS.get()
    if calls is not None:
        calls.append(record)
    every = _ALL.get()
    if every is not None and every is not calls:
        every.append(record)


def attach_recorder(model: Any) -> None:
    """Make ``model`` report its calls through :func:`record_call` (keeping any other hook)."""
    hook: Callable[[ModelCallRecord], None] | None = getattr(model, "on_call", None)
    if hook is None or hook is record_call or getattr(hook, "_llmdebate_chained", False):
        if hook is None:
            model.on_call = record_call
        return

    def chained(record: ModelCallRecord) -> None:
        hook(record)
        record_call(record)

    chained._llmdebate_chained = True  # type: ignore[attr-defined]
    model.on_call = chained


@contextmanager
def recording(calls: list[ModelCallRecord]) -> Iterator[None]:
    """Send the records of model calls made inside the block to ``calls``."""
    token = _CALLS.set(calls)
    try:
        yield
    finally:
        _CALLS.reset(token)


@contextmanager
def debate_log(calls: list[ModelCallRecord]) -> Iterator[None]:
    """Also copy every record made inside the block (by any agent) to ``calls``.

    The runner uses it to keep the calls of a debate that raised before returning a transcript.
    """
    token = _ALL.set(calls)
    try:
        yield
    finally:
        _ALL.reset(token)


@contextmanager
def item_scope(item: dict[str, Any] | None) -> Iterator[None]:
    """Make ``item`` the dataset item of the debate run inside the block.

    The engine gives the leaf acts a fresh context without the item; agents that need the
    item's passage (evidence, judge) or its machine-readable meta (oracle judge) read it here.
    """
    token = _ITEM.set(item)
    try:
        yield
    finally:
        _ITEM.reset(token)


def current_item(fallback: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """``fallback`` if given, else the item set by :func:`item_scope`."""
    return fallback if fallback is not None else _ITEM.get()
