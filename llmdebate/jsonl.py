"""Reading JSON Lines files and turning validation errors into one-line messages."""

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


def iter_json_lines(
    path: Path, error: type[UserError] = UserError
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) for every non-blank line; a bad line raises ``error``
    naming the file and the line."""
    with path.open("rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            try:
                data = json.loads(raw)
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                msg = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
                raise error(f"{path}:{lineno}: not valid JSON ({msg})") from None
            if not isinstance(data, dict):
                raise error(f"{path}:{lineno}: expected a JSON object")
            yield lineno, data
