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
from dataclasses import dataclass
from pathlib import Path

from llmdebate.data.problems import divisor_statement, formal_decomposition, prime_top
from llmdebate.errors import UserError
from llmdebate.schemas import Claim


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


def draw_claims(
    count: int, seed: int, numbers: tuple[int, int], widths: list[int], *, debate_like: bool,
    exclude: frozenset[int] | set[int] = frozenset(),
) -> list[IntervalClaim]:
    """``count`` claims about distinct numbers in ``[numbers[0], numbers[1])``.

    ``debate_like``: for each number the two claims a depth-2 debate asks the prover to split
    (the top claim [2, top) and one of its halves, each of either polarity), as the held-out
    set; otherwise each number gives one claim, the top claim or a random subinterval of it.
    Numbers in ``exclude`` are passed over (drawn and skipped, so the claims drawn before one
    of them do not depend on it).
    """
    rng = random.Random(seed)
    lo_n, hi_n = numbers
    if hi_n - lo_n - sum(lo_n <= n < hi_n for n in exclude) < count:
        raise UserError(f"numbers {numbers}: fewer than {count} numbers to draw from")
    out: list[IntervalClaim] = []
    used: set[int] = set()
    while len(used) < count:
        n = rng.randrange(lo_n, hi_n)
        lo, top = prime_top(n)
        if n in used or n in exclude or top - lo < 4:
            continue
        used.add(n)
        width = rng.choice(widths)
        if debate_like:
            mid = lo + (top - lo) // 2
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
