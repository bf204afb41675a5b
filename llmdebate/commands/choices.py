"""A click choice whose values are a registry's names, read when the command runs (so an
entry a plugin registers after import is a valid choice, and ``--help`` lists it)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import click

from llmdebate.registry import Registry


class RegistryChoice(click.Choice):  # type: ignore[type-arg]
    """``click.Choice`` over :meth:`Registry.names` of ``registry``."""

    def __init__(self, registry: Registry[Any]) -> None:
        self.registry = registry
        super().__init__(())

    @property  # type: ignore[override]
    def choices(self) -> Sequence[str]:
        return tuple(self.registry.names())

    @choices.setter
    def choices(self, value: Sequence[Any]) -> None:  # click's __init__ sets it; names rule
        pass
