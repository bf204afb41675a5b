"""The backend registry: model strings name entries of :data:`BACKENDS`.

A model string is ``<backend>/<model id>`` or a bare ``<backend>`` (``local``, ``scripted``).
Each entry is a *factory*, ``factory(spec) -> Backend``, registered with its options model (a
pydantic model validating the role's ``options`` in a config) and its capability words:

* ``http``: talks to a server (``base_url`` and ``api_key_env`` apply);
* ``model-id``: needs ``/<model id>`` after its name; ``no-model-id``: takes none.

Built-in backends are registered in :mod:`llmdebate.models.providers`, each beside the lazy
import of its module (a provider SDK is imported only when its backend is built); other
packages add theirs through the entry-point group ``llmdebate.backends``::

    from llmdebate.models.backends import BACKENDS, BackendSpec, construct

    @BACKENDS.register("echo", options=EchoOptions, capabilities={"http", "model-id"})
    def echo(spec: BackendSpec) -> Backend:
        from my_package.echo import EchoBackend
        return construct(spec, EchoBackend, spec.model, spec.model_id, **spec.options)

What a backend can do at run time is its :class:`~llmdebate.models.profile.BackendProfile`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llmdebate.errors import UserError
from llmdebate.models.interface import Backend
from llmdebate.registry import Entry, Registry


@dataclass(frozen=True)
class BackendSpec:
    """What a backend factory is given: the model string, split, and the role's settings."""

    model: str
    """The whole model string (the backend's ``name``)."""
    model_id: str = ""
    """What follows ``<backend>/`` ('' for a bare name)."""
    base_url: str | None = None
    api_key_env: str | None = None
    cache_dir: Path | None = None
    options: dict[str, Any] = field(default_factory=dict)
    """The backend's options (the wrapper's own are taken out before)."""


BackendFactory = Callable[[BackendSpec], Backend]

BACKENDS: Registry[BackendFactory] = Registry(
    "backend", group="llmdebate.backends", builtins=("llmdebate.models.providers",)
)


def usage(entry: Entry[BackendFactory]) -> str:
    """How a model string names ``entry`` (e.g. ``openai/<model>``)."""
    if entry.can("model-id"):
        return f"{entry.name}/<model>"
    if entry.can("no-model-id"):
        return entry.name
    return f"{entry.name}[/<model>]"


def accepted() -> str:
    """Every accepted model-string form, for messages."""
    return ", ".join(usage(e) for e in BACKENDS.entries())


def backend_entry(model: str) -> tuple[Entry[BackendFactory], str]:
    """The entry a model string names and its model id; a one-line UserError otherwise."""
    name, slash, model_id = model.partition("/")
    if name not in BACKENDS:
        raise UserError(f"unknown model {model!r}: use one of {accepted()}")
    entry = BACKENDS.entry(name)
    if entry.can("model-id") and not model_id:
        raise UserError(f"unknown model {model!r}: use one of {accepted()}")
    if entry.can("no-model-id") and slash:
        raise UserError(
            f"unknown model {model!r} ({name} takes no /<model>): use one of {accepted()}"
        )
    return entry, model_id


def construct(spec: BackendSpec, cls: Any, *args: Any, **kwargs: Any) -> Backend:
    """``cls(*args, **kwargs)``; an unknown or missing keyword is a UserError naming the
    model string (a misspelt option in a config)."""
    try:
        backend: Backend = cls(*args, **kwargs)
    except TypeError as exc:
        if "argument" in str(exc):
            message = str(exc).replace(cls.__init__.__qualname__, cls.__name__)
            raise UserError(f"{spec.model}: {message}") from exc
        raise
    return backend
