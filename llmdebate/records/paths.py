"""Where relative paths of a configuration are looked up.

A relative path is looked up in the current folder first, then in the repository root (the
folder holding the ``llmdebate`` package: a clone, or an editable install), so that
``datasets/samples/truthfulqa.jsonl`` or ``prompts/`` work from any working directory.
"""

from __future__ import annotations

from pathlib import Path

from llmdebate.errors import UserError

REPO_ROOT = Path(__file__).resolve().parents[2]


def candidate_paths(path: str | Path) -> list[Path]:
    """Every place a path is looked for, in order: itself if absolute, else the current
    folder then the repository root."""
    p = Path(path).expanduser()
    if p.is_absolute():
        return [p]
    return [Path.cwd() / p, REPO_ROOT / p]


def resolve_path(path: str | Path) -> Path:
    """A relative path from the current folder if it exists there, else from the repo.

    When neither exists, ``path`` is returned unchanged (see :func:`require_path` for an
    error naming the places tried).
    """
    p = Path(path).expanduser()
    if p.is_absolute() or p.exists():
        return p
    alt = REPO_ROOT / p
    return alt if alt.exists() else p


def missing_path_message(path: str | Path, what: str = "file") -> str:
    """``path: no such <what> (looked in A and B)``, one line."""
    tried = candidate_paths(path)
    where = " and ".join(str(t) for t in dict.fromkeys(tried))
    return f"{path}: no such {what} (looked in {where})"


def require_path(
    path: str | Path, *, what: str = "file", error: type[UserError] = UserError
) -> Path:
    """:func:`resolve_path`, raising ``error`` with a one-line message naming every place
    tried when the path exists nowhere."""
    found = resolve_path(path)
    if not found.exists():
        raise error(missing_path_message(path, what))
    return found
