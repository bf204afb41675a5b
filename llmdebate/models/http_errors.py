"""Mapping provider SDK exceptions to :class:`TransientError` (retry) or ModelError (stop)."""

from __future__ import annotations

import os
from typing import Any

from llmdebate.errors import MissingAPIKeyError, ModelError
from llmdebate.models.base import TransientError, parse_retry_after

RETRYABLE_STATUS = {408, 409, 425, 429}


def is_retryable(status: int) -> bool:
    return status in RETRYABLE_STATUS or status >= 500


def map_sdk_error(exc: Exception, sdk: Any, name: str, secret: str | None) -> Exception:
    """The exception to raise for an SDK error (never containing the API key)."""
    message = _scrub(str(exc), secret)[:300]
    if isinstance(exc, sdk.APIStatusError):
        status = int(exc.status_code)
        if is_retryable(status):
            retry_after = parse_retry_after(getattr(exc.response, "headers", None))
            return TransientError(f"HTTP {status}: {message}", retry_after)
        return ModelError(f"{name}: HTTP {status}: {message}")
    if isinstance(exc, sdk.APITimeoutError):
        return TransientError("request timed out")
    if isinstance(exc, sdk.APIConnectionError):
        return TransientError(f"connection error: {message}")
    if isinstance(exc, (sdk.APIResponseValidationError, ValueError)):
        return TransientError(f"malformed response: {message}")
    return ModelError(f"{name}: {type(exc).__name__}: {message}")


def _scrub(text: str, secret: str | None) -> str:
    return text.replace(secret, "***") if secret else text


def is_local_url(url: str | None) -> bool:
    """True for a base URL on this machine (where a dummy API key is acceptable)."""
    if not url:
        return False
    from urllib.parse import urlparse

    host = (urlparse(url).hostname or "").lower()
    return host in {"localhost", "127.0.0.1", "::1", "0.0.0.0"} or host.startswith("127.")


def api_key(variable: str, provider: str, base_url: str | None, dummy: str) -> str:
    """The key in ``variable``; a server on this machine may do without one (``dummy`` is sent).

    Raises :class:`~llmdebate.errors.MissingAPIKeyError` naming the variable otherwise.
    """
    key = os.environ.get(variable)
    if key:
        return key
    if is_local_url(base_url):
        return dummy
    raise MissingAPIKeyError(variable, provider)
