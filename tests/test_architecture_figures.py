"""docs/architecture.md's figures are the tree's: the block ``scripts/architecture_figures.py``
writes is regenerated and compared with the page, and the floors table names every top-level
folder and module of the package."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "architecture.md"
PACKAGE = REPO / "llmdebate"


def _script() -> ModuleType:
    path = REPO / "scripts" / "architecture_figures.py"
    spec = importlib.util.spec_from_file_location("architecture_figures", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


FIGURES = _script()


def test_the_pages_figures_are_the_trees() -> None:
    text = DOC.read_text(encoding="utf-8")
    start, end = text.index(FIGURES.BEGIN), text.index(FIGURES.END) + len(FIGURES.END)
    assert text[start:end] == FIGURES.block(), (
        "docs/architecture.md's figures are stale: run python scripts/architecture_figures.py"
    )


def test_a_stale_figure_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    page = tmp_path / "architecture.md"
    stale = DOC.read_text(encoding="utf-8").replace("| modules | ", "| modules | 1", 1)
    page.write_text(stale, encoding="utf-8")
    monkeypatch.setattr(FIGURES, "DOC", page)
    assert FIGURES.main(["--check"]) == 1
    assert page.read_text(encoding="utf-8") == stale  # --check writes nothing
    assert FIGURES.main([]) == 0
    assert FIGURES.main(["--check"]) == 0
    assert page.read_text(encoding="utf-8") == DOC.read_text(encoding="utf-8")


def test_the_block_counts_what_it_says() -> None:
    block = FIGURES.block()
    modules = sorted(PACKAGE.rglob("*.py"))
    assert f"| modules | {len(modules):,} |" in block
    top = sorted(p.name for p in PACKAGE.glob("*.py") if p.name != "__init__.py")
    assert f"| top-level modules | {len(top)}: " + ", ".join(f"`{n}`" for n in top) in block
    longest = max(modules, key=lambda p: len(p.read_text(encoding="utf-8").splitlines()))
    assert f"`{longest.relative_to(PACKAGE).as_posix()}` " in block.split("longest files")[1]


def _floor_table() -> str:
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## The floors, top to bottom", 1)[1].split("\n## ", 1)[0]
    rows = (line.replace("\\|", ",") for line in section.splitlines())
    return "\n".join(row.split("|")[1] for row in rows if row.startswith("| `"))


def test_the_floor_table_names_every_folder_and_top_level_module() -> None:
    floors = set(re.findall(r"`([a-z_]+)[/.`]", _floor_table()))
    folders = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    top = {p.stem for p in PACKAGE.glob("*.py") if p.name != "__init__.py"}
    missing = sorted((folders | top) - floors)
    assert not missing, f"docs/architecture.md's floors table omits {missing}"
