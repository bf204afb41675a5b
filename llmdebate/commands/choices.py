"""A click choice whose values are a registry's names, read when the command runs (so an
entry a plugin registers after import is a valid choice, and ``--help`` lists it), and an
option whose help ends with names read when help is shown."""

from __future__ import annotations

import functools
import importlib
import sys
from collections.abc import Callable, Sequence
from importlib.metadata import entry_points
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


@functools.cache
def plugin_groups() -> frozenset[str]:
    """The entry-point groups of installed packages (their plugins are not imported)."""
    return frozenset(entry_points().groups)


def live(groups: tuple[str, ...], module: str) -> bool:
    """Whether help is read from the registries themselves rather than from what
    :mod:`llmdebate.commands.help_table` stores: a plugin of one of ``groups`` is installed,
    or ``module`` is imported already (this process has what the registries hold, a test's
    additions included)."""
    return module in sys.modules or bool(plugin_groups() & set(groups))


class StoredChoice(click.Choice):  # type: ignore[type-arg]
    """``click.Choice`` over the names of the registry ``registry`` (``module:NAME``): the
    stored built-in names ``stored`` unless :func:`live` says the registry could hold
    others."""

    def __init__(self, stored: Sequence[str], group: str, registry: str) -> None:
        self.stored, self.group, self.registry = tuple(stored), group, registry
        super().__init__(())

    @property  # type: ignore[override]
    def choices(self) -> Sequence[str]:
        module, _, name = self.registry.partition(":")
        if not live((self.group,), module):
            return self.stored
        return tuple(getattr(importlib.import_module(module), name).names())

    @choices.setter
    def choices(self, value: Sequence[Any]) -> None:  # click's __init__ sets it; names rule
        pass


class LateHelpOption(click.Option):
    """An option whose help ends with ``late_help()``, written when help is shown (a model
    string's: the backends registered by then, plugins' included)."""

    def __init__(self, *args: Any, late_help: Callable[[], str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.base_help = self.help or ""
        self.late_help = late_help

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        self.help = f"{self.base_help} {self.late_help()}".strip()
        return super().get_help_record(ctx)
