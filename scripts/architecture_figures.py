"""The figures of docs/architecture.md, measured from the source (nothing is imported).

    python scripts/architecture_figures.py          # rewrite the block in docs/architecture.md
    python scripts/architecture_figures.py --check  # exit 1 if the block differs from the tree

The block lies between ``<!-- figures:begin -->`` and ``<!-- figures:end -->``: modules and
lines of the package, import arrows between its modules (``tests/import_graph.py``), its
top-level modules, file names used more than twice, the longest files and functions, every
folder's modules and lines, and the lines of each concern of ``models/`` (the groups of the
"models/: its concerns stack" contract in ``pyproject.toml``). A function's length runs from
its ``def`` line to its last line, decorators not counted (as ``tests/test_function_length.py``
counts it).
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "llmdebate"
DOC = REPO / "docs" / "architecture.md"
BEGIN = "<!-- figures:begin -->"
END = "<!-- figures:end -->"
MODELS_CONTRACT = "models/: its concerns stack"
TOP = 5


def _import_graph_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "import_graph", REPO / "tests" / "import_graph.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def _functions(path: Path, rel: str) -> list[tuple[int, str]]:
    """(lines, ``module.qualified.name``) of every function in the file at ``path``."""
    module = rel.removesuffix(".py").replace("/", ".")
    out: list[tuple[int, str]] = []
    stack: list[tuple[ast.AST, str]] = [(ast.parse(path.read_text(encoding="utf-8")), module)]
    while stack:
        node, prefix = stack.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{prefix}.{child.name}"
                if not isinstance(child, ast.ClassDef) and child.end_lineno is not None:
                    out.append((child.end_lineno - child.lineno + 1, name))
                stack.append((child, name))
            else:
                stack.append((child, prefix))
    return out


def _folder(rel: str) -> str:
    return rel.split("/", 1)[0] + "/" if "/" in rel else "(top level)"


def _concerns() -> list[list[str]]:
    """The module names of each group of the models/ contract, top to bottom."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    for contract in config["tool"]["importlinter"]["contracts"]:
        if str(contract["name"]).startswith(MODELS_CONTRACT):
            return [
                [m.strip().removeprefix("llmdebate.models.") for m in layer.split(":")]
                for layer in contract["layers"]
            ]
    raise SystemExit(f"pyproject.toml: no import contract named {MODELS_CONTRACT!r}")


def _n(value: int) -> str:
    return f"{value:,}"


def _tree_rows(files: dict[str, Path], lines: dict[str, int]) -> list[str]:
    graph = _import_graph_module().import_graph(PACKAGE, "llmdebate")
    arrows = sum(len(targets) for targets in graph.values())
    top = sorted(rel for rel in files if "/" not in rel and rel != "__init__.py")
    names = Counter(Path(rel).name for rel in files if not rel.endswith("__init__.py"))
    repeated = sorted(name for name, n in names.items() if n > 2)
    longest = sorted(files, key=lambda rel: (-lines[rel], rel))[:TOP]
    functions = sorted(
        (f for rel, path in files.items() for f in _functions(path, rel)),
        key=lambda f: (-f[0], f[1]),
    )[:TOP]
    return [
        "| | now |",
        "|---|---|",
        f"| modules | {_n(len(files))} |",
        f"| lines | {_n(sum(lines.values()))} |",
        f"| import arrows between modules | {_n(arrows)} |",
        f"| top-level modules | {len(top)}: {', '.join(f'`{rel}`' for rel in top)} |",
        "| file names used more than twice (`__init__.py` aside) | "
        f"{', '.join(f'`{n}`' for n in repeated) or 'none'} |",
        f"| longest files | {', '.join(f'`{rel}` {_n(lines[rel])}' for rel in longest)} |",
        f"| longest functions | {', '.join(f'`{name}` {n}' for n, name in functions)} |",
    ]


def _folder_rows(files: dict[str, Path], lines: dict[str, int]) -> list[str]:
    modules: Counter[str] = Counter()
    total: Counter[str] = Counter()
    for rel in files:
        modules[_folder(rel)] += 1
        total[_folder(rel)] += lines[rel]
    rows = ["| folder | modules | lines |", "|---|---|---|"]
    rows += [f"| `{f}` | {modules[f]} | {_n(total[f])} |" for f in sorted(modules)]
    return rows


def _models_rows(lines: dict[str, int]) -> list[str]:
    rows = ["| concern of `models/` (top to bottom) | modules | lines |", "|---|---|---|"]
    groups = _concerns()
    named = {m for group in groups for m in group}
    rest = sorted(
        rel.removeprefix("models/").removesuffix(".py")
        for rel in lines
        if rel.startswith("models/")
        and "/" not in rel.removeprefix("models/")
        and rel.removeprefix("models/").removesuffix(".py") not in named
    )
    for group in [*groups, rest]:
        n = sum(lines.get(f"models/{m}.py", 0) for m in group)
        names = ", ".join(f"`{m}`" for m in group)
        if group is rest:
            names = f"outside the contract: {names}"
        rows.append(f"| {names} | {len(group)} | {_n(n)} |")
    return rows


def block() -> str:
    """The figures block as it should stand in docs/architecture.md, markers included."""
    files = {p.relative_to(PACKAGE).as_posix(): p for p in sorted(PACKAGE.rglob("*.py"))}
    lines = {rel: _lines(path) for rel, path in files.items()}
    parts = [
        BEGIN,
        "<!-- written by scripts/architecture_figures.py; tests/test_architecture_figures.py "
        "checks it -->",
        "",
        *_tree_rows(files, lines),
        "",
        *_folder_rows(files, lines),
        "",
        *_models_rows(lines),
        "",
        END,
    ]
    return "\n".join(parts)


def replaced(text: str, new_block: str) -> str:
    """``text`` with its figures block replaced by ``new_block``."""
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        raise SystemExit(f"{DOC}: no {BEGIN} ... {END} block")
    return text[:start] + new_block + text[end + len(END) :]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--check",
        action="store_true",
        help="exit 1 if the block differs from the tree; write nothing",
    )
    args = parser.parse_args(argv)
    text = DOC.read_text(encoding="utf-8")
    new = replaced(text, block())
    if args.check:
        if new != text:
            print(
                f"{DOC}: figures are stale; run python scripts/architecture_figures.py",
                file=sys.stderr,
            )
            return 1
        return 0
    DOC.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
