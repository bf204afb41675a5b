"""``get_model``: a model string to a wrapped backend.

Accepted strings: ``openai/<model>`` (also any OpenAI-compatible server with ``base_url`` or
``$OPENAI_BASE_URL``), ``anthropic/<model>``, ``hf/<model dir or .gguf file>``, ``local``
(the embedded Gemma 3 270M base model) and ``scripted`` (the test double; pass
``backend=ScriptedBackend(...)`` or its keyword arguments). Provider SDKs are imported only
when their backend is built.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from llmdebate.errors import UserError
from llmdebate.models.base import Backend
from llmdebate.models.pricing import Prices
from llmdebate.models.wrapper import Model

ACCEPTED = "openai/<model>, anthropic/<model>, hf/<dir or .gguf>, local, scripted"
_WRAPPER_OPTIONS = (
    "retry_base_delay",
    "retry_max_delay",
    "max_retry_after",
    "cache",
    "requests_per_minute",
    "tokens_per_minute",
)

# Local weights are large: every get_model("local") with the same settings shares one
# backend (one copy of the weights, one batching worker).
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
    wrapper_kw = {k: options.pop(k) for k in _WRAPPER_OPTIONS if k in options}
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
        raise UserError(f"a model string is required: one of {ACCEPTED}")
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
    provider, _, rest = model.partition("/")
    if provider in ("openai", "anthropic") and rest:
        return _build(model, provider, rest, base_url, api_key_env, options)
    if base_url is not None or api_key_env is not None:
        raise UserError(f"{model}: base_url and api_key_env apply only to openai/ and anthropic/")
    if provider == "hf" and rest:
        return _shared_hf(model, rest, cache_dir, options)
    if model == "local":
        return _shared_hf(model, None, cache_dir, options)
    if model == "scripted":
        from llmdebate.models.scripted import ScriptedBackend

        backend = options.pop("backend", None)
        if backend is not None:
            if options:
                raise UserError(f"scripted: pass backend= or its options, not both ({options})")
            return backend
        return _construct(model, ScriptedBackend, **options)
    raise UserError(f"unknown model {model!r}: use one of {ACCEPTED}")


def _build(
    model: str,
    provider: str,
    model_id: str,
    base_url: str | None,
    api_key_env: str | None,
    options: dict[str, Any],
) -> Backend:
    if provider == "openai":
        from llmdebate.models.openai_backend import OpenAIBackend as cls
    else:
        from llmdebate.models.anthropic_backend import AnthropicBackend as cls  # type: ignore[assignment]
    return _construct(
        model, cls, model, model_id, base_url=base_url, api_key_env=api_key_env, **options
    )


def _shared_hf(
    model: str, source: str | None, cache_dir: Path | None, options: dict[str, Any]
) -> Backend:
    from llmdebate.models.hf_backend import HFBackend

    key = (model, source, str(cache_dir), tuple(sorted(options.items())))
    with _HF_LOCK:
        if key not in _HF_SHARED:
            _HF_SHARED[key] = _construct(
                model, HFBackend, model, source, cache_dir=cache_dir, **options
            )
        return _HF_SHARED[key]


def _construct(model: str, cls: Any, *args: Any, **kwargs: Any) -> Backend:
    try:
        return cls(*args, **kwargs)
    except TypeError as exc:
        if "argument" in str(exc):
            message = str(exc).replace(cls.__init__.__qualname__, cls.__name__)
            raise UserError(f"{model}: {message}") from exc
        raise


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
        for attr in ("model", "tokenizer"):
            if getattr(backend, attr, None) is not None:
                setattr(backend, attr, None)
    return [str(key[0]) for key in drop]
