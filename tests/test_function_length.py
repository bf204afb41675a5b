"""No function of the package is longer than 80 lines, read from the source (no module is
imported).

A function's length runs from its ``def`` line to its last line, docstring and blank lines
included, decorators not. Every ``def`` and ``async def`` counts: methods and functions nested
in others too (a nested function's lines count for it and for the function around it).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "llmdebate"
LIMIT = 80


def function_lengths(root: Path) -> list[tuple[str, int, str, int]]:
    """(file relative to ``root``'s parent, def line, qualified name, lines) of every
    function in the ``.py`` files under ``root``."""
    out: list[tuple[str, int, str, int]] = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        rel = path.relative_to(root.parent).as_posix()
        out.extend((rel, line, name, n) for line, name, n in _lengths(tree, ""))
    return out


def _lengths(node: ast.AST, prefix: str) -> list[tuple[int, str, int]]:
    out: list[tuple[int, str, int]] = []
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
            name = prefix + child.name
            assert child.end_lineno is not None
            out.append((child.lineno, name, child.end_lineno - child.lineno + 1))
            out.extend(_lengths(child, name + "."))
        elif isinstance(child, ast.ClassDef):
            out.extend(_lengths(child, prefix + child.name + "."))
        else:
            out.extend(_lengths(child, prefix))
    return out


def too_long(root: Path, limit: int = LIMIT) -> list[str]:
    """``file:line: name is N lines`` for every function under ``root`` over ``limit`` lines."""
    return [
        f"{rel}:{line}: {name} is {n} lines (at most {limit})"
        for rel, line, name, n in function_lengths(root)
        if n > limit
    ]


def test_no_function_of_the_package_is_over_80_lines() -> None:
    found = too_long(ROOT)
    assert not found, "functions over 80 lines:\n" + "\n".join(found)


def test_the_walker_names_a_long_function_its_method_and_nested_function(
    tmp_path: Path,
) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    body = "\n".join(f"    x{i} = {i}" for i in range(79))
    (pkg / "sub" / "m.py").write_text(
        "import os\n\n\n"
        f"def exactly_80():\n{body}\n\n\n"  # def line + 79 lines: at the limit
        f"async def over():\n{body}\n    return x0\n\n\n"  # 81 lines
        "class C:\n"
        "    @property\n"
        "    def short(self):\n        return 1\n\n"
        "    def outer(self):\n"
        f"        def inner():\n{body.replace('    ', '            ')}\n"
        "            return 1\n"
        "        return inner\n",
        encoding="utf-8",
    )
    lengths = {name: (rel, line, n) for rel, line, name, n in function_lengths(pkg)}
    assert lengths["exactly_80"] == ("pkg/sub/m.py", 4, 80)
    assert lengths["over"] == ("pkg/sub/m.py", 86, 81)
    assert lengths["C.short"][2] == 2  # the decorator does not count
    assert lengths["C.outer.inner"][2] == 81 and lengths["C.outer"][2] == 83
    assert too_long(pkg) == [
        "pkg/sub/m.py:86: over is 81 lines (at most 80)",
        "pkg/sub/m.py:174: C.outer is 83 lines (at most 80)",
        "pkg/sub/m.py:175: C.outer.inner is 81 lines (at most 80)",
    ]
    assert too_long(pkg, limit=90) == []
