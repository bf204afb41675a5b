"""Classifying failed requests (status codes and bodies, in one place), and checking API keys
before any request.

=====================================================  ==========================================
what happened                                          raised (and what it means)
=====================================================  ==========================================
HTTP 401 / 403                                         :class:`AuthenticationError`: stops the run
HTTP 404 (no such model, or a wrong base URL)          :class:`FatalModelError` naming the model
HTTP 429 ``insufficient_quota`` (billing)              :class:`FatalModelError`
HTTP 400 / 413 / 422 (prompt too long, content         :class:`RequestRejectedError` with the
filtered) and other 4xx                                server's message: the debate fails
HTTP 408 / 409 / 425 / 429 / 5xx, timeouts, connection  :class:`TransientError`: retried by the
errors, malformed bodies                               wrapper with backoff (``Retry-After``)
a header the HTTP library refuses to send (a key with  :class:`AuthenticationError` (not retried)
a newline, ...)
a body that cannot be encoded (a lone surrogate)       :class:`RequestRejectedError`
=====================================================  ==========================================

Messages never contain the API key: it is scrubbed from every text taken from the SDK, and a
malformed key is reported by the name of its environment variable only.
"""

from __future__ import annotations

import json
import os
from typing import Any

from llmdebate.errors import (
    AuthenticationError,
    FatalModelError,
    MissingAPIKeyError,
    ModelError,
    RequestRejectedError,
    UserError,
)
from llmdebate.models.interface import TransientError, parse_retry_after
from llmdebate.models.transport import loads

RETRYABLE_STATUS = {408, 409, 425, 429}
FATAL_CODES = {"insufficient_quota", "billing_hard_limit_reached", "account_deactivated"}
MESSAGE_LIMIT = 300


def is_retryable(status: int) -> bool:
    return status in RETRYABLE_STATUS or status >= 500


def reply_error(
    status: int,
    headers: Any,
    body: Any,
    name: str,
    secret: str | None,
    *,
    key_variable: str = "",
    server: str | None = None,
) -> Exception:
    """The exception for an HTTP reply with status >= 400: the one place where a status code
    and the server's body (JSON, or bytes read as JSON when they are) get their meaning."""
    if isinstance(body, bytes | bytearray):
        body = _json_or_text(bytes(body))
    message = scrub(_server_message(body, status), secret)
    code = _error_code(body)
    if status in (401, 403):
        hint = f" (check ${key_variable})" if key_variable else ""
        return AuthenticationError(f"{name}: HTTP {status}: {message}{hint}")
    if status == 404:
        where = f" at {server}" if server else ""
        return FatalModelError(
            f"{name}: HTTP 404: the server{where} has no model {name.partition('/')[2]!r} "
            f"or no such endpoint: {message}"
        )
    if code in FATAL_CODES:
        return FatalModelError(f"{name}: HTTP {status} {code}: {message}")
    if is_retryable(status):
        return TransientError(f"HTTP {status}: {message}", parse_retry_after(headers), status)
    return RequestRejectedError(f"{name}: HTTP {status}: {message}")


def failure_error(
    exc: BaseException, name: str, secret: str | None, *, key_variable: str = ""
) -> Exception:
    """The exception for a request that got no reply (timeout, connection error), or could
    not be built here (a header HTTP refuses, text that cannot be encoded)."""
    if isinstance(exc, TimeoutError):
        return TransientError("request timed out")
    local = _local_cause(exc)
    if local is not None:
        return local_error(local, name, key_variable)
    if isinstance(exc, ConnectionError):
        return TransientError(f"connection error: {scrub(str(exc), secret)}")
    if isinstance(exc, ModelError | UserError):
        return exc
    return ModelError(f"{name}: {type(exc).__name__}: {scrub(str(exc), secret)}")


def map_sdk_error(
    exc: Exception,
    sdk: Any,
    name: str,
    secret: str | None,
    *,
    key_variable: str = "",
    server: str | None = None,
) -> Exception:
    """The exception to raise for a provider SDK's error (never containing the API key):
    a status error goes to :func:`reply_error` through the SDK's public fields."""
    if isinstance(exc, sdk.APIStatusError):
        response = getattr(exc, "response", None)
        body = getattr(exc, "body", None)
        return reply_error(
            int(exc.status_code),
            getattr(response, "headers", None),
            body if body is not None else str(exc),
            name,
            secret,
            key_variable=key_variable,
            server=server,
        )
    if isinstance(exc, sdk.APITimeoutError):
        return TransientError("request timed out")
    local = _local_cause(exc)
    if local is not None:
        return local_error(local, name, key_variable)
    if isinstance(exc, sdk.APIConnectionError):
        return TransientError(f"connection error: {scrub(str(exc), secret)}")
    if isinstance(exc, (sdk.APIResponseValidationError, ValueError)):
        return TransientError(f"malformed response: {scrub(str(exc), secret)}")
    return ModelError(f"{name}: {type(exc).__name__}: {scrub(str(exc), secret)}")


