"""Where relative paths of a configuration are looked up."""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def resolve_path(path: str | Path) -> Path:
    """A relative path from the current folder if it exists there, else from the repo."""
    p = Path(path).expanduser()
    if p.is_absolute() or p.exists():
        return p
    alt = REPO_ROOT / p
    return alt if alt.exists() else p
