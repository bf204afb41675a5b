"""The backend registry: model strings name entries of :data:`BACKENDS`.

A model string is ``<backend>/<model id>`` or a bare ``<backend>`` (``local``, ``scripted``).
Each entry is a *factory*, ``factory(spec) -> Backend``, registered with its options model (a
pydantic model validating the role's ``options`` in a config) and its capability words:

* ``http``: talks to a server (``base_url`` and ``api_key_env`` apply);
* ``model-id``: needs ``/<model id>`` after its name; ``no-model-id``: takes none;
* ``no-logprobs``: its replies carry no token logprobs (a role whose probabilities are
  asked with ``method: logprobs`` is refused when the config is read);
* ``wraps``: its model id is another model string (``logged/openai/gpt-4o``), whose backend
  it builds and wraps (:func:`inner_spec`); it takes that backend's options too.

A config's ``options`` of a model are checked against one options model (:func:`options_model`)
composed of the backend's own, the wrapper's (:class:`WrapperOptions`: retries, rate limits;
every model takes them) and, for a ``wraps`` backend, its inner backend's; it keeps the
``extra`` setting of the backend's own model, so a backend whose options say
``extra="forbid"`` has a misspelt option refused when the config is read, in one line with
its file:line:column and field path.

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
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, create_model

from llmdebate.errors import UserError
from llmdebate.models.interface import Backend
from llmdebate.registry import Entry, LateHelp, Registry


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


class WrapperOptions(BaseModel):
    """The options every model takes: the wrapper's retries and rate limits (taken out of
    the options before the backend is built)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    retry_base_delay: float | None = None
    """Seconds before the first retry (doubling after each)."""
    retry_max_delay: float | None = None
    """The longest wait between two retries, in seconds."""
    max_retry_after: float | None = None
    """The longest Retry-After a server may ask for before the call fails, in seconds."""
    requests_per_minute: float | None = None
    """A client-side limit on requests per minute."""
    tokens_per_minute: float | None = None
    """A client-side limit on tokens per minute."""
    cache: Any = None
    """A response cache object (from code; a config turns the cache off with use_cache)."""


WRAPPER_OPTIONS = tuple(WrapperOptions.model_fields)

BACKENDS: Registry[BackendFactory] = Registry(
    "backend", group="llmdebate.backends", builtins=("llmdebate.models.providers",)
)


def usage(entry: Entry[BackendFactory]) -> str:
    """How a model string names ``entry`` (e.g. ``openai/<model>``)."""
    if entry.can("wraps"):
        return f"{entry.name}/<model string>"
    if entry.can("model-id"):
        return f"{entry.name}/<model>"
    if entry.can("no-model-id"):
        return entry.name
    return f"{entry.name}[/<model>]"


def accepted() -> str:
    """Every accepted model-string form, for messages."""
    return ", ".join(usage(e) for e in BACKENDS.entries())


def model_strings_help() -> str:
    """What ``--help`` says of a model string: every registered backend's form."""
    return f"Backends: {accepted()}."


MODEL_STRING_HELP = LateHelp(model_strings_help, BACKENDS.group)
"""``--help`` metadata of a model-string field (:class:`~llmdebate.registry.LateHelp`)."""


def backend_entry(model: str) -> tuple[Entry[BackendFactory], str]:
    """The entry a model string names and its model id; a one-line UserError otherwise."""
    name, slash, model_id = model.partition("/")
    if name not in BACKENDS:
        raise UserError(f"unknown model {model!r}: use one of {accepted()}")
    entry = BACKENDS.entry(name)
    if (entry.can("model-id") or entry.can("wraps")) and not model_id:
        raise UserError(f"unknown model {model!r}: use one of {accepted()}")
    if entry.can("no-model-id") and slash:
        raise UserError(
            f"unknown model {model!r} ({name} takes no /<model>): use one of {accepted()}"
        )
    return entry, model_id


def takes_http(model: str) -> bool:
    """Whether ``model`` talks to a server (``base_url``, ``api_key_env`` apply): its
    backend's ``http``, or, for a ``wraps`` backend, its inner backend's."""
    name, _, model_id = model.partition("/")
    if name not in BACKENDS:
        return False
    entry = BACKENDS.entry(name)
    return entry.can("http") or (entry.can("wraps") and takes_http(model_id))


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


def _parts(model: str) -> list[type[BaseModel]]:
    """The options models a model string's options are checked by, its own first."""
    name, _, model_id = model.partition("/")
    if name not in BACKENDS:
        return []
    entry = BACKENDS.entry(name)
    own = entry.options
    if not (isinstance(own, type) and issubclass(own, BaseModel)):
        return []
    inner = _parts(model_id) if entry.can("wraps") else []
    return [own, *(p for p in inner if p is not WrapperOptions)]


def options_model(model: str) -> type[BaseModel] | None:
    """The one options model of ``model``'s ``options`` in a config: the backend's own, its
    inner backend's (a ``wraps`` backend) and :class:`WrapperOptions`, with the ``extra``
    setting of the backend's own (None: the backend declares no options model)."""
    parts = _parts(model)
    if not parts:
        return None
    config = ConfigDict(
        extra=parts[0].model_config.get("extra", "ignore"), use_attribute_docstrings=True
    )
    bases: tuple[type[BaseModel], ...] = (*dict.fromkeys(parts), WrapperOptions)
    composed: type[BaseModel] = create_model(f"{model.partition('/')[0]} options", __base__=bases)
    composed.model_config = {**composed.model_config, **config}
    composed.model_rebuild(force=True)
    return composed


def inner_spec(spec: BackendSpec) -> BackendSpec:
    """The spec of the backend a ``wraps`` backend wraps: its model id as the model string,
    and the options the wrapping backend's own options model does not declare."""
    own = BACKENDS.entry(spec.model.partition("/")[0]).options
    mine = set(own.model_fields) if isinstance(own, type) and issubclass(own, BaseModel) else set()
    inner_model = spec.model_id
    return replace(
        spec,
        model=inner_model,
        model_id=inner_model.partition("/")[2],
        options={k: v for k, v in spec.options.items() if k not in mine},
    )


def own_options(spec: BackendSpec) -> dict[str, Any]:
    """The options of ``spec`` the backend's own options model declares (a ``wraps``
    backend keeps these and hands the rest on, :func:`inner_spec`)."""
    own = BACKENDS.entry(spec.model.partition("/")[0]).options
    mine = set(own.model_fields) if isinstance(own, type) and issubclass(own, BaseModel) else set()
    return {k: v for k, v in spec.options.items() if k in mine}
