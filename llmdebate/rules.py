"""Combination rules M_D: evaluation, exact probability, and the stability programme.

Outcome vectors z = (z_1..z_q) are indexed by the integer whose binary digits are z_1..z_q,
z_1 most significant. A rule compiles to a truth table of length 2^q, from which M_D(z),
P[M_D = 1] and the worst adaptive ε-perturbation (Definition 5.3) follow exactly.

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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from llmdebate.errors import RuleError
from llmdebate.schemas import CombinationRule

MAX_WIDTH = 24

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
            return self.bits[:, idx - 1].copy()
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
            return np.sum(vals, axis=0) >= int(k_tok)
        if tok == "maj":
            self.take("(")
            vals = self.args()
            return 2 * np.sum(vals, axis=0) > len(vals)
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
        return self.table[index]


@lru_cache(maxsize=4096)
def _compile(kind: str, k: int | None, expr: str | None, q: int) -> CompiledRule:
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


def compile_rule(rule: CombinationRule, q: int) -> CompiledRule:
    """Compile a rule for q subclaims; a bad rule raises :class:`RuleError` with one line."""
    return _compile(rule.kind, rule.k, rule.expr, q)


# ---------------------------------------------------------------------------- conditional probs


@dataclass(frozen=True)
class CondProbs:
    """B's sequential conditional probabilities b_i(z_<i) at every prefix.

    ``levels[i]`` has shape (2^i,): entry t is b_{i+1} given the prefix z_1..z_i of index t.
    """

    levels: tuple[np.ndarray, ...]

    @property
    def q(self) -> int:
        return len(self.levels)

    @staticmethod
    def from_levels(levels: Sequence[Sequence[float]]) -> CondProbs:
        arrs = []
        for i, lv in enumerate(levels):
            a = np.asarray(lv, dtype=np.float64)
            if a.shape != (1 << i,):
                raise RuleError(f"level {i} of a probability table needs {1 << i} entries")
            if np.any(a < 0) or np.any(a > 1) or np.any(np.isnan(a)):
                raise RuleError(f"level {i} of a probability table has a value outside [0, 1]")
            arrs.append(a)
        return CondProbs(tuple(arrs))

    @staticmethod
    def independent(p: Sequence[float]) -> CondProbs:
        """b_i does not depend on earlier outcomes."""
        return CondProbs.from_levels([np.full(1 << i, float(v)) for i, v in enumerate(p)])

    @staticmethod
    def from_function(q: int, fn: Callable[[int, tuple[int, ...]], float]) -> CondProbs:
        """``fn(i, prefix)`` gives b_{i+1} for a prefix of length i (0-based i)."""
        bits = outcome_bits(q) if q else np.zeros((1, 0), dtype=np.int8)
        levels = []
        for i in range(q):
            # prefixes of length i are the leading i bits of every (2^(q-i))-th outcome
            rows = bits[:: 1 << (q - i), :i] if i else np.zeros((1, 0), dtype=np.int8)
            levels.append([fn(i, tuple(int(v) for v in row)) for row in rows])
        return CondProbs.from_levels(levels)

    @staticmethod
    def from_joint(joint: np.ndarray) -> CondProbs:
        """Conditionals of a distribution over the 2^q outcomes (0/0 read as 1/2)."""
        joint = np.asarray(joint, dtype=np.float64)
        q = int(joint.size).bit_length() - 1
        if joint.size != 1 << q:
            raise RuleError("a joint distribution needs 2^q entries")
        levels: list[np.ndarray] = []
        mass = joint
        marg = [mass]
        for _ in range(q):
            mass = mass.reshape(-1, 2).sum(axis=1)
            marg.append(mass)
        # marg[j] has 2^(q-j) entries: the mass of every prefix of length q-j
        for i in range(q):
            child = marg[q - i - 1].reshape(-1, 2)  # prefixes of length i+1, grouped by parent
            tot = child.sum(axis=1)
            with np.errstate(invalid="ignore", divide="ignore"):
                b = np.where(tot > 0, child[:, 1] / np.where(tot > 0, tot, 1.0), 0.5)
            levels.append(np.clip(b, 0.0, 1.0))
        return CondProbs(tuple(levels))

    def at(self, prefix: Sequence[int]) -> float:
        """b_{i+1} for the given prefix of length i."""
        return float(self.levels[len(prefix)][outcome_index(prefix)])

    def joint(self) -> np.ndarray:
        """P(z) for every outcome index, shape (2^q,)."""
        prob = np.ones(1)
        for b in self.levels:
            prob = np.stack([prob * (1.0 - b), prob * b], axis=1).reshape(-1)
        return prob

    def to_lists(self) -> list[list[float]]:
        return [[float(v) for v in lv] for lv in self.levels]


def probability_true(rule: CompiledRule, probs: CondProbs) -> float:
    """Exact P[M_D(z) = 1] with z_i ~ Bernoulli(b_i(z_<i)) drawn in order."""
    if probs.q != rule.q:
        raise RuleError(f"rule over {rule.q} subclaims given probabilities for {probs.q}")
    return float(np.dot(probs.joint(), rule.table))


# ---------------------------------------------------------------------------- stability


@dataclass(frozen=True)
class Stability:
    """The worst adaptive ε-perturbation of the conditional probabilities (Definition 5.3)."""

    probability: float  # P[M_D = 1] at the given probabilities
    highest: float  # sup over perturbations of P[M_D = 1]
    lowest: float  # inf over perturbations
    sensitivity: float  # max(highest - probability, probability - lowest)
    epsilon: float
    rho: float

    @property
    def bound(self) -> float:
        return self.rho * self.epsilon

    @property
    def stable(self) -> bool:
        """(ε,ρ)-stable: every perturbation moves P[M_D = 1] by less than ρ·ε.

        ``sensitivity`` is the supremum over the closed ball |q_i - b_i| <= ε; the definition
        uses the open ball, whose changes stay below that supremum, so ``sensitivity < ρε``
        is a sufficient test (exact unless the supremum equals ρε to the last bit).
        """
        return self.sensitivity < self.bound


def stability(rule: CompiledRule, probs: CondProbs, epsilon: float, rho: float) -> Stability:
    """Exact worst-case perturbation by dynamic programming over outcome prefixes, O(2^q).

    At each prefix the adversary picks q_i in [b_i - ε, b_i + ε] ∩ [0, 1]; the value is linear
    in q_i, so an endpoint is optimal, and the choice may depend on the prefix (adaptive).
    """
    if probs.q != rule.q:
        raise RuleError(f"rule over {rule.q} subclaims given probabilities for {probs.q}")
    hi = rule.table.astype(np.float64)
    lo = hi.copy()
    for b in reversed(probs.levels):
        up = np.minimum(b + epsilon, 1.0)
        down = np.maximum(b - epsilon, 0.0)
        h0, h1 = hi[0::2], hi[1::2]
        l0, l1 = lo[0::2], lo[1::2]
        hi = np.maximum(h0 + up * (h1 - h0), h0 + down * (h1 - h0))
        lo = np.minimum(l0 + up * (l1 - l0), l0 + down * (l1 - l0))
    p = probability_true(rule, probs)
    high, low = float(hi[0]), float(lo[0])
    return Stability(
        probability=p,
        highest=high,
        lowest=low,
        sensitivity=max(high - p, p - low, 0.0),
        epsilon=epsilon,
        rho=rho,
    )
