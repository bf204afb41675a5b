"""The protocol decision a model call serves, stated before the call is made.

A protocol says which of its decisions it is asking for before it asks::

    with deciding("direction", k):
        choice = await prover.direction(claim, p, k, ctx)

and every model call made inside, by whichever agent and however deep, is recorded with that
:class:`~llmdebate.core.schemas.DecisionTag` (the model wrapper reads :func:`current_decision`
where it makes the record). The tag lives in a :mod:`contextvars` variable: an asyncio task
started inside the statement inherits it, and what a task sets stays in that task, so
concurrent asks each keep their own tag (:func:`tagged` runs one awaitable under its own tag,
for ``asyncio.gather``). The innermost statement wins: a best-of-n prover scoring its
candidates inside the engine's ``decompose`` says ``with deciding("scoring", k)``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

from llmdebate.core.schemas import DecisionTag

T = TypeVar("T")

_CURRENT: ContextVar[DecisionTag | None] = ContextVar("llmdebate_decision", default=None)


_CALL: ContextVar[tuple[str, str] | None] = ContextVar("llmdebate_call", default=None)


def current_decision() -> DecisionTag | None:
    """The decision being asked for here (None outside every :func:`deciding`)."""
    return _CURRENT.get()


def current_call() -> tuple[str, str] | None:
    """(role, act) of the model call being made here (None outside every :func:`calling`)."""
    return _CALL.get()


@contextmanager
def calling(role: str, act: str) -> Iterator[None]:
    """Model calls made inside are ``role``'s ``act`` (what a log names their span after);
    with neither given, the call keeps the (role, act) it is made inside."""
    if not role and not act:
        yield
        return
    token = _CALL.set((role, act))
    try:
        yield
    finally:
        _CALL.reset(token)


def make_tag(
    decision: str,
    round: int | None = None,
    *,
    index: int | None = None,
    prefix: Sequence[int] | None = None,
) -> DecisionTag:
    """A tag from this package's own values (built without validation, as records are)."""
    return DecisionTag.trusted(
        decision=decision,
        round=round,
        index=index,
        prefix=None if prefix is None else [int(v) for v in prefix],
    )


@contextmanager
def deciding(
    decision: str,
    round: int | None = None,
    *,
    index: int | None = None,
    prefix: Sequence[int] | None = None,
) -> Iterator[DecisionTag]:
    """Model calls made inside serve ``decision`` of round ``round`` (None: initialisation);
    an estimator's b_i also names its subclaim ``index`` and the earlier outcomes ``prefix``."""
    tag = make_tag(decision, round, index=index, prefix=prefix)
    token = _CURRENT.set(tag)
    try:
        yield tag
    finally:
        _CURRENT.reset(token)


@contextmanager
def narrowed(index: int, prefix: Sequence[int]) -> Iterator[DecisionTag | None]:
    """The current decision, where it concerns one b_i (it names an index), narrowed to b_j
    with j = ``index`` asked under ``prefix``: e.g. one call of a batch that asks every b_j of
    a round at once while serving b_i. A decision about a whole decomposition (``scoring``)
    stays as it is, and so does the absence of one."""
    outer = _CURRENT.get()
    if outer is None or outer.index is None:
        yield outer
        return
    with deciding(outer.decision, outer.round, index=index, prefix=prefix) as tag:
        yield tag


async def tagged(
    aw: Awaitable[T],
    decision: str,
    round: int | None = None,
    *,
    index: int | None = None,
    prefix: Sequence[int] | None = None,
) -> T:
    """Await ``aw`` under its own tag. Handed to ``asyncio.gather``, each runs in a task of its
    own, so concurrent asks keep their tags apart."""
    with deciding(decision, round, index=index, prefix=prefix):
        return await aw
