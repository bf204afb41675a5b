"""docs/extending.md lists every shipped template's variables, and the list is what the code
passes: every built-in protocol is run with scripted models (with the prover choosing its
answer and direction, and an interactive judge) while every render is recorded, and every
call in the package that names its template and its variables is read from the source. A
variable passed that the table does not list, or one listed that no renderer passes, fails;
so does a template the table omits, or one that reads a name the table does not list."""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import test_protocols_e2e as e2e
from jinja2 import meta

from llmdebate.agents.factory import Team
from llmdebate.models import Model, ScriptedBackend
from llmdebate.prompts import Prompts

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "extending.md"
SHIPPED = REPO / "prompts"
ASKS = [
    '{"action": "ask", "question": "Why?", "p_first": 0.6}',
    '{"action": "decide", "question": "", "p_first": 0.4}',
]


def documented(text: str) -> dict[str, set[str]]:
    """{act: variables} of the table under "Every template's variables"."""
    section = text.split("#### Every template's variables", 1)[1].split("\n#", 1)[0]
    out: dict[str, set[str]] = {}
    for line in section.splitlines():
        cells = line.split("|")
        if len(cells) < 4 or not cells[1].strip().startswith("`"):
            continue
        names = set(re.findall(r"`([a-z_]+)`", cells[3]))
        for act in re.findall(r"`([a-z_]+)\.j2`", cells[1]):
            out[act] = names
    return out


def _record(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[frozenset[str]]]:
    calls: dict[str, list[frozenset[str]]] = defaultdict(list)
    render, text = Prompts.render, Prompts.text

    def recorded_render(self: Prompts, act: str, **variables: Any) -> list[dict[str, str]]:
        calls[act].append(frozenset(variables))
        return render(self, act, **variables)

    def recorded_text(self: Prompts, act: str, **variables: Any) -> str:
        calls[act].append(frozenset(variables))
        return text(self, act, **variables)

    monkeypatch.setattr(Prompts, "render", recorded_render)
    monkeypatch.setattr(Prompts, "text", recorded_text)
    return calls


def rendered(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[frozenset[str]]]:
    """{act: the variables of each render} over every built-in protocol's debates."""
    calls = _record(monkeypatch)
    for debate_id in e2e.ALL:
        e2e.run(debate_id)
    chosen = e2e.config(
        protocols=["prover-estimator"], prover__assignment="choose", prover__direction="model"
    )
    e2e.run("prover-estimator/q1/chosen", chosen)
    asking = e2e.config(protocols=["consultancy", "two-sided"], judge__interactive=True)
    for debate_id in ("consultancy/q1/honest", "two-sided/q1/order-0"):
        models = dict(e2e.team(asking).models)
        models["judge"] = Model(ScriptedBackend(ASKS, name="s-judge", default_probability=0.6))
        team = Team(models, Prompts(), asking.prover, asking.estimator, asking.judge)
        e2e.run(debate_id, asking, team)
    return calls


def _literal_calls(tree: ast.AST) -> Iterator[tuple[str, set[str]]]:
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("render", "text")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            yield node.args[0].value, {k.arg for k in node.keywords if k.arg is not None}


def in_source(acts: set[str]) -> dict[str, list[set[str]]]:
    """{act: the keyword variables of each call naming it} in the package's source."""
    out: dict[str, list[set[str]]] = defaultdict(list)
    for path in sorted((REPO / "llmdebate").rglob("*.py")):
        for act, names in _literal_calls(ast.parse(path.read_text(encoding="utf-8"))):
            if act in acts:
                out[act].append(names)
    return out


def shipped() -> set[str]:
    return {p.stem for p in SHIPPED.glob("*.j2") if not p.name.startswith("_")}


def test_the_table_names_every_shipped_template_and_no_other() -> None:
    assert set(documented(DOC.read_text(encoding="utf-8"))) == shipped()


def test_every_variable_passed_is_documented_and_every_one_documented_is_passed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    docs = documented(DOC.read_text(encoding="utf-8"))
    calls = rendered(monkeypatch)
    static = in_source(set(docs))
    for act in sorted(docs):
        seen = [set(c) for c in calls.get(act, [])] + static.get(act, [])
        assert seen, f"{act}.j2: no renderer found"
        for names in seen:
            extra = names - docs[act]
            assert not extra, f"{act}.j2 is rendered with {sorted(extra)}, not in the docs"
        unused = docs[act] - set().union(*seen)
        assert not unused, f"{act}.j2: the docs list {sorted(unused)}, which no renderer passes"
    assert set(calls) <= set(docs), f"rendered but not documented: {set(calls) - set(docs)}"


def test_every_shipped_template_reads_only_documented_variables() -> None:
    """What a template reads, the names it only tests with ``is defined`` too."""
    docs = documented(DOC.read_text(encoding="utf-8"))
    env = Prompts().env
    for act in sorted(shipped()):
        tree = env.parse((SHIPPED / f"{act}.j2").read_text(encoding="utf-8"))
        reads = meta.find_undeclared_variables(tree) - set(env.globals)
        assert reads <= docs[act], f"{act}.j2 reads {sorted(reads - docs[act])}, not in the docs"


def test_the_table_reader_and_a_wrong_table_fail() -> None:
    text = DOC.read_text(encoding="utf-8")
    docs = documented(text)
    assert docs["direction"] == {"claim", "p", "epsilon", "k"}
    assert docs["two_sided_judge"] == docs["consultancy_judge"]
    wrong = documented(text.replace("| `claim`, `p`, `epsilon`, `k` |", "| `claim`, `p` |"))
    static = in_source({"direction"})["direction"]
    assert static and any(names - wrong["direction"] for names in static)
