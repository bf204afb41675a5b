"""Natural-language forms of formal problems whose truth is known at every node.

Two problems, each identified by ``item.meta["problem"]``:

* ``divisors`` — "N has no divisor d with lo <= d < hi" (and its negation "N has a divisor
  d with lo <= d < hi"); the top claim of an item says N is prime (the interval [2, isqrt(N)]).
  Truth is computable for any N, lo, hi, so any subclaim a model writes in this form is
  checkable.
* ``circuit`` — a small boolean circuit with fixed inputs; "In the circuit [...], wire g3 has
  value 1". Truth comes from evaluating the circuit in ``meta``.

:func:`claim_truth` parses a claim text (as a model may write it) and returns its truth, or
``None`` when the text is not in a recognised form. :func:`formal_decomposition` gives the
problem's own decomposition of a claim (used by the ``formal`` decomposer and in tests).
"""

from __future__ import annotations

import functools
import re
from math import isqrt
from typing import Any

from llmdebate.core.schemas import Claim, CombinationRule, Decomposition

# ------------------------------------------------------------------ divisors

_LE = r"(?:<=|≤|=<)"
_DIV_RANGE = re.compile(
    r"(\d+)\s+has\s+(no|a|at least one|some)\s+(?:proper\s+)?divisors?\s*(?:d\s*)?"
    r"(?:with|such that|where|in the range|in|between)?\s*"
    r"(?:(\d+)\s*" + _LE + r"\s*d\s*<\s*(\d+)|\[\s*(\d+)\s*,\s*(\d+)\s*\))",
    re.IGNORECASE,
)


def divisor_statement(n: int, lo: int, hi: int, none: bool = True) -> str:
    """The canonical text of "n has no divisor in [lo, hi)" (or "has a divisor")."""
    return f"{n} has {'no' if none else 'a'} divisor d with {lo} <= d < {hi}."


@functools.lru_cache(maxsize=4096)  # a debate grades its own claims again and again
def parse_divisor_claim(text: str) -> tuple[int, int, int, bool] | None:
    """(n, lo, hi, none) from a divisor claim, or None."""
    m = _DIV_RANGE.search(text)
    if not m:
        return None
    n = int(m.group(1))
    none = m.group(2).lower() == "no"
    lo = int(m.group(3) if m.group(3) is not None else m.group(5))
    hi = int(m.group(4) if m.group(4) is not None else m.group(6))
    if lo < 2 or hi < lo:
        return None
    return n, lo, hi, none


def divisor_truth(n: int, lo: int, hi: int, none: bool) -> int:
    has = any(n % d == 0 for d in range(lo, min(hi, n + 1)))
    return int(not has) if none else int(has)


@functools.lru_cache(maxsize=4096)  # a debate grades its own claims again and again
def _divisor_truth(parsed: tuple[int, int, int, bool]) -> int:
    """:func:`divisor_truth`, remembered: a debate grades the same claims many times."""
    return divisor_truth(*parsed)


def prime_top(n: int) -> tuple[int, int]:
    """The interval [2, isqrt(n) + 1) whose emptiness of divisors means n is prime."""
    return 2, isqrt(n) + 1


# ------------------------------------------------------------------ circuits

OPS = ("AND", "OR", "XOR", "NOT")
_WIRE_CLAIM = re.compile(
    r"\b(?:wire\s+)?([xg]\d+)\s+(?:has value|has the value|is|=|equals)\s+([01])\b"
)


def circuit_description(meta: dict[str, Any]) -> str:
    """One line describing the inputs and gates, e.g. "x1 = 1, x2 = 0; g1 = x1 AND x2"."""
    inputs = ", ".join(f"{w} = {v}" for w, v in meta["inputs"].items())
    gates = "; ".join(
        f"{g['out']} = NOT {g['args'][0]}"
        if g["op"] == "NOT"
        else f"{g['out']} = {g['args'][0]} {g['op']} {g['args'][1]}"
        for g in meta["gates"]
    )
    return f"{inputs}; {gates}"


