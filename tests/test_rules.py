"""Combination rules, exact probabilities and the stability programme against brute force."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llmdebate.core.rules import (
    CondProbs,
    compile_rule,
    outcome_index,
    probability_true,
    stability,
)
from llmdebate.core.schemas import Claim, CombinationRule, Decomposition
from llmdebate.errors import RuleError

EPS = 1e-12


def rule(kind: str, **kw: object) -> CombinationRule:
    return CombinationRule(kind=kind, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("q", [1, 2, 3, 5])
def test_builtin_rules_match_their_definitions(q: int) -> None:
    for z in itertools.product([0, 1], repeat=q):
        assert compile_rule(rule("and"), q)(z) == int(all(z))
        assert compile_rule(rule("or"), q)(z) == int(any(z))
        assert compile_rule(rule("majority"), q)(z) == int(2 * sum(z) > q)
        for k in range(q + 1):
            assert compile_rule(rule("at_least", k=k), q)(z) == int(sum(z) >= k)


def test_expression_grammar() -> None:
    r = compile_rule(rule("expr", expr="y1 & (y2 | !y3)"), 3)
    r2 = compile_rule(rule("expr", expr="y1 and (y2 or not y3)"), 3)
    r3 = compile_rule(rule("expr", expr="atleast(2, y1, y2, y3) || maj(y1, false, true)"), 3)
    for z in itertools.product([0, 1], repeat=3):
        z1, z2, z3 = z
        assert r(z) == int(z1 and (z2 or not z3))
        assert r2(z) == r(z)
        assert r3(z) == int(z1 + z2 + z3 >= 2 or z1 + 0 + 1 > 1.5)


@pytest.mark.parametrize(
    ("expr", "fragment"),
    [
        ("y1 & y4", "y4"),
        ("y1 & (y2", "end of expression"),
        ("y1 y2", "unexpected"),
        ("__import__('os')", "unexpected"),
        ("", "non-empty"),
        ("atleast(y2, y1)", "whole number"),
    ],
)
def test_bad_expressions_give_one_clear_error(expr: str, fragment: str) -> None:
    with pytest.raises((RuleError, ValueError)) as info:
        Decomposition(
            subclaims=[Claim(text=f"c{i}") for i in range(3)], rule=rule("expr", expr=expr)
        )
    msg = str(info.value)
    assert fragment in msg


def test_at_least_out_of_range() -> None:
    with pytest.raises(RuleError, match="0 <= k <= 2"):
        compile_rule(rule("at_least", k=3), 2)


# A random expression and a reference evaluator written independently of the parser.
def _expr(q: int) -> st.SearchStrategy[tuple[str, object]]:
    leaf = st.integers(1, q).map(lambda i: (f"y{i}", ("var", i)))

    def extend(children: st.SearchStrategy[tuple[str, object]]) -> st.SearchStrategy:
        return st.one_of(
            children.map(lambda c: (f"!({c[0]})", ("not", c[1]))),
            st.tuples(children, children).map(
                lambda p: (f"({p[0][0]}) & ({p[1][0]})", ("and", p[0][1], p[1][1]))
            ),
            st.tuples(children, children).map(
                lambda p: (f"({p[0][0]}) | ({p[1][0]})", ("or", p[0][1], p[1][1]))
            ),
        )

    return st.recursive(leaf, extend, max_leaves=8)


def _ref(node: object, z: tuple[int, ...]) -> bool:
    op = node[0]  # type: ignore[index]
    if op == "var":
        return bool(z[node[1] - 1])  # type: ignore[index]
    if op == "not":
        return not _ref(node[1], z)  # type: ignore[index]
    a, b = _ref(node[1], z), _ref(node[2], z)  # type: ignore[index]
    return (a and b) if op == "and" else (a or b)


@given(_expr(4))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_parser_agrees_with_reference_evaluator(pair: tuple[str, object]) -> None:
    text, tree = pair
    r = compile_rule(rule("expr", expr=text), 4)
    for z in itertools.product([0, 1], repeat=4):
        assert r(z) == int(_ref(tree, z))


def _random_probs(q: int, seed: int) -> CondProbs:
    rng = np.random.default_rng(seed)
    return CondProbs.from_levels([rng.random(1 << i) for i in range(q)])


def _brute_probability(r, probs: CondProbs, q: int) -> float:  # type: ignore[no-untyped-def]
    total = 0.0
    for z in itertools.product([0, 1], repeat=q):
        pz = 1.0
        for i in range(q):
            b = probs.at(z[:i])
            pz *= b if z[i] else 1 - b
        total += pz * r(z)
    return total


@given(st.integers(1, 5), st.integers(0, 10_000), st.sampled_from(["and", "or", "majority"]))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_exact_probability_matches_brute_force(q: int, seed: int, kind: str) -> None:
    r = compile_rule(rule(kind), q)
    probs = _random_probs(q, seed)
    assert abs(probability_true(r, probs) - _brute_probability(r, probs, q)) < EPS
    assert abs(probs.joint().sum() - 1.0) < EPS


def test_joint_round_trip() -> None:
    rng = np.random.default_rng(3)
    joint = rng.random(16)
    joint /= joint.sum()
    probs = CondProbs.from_joint(joint)
    np.testing.assert_allclose(probs.joint(), joint, atol=1e-12)


def test_from_function_indexes_prefixes_in_order() -> None:
    probs = CondProbs.from_function(3, lambda i, prefix: 0.1 * i + 0.01 * outcome_index(prefix))
    for prefix in [(), (0,), (1,), (0, 1), (1, 0), (1, 1)]:
        assert probs.at(prefix) == pytest.approx(0.1 * len(prefix) + 0.01 * outcome_index(prefix))


def _brute_stability(r, probs: CondProbs, q: int, eps: float) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """Every adaptive choice of b ± ε (clipped) at every prefix: max and min of P[M_D = 1]."""
    prefixes = [p for i in range(q) for p in itertools.product([0, 1], repeat=i)]
    hi, lo = -1.0, 2.0
    for signs in itertools.product([-1, 1], repeat=len(prefixes)):
        shift = dict(zip(prefixes, signs, strict=True))
        pert = CondProbs.from_function(
            q, lambda i, pre, shift=shift: min(max(probs.at(pre) + shift[pre] * eps, 0.0), 1.0)
        )
        v = probability_true(r, pert)
        hi, lo = max(hi, v), min(lo, v)
    return hi, lo


@given(
    st.integers(1, 3),
    st.integers(0, 10_000),
    st.sampled_from(["and", "or", "majority", "xor"]),
    st.floats(0.01, 0.49),
)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_stability_programme_matches_brute_force(q: int, seed: int, kind: str, eps: float) -> None:
    cr = (
        rule("expr", expr=f"(y1 & !y{q}) | (!y1 & y{q})" if q > 1 else "!y1")
        if kind == "xor"
        else rule(kind)
    )
    r = compile_rule(cr, q)
    probs = _random_probs(q, seed)
    st_ = stability(r, probs, eps, 0.5)
    hi, lo = _brute_stability(r, probs, q, eps)
    assert st_.highest == pytest.approx(hi, abs=1e-12)
    assert st_.lowest == pytest.approx(lo, abs=1e-12)
    p = probability_true(r, probs)
    assert st_.sensitivity == pytest.approx(max(hi - p, p - lo), abs=1e-12)


@pytest.mark.parametrize("q", [1, 2, 4, 8])
def test_and_at_the_truth_moves_by_one_minus_one_minus_eps_to_the_q(q: int) -> None:
    eps, rho = 0.1, 0.5
    st_ = stability(compile_rule(rule("and"), q), CondProbs.independent([1.0] * q), eps, rho)
    assert st_.sensitivity == pytest.approx(1 - (1 - eps) ** q)
    assert st_.stable is (1 - (1 - eps) ** q < rho * eps)


def test_majority_of_many_supports_becomes_stable() -> None:
    eps, rho = 0.1, 0.5
    sens = [
        stability(
            compile_rule(rule("majority"), k), CondProbs.independent([1.0] * k), eps, rho
        ).sensitivity
        for k in (1, 3, 5, 9, 15)
    ]
    assert all(a > b for a, b in itertools.pairwise(sens))
    assert sens[0] == pytest.approx(eps)
    assert sens[-1] < rho * eps
