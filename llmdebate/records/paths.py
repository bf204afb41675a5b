"""Where relative paths of a configuration are looked up.

A relative path is looked up in the current folder first, then in the repository root (the
folder holding the ``llmdebate`` package: a clone, or an editable install), so that
``datasets/samples/truthfulqa.jsonl`` or ``prompts/`` work from any working directory. A
path written in a file (a config's ``prompts_dir``, a run's recorded config) is looked up in
that file's folder before both (:func:`anchored`).
"""

from __future__ import annotations

from pathlib import Path

from llmdebate.errors import UserError

REPO_ROOT = Path(__file__).resolve().parents[2]


def candidate_paths(path: str | Path, folder: Path | None = None) -> list[Path]:
    """Every place a path is looked for, in order: itself if absolute, else ``folder`` (the
    folder of the file that names it), the current folder, then the repository root."""
    p = Path(path).expanduser()
    if p.is_absolute():
        return [p]
    first = [folder / p] if folder is not None else []
    return list(dict.fromkeys([*first, Path.cwd() / p, REPO_ROOT / p]))


def anchored(path: str | Path, folder: Path | None) -> Path | None:
    """The absolute path of the first of :func:`candidate_paths` that exists (a relative
    path written in a file under ``folder`` is read against that folder first); None: it
    exists nowhere."""
    for candidate in candidate_paths(path, folder):
        if candidate.exists():
            return candidate.resolve()
    return None


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


def missing_path_message(
    path: str | Path, what: str = "file", folder: Path | None = None
) -> str:
    """``path: no such <what> (looked in A and B)``, one line."""
    tried = candidate_paths(path, folder)
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
