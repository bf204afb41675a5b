"""Typed errors. A :class:`UserError` is printed by the CLI as one line, with no traceback."""

from __future__ import annotations


class LLMDebateError(Exception):
    """Base class of every error this package raises on purpose."""


class UserError(LLMDebateError):
    """Bad input from the user: a parameter, a file, an environment variable.

    The message is one line that names the problem; the CLI prints it and exits non-zero.
    """


class ConfigError(UserError):
    """A configuration value outside its allowed range."""


class FieldError(ValueError):
    """A validator's error about a field inside the value it validates (``path``: its keys
    below the validated value), so that a config's error names that field's own line."""

    def __init__(self, path: tuple[str | int, ...], message: str) -> None:
        super().__init__(message)
        self.path = path


class RuleError(UserError):
    """A combination rule that does not parse or names a missing subclaim."""


class TranscriptError(UserError):
    """A malformed transcript file (the message names file and line)."""


class DatasetError(UserError):
    """An invalid dataset line (the message names file and line)."""


class MissingExtraError(UserError):
    """An optional dependency is not installed; the message names the extra to install."""

    def __init__(self, package: str, extra: str) -> None:
        super().__init__(
            f"the '{package}' package is not installed: pip install 'llmdebate[{extra}]'"
        )
        self.package = package
        self.extra = extra


class MissingAPIKeyError(UserError):
    """A provider's API key is not set; the message names the environment variable."""

    def __init__(
        self, variable: str, provider: str, *, named: bool = False, field: str | None = None
    ) -> None:
        if named:  # the settings named the variable: say which field did
            where = f"{field}.api_key_env: " if field else ""
            text = f"{where}{provider} needs an API key: the variable {variable} is not set"
        else:
            where = f"{field}: " if field else ""
            also = f" (or name another in {field}.api_key_env)" if field else ""
            text = f"{where}{provider} needs an API key: set the environment variable {variable}"
            text += also
        super().__init__(text)
        self.variable = variable
        self.provider = provider
        self.named = named


class ModelError(LLMDebateError):
    """A model call that failed; it ends the debate that made it (recorded ``failed``).

    Subclasses say why. Errors that no debate can survive derive from :class:`FatalModelError`
    instead, and stop the run.
    """


class InvalidOutputError(ModelError):
    """A model's reply that did not validate against the expected schema after re-asking."""


class RequestRejectedError(ModelError):
    """The server refused this request for what it contains (HTTP 400/413/422: the prompt is
    too long, content filtered, an unencodable string): not retried, the debate fails."""


class RetriesExhaustedError(ModelError):
    """Transient failures (429, 5xx, timeouts, malformed bodies) outlasted every retry."""


class FatalModelError(LLMDebateError):
    """A model failure no debate can survive: the run stops (and still writes its summary)."""


class AuthenticationError(FatalModelError):
    """The server refused the credentials (HTTP 401/403) or the key is malformed."""


def require(module: str, extra: str) -> object:
    """Import an optional module, or raise :class:`MissingExtraError` naming the extra."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise MissingExtraError(module.split(".")[0], extra) from exc


class ProtocolViolation(LLMDebateError):
    """An agent broke the protocol (too many subclaims, an index out of range, a bad bit)."""