def _json_or_text(raw: bytes) -> Any:
    try:
        return loads(raw)
    except ValueError:
        return raw.decode("utf-8", "replace").strip()


def _server_message(body: Any, status: int) -> str:
    """The server's own error message when the body has one, else the body's text."""
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            code = inner.get("code") or inner.get("type")
            text = inner["message"]
            return f"{text} [{code}]" if isinstance(code, str) and code else text
        if isinstance(inner, str):
            return inner
    text = body if isinstance(body, str) else json.dumps(body, default=str)
    return text or f"status {status}"


def _error_code(body: Any) -> str | None:
    inner = body.get("error", body) if isinstance(body, dict) else None
    value = inner.get("code") if isinstance(inner, dict) else None
    return value if isinstance(value, str) else None


def _local_cause(exc: BaseException) -> BaseException | None:
    """An error raised on this machine while building the request, if ``exc`` wraps one."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if type(current).__name__ == "LocalProtocolError" or isinstance(current, UnicodeError):
            return current
        current = current.__cause__ or current.__context__
    return None


def local_error(exc: BaseException, name: str, key_variable: str) -> ModelError | FatalModelError:
    """A request that could not be built here: not retried, and never quoting the key."""
    if isinstance(exc, UnicodeError):
        return RequestRejectedError(
            f"{name}: the request cannot be encoded ({type(exc).__name__}: "
            f"{getattr(exc, 'reason', 'invalid text')}); nothing was sent"
        )
    hint = f"${key_variable}" if key_variable else "the API key"
    return AuthenticationError(
        f"{name}: a request header could not be sent (a character not allowed in HTTP "
        f"headers; check {hint}); nothing was sent"
    )


def scrub(text: str, secret: str | None) -> str:
    """``text`` with the key (and its escaped and stripped forms) replaced by ``***``."""
    if secret:
        forms = {secret, secret.strip(), repr(secret)[1:-1], repr(secret.encode())[2:-1]}
        for form in sorted((f for f in forms if len(f) >= 4), key=len, reverse=True):
            text = text.replace(form, "***")
    return text[:MESSAGE_LIMIT]


def is_local_url(url: str | None) -> bool:
    """True for a base URL on this machine (where a dummy API key is acceptable)."""
    if not url:
        return False
    from urllib.parse import urlparse

    host = (urlparse(url).hostname or "").lower()
    return host in {"localhost", "127.0.0.1", "::1", "0.0.0.0"} or host.startswith("127.")


def check_key(variable: str, key: str) -> None:
    """Refuse a key that cannot travel in an HTTP header (naming the variable, not the key).

    Keys are printable ASCII without spaces; a trailing newline from ``$(cat file)`` or
    ``$'sk-…\\n'`` is the usual culprit.
    """
    for i, ch in enumerate(key):
        if not "\x21" <= ch <= "\x7e":
            what = {"\n": "a newline", "\r": "a carriage return", "\t": "a tab", " ": "a space"}
            problem = what.get(ch, f"the character U+{ord(ch):04X}")
            raise UserError(
                f"${variable} is not a valid API key: it contains {problem} "
                f"(character {i + 1} of {len(key)}), which HTTP headers do not allow; "
                "set it again without it"
            )


def api_key(
    variable: str, provider: str, base_url: str | None, dummy: str, *, named: bool = False
) -> str:
    """The key in ``variable``; a server on this machine may do without one (``dummy`` is sent)
    unless the variable was ``named`` in the settings (``api_key_env``): a named variable that
    is unset is an error whatever the URL.

    Raises :class:`~llmdebate.errors.MissingAPIKeyError` naming the variable when it is not
    set, and a :class:`~llmdebate.errors.UserError` when its value cannot be sent.
    """
    key = os.environ.get(variable)
    if key:
        check_key(variable, key)
        return key
    if is_local_url(base_url) and not named:
        return dummy
    raise MissingAPIKeyError(variable, provider, named=named)
