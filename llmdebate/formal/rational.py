"""Exact payoffs in rational arithmetic (:class:`fractions.Fraction`), with no tolerance.

The engine (:mod:`.exact`) computes expectations in floating point and compares eq. (13)'s
dead zone and argmax with a tolerance of 10⁻⁹. A strategy that breaks a guarantee only inside
that tolerance is no break. This module evaluates the same game again, every number a
rational: the protocol's parameters and every number a strategy states are read as the
decimals they are written as (:func:`decimal`: ε = 0.2 is 1/5, the adversarial b = 0.7 is
7/10; a strategy file's JSON numbers are such decimals); B's conditionals and marginals are
exact quotients and sums, and the prover's comparisons are exact (a tie is a tie; |g - p| = ε
is inside the dead zone).

Supported: the eq. (13) provers (:class:`~.strategies.provers.BeliefProver`: honest,
dishonest, honest without dead zone), the last-index prover and table provers
(:class:`~.strategy_files.TableProver`), against table estimators
(:class:`~.strategy_files.TableEstimator`: its joint as written, normalised exactly) and any
estimator whose numbers are read off its ``levels``. A table strategy keys its states by
floats: at a state whose exact p (or b) is not a float it plays the entry of the nearest
listed float, in the rational evaluation as in the engine, so both evaluate one strategy.
An estimator that computes its numbers (calibrated-ignorant) is read off the floats it
states, which need not keep the exact ties of its definition (equal marginals).

The result also gives the *clearance*: the smallest distance, over every dead-zone decision
A takes on the debate's paths, between |g - p| and ε (how far the strategy keeps from the
edge that a tolerance could blur), and the number of argmax ties broken by the first index.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from llmdebate.formal.game import Game
from llmdebate.formal.strategies.provers import BeliefProver, LastIndexProver, ProverPolicy
from llmdebate.formal.strategy_files import TableEstimator, TableProver, pbits
from llmdebate.formal.variants import COMMITTING, MARGINAL_NEXT

F0, F1, HALF = Fraction(0), Fraction(1), Fraction(1, 2)


def decimal(x: float) -> Fraction:
    """A float as the shortest decimal that reads back to it, the number it is written as
    (0.2 -> 1/5, 0.7 -> 7/10: not the float's dyadic value, so |0.7 - 1| = |0.3 - 0|)."""
    return Fraction(repr(float(x)))


@dataclass
class RationalResult:
    """Per-instance E[R_A] as fractions, and the smallest dead-zone clearance met."""

    payoff: list[Fraction]
    r: Fraction
    depth: int
    clearance: Fraction | None = None  # min | |g - p| - ε | over A's dead-zone decisions
    ties: int = 0  # argmax ties A broke by the first-index rule
    unlisted: int = 0  # states reached that a table estimator does not list
    notes: list[str] = field(default_factory=list)

    @property
    def unit(self) -> Fraction:
        return self.r ** (self.depth + 1)

    def mean(self) -> Fraction:
        return sum(self.payoff, F0) / len(self.payoff)

    def normalized(self) -> list[Fraction]:
        return [v / self.unit for v in self.payoff]


def _first_argmax(values: list[Fraction]) -> tuple[int, bool]:
    top = max(values)
    j = values.index(top)
    return j, values.count(top) > 1


Fill = Callable[[int, int, int, float], np.ndarray]  # (instance, k, node, p) -> a joint


class RationalGame:
    """The recursion of :func:`.exact.exact_prover_estimator`, in fractions. ``fill``, if
    given, supplies (and adds to a table estimator) the joint at a state the table does not
    list, e.g. from the search that wrote the table."""

    def __init__(self, game: Game, fill: Fill | None = None):
        self.game, self.fill = game, fill
        prob = game.problem
        self.prob, self.q, self.d = prob, prob.width, prob.depth
        self.eps, self.rho = decimal(game.epsilon), decimal(game.rho)
        self.r = self.eps * (1 - self.rho) / 4
        self.variant = game.variant
        self.noise = decimal(game.judge.noise)
        self.outcomes = list(itertools.product((0, 1), repeat=self.q))  # index order
        self.tables = {k: [int(v) for v in prob.rule(k).table] for k in range(1, self.d + 1)}
        self.memo: dict[tuple[int, int, int, Fraction], Fraction] = {}
        self.clearance: Fraction | None = None
        self.ties = 0
        self.unlisted = 0  # states a table estimator does not list (it plays the uniform joint)
        self._check_prover(game.prover)

    # ------------------------------------------------------------------ the prover
    @staticmethod
    def _check_prover(pr: ProverPolicy) -> None:
        if not isinstance(pr, BeliefProver | LastIndexProver | TableProver):
            raise TypeError(f"no rational evaluation of the prover {pr.name!r}")

    def _dead(self, g: int, p: Fraction, eps: Fraction) -> bool:
        """|g - p| <= ε, exactly; records how far |g - p| is from ε."""
        gap = abs(g - p) - eps
        if self.clearance is None or abs(gap) < self.clearance:
            self.clearance = abs(gap)
        return gap <= 0

    def _belief(self, k: int, inst: int, node: int) -> int:
        pr = self.game.prover
        assert isinstance(pr, BeliefProver)
        return int(np.asarray(pr.values[k])[inst, node])

    def stops(self, inst: int, p: Fraction, a: int) -> bool:
        pr = self.game.prover
        if isinstance(pr, BeliefProver):
            return self._dead(a, p, decimal(pr.epsilon))
        return False

    def direction(self, inst: int, k: int, node: int, p: Fraction) -> int:
        pr = self.game.prover
        if isinstance(pr, BeliefProver):
            g = self._belief(k, inst, node)
            if self._dead(g, p, decimal(pr.epsilon)):
                return 0
            return 1 if g > p else -1
        if isinstance(pr, LastIndexProver):
            return int(p < HALF) if k == 0 else 0
        assert isinstance(pr, TableProver)
        if k == 0 and pr.judge is not None:
            po = self.leaf_truth(inst, node)
            return (po > p) - (po < p)
        return pr.directions.get((inst, k, node, pbits(float(p))), 0)

    def choose(
        self,
        inst: int,
        k: int,
        node: int,
        b: list[Fraction],
        nextp: list[Fraction],
        t: int | None,
    ) -> int:
        """A's index: after the draws (outcome index t) or committed (t None, b = marginals)."""
        pr = self.game.prover
        if isinstance(pr, BeliefProver):
            g = [self._belief(k - 1, inst, node * self.q + c) for c in range(self.q)]
            j, tie = _first_argmax([abs(bi - gi) for bi, gi in zip(b, g, strict=True)])
            self.ties += tie
            return j
        if isinstance(pr, LastIndexProver):
            return self.q - 1
        assert isinstance(pr, TableProver)
        row = tuple(pbits(float(v)) for v in b)
        if t is None:
            return pr.committed.get((inst, k, node, row), 0)
        if k == 1 and pr.judge is not None:
            po = [self.leaf_truth(inst, node * self.q + c) for c in range(self.q)]
            return _first_argmax([abs(x - y) for x, y in zip(po, nextp, strict=True)])[0]
        return pr.after_draw.get((inst, k, node, t, row), 0)

    # ------------------------------------------------------------------ the estimator
    def leaf_truth(self, inst: int, node: int) -> Fraction:
        g = int(self.prob.truth[0][inst, node])
        return g * (1 - self.noise) + (1 - g) * self.noise

    def joint(self, inst: int, k: int, node: int, p: Fraction) -> list[Fraction]:
        est = self.game.estimator
        if isinstance(est, TableEstimator):  # the joint as written, normalised exactly
            row = est.joint_at(inst, k, node, float(p))
            if row is est.uniform and self.fill is not None:  # not listed: ask, and list it
                row = self.fill(inst, k, node, float(p))
                est.joints[(inst, k, node, pbits(float(p)))] = row
            self.unlisted += row is est.uniform
            h = [decimal(x) for x in row]
            tot = sum(h, F0)
            return [x / tot for x in h]
        levels = est.levels(np.array([inst]), k, np.array([node]), np.array([float(p)]))
        conds = [[decimal(v) for v in lv[0]] for lv in levels]
        return _joint_from_conditionals(conds, self.q)

    # ------------------------------------------------------------------ the game
    def value(self, inst: int, k: int, node: int, p: Fraction) -> Fraction:
        key = (inst, k, node, p)
        got = self.memo.get(key)
        if got is not None:
            return got
        s = self.direction(inst, k, node, p)
        out = s * (self.leaf_truth(inst, node) - p) if k == 0 else self._round(inst, k, node, p, s)
        self.memo[key] = out
        return out

    def _round(self, inst: int, k: int, node: int, p: Fraction, s: int) -> Fraction:
        q = self.q
        h = self.joint(inst, k, node, p)
        if self.variant == "independent":
            h = _product(_marginals(h, q), self.outcomes)
        marg = _marginals(h, q)
        conds = _conditionals(h, q)
        em = sum((h[t] for t in range(1 << q) if self.tables[k][t]), F0)
        out = self.r**k * s * (em - p)
        j_commit = None
        if self.variant in COMMITTING:
            j_commit = self.choose(inst, k, node, marg, marg, None)
        for t in range(1 << q):
            if h[t] == 0:
                continue
            b = [conds[i][t >> (q - i)] for i in range(q)]
            nextp = marg if self.variant in MARGINAL_NEXT else b
            j = j_commit if j_commit is not None else self.choose(inst, k, node, b, nextp, t)
            out += h[t] * self.value(inst, k - 1, node * q + j, nextp[j])
        return out

    def payoff(self, inst: int) -> Fraction:
        """E[R_A] of one instance (A's answer and B's p_d as the game states them)."""
        alts = self.game.prover.answer(np.array([inst]))
        d = self.d
        total = F0
        for a_arr, pa in alts:
            a = int(np.asarray(a_arr).reshape(-1)[0])
            wa = decimal(float(np.asarray(pa).reshape(-1)[0]))
            p = self.top(inst)
            v = self.r ** (d + 1) * (p if a == 1 else 1 - p)
            if not self.stops(inst, p, a):
                v += self.value(inst, d, 0, p)
            total += wa * v
        return total

    def top(self, inst: int) -> Fraction:
        return decimal(float(self.game.estimator.top(np.array([inst]))[0]))

    def run(self) -> RationalResult:
        pays = [self.payoff(i) for i in range(self.prob.n)]
        return RationalResult(pays, self.r, self.d, self.clearance, self.ties, self.unlisted)


def rational_payoffs(game: Game, fill: Fill | None = None) -> RationalResult:
    """Per-instance E[R_A] of ``game`` in exact rational arithmetic (module docstring)."""
    return RationalGame(game, fill).run()


def _marginals(h: list[Fraction], q: int) -> list[Fraction]:
    return [sum((h[t] for t in range(1 << q) if t >> (q - 1 - i) & 1), F0) for i in range(q)]


def _conditionals(h: list[Fraction], q: int) -> list[list[Fraction]]:
    """``[i][prefix]``: P(z_(i+1) = 1 | z_<(i+1) = prefix), 0/0 read as 1/2."""
    mass = [h]
    for _ in range(q):
        last = mass[-1]
        mass.append([last[2 * t] + last[2 * t + 1] for t in range(len(last) // 2)])
    mass.reverse()  # mass[i][prefix]: P(z_<(i+1) = prefix), i = 0..q
    return [
        [mass[i + 1][2 * t + 1] / mass[i][t] if mass[i][t] > 0 else HALF for t in range(1 << i)]
        for i in range(q)
    ]


def _product(m: list[Fraction], outcomes: list[tuple[int, ...]]) -> list[Fraction]:
    out = []
    for z in outcomes:
        v = F1
        for mi, zi in zip(m, z, strict=True):
            v *= mi if zi else 1 - mi
        out.append(v)
    return out


def _joint_from_conditionals(conds: list[list[Fraction]], q: int) -> list[Fraction]:
    prob = [F1]
    for i in range(q):
        b = conds[i]
        prob = [x for t, pt in enumerate(prob) for x in (pt * (1 - b[t]), pt * b[t])]
    return prob
