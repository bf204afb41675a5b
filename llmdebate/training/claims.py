"""Interval claims for expert iteration on decompositions, drawn apart from the debate data.

A claim "n has no divisor d with lo <= d < hi" (or "has a divisor") has an exact split that
the problem code writes (:func:`llmdebate.data.problems.formal_decomposition`), and every
split a model writes can be graded against it (:mod:`llmdebate.agents.audit`). The numbers
are drawn from a seeded generator in a range of their own; :func:`check_apart` refuses any
number shared with the debate dataset or between the training and the held-out claims.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from llmdebate.core.schemas import Claim
from llmdebate.data.generate import primes_in
from llmdebate.data.problems import divisor_statement, formal_decomposition, prime_top
from llmdebate.errors import UserError


@dataclass(frozen=True)
class IntervalClaim:
    n: int
    lo: int
    hi: int
    none: bool
    width: int

    @property
    def text(self) -> str:
        return divisor_statement(self.n, self.lo, self.hi, self.none)


NumberLaw = Literal["uniform", "dataset"]
"""How a claim's number is drawn: ``uniform`` in the range; ``dataset`` as
:func:`llmdebate.data.generate.divisor_items` drew ``datasets/divisors.jsonl`` (alternately a
prime in the range and a product of two primes in the factor range)."""


SplitPoints = Literal["midpoint", "random"]
"""Where an interval is split in two: at its midpoint (the problem code's exact split) or at a
point drawn uniformly inside it."""


def draw_claims(
    count: int, seed: int, numbers: tuple[int, int], widths: list[int], *, debate_like: bool,
    exclude: frozenset[int] | set[int] = frozenset(), law: NumberLaw = "uniform",
    factors: tuple[int, int] = (7, 60), splits: SplitPoints = "midpoint",
) -> list[IntervalClaim]:
    """``count`` claims about distinct numbers in ``[numbers[0], numbers[1])``.

    ``debate_like``: for each number the two claims a depth-2 debate asks the prover to split
    (the top claim [2, top) and one of its halves, each of either polarity), as the held-out
    set; otherwise each number gives one claim, the top claim or a random subinterval of it.
    Numbers in ``exclude`` are passed over (drawn and skipped, so the claims drawn before one
    of them do not depend on it). ``law="dataset"``: the even-numbered draws are primes in the
    range, the odd-numbered ones products of two primes in ``[factors[0], factors[1])`` (at
    least ``numbers[0]``, and possibly past ``numbers[1]``, as in the dataset), each uniform
    among those not yet drawn or excluded. ``splits="random"``: the debate shape's second
    claim is a part of a split of the top claim at a point drawn uniformly inside it (as a
    prover's exact but unbalanced split), not at its midpoint.
    """
    rng = random.Random(seed)
    draw = _uniform(count, numbers, exclude) if law == "uniform" else _mixture(
        count, numbers, factors, exclude)
    out: list[IntervalClaim] = []
    used: set[int] = set()
    while len(used) < count:
        n = draw(rng, len(used), used)
        lo, top = prime_top(n)
        if n in used or n in exclude or top - lo < 4:
            continue
        used.add(n)
        width = rng.choice(widths)
        if debate_like:
            mid = split_point(lo, top, splits, rng)
            half = (lo, mid) if rng.random() < 0.5 else (mid, top)
            out.append(IntervalClaim(n, lo, top, rng.random() < 0.5, width))
            out.append(IntervalClaim(n, *half, rng.random() < 0.5, width))
        elif rng.random() < 0.4:
            out.append(IntervalClaim(n, lo, top, rng.random() < 0.5, width))
        else:
            a = rng.randrange(lo, top - 2)
            b = rng.randrange(a + 2, top + 1)
            out.append(IntervalClaim(n, a, b, rng.random() < 0.5, width))
    return out


def split_point(lo: int, hi: int, splits: SplitPoints, rng: random.Random) -> int:
    """Where [lo, hi) is cut in two: its midpoint, or a point drawn uniformly from ``rng``
    with both parts non-empty."""
    return lo + (hi - lo) // 2 if splits == "midpoint" else rng.randrange(lo + 1, hi)


_Draw = Callable[[random.Random, int, set[int]], int]


def _uniform(count: int, numbers: tuple[int, int], exclude: frozenset[int] | set[int]) -> _Draw:
    lo_n, hi_n = numbers
    if hi_n - lo_n - sum(lo_n <= n < hi_n for n in exclude) < count:
        raise UserError(f"numbers {numbers}: fewer than {count} numbers to draw from")
    return lambda rng, _k, _used: rng.randrange(lo_n, hi_n)


def _mixture(count: int, numbers: tuple[int, int], factors: tuple[int, int],
             exclude: frozenset[int] | set[int]) -> _Draw:
    small = primes_in(*factors)
    pools = (
        [n for n in primes_in(*numbers) if _splittable(n) and n not in exclude],
        sorted({a * b for i, a in enumerate(small) for b in small[i:]
                if a * b >= numbers[0] and _splittable(a * b) and a * b not in exclude}),
    )
    for kind, pool, need in (("primes", pools[0], (count + 1) // 2),
                             ("products of two primes", pools[1], count // 2)):
        if len(pool) < need:
            raise UserError(f"numbers {numbers}, factors {factors}: {len(pool)} {kind} to "
                            f"draw from, {need} needed")

    def draw(rng: random.Random, k: int, used: set[int]) -> int:
        return rng.choice([n for n in pools[k % 2] if n not in used])

    return draw


def _splittable(n: int) -> bool:
    lo, top = prime_top(n)
    return top - lo >= 4


def dataset_numbers(path: Path) -> set[int]:
    """The numbers of a divisor dataset (JSONL items with ``meta.n``)."""
    found: set[int] = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            meta = json.loads(line).get("meta") or {}
            if "n" in meta:
                found.add(int(meta["n"]))
    return found


def check_apart(
    train: list[IntervalClaim], held_out: list[IntervalClaim], debate: set[int]
) -> None:
    """Refuse numbers shared by the training claims, the held-out claims and the debates."""
    a, b = {c.n for c in train}, {c.n for c in held_out}
    for what, shared in (("training and held-out", a & b), ("training and debate", a & debate),
                         ("held-out and debate", b & debate)):
        if shared:
            raise UserError(f"expert: {what} claims share numbers {sorted(shared)[:5]}")


def exact_reply(claim: IntervalClaim) -> str:
    """The exact split of ``claim`` as the decompose prompt's examples write it (the JSON a
    constrained reply takes: the problem's own subintervals, AND for "no", OR for "a")."""
    dec = formal_decomposition(Claim(id="c", text=claim.text), {"problem": "divisors"},
                               claim.width)
    if dec is None:  # pragma: no cover - every IntervalClaim parses
        raise UserError(f"no exact split of {claim.text!r}")
    return json.dumps(
        {"subclaims": [s.text for s in dec.subclaims],
         "rule": {"kind": dec.rule.kind, "k": None, "expr": None}}
    )
