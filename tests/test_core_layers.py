"""The protocol core is layered: rule_grammar <- schemas <- rules <- scoring <- engine.

Schemas are data (they import neither rules nor scoring); no module of the core or of the
formal engine hides an import of llmdebate inside a function; configurations that would make
r^(d+1) underflow or the probability tables explode are refused with one clear message.
"""

from __future__ import annotations

import ast
import math
from pathlib import Path

import pytest
from pydantic import ValidationError

from llmdebate.core import scoring
from llmdebate.core.schemas import (
    MAX_DEBATE_WIDTH,
    Claim,
    DebateConfig,
    Estimate,
    RoundRecord,
    Transcript,
    Verdict,
)

PKG = Path(__file__).resolve().parent.parent / "llmdebate"
CORE_DIR = PKG / "core"
CORE = ["rule_grammar", "schemas", "rules", "scoring", "engine"]


def imports_of(path: Path) -> tuple[set[str], list[str]]:
    """(llmdebate modules imported at module level, llmdebate imports inside functions)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top: set[str] = set()
    nested: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("llmdebate"):
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names if a.name.startswith("llmdebate")]
        else:
            continue
        if node in tree.body:
            top.update(names)
        elif names:
            nested.append(f"{path.name}:{node.lineno} {names[0]}")
    return top, nested


def module_path(name: str) -> Path:
    return CORE_DIR / f"{name}.py"


def test_schemas_import_nothing_above_them() -> None:
    top, _ = imports_of(module_path("schemas"))
    assert top == {"llmdebate.core.rule_grammar"}
    grammar, _ = imports_of(module_path("rule_grammar"))
    assert grammar == {"llmdebate.errors"}


def test_the_core_graph_is_acyclic_and_ordered() -> None:
    rank = {f"llmdebate.core.{m}": i for i, m in enumerate(CORE)}
    for name in CORE:
        top, _ = imports_of(module_path(name))
        for dep in top & rank.keys():
            assert rank[dep] < rank[f"llmdebate.core.{name}"], f"{name} imports {dep}"


def test_no_function_level_imports_in_the_core_or_the_formal_engine() -> None:
    files = [module_path(m) for m in CORE] + sorted((PKG / "formal").rglob("*.py"))
    nested = [hit for f in files for hit in imports_of(f)[1]]
    assert nested == []


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"depth": 250}, "depth must be <= 186 at epsilon=0.2, rho=0.5 (got 250)"),
        ({"depth": 60, "epsilon": 0.001, "rho": 0.99}, "would underflow"),
        ({"width": MAX_DEBATE_WIDTH + 1}, "width must be <= 16 (got 17)"),
    ],
)
def test_bounds_are_one_clear_message(kwargs: dict[str, float], fragment: str) -> None:
    with pytest.raises(ValidationError, match=r".*") as info:
        DebateConfig(**kwargs)  # type: ignore[arg-type]
    errors = info.value.errors()
    assert len(errors) == 1 and fragment in errors[0]["msg"]


def test_the_largest_allowed_depth_keeps_the_normalizer_representable() -> None:
    cfg = DebateConfig(depth=186)
    unit = scoring.normalizer(cfg)
    assert unit > 0 and math.isfinite(1.0 / unit)
    t = Transcript(id="t", config=cfg, seed=0, total=1.0, expected_total=0.5)
    pe = scoring.DISCOUNTED
    assert scoring.normalized_total(t, scheme=pe) == pytest.approx(1.0 / unit)
    assert scoring.normalized_total(t, expected=True, scheme=pe) == pytest.approx(0.5 / unit)
    assert math.isfinite(scoring.normalized_total(t, scheme=pe) or math.inf)


def test_normalized_total_for_each_protocol_and_status() -> None:
    cfg = DebateConfig(depth=1)
    naive = Transcript(id="n", protocol="naive-recursive", config=cfg, seed=0, total=-1.0)
    assert scoring.normalized_total(naive, scheme=scoring.PLUS_MINUS_ONE) == -1.0
    failed = Transcript(id="f", config=cfg, seed=0, status="failed", total=1.0)
    assert scoring.normalized_total(failed, scheme=scoring.DISCOUNTED) is None
    direct = Transcript(id="d", protocol="direct", config=cfg, seed=0, total=1.0)
    assert scoring.normalized_total(direct) is None


def test_estimate_method_is_a_plain_name() -> None:
    assert Estimate(value=0.5, method="some-new-method").method == "some-new-method"


def test_reward_inputs_choose_the_probability_where_known() -> None:
    c = Claim(text="c")
    leaf = RoundRecord(k=0, claim=c, p=0.3, direction=1, verdict=Verdict(value=1, probability=0.8))
    assert scoring.reward_inputs(leaf) == (1.0, 0.8)
    leaf_bit = RoundRecord(k=0, claim=c, p=0.3, direction=1, verdict=Verdict(value=0))
    assert scoring.reward_inputs(leaf_bit) == (0.0, 0.0)
    mid = RoundRecord(k=2, claim=c, p=0.3, direction=-1, m=1, expected_m=0.25)
    assert scoring.reward_inputs(mid) == (1.0, 0.25)
    path_only = RoundRecord(k=2, claim=c, p=0.3, direction=-1, m=1)
    assert scoring.reward_inputs(path_only) == (1.0, 1.0)
    r = 0.1
    assert scoring.round_rewards(r, mid) == (
        scoring.round_reward(r, 2, -1, 1, 0.3),
        scoring.round_reward(r, 2, -1, 0.25, 0.3),
    )
