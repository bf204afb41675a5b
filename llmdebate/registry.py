"""One shape for every extension point: a named :class:`Registry` of entries.

Protocols, backends, export formats, executors and probability methods are each one
:class:`Registry`. An entry carries its name, the object it names (a class, a function, an
instance), an optional options model (a pydantic model validating the entry's settings) and
its capabilities (a frozen set of words, or any object the extension point defines). Choices
in ``--help``, config validation and error messages all come from :meth:`Registry.names`,
never from a list written by hand::

    FORMATS: Registry[Format] = Registry("export format", group="llmdebate.formats",
                                         builtins=("llmdebate.export.formats",))

    @FORMATS.register("trl-dpo", capabilities={"offline"})
    class TrlDpo(Format): ...

    FORMATS.get("trl-dpo")          # the class; UserError naming the choices otherwise
    FORMATS.names()                 # ('trl-dpo', ...), builtins first, then entry points

Built-in entries live in the modules named by ``builtins``, imported the first time the
registry is read, so a registry can be declared in a low layer while its entries sit above
it. Third-party packages add entries through the Python entry-point ``group``: each entry
point names a module (or an object) whose import registers its entries.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any, Generic, TypeVar

from llmdebate.errors import UserError

T = TypeVar("T")
V = TypeVar("V")


@dataclass(frozen=True)
class Entry(Generic[T]):
    """One registered implementation: its name, the object, its options and capabilities."""

    name: str
    value: T
    options: type[Any] | None = None
    capabilities: frozenset[str] = field(default_factory=frozenset)
    summary: str = ""

    def can(self, capability: str) -> bool:
        """Whether the entry declares ``capability``."""
        return capability in self.capabilities


class Registry(Generic[T]):
    """A name → :class:`Entry` map for one extension point (see the module docstring)."""

    def __init__(
        self,
        kind: str,
        *,
        group: str | None = None,
        builtins: Iterable[str] = (),
    ) -> None:
        self.kind = kind
        self.group = group
        self._builtins = tuple(builtins)
        self._entries: dict[str, Entry[T]] = {}
        self._added: set[str] = set()
        """Names added by a plugin's entry point, or after loading (a test's, a script's)."""
        self._in_plugins = False
        self._loaded = False
        self._loading = False
        self._plugins_loaded = False
        self._lock = threading.RLock()

    # -- adding entries -------------------------------------------------------------------
    def add(
        self,
        name: str,
        value: T,
        *,
        options: type[Any] | None = None,
        capabilities: Iterable[str] = (),
        summary: str = "",
        replace: bool = False,
    ) -> Entry[T]:
        """Register ``value`` under ``name``; a second entry of one name is an error unless
        ``replace`` (tests and plugins that deliberately override a built-in)."""
        if not name or name != name.strip():
            raise ValueError(f"{self.kind} name {name!r} is empty or has surrounding spaces")
        with self._lock:
            if name in self._entries and not replace and self._entries[name].value is not value:
                raise ValueError(f"{self.kind} {name!r} is registered already")
            doc = summary or _first_line(getattr(value, "__doc__", None))
            entry = Entry(name, value, options, frozenset(capabilities), doc)
            self._entries[name] = entry
            if self._in_plugins or self._loaded:
                self._added.add(name)
            return entry

    def register(
        self,
        name: str,
        *,
        options: type[Any] | None = None,
        capabilities: Iterable[str] = (),
        summary: str = "",
        replace: bool = False,
    ) -> Callable[[V], V]:
        """Decorator form of :meth:`add`: ``@REGISTRY.register("name", ...)``."""
        caps = tuple(capabilities)

        def decorate(value: V) -> V:
            self.add(
                name,
                value,  # type: ignore[arg-type]
                options=options,
                capabilities=caps,
                summary=summary,
                replace=replace,
            )
            return value

        return decorate

    def remove(self, name: str) -> None:
        """Drop ``name`` (tests that register a temporary entry clean up with this)."""
        with self._lock:
            self._entries.pop(name, None)

    # -- reading entries ------------------------------------------------------------------
    def load(self) -> None:
        """Import the built-in modules and the entry points of :attr:`group`, once."""
        if self._loaded:
            return
        with self._lock:
            if self._loaded or self._loading:
                return
            self._loading = True
            try:
                for module in self._builtins:
                    importlib.import_module(module)
                self._plugins_loaded = False  # read them anew: a test may have added one
                self._load_plugins()
                self._loaded = True
            finally:
                self._loading = False

    def load_plugins(self) -> None:
        """Import the entry points of :attr:`group` alone, once, not the built-in modules:
        what a caller that imports built-ins one at a time (the command line) needs to
        know every name."""
        with self._lock:
            if not self._plugins_loaded:
                self._load_plugins()

    def _load_plugins(self) -> None:
        if self._plugins_loaded:
            return
        self._plugins_loaded = True
        if not self.group:
            return
        self._in_plugins = True
        try:
            for ep in entry_points(group=self.group):
                try:
                    ep.load()
                except Exception as exc:  # a broken plugin names itself
                    self._plugins_loaded = False
                    raise UserError(
                        f"{self.kind} plugin {ep.name!r} ({ep.value}) of entry-point "
                        f"group {self.group!r} failed to load: {exc}"
                    ) from exc
        finally:
            self._in_plugins = False

    def registered(self, name: str) -> Entry[T] | None:
        """The entry called ``name`` if it is registered by now, loading nothing (a caller
        that imported the module registering it)."""
        return self._entries.get(name)

    def registered_names(self) -> tuple[str, ...]:
        """The names registered by now, loading nothing."""
        return tuple(self._entries)

    def names(self) -> tuple[str, ...]:
        """Every registered name, in registration order (built-ins first)."""
        self.load()
        return tuple(self._entries)

    def builtin_names(self) -> tuple[str, ...]:
        """The names the package itself registers (its built-in modules), without any a
        plugin or a test added: what the package's own tests range over."""
        self.load()
        return tuple(n for n in self._entries if n not in self._added)

    def entries(self) -> tuple[Entry[T], ...]:
        self.load()
        return tuple(self._entries.values())

    def entry(self, name: str, *, where: str = "") -> Entry[T]:
        """The entry called ``name``; a :class:`UserError` naming the choices otherwise.

        ``where`` says where the name came from (a config field, a flag) for the message.
        """
        self.load()
        found = self._entries.get(name) if isinstance(name, str) else None
        if found is None:
            raise UserError(self.unknown(name, where=where))
        return found

    def get(self, name: str, *, where: str = "") -> T:
        """The object registered as ``name`` (see :meth:`entry`)."""
        return self.entry(name, where=where).value

    def unknown(self, name: object, *, where: str = "") -> str:
        """The one-line message for a name that is not registered."""
        at = f"{where}: " if where else ""
        return f"{at}unknown {self.kind} {name!r}: choose from {', '.join(self.names())}"

    def with_capability(self, capability: str) -> tuple[str, ...]:
        """The names of the entries declaring ``capability``."""
        return tuple(e.name for e in self.entries() if e.can(capability))

    def __contains__(self, name: object) -> bool:
        self.load()
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {len(self._entries)} entries)"


@dataclass(frozen=True)
class LateHelp:
    """Metadata on a config field (``Annotated[str, LateHelp(...)]``): more of its
    ``--help`` text, written when help is shown (so it names what plugins registered);
    ``group``: the entry-point group of those plugins."""

    text: Callable[[], str]
    group: str | None = None


def _first_line(doc: str | None) -> str:
    return doc.strip().splitlines()[0] if doc and doc.strip() else ""
