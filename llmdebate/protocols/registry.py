"""The protocol registry: name → :class:`~llmdebate.protocols.interface.Protocol`.

Every built-in protocol is one module of this package that registers an instance of its
class at import (:func:`register`, which refuses a class that fits no family or declares a
capability its family cannot have, and brings what the protocol adds: its new seats join
:data:`llmdebate.agents.factory.SEAT_ROLES`, its prompt folder :mod:`llmdebate.prompts`); a
third-party package adds one through the entry-point group ``llmdebate.protocols``::

    [project.entry-points."llmdebate.protocols"]
    my-protocol = "my_package.my_protocol"   # a module whose import registers it

Config validation, ``--help`` and error messages take their choices from
:meth:`PROTOCOLS.names() <llmdebate.registry.Registry.names>`. A class written against an
earlier authoring API is read as its replacement with a warning, or refused in one line
naming it (:func:`modernize`, :mod:`llmdebate.retired`).
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from llmdebate.agents.factory import add_seat
from llmdebate.core.schemas import Transcript, Turn
from llmdebate.errors import ProtocolViolation
from llmdebate.prompts import add_prompts_package
from llmdebate.protocols.families import ChoiceProtocol, RecursiveProtocol, misfit
from llmdebate.protocols.interface import Protocol
from llmdebate.registry import Entry, Registry
from llmdebate.retired import API_VERSION, TO_ADDITIONS, replacement, retired_members

PROTOCOLS: Registry[Protocol] = Registry(
    "protocol",
    group="llmdebate.protocols",
    builtins=(
        "llmdebate.protocols.prover_estimator",
        "llmdebate.protocols.naive_recursive",
        "llmdebate.protocols.two_sided",
        "llmdebate.protocols.consultancy",
        "llmdebate.protocols.direct",
        "llmdebate.protocols.topology",  # registers none: protocols from configs' topologies
    ),
)

RECORDED: list[Callable[[Transcript], None]] = []
"""Hooks that register the protocol a transcript describes itself (a topology's, which
:mod:`llmdebate.protocols.topology` adds), called for a transcript of an unknown protocol."""

P = TypeVar("P", bound=type[Protocol])


def register(name: str, *, replace: bool = False) -> Callable[[P], P]:
    """Class decorator: register an instance of the class as protocol ``name``; what it adds
    (:attr:`Protocol.adds`: new seats, templates) comes with it. A class of no family, or
    declaring a capability its family cannot have, is a TypeError naming it."""

    def decorate(cls: P) -> P:
        modernize(name, cls)
        problem = misfit(cls)
        if problem is not None:
            raise TypeError(f"protocol {name}: {problem}")
        cls.name = name
        for seat in cls.seats:
            add_seat(seat, cls.adds.seats.get(seat))
        if cls.adds.prompts is not None:
            add_prompts_package(cls.adds.prompts)
        PROTOCOLS.add(name, cls(), summary=cls.title, replace=replace)
        return cls

    return decorate


def modernize(name: str, cls: type[Protocol]) -> None:
    """Read what ``cls`` declares of authoring API 1 as its replacement (``seat_roles`` as
    ``adds.seats``, ``assigned`` as ``can.assigned``, ...), each with a
    :class:`DeprecationWarning` naming the replacement; a member the package no longer reads
    is a TypeError naming what to do instead (:func:`llmdebate.retired.retired_members`)."""
    shimmed, refused = retired_members(cls)
    if refused is not None:
        raise TypeError(f"protocol {name}: {refused}")
    adds: dict[str, Any] = {}
    can: dict[str, Any] = {}
    for attr in shimmed:
        warnings.warn(
            f"protocol {name}: {attr} is authoring API 1; declare {replacement(attr)} "
            f"(llmdebate.authoring.API_VERSION {API_VERSION})",
            DeprecationWarning, stacklevel=4,
        )
        value = getattr(cls, attr)
        if attr in TO_ADDITIONS:
            field = TO_ADDITIONS[attr]
            adds[field] = frozenset(value) if field == "models" and value is not None else value
        else:
            can[attr] = bool(value)
    if adds:
        cls.adds = dataclasses.replace(cls.adds, **adds)
    if can:
        cls.can = dataclasses.replace(cls.can, **can)


def get_protocol(name: str, *, where: str = "") -> Protocol:
    """The protocol called ``name``; a UserError naming the choices otherwise."""
    return PROTOCOLS.get(name, where=where)


def adopt_recorded(transcripts: Iterable[Transcript]) -> None:
    """Register every protocol these transcripts describe themselves (a config's topology)
    that is not registered, with what it adds (its seats' exported roles: ``llmdebate export
    --role critic`` of a run read in a fresh process); a transcript of a protocol no longer
    installed is left for the caller to refuse."""
    for t in transcripts:
        if str(t.protocol) not in PROTOCOLS:
            for hook in RECORDED:
                hook(t)


def protocol_of(t: Transcript) -> Protocol:
    """The protocol of transcript ``t`` (one it describes itself registered first)."""
    adopt_recorded([t])
    return PROTOCOLS.get(str(t.protocol), where=f"debate {t.id}")


def recursive(t: Transcript) -> bool:
    """Whether ``t`` is a debate of a recursive protocol (a prover decomposes, recurses and
    is judged at a leaf)."""
    return isinstance(known(str(t.protocol)), RecursiveProtocol)


def waiting_choice_prompt(t: Transcript) -> tuple[str, dict[str, Any]]:
    """The judge prompt (act, variables) of a debate awaiting its choice between two
    answers: what its protocol would have shown its model judge
    (:meth:`~llmdebate.protocols.families.ChoiceProtocol.judge_prompt`)."""
    p = protocol_of(t)
    if not isinstance(p, ChoiceProtocol):
        raise ProtocolViolation(f"{t.protocol} has no judge prompt for a waiting debate")
    return p.judge_prompt(t)


def judged_turns(t: Transcript) -> list[Turn]:
    """The turns of debate ``t`` its judge, model or person, reads
    (:meth:`~llmdebate.protocols.families.ChoiceProtocol.judge_reads`; a recursive debate's
    all)."""
    p = protocol_of(t)
    return p.judge_reads(list(t.turns)) if isinstance(p, ChoiceProtocol) else list(t.turns)


def entry_of(name: str) -> Entry[Protocol]:
    return PROTOCOLS.entry(name)


def known(name: str) -> Protocol | None:
    """The protocol called ``name``, None for an unknown name (a transcript of a protocol
    no longer installed)."""
    return PROTOCOLS.get(name) if name in PROTOCOLS else None


def named_where(test: Callable[[Protocol], bool]) -> tuple[str, ...]:
    """The names of the registered protocols for which ``test`` holds."""
    return tuple(n for n in PROTOCOLS.names() if test(PROTOCOLS.get(n)))


def in_order(names: set[str] | list[str] | tuple[str, ...]) -> list[str]:
    """``names`` in comparison order (each protocol's ``rank``, then name); unknown last."""

    def key(n: str) -> tuple[int, str]:
        return (PROTOCOLS.get(n).rank if n in PROTOCOLS else 10**6, n)

    return sorted(set(names), key=key)
