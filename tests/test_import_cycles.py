"""No import cycle in the package, counting the imports inside functions.

import-linter's layer contract sees only arrows between packages; a cycle inside one package
(or one hidden by an import inside a function) passes it. This walks the source of every
module instead (:mod:`import_graph`).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from import_graph import cycles, find_cycle, import_graph

import llmdebate

ROOT = Path(llmdebate.__file__).parent


def test_the_package_has_no_import_cycle() -> None:
    graph = import_graph(ROOT, "llmdebate")
    assert len(graph) > 50  # the walk found the package's modules
    cycle = find_cycle(graph)
    knots = cycles(graph)
    assert cycle is None, (
        f"import cycle: {' -> '.join(cycle)}"
        + "".join(f"\n  modules importing each other: {', '.join(k)}" for k in knots)
    )


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "pkg"
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


def test_an_import_inside_a_function_closes_a_cycle(tmp_path: Path) -> None:
    root = _package(
        tmp_path,
        {
            "__init__.py": "",
            "a.py": "from pkg.b import x\n",
            "b.py": """
                x = 1
                def f():
                    from pkg import a
                    return a
            """,
        },
    )
    graph = import_graph(root, "pkg")
    assert graph["pkg.b"] == {"pkg.a"}
    assert find_cycle(graph) in (["pkg.a", "pkg.b", "pkg.a"], ["pkg.b", "pkg.a", "pkg.b"])
    assert cycles(graph) == [["pkg.a", "pkg.b"]]


def test_relative_imports_resolve_and_type_checking_imports_do_not_count(tmp_path: Path) -> None:
    root = _package(
        tmp_path,
        {
            "__init__.py": "",
            "sub/__init__.py": "from .inner import y\n",
            "sub/inner.py": """
                from typing import TYPE_CHECKING
                from .. import top
                if TYPE_CHECKING:
                    from pkg.sub import z
                y = 2
            """,
            "top.py": """
                import os
                try:
                    import pkg.sub.inner as inner
                except ImportError:
                    inner = None
            """,
        },
    )
    graph = import_graph(root, "pkg")
    assert graph["pkg.sub"] == {"pkg.sub.inner"}
    assert graph["pkg.sub.inner"] == {"pkg.top"}  # not pkg.sub: that import never runs
    assert graph["pkg.top"] == {"pkg.sub.inner"}
    assert cycles(graph) == [["pkg.sub.inner", "pkg.top"]]


def test_an_acyclic_package_has_no_cycle(tmp_path: Path) -> None:
    root = _package(
        tmp_path,
        {"__init__.py": "", "a.py": "import pkg.b\n", "b.py": "from . import c\n", "c.py": ""},
    )
    graph = import_graph(root, "pkg")
    assert graph == {"pkg": set(), "pkg.a": {"pkg.b"}, "pkg.b": {"pkg.c"}, "pkg.c": set()}
    assert find_cycle(graph) is None and cycles(graph) == []