def wire_statement(meta: dict[str, Any], wire: str, value: int) -> str:
    return f"In the circuit [{circuit_description(meta)}], wire {wire} has value {value}."


def evaluate_circuit(meta: dict[str, Any]) -> dict[str, int]:
    values = {w: int(v) for w, v in meta["inputs"].items()}
    for g in meta["gates"]:
        a = [values[x] for x in g["args"]]
        op = g["op"]
        if op == "AND":
            v = a[0] & a[1]
        elif op == "OR":
            v = a[0] | a[1]
        elif op == "XOR":
            v = a[0] ^ a[1]
        else:
            v = 1 - a[0]
        values[g["out"]] = v
    return values


def parse_wire_claim(text: str) -> tuple[str, int] | None:
    """(wire, value) from a circuit claim (the bracketed description is ignored), or None."""
    outside = re.sub(r"\[[^\]]*\]", " ", text)
    found = _WIRE_CLAIM.findall(outside)
    if len(found) != 1:
        return None
    return found[0][0], int(found[0][1])


# ------------------------------------------------------------------ dispatch


def claim_truth(text: str, meta: dict[str, Any] | None) -> int | None:
    """The truth of ``text`` for the item whose meta is ``meta``, or None if not parseable."""
    if not meta:
        return None
    problem = meta.get("problem")
    if problem == "divisors":
        parsed = parse_divisor_claim(text)
        return None if parsed is None else _divisor_truth(parsed)
    if problem == "circuit":
        wc = parse_wire_claim(text)
        if wc is None:
            return None
        values = evaluate_circuit(meta)
        return None if wc[0] not in values else int(values[wc[0]] == wc[1])
    return None


def _split(lo: int, hi: int, q: int) -> list[tuple[int, int]]:
    q = max(1, min(q, hi - lo))
    edges = [lo + (hi - lo) * i // q for i in range(q + 1)]
    return [(edges[i], edges[i + 1]) for i in range(q)]


_GATE_EXPR = {
    ("AND", 1): "y1 & y2",
    ("AND", 0): "!(y1 & y2)",
    ("OR", 1): "y1 | y2",
    ("OR", 0): "!(y1 | y2)",
    ("XOR", 1): "(y1 & !y2) | (!y1 & y2)",
    ("XOR", 0): "(y1 & y2) | (!y1 & !y2)",
    ("NOT", 1): "!y1",
    ("NOT", 0): "y1",
}


def formal_decomposition(claim: Claim, meta: dict[str, Any], width: int) -> Decomposition | None:
    """The problem's own decomposition of ``claim`` into at most ``width`` subclaims."""
    problem = meta.get("problem")
    if problem == "divisors":
        parsed = parse_divisor_claim(claim.text)
        if parsed is None:
            return None
        n, lo, hi, none = parsed
        parts = _split(lo, hi, width)
        subs = [
            Claim(id=f"{claim.id}.{i + 1}", text=divisor_statement(n, a, b, none))
            for i, (a, b) in enumerate(parts)
        ]
        return Decomposition(
            subclaims=subs,
            rule=CombinationRule(kind="and" if none else "or"),
            rationale=f"split [{lo}, {hi}) into {len(parts)} subintervals",
        )
    if problem == "circuit":
        wc = parse_wire_claim(claim.text)
        if wc is None:
            return None
        wire, value = wc
        gate = next((g for g in meta["gates"] if g["out"] == wire), None)
        if gate is None or (width < 2 and gate["op"] != "NOT"):
            return Decomposition(
                subclaims=[claim.model_copy(update={"id": f"{claim.id}.1"})],
                rule=CombinationRule(kind="and"),
                rationale="an input wire",
            )
        subs = [
            Claim(id=f"{claim.id}.{i + 1}", text=wire_statement(meta, arg, 1))
            for i, arg in enumerate(gate["args"])
        ]
        return Decomposition(
            subclaims=subs,
            rule=CombinationRule(kind="expr", expr=_GATE_EXPR[(gate["op"], value)]),
            rationale=f"{wire} is {gate['op']} of {', '.join(gate['args'])}",
        )
    return None
