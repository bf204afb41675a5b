"""The protocol registry: name → :class:`~llmdebate.protocols.interface.Protocol`.

Every built-in protocol is one module of this package that registers an instance of its
class at import (``PROTOCOLS.add(name, instance, capabilities=...)``, see
:func:`register`); a third-party package adds one through the entry-point group
``llmdebate.protocols``::

    [project.entry-points."llmdebate.protocols"]
    my-protocol = "my_package.my_protocol"   # a module whose import registers it

Config validation, ``--help`` and error messages take their choices from
:meth:`PROTOCOLS.names() <llmdebate.registry.Registry.names>`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from llmdebate.core.schemas import Transcript
from llmdebate.protocols.interface import RECURSIVE, Protocol
from llmdebate.registry import Entry, Registry

PROTOCOLS: Registry[Protocol] = Registry(
    "protocol",
    group="llmdebate.protocols",
    builtins=(
        "llmdebate.protocols.prover_estimator",
        "llmdebate.protocols.naive_recursive",
        "llmdebate.protocols.two_sided",
        "llmdebate.protocols.consultancy",
        "llmdebate.protocols.direct",
    ),
)

P = TypeVar("P", bound=type[Protocol])


def register(name: str, *, replace: bool = False) -> Callable[[P], P]:
    """Class decorator: register an instance of the class as protocol ``name``, with the
    class's capabilities on the registry entry."""

    def decorate(cls: P) -> P:
        cls.name = name
        PROTOCOLS.add(
            name, cls(), capabilities=cls.capabilities, summary=cls.title, replace=replace
        )
        return cls

    return decorate


def get_protocol(name: str, *, where: str = "") -> Protocol:
    """The protocol called ``name``; a UserError naming the choices otherwise."""
    return PROTOCOLS.get(name, where=where)


def protocol_of(t: Transcript) -> Protocol:
    """The protocol of transcript ``t``."""
    return PROTOCOLS.get(str(t.protocol), where=f"debate {t.id}")


def recursive(t: Transcript) -> bool:
    """Whether ``t`` is a debate of a recursive protocol (capability ``recursive``: a
    prover decomposes, recurses and is judged at a leaf)."""
    return can(str(t.protocol), RECURSIVE)


def entry_of(name: str) -> Entry[Protocol]:
    return PROTOCOLS.entry(name)


def can(name: str, capability: str) -> bool:
    """Whether protocol ``name`` declares ``capability`` (False for an unknown name)."""
    return name in PROTOCOLS and PROTOCOLS.entry(name).can(capability)


def in_order(names: set[str] | list[str] | tuple[str, ...]) -> list[str]:
    """``names`` in comparison order (each protocol's ``rank``, then name); unknown last."""

    def key(n: str) -> tuple[int, str]:
        return (PROTOCOLS.get(n).rank if n in PROTOCOLS else 10**6, n)

    return sorted(set(names), key=key)
