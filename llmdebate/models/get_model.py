"""``get_model``: a model string to a wrapped backend.

A model string names an entry of the backend registry
(:data:`~llmdebate.models.backends.BACKENDS`): ``openai/<model>`` (also any OpenAI-compatible
server with ``base_url`` or ``$OPENAI_BASE_URL``), ``openai-completions/<model>``,
``anthropic/<model>``, ``hf/<model dir or .gguf file>``, ``local`` (the embedded Gemma 3 270M
base model), ``scripted`` (the test double; pass ``backend=ScriptedBackend(...)`` or its
keyword arguments), and those of installed plugins. Provider SDKs are imported only when
their backend is built.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from llmdebate.errors import UserError
from llmdebate.models.backends import (
    BACKENDS,
    WRAPPER_OPTIONS,
    BackendSpec,
    accepted,
    backend_entry,
    construct,
    takes_http,
)
from llmdebate.models.interface import Backend
from llmdebate.models.pricing import Prices
from llmdebate.models.wrapper import Model

ACCEPTED = "openai/<model>, anthropic/<model>, hf/<dir or .gguf>, local, scripted"
"""The built-in model-string forms (:func:`~llmdebate.models.backends.accepted` adds plugins')."""

# Local weights are large: every get_model("local") with the same settings shares one
# backend (one batching worker); backends on the same weights with other settings (another
# adapter) share one copy of the weights (llmdebate.models.lora).
_HF_SHARED: dict[tuple[Any, ...], Backend] = {}
_HF_LOCK = threading.Lock()


def get_model(
    model: str,
    *,
    base_url: str | Sequence[str] | None = None,
    api_key_env: str | None = None,
    cache_dir: Path | None = None,
    use_cache: bool = True,
    max_concurrency: int | None = None,
    max_retries: int = 4,
    prices: Prices | None = None,
    **options: Any,
) -> Model:
    """Build the :class:`Model` for a model string.

    ``cache_dir`` holds the response cache (``responses.sqlite``) and local weights
    (default ``$LLMDEBATE_CACHE_DIR`` or ``~/.cache/llmdebate``). ``max_concurrency`` bounds
    requests in flight (None: 8 for HTTP providers, 64 for local and scripted). Wrapper
    options: ``retry_base_delay``, ``retry_max_delay``, ``max_retry_after``,
    ``requests_per_minute``, ``tokens_per_minute``, ``cache``; the rest go to the backend
    (e.g. ``timeout`` in seconds for HTTP backends, ``max_batch``, ``backend``).
    """
    wrapper_kw = {k: options.pop(k) for k in WRAPPER_OPTIONS if k in options}
    backend = create_backend(
        model, base_url=base_url, api_key_env=api_key_env, cache_dir=cache_dir, **options
    )
    return Model(
        backend,
        cache_dir=cache_dir,
        use_cache=use_cache,
        max_concurrency=max_concurrency,
        max_retries=max_retries,
        prices=prices,
        **wrapper_kw,
    )


def create_backend(
    model: str,
    *,
    base_url: str | Sequence[str] | None = None,
    api_key_env: str | None = None,
    cache_dir: Path | None = None,
    **options: Any,
) -> Backend:
    """The bare backend for a model string (no cache, retries or accounting).

    ``base_url`` a list of several URLs: one backend per server behind a
    :class:`~llmdebate.models.replicas.ReplicaBackend` (least-loaded, with fail-over).
    """
    if not isinstance(model, str) or not model.strip():
        raise UserError(f"a model string is required: one of {accepted()}")
    model = model.strip()
    if base_url is not None and not isinstance(base_url, str):
        urls = list(base_url)
        if not urls:
            raise UserError(f"{model}: base_url is an empty list")
        if len(urls) > 1:
            from llmdebate.models.replicas import ReplicaBackend

            return ReplicaBackend(
                [
                    create_backend(
                        model, base_url=u, api_key_env=api_key_env, cache_dir=cache_dir, **options
                    )
                    for u in urls
                ]
            )
        base_url = urls[0]
    entry, model_id = backend_entry(model)
    if (base_url is not None or api_key_env is not None) and not takes_http(model):
        servers = ", ".join(f"{n}/" for n in BACKENDS.with_capability("http"))
        raise UserError(f"{model}: base_url and api_key_env apply only to {servers}")
    spec = BackendSpec(model, model_id, base_url, api_key_env, cache_dir, dict(options))
    return entry.value(spec)


def shared_local(spec: BackendSpec, source: str | None) -> Backend:
    """The local backend of ``spec``, shared by every model string with the same settings."""
    from llmdebate.models.cache import default_cache_dir
    from llmdebate.models.hf_backend import HFBackend

    options = json.dumps(spec.options, sort_keys=True, default=repr)  # act_adapters: a dict
    # the cache folder as resolved now: a backend made under another $LLMDEBATE_CACHE_DIR
    # holds other weights
    where = spec.cache_dir if spec.cache_dir is not None else default_cache_dir()
    key = (spec.model, source, str(where), options)
    with _HF_LOCK:
        if key not in _HF_SHARED:
            _HF_SHARED[key] = construct(
                spec, HFBackend, spec.model, source, cache_dir=spec.cache_dir, **spec.options
            )
        return _HF_SHARED[key]


def shared_local_models() -> list[str]:
    """The model strings whose local backends (weights) the registry holds now."""
    with _HF_LOCK:
        return [str(key[0]) for key in _HF_SHARED]


def release_local(keep: Iterable[str] = ()) -> list[str]:
    """Forget the shared local backends of every model string not in ``keep`` and drop their
    weights (a later ``get_model`` of one loads it again). A training loop calls this when a
    checkpoint replaces a model, so that memory stays flat over a long run. Returns the model
    strings released. Close a backend's worker (``Model.aclose``) before releasing it."""
    kept = set(keep)
    with _HF_LOCK:
        drop = [key for key in _HF_SHARED if key[0] not in kept]
        backends = [_HF_SHARED.pop(key) for key in drop]
    for backend in backends:
        release = getattr(backend, "release", None)
        if callable(release):
            release()
        for attr in ("model", "tokenizer"):
            if getattr(backend, attr, None) is not None:
                setattr(backend, attr, None)
    return [str(key[0]) for key in drop]
