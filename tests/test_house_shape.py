"""The shape of the house, read from the source with an AST walk (nothing is imported):

* the base :class:`~llmdebate.protocols.interface.Protocol` carries at most twelve members
  (what every protocol has; a family's own members live on the family);
* no module outside ``llmdebate/protocols/`` compares a value with a built-in protocol's name
  (what config, tournament or report code needs of a protocol is a typed capability);
* no arrow runs up between the package's folders: the graph of imports between top-level
  folders (and top-level modules) has no cycle, so the folders stack on floors.
"""

from __future__ import annotations

import ast
from pathlib import Path

from import_graph import cycles, import_graph, module_files

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "llmdebate"
PROTOCOLS = PACKAGE / "protocols"
MAX_BASE_MEMBERS = 12


def _class(path: Path, name: str) -> ast.ClassDef:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name)


def members(cls: ast.ClassDef) -> list[str]:
    """The names a class body defines: methods, properties, attributes (annotated or not)."""
    out: list[str] = []
    for node in cls.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            out.append(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out.append(node.target.id)
        elif isinstance(node, ast.Assign):
            out += [t.id for t in node.targets if isinstance(t, ast.Name)]
    return out


def test_the_base_protocol_is_small() -> None:
    got = members(_class(PROTOCOLS / "interface.py", "Protocol"))
    assert len(got) <= MAX_BASE_MEMBERS, got
    assert {"name", "family", "can", "run", "complete"} <= set(got)


def test_members_counts_every_kind_of_definition() -> None:
    cls = ast.parse(
        "class C:\n    '''doc'''\n    a: int\n    b = 1\n    def f(self): ...\n"
        "    async def g(self): ...\n    @property\n    def h(self): ...\n"
    ).body[0]
    assert isinstance(cls, ast.ClassDef) and members(cls) == ["a", "b", "f", "g", "h"]


def builtin_protocol_names() -> set[str]:
    """The names the built-in protocol modules register (``@register("name")``, and a
    shipped topology's ``register_topology("name", ...)``)."""
    names: set[str] = set()
    for path in PROTOCOLS.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in ("register", "register_topology") and node.args
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
            ):
                names.add(node.args[0].value)
    return names


def _constants(node: ast.expr) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return [c for e in node.elts for c in _constants(e)]
    return []


def name_tests(source: str, names: set[str]) -> list[tuple[int, str]]:
    """(line, name) of every comparison (``==``, ``!=``, ``in``, ``not in``) or ``match``
    case of a value with one of ``names``."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            for side in (node.left, *node.comparators):
                found += [(node.lineno, c) for c in _constants(side) if c in names]
        elif isinstance(node, ast.MatchValue):
            found += [(node.lineno, c) for c in _constants(node.value) if c in names]
    return found


def test_the_names_test_finds_what_it_looks_for() -> None:
    names = {"two-sided", "consultancy"}
    code = (
        "a = p == 'two-sided'\nb = p in ('consultancy', 'x')\nc = 'direct' == p\n"
        "match p:\n    case 'consultancy':\n        pass\nd = {'two-sided': 1}\n"
    )
    assert name_tests(code, names) == [(1, "two-sided"), (2, "consultancy"), (5, "consultancy")]


def test_no_protocol_name_is_tested_outside_the_protocols() -> None:
    names = builtin_protocol_names()
    assert {"prover-estimator", "two-sided", "consultancy", "direct"} <= names
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if PROTOCOLS in path.parents:
            continue
        found += [
            f"{path.relative_to(REPO)}:{line}: {name!r}"
            for line, name in name_tests(path.read_text(encoding="utf-8"), names)
        ]
    assert not found, "protocols tested by name:\n" + "\n".join(found)


def folder_graph(root: Path = PACKAGE, package: str = "llmdebate") -> dict[str, set[str]]:
    """{top-level folder or module: the others it imports}."""
    files = module_files(root, package)

    def room(module: str) -> str:
        parts = module.split(".")
        return parts[1] if len(parts) > 1 else parts[0]

    out: dict[str, set[str]] = {room(m): set() for m in files}
    for a, targets in import_graph(root, package).items():
        out[room(a)] |= {room(b) for b in targets if room(b) != room(a)}
    return out


def test_no_arrow_runs_up_between_folders() -> None:
    graph = folder_graph()
    assert {"protocols", "judging", "experiment", "tournament", "models", "elicit"} <= set(graph)
    assert cycles(graph) == [], "folders that import each other"
    assert "judging" not in graph["protocols"] and "experiment" not in graph["tournament"]
    assert "elicit" not in graph["models"]


def test_the_folder_graph_sees_an_arrow_back(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    for folder, imports in (("low", "pkg.high.b"), ("high", "pkg.low.a")):
        (pkg / folder).mkdir(parents=True)
        (pkg / folder / "__init__.py").write_text("")
        (pkg / folder / ("a.py" if folder == "low" else "b.py")).write_text(f"import {imports}\n")
    assert cycles(folder_graph(pkg, "pkg")) == [["high", "low"]]
