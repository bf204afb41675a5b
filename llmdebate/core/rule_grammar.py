"""The grammar of combination rules, compiled to truth tables.

This module sits below :mod:`llmdebate.core.schemas` (which validates a decomposition's rule with
it) and imports nothing from llmdebate but :mod:`llmdebate.errors`, so that the core stays
acyclic: ``rule_grammar <- schemas <- rules <- scoring``. :mod:`llmdebate.core.rules` re-exports
everything here and adds the probability and stability programmes.

Outcome vectors z = (z_1..z_q) are indexed by the integer whose binary digits are z_1..z_q,
z_1 most significant. A rule compiles to a truth table of length 2^q.

Expression grammar (``expr`` rules; never ``eval``)::

    expr    := or
    or      := and (("|" | "or") and)*
    and     := not (("&" | "and") not)*
    not     := ("!" | "~" | "not") not | atom
    atom    := "y" INT | "true" | "false" | "(" expr ")"
             | "atleast" "(" INT "," expr ("," expr)* ")" | "maj" "(" expr ("," expr)* ")"
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from llmdebate.errors import RuleError

MAX_WIDTH = 24  # a rule's truth table has 2^q entries

# ---------------------------------------------------------------------------- outcomes


@lru_cache(maxsize=64)
def outcome_bits(q: int) -> np.ndarray:
    """Array of shape (2^q, q): row t holds z_1..z_q of outcome index t."""
    t = np.arange(1 << q, dtype=np.int64)[:, None]
    shifts = np.arange(q - 1, -1, -1, dtype=np.int64)[None, :]
    bits = ((t >> shifts) & 1).astype(np.int8)
    bits.setflags(write=False)
    return bits


def outcome_index(z: Sequence[int]) -> int:
    """Index of an outcome (or prefix) z_1..z_i, z_1 most significant."""
    t = 0
    for bit in z:
        t = (t << 1) | int(bit)
    return t


# ---------------------------------------------------------------------------- expressions

_TOKEN = re.compile(r"\s*(?:(y\d+)|(\d+)|(atleast|maj|and|or|not|true|false)|(&&|\|\||[()&|!~,]))")


def _tokenize(text: str) -> list[str]:
    pos, out = 0, []
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            rest = text[pos:].strip()
            if not rest:
                break
            raise RuleError(f"rule expression {text!r}: unexpected text at {rest[:12]!r}")
        tok = next(g for g in m.groups() if g is not None)
        out.append({"&&": "&", "||": "|"}.get(tok, tok).lower())
        pos = m.end()
    return out


class _Parser:
    def __init__(self, text: str, q: int) -> None:
        self.text, self.q = text, q
        self.toks = _tokenize(text.lower())
        self.i = 0
        self.bits = outcome_bits(q).astype(bool)

    def error(self, what: str) -> RuleError:
        return RuleError(f"rule expression {self.text!r}: {what}")

    def peek(self) -> str | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self, expected: str | None = None) -> str:
        tok = self.peek()
        if tok is None:
            raise self.error("unexpected end of expression")
        if expected is not None and tok != expected:
            raise self.error(f"expected {expected!r}, found {tok!r}")
        self.i += 1
        return tok

    def parse(self) -> np.ndarray:
        if not self.toks:
            raise self.error("empty expression")
        val = self.or_()
        if self.peek() is not None:
            raise self.error(f"unexpected {self.peek()!r}")
        return val

    def or_(self) -> np.ndarray:
        val = self.and_()
        while self.peek() in ("|", "or"):
            self.take()
            val = val | self.and_()
        return val

    def and_(self) -> np.ndarray:
        val = self.not_()
        while self.peek() in ("&", "and"):
            self.take()
            val = val & self.not_()
        return val

    def not_(self) -> np.ndarray:
        if self.peek() in ("!", "~", "not"):
            self.take()
            return ~self.not_()
        return self.atom()

    def args(self) -> list[np.ndarray]:
        vals = [self.or_()]
        while self.peek() == ",":
            self.take()
            vals.append(self.or_())
        self.take(")")
        return vals

    def atom(self) -> np.ndarray:
        tok = self.take()
        n = 1 << self.q
        if tok.startswith("y") and tok[1:].isdigit():
            idx = int(tok[1:])
            if not 1 <= idx <= self.q:
                raise self.error(f"names subclaim {tok}, but the decomposition has y1..y{self.q}")
            col: np.ndarray = self.bits[:, idx - 1].copy()
            return col
        if tok == "true":
            return np.ones(n, dtype=bool)
        if tok == "false":
            return np.zeros(n, dtype=bool)
        if tok == "(":
            val = self.or_()
            self.take(")")
            return val
        if tok == "atleast":
            self.take("(")
            k_tok = self.take()
            if not k_tok.isdigit():
                raise self.error(f"atleast needs a whole number first, found {k_tok!r}")
            self.take(",")
            vals = self.args()
            at_least: np.ndarray = np.sum(vals, axis=0) >= int(k_tok)
            return at_least
        if tok == "maj":
            self.take("(")
            vals = self.args()
            majority: np.ndarray = 2 * np.sum(vals, axis=0) > len(vals)
            return majority
        raise self.error(f"unexpected {tok!r}")


# ---------------------------------------------------------------------------- compiled rules


@dataclass(frozen=True)
class CompiledRule:
    """A rule over q subclaims as a truth table of length 2^q (``table[t]`` = M_D(z(t)))."""

    q: int
    table: np.ndarray
    description: str

    def __call__(self, z: Sequence[int]) -> int:
        """M_D(z) for one outcome vector."""
        if len(z) != self.q:
            raise RuleError(f"rule over {self.q} subclaims given {len(z)} outcomes")
        return int(self.table[outcome_index(z)])

    def evaluate_many(self, index: np.ndarray) -> np.ndarray:
        """M_D for an array of outcome indices (vectorised Monte Carlo)."""
        picked: np.ndarray = self.table[index]
        return picked


@lru_cache(maxsize=4096)
def compile_table(kind: str, k: int | None, expr: str | None, q: int) -> CompiledRule:
    """Compile a rule (kind, k, expr) over q subclaims; a bad rule raises one-line RuleError."""
    if not 1 <= q <= MAX_WIDTH:
        raise RuleError(f"a decomposition has 1..{MAX_WIDTH} subclaims (got {q})")
    counts = outcome_bits(q).sum(axis=1)
    if kind == "and":
        table = counts == q
    elif kind == "or":
        table = counts >= 1
    elif kind == "majority":
        table = 2 * counts > q
    elif kind == "at_least":
        assert k is not None
        if not 0 <= k <= q:
            raise RuleError(f"an at_least rule over {q} subclaims needs 0 <= k <= {q} (got {k})")
        table = counts >= k
    elif kind == "expr":
        assert expr is not None
        table = _Parser(expr, q).parse()
    else:  # pragma: no cover - guarded by the schema
        raise RuleError(f"unknown rule kind {kind!r}")
    table = np.ascontiguousarray(table, dtype=np.int8)
    table.setflags(write=False)
    desc = {"and": "AND", "or": "OR", "majority": "MAJORITY"}.get(kind) or (
        f"AT_LEAST({k})" if kind == "at_least" else str(expr)
    )
    return CompiledRule(q=q, table=table, description=desc)
