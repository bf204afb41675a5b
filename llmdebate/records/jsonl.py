"""Reading JSON Lines files and turning validation errors into one-line messages.

Every problem is reported as one line ``file:line[:column]: problem``: JSON syntax errors give
the line and the (character) column, invalid UTF-8 gives the line and the byte column.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from llmdebate.errors import UserError


def first_error(exc: ValidationError, default_loc: str = "value") -> str:
    """``field.path: message`` for the first error of a pydantic validation."""
    err = exc.errors()[0]
    loc = ".".join(str(x) for x in err["loc"]) or default_loc
    msg = str(err.get("msg", "invalid value")).removeprefix("Value error, ")
    if err.get("type") == "extra_forbidden":
        msg = "unknown field"
    return f"{loc}: {msg}"


def json_error_message(exc: json.JSONDecodeError) -> str:
    """``column: problem`` for a JSON syntax error in one line of text.

    ``json`` ends some messages with a dangling "at" (``Invalid control character at``); the
    offending character is named instead.
    """
    msg = exc.msg
    if msg.endswith(" at"):
        msg = msg[: -len(" at")]
        if 0 <= exc.pos < len(exc.doc):
            msg += f" {_describe_char(exc.doc[exc.pos])}"
    return f"{exc.colno}: not valid JSON ({msg})"


def _describe_char(ch: str) -> str:
    return f"U+{ord(ch):04X}" + (f" {ch!r}" if ch.isprintable() else "")


def decode_line(raw: bytes, *, first: bool = False) -> str:
    """``raw`` decoded as UTF-8 (a byte-order mark is dropped from the first line).

    Raises :class:`UnicodeDecodeError`; :func:`utf8_error_message` turns it into a message.
    """
    if first and raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    return raw.decode("utf-8")


def utf8_error_message(exc: UnicodeDecodeError) -> str:
    """``column: problem`` for invalid UTF-8 in one line (the column counts bytes, from 1)."""
    bad = exc.object[exc.start : exc.end]
    return f"{exc.start + 1}: invalid UTF-8 (byte {' '.join(f'0x{b:02x}' for b in bad)})"


def find_surrogate(value: Any, loc: str = "") -> str | None:
    """The dotted path (``question``, ``choices.2``, ``meta.x``) of the first string in ``value``
    that holds a lone surrogate (``"\\ud800"`` is valid JSON but no text can encode it), or None.
    Keys of nested objects are checked too."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return loc or "value"
        return None
    if isinstance(value, dict):
        for key, sub in value.items():
            where = f"{loc}.{key}" if loc else str(key)
            if isinstance(key, str) and find_surrogate(key) is not None:
                return where
            found = find_surrogate(sub, where)
            if found is not None:
                return found
    elif isinstance(value, list | tuple):
        for i, sub in enumerate(value):
            found = find_surrogate(sub, f"{loc}.{i}" if loc else str(i))
            if found is not None:
                return found
    return None


def surrogate_message(value: Any) -> str | None:
    """``field: problem`` when a string in ``value`` holds a lone surrogate, else None."""
    loc = find_surrogate(value)
    if loc is None:
        return None
    return f"{loc}: a lone surrogate (an unpaired \\ud800-\\udfff escape) is not text"


def iter_json_lines(
    path: Path, error: type[UserError] = UserError, *, text_only: bool = False
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) for every non-blank line; a bad line raises ``error``
    naming the file, the line and, for syntax and encoding errors, the column.

    With ``text_only``, an object holding a lone surrogate in any string is a bad line too
    (the message names the field).
    """
    with path.open("rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            try:
                text = decode_line(raw, first=lineno == 1)
            except UnicodeDecodeError as exc:
                raise error(f"{path}:{lineno}:{utf8_error_message(exc)}") from None
            try:
                data = json.loads(text)
            except json.JSONDecodeError as exc:
                raise error(f"{path}:{lineno}:{json_error_message(exc)}") from None
            except RecursionError:
                raise error(f"{path}:{lineno}: not valid JSON (nested too deeply)") from None
            if not isinstance(data, dict):
                raise error(f"{path}:{lineno}: expected a JSON object")
            if text_only:
                problem = surrogate_message(data)
                if problem is not None:
                    raise error(f"{path}:{lineno}: {problem}")
            yield lineno, data
