"""The package list in pyproject.toml matches the tree, and the prompts ship with a wheel."""

from __future__ import annotations

import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent


def test_every_package_is_listed_and_the_prompts_are_mapped() -> None:
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    on_disk = {
        ".".join(p.parent.relative_to(ROOT).parts)
        for p in (ROOT / "llmdebate").rglob("__init__.py")
    }
    data = {  # folders of data files only: listed so that setuptools ships them quietly
        ".".join(d.relative_to(ROOT).parts)
        for d in (ROOT / "llmdebate").rglob("*")
        if d.is_dir() and d.name.isidentifier() and d.name != "__pycache__"
        and not (d / "__init__.py").exists()
    } | {"llmdebate._prompts.text"}
    assert set(cfg["packages"]) == on_disk | data | {"llmdebate._prompts"}
    assert cfg["package-dir"]["llmdebate._prompts"] == "prompts"
    assert list((ROOT / "prompts").glob("*.j2"))
