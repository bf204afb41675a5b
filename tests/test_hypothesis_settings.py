"""No property test's verdict rests on the clock: every ``@given`` test under tests/ names its
deadline in its ``@settings`` (``deadline=None``, or a generous one) and suppresses the
too-slow health check, so a loaded machine slows the suite down but never fails it."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def _name(node: ast.expr) -> str:
    """``given`` of ``given``, ``hypothesis.given`` and ``hyp.given``."""
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return ""


def _shared(tree: ast.Module) -> dict[str, ast.Call]:
    """Module-level ``NAME = settings(...)``: settings objects shared by several tests."""
    out: dict[str, ast.Call] = {}
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Call)
            and _name(node.value) == "settings"
        ):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    out[target.id] = node.value
    return out


def _keywords(call: ast.Call, shared: dict[str, ast.Call], seen: int = 0) -> dict[str, ast.expr]:
    """The keywords of a ``settings(...)`` call, those of its parent settings below them."""
    out: dict[str, ast.expr] = {}
    if call.args and isinstance(call.args[0], ast.Name) and call.args[0].id in shared and seen < 8:
        out.update(_keywords(shared[call.args[0].id], shared, seen + 1))
    out.update({k.arg: k.value for k in call.keywords if k.arg is not None})
    return out


def _suppresses_too_slow(value: ast.expr) -> bool:
    """``[HealthCheck.too_slow, ...]`` or ``list(HealthCheck)`` (every check)."""
    if isinstance(value, ast.List | ast.Tuple):
        return any(isinstance(e, ast.Attribute) and e.attr == "too_slow" for e in value.elts)
    return (
        isinstance(value, ast.Call)
        and _name(value) == "list"
        and len(value.args) == 1
        and _name(value.args[0]) == "HealthCheck"
    )


def _milliseconds(value: ast.expr) -> float:
    """A deadline given as a number of milliseconds; anything else (None, a timedelta) counts
    as long."""
    if isinstance(value, ast.Constant) and type(value.value) in (int, float):
        return float(value.value)
    return float("inf")


def problems(source: str, where: str) -> list[str]:
    """One line per ``@given`` test of ``source`` that could fail on the clock."""
    tree = ast.parse(source)
    shared = _shared(tree)
    out: list[str] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        names = [_name(d) for d in node.decorator_list]
        if "given" not in names:
            continue
        keywords: dict[str, ast.expr] = {}
        found = False
        for d in node.decorator_list:
            if isinstance(d, ast.Call) and _name(d) == "settings":
                keywords.update(_keywords(d, shared))
                found = True
            elif isinstance(d, ast.Name) and d.id in shared:
                keywords.update(_keywords(shared[d.id], shared))
                found = True
        at = f"{where}:{node.lineno}: {node.name}"
        if not found:
            out.append(f"{at}: no @settings (set deadline= and suppress HealthCheck.too_slow)")
            continue
        if "deadline" not in keywords:
            out.append(f"{at}: @settings sets no deadline (deadline=None, or a generous one)")
        elif _milliseconds(keywords["deadline"]) < 5000:
            out.append(f"{at}: a deadline under 5 s fails on a loaded machine")
        health = keywords.get("suppress_health_check")
        if health is None or not _suppresses_too_slow(health):
            out.append(f"{at}: @settings does not suppress HealthCheck.too_slow")
    return out


def test_every_property_test_sets_its_deadline_and_the_too_slow_check() -> None:
    found = [
        line
        for path in sorted(TESTS.rglob("*.py"))
        for line in problems(path.read_text(encoding="utf-8"), str(path.relative_to(TESTS)))
    ]
    assert not found, "\n".join(found)


def test_the_scan_finds_a_test_on_the_default_deadline() -> None:
    bare = "@given(st.integers())\ndef test_a(x): pass\n"
    assert problems(bare, "t.py") == [
        "t.py:2: test_a: no @settings (set deadline= and suppress HealthCheck.too_slow)"
    ]
    no_deadline = (
        "@settings(max_examples=5)\n@hypothesis.given(x=st.integers())\ndef test_b(x): pass\n"
    )
    assert [p.split(": ", 2)[2] for p in problems(no_deadline, "t.py")] == [
        "@settings sets no deadline (deadline=None, or a generous one)",
        "@settings does not suppress HealthCheck.too_slow",
    ]
    short = (
        "@given(st.integers())\n"
        "@settings(deadline=200, suppress_health_check=[HealthCheck.too_slow])\n"
        "def test_c(x): pass\n"
    )
    assert problems(short, "t.py") == [
        "t.py:3: test_c: a deadline under 5 s fails on a loaded machine"
    ]


def test_the_scan_accepts_explicit_and_shared_settings() -> None:
    good = (
        "SLOW = settings(deadline=None, suppress_health_check=list(HealthCheck))\n"
        "BASE = settings(deadline=timedelta(seconds=30),\n"
        "                suppress_health_check=[HealthCheck.too_slow])\n"
        "@settings(max_examples=30, deadline=None,\n"
        "          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])\n"
        "@given(st.integers())\n"
        "def test_a(x): pass\n"
        "@SLOW\n"
        "@given(st.integers())\n"
        "def test_b(x): pass\n"
        "@settings(BASE, max_examples=3)\n"
        "@given(st.integers())\n"
        "def test_c(x): pass\n"
        "def test_d(): pass\n"
    )
    assert problems(good, "t.py") == []
