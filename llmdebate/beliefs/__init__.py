"""Where the prover's own beliefs come from: its model, or a bounded source named in the config.

With ``prover.direction: belief`` and ``prover.recursion: belief`` the prover A plays eq. 13
on its own probability q of each claim: its direction is the sign of q − p (with the
debate's threshold ε) and it recurses into the subclaim where B's b_i is furthest from its q.
``prover.beliefs.source`` says where q comes from, an entry of :data:`BELIEF_SOURCES` (one
registry, like every extension point):

* ``model`` (the default): the prover's own model, by ``prover.belief_method``;
* ``table``: a **bounded, calibrated prover**. A table of P(the leaf judge says True | one
  feature of the claim) estimated from the judge's verdicts on *other* claims (numbers apart
  from the ones it is used on), ``prover.beliefs.table`` (a shipped table's name or a JSON
  file; :func:`build_table` writes one). It knows the verdict's frequency among claims that
  share the feature (for ``divisors-polarity-width``: the claim's polarity and its interval's
  width) and nothing else: not the number, not its factors, not the claim's own truth. Its q
  is calibrated for claims drawn as its estimation claims were (the law of its numbers, the
  shape of its claims); a claim the feature cannot read gets the table's base rate;
* ``oracle``: an **omniscient** prover, q = the claim's exact truth (the problem code's, which
  is the oracle leaf judge's verdict): what the debate's honest best response assumes.

Two variants of a bounded source, for control arms, are options of the same section:
``shift`` adds a known constant to every q (clipped to [0, 1]): a prover biased by a known
amount. ``shuffle_seed`` deals each claim the belief of a random other claim of the table's
estimation set (a cell drawn by a seeded hash of the claim's text with the cells'
frequencies): the same distribution of beliefs as the table's, independent of the claim, so
that a B that learns from this prover can learn its base rate and nothing about the claim.
A live prover cannot look up a permutation partner of a claim it has never seen, so the
shuffle is a deterministic draw per claim text, with replacement, not a permutation.

A package adds a source through the entry-point group ``llmdebate.belief_sources``: a
function ``(BeliefSettings) -> BeliefSource | None`` (None: the prover's model).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from llmdebate.errors import UserError
from llmdebate.registry import Registry

TABLES = Path(__file__).parent / "tables"
"""The tables shipped with the package (``prover.beliefs.table: <name>``)."""


class BeliefSource(Protocol):
    """A prover's own probability of a claim, without a model call."""

    name: str

    def belief(self, claim: str, item: dict[str, Any] | None) -> float:
        """q in [0, 1] for the claim text (``item``: the debate's dataset item, if any)."""
        ...


# --------------------------------------------------------------------------- features
Feature = Callable[[str, dict[str, Any] | None], str | None]
"""(claim text, item) -> the claim's cell of a table, or None when it cannot be read."""

FEATURES: Registry[Feature] = Registry("belief feature", group="llmdebate.belief_features")
"""The features a belief table may condition on, by name."""

WIDTH_BUCKETS = (2, 6, 15)
"""Upper ends of the width buckets of ``divisors-polarity-width``: 1-2, 3-6, 7-15, 16 and up."""


def _divisor_parts(claim: str) -> tuple[int, int, int, bool] | None:
    from llmdebate.data.problems import parse_divisor_claim

    return parse_divisor_claim(claim)


@FEATURES.register("divisors-polarity")
def polarity(claim: str, item: dict[str, Any] | None = None) -> str | None:
    """An interval claim's polarity: ``no`` (no divisor in the interval) or ``a``."""
    parts = _divisor_parts(claim)
    return None if parts is None else ("no" if parts[3] else "a")


@FEATURES.register("divisors-polarity-width")
def polarity_width(claim: str, item: dict[str, Any] | None = None) -> str | None:
    """An interval claim's polarity and its interval's width hi − lo in four buckets
    (1-2, 3-6, 7-15, 16+): e.g. ``no|3-6``."""
    parts = _divisor_parts(claim)
    if parts is None:
        return None
    _, lo, hi, none = parts
    return f"{'no' if none else 'a'}|{width_bucket(hi - lo)}"


def width_bucket(width: int) -> str:
    lo = 1
    for top in WIDTH_BUCKETS:
        if width <= top:
            return f"{lo}-{top}"
        lo = top + 1
    return f"{lo}+"


# ----------------------------------------------------------------------------- tables
@dataclass(frozen=True)
class BeliefTable:
    """P(verdict True | cell) with the counts it was estimated from.

    ``cells``: cell -> (verdicts True, claims); q = (true + 1) / (claims + 2) (Laplace, so no
    cell is certain). ``about``: how and on what it was estimated (free-form, recorded)."""

    feature: str
    cells: dict[str, tuple[int, int]]
    about: dict[str, Any]

    def rate(self, cell: str | None) -> float:
        if cell is None or cell not in self.cells:
            return self.base_rate
        t, n = self.cells[cell]
        return (t + 1) / (n + 2)

    @property
    def base_rate(self) -> float:
        t = sum(c[0] for c in self.cells.values())
        n = sum(c[1] for c in self.cells.values())
        return (t + 1) / (n + 2)

    def cell_of(self, claim: str, item: dict[str, Any] | None = None) -> str | None:
        return FEATURES.get(self.feature, where="belief table feature")(claim, item)

    def to_json(self) -> dict[str, Any]:
        return {"feature": self.feature,
                "cells": {k: {"true": t, "claims": n, "q": round((t + 1) / (n + 2), 6)}
                          for k, (t, n) in sorted(self.cells.items())},
                "base_rate": round(self.base_rate, 6), "about": self.about}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> BeliefTable:
        cells = {str(k): (int(v["true"]), int(v["claims"])) for k, v in data["cells"].items()}
        return cls(str(data["feature"]), cells, dict(data.get("about") or {}))

    def write(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_json(), indent=1) + "\n", encoding="utf-8")


def build_table(claims: Sequence[str], verdicts: Sequence[int], feature: str,
                about: dict[str, Any] | None = None) -> BeliefTable:
    """The table of ``feature`` estimated from the leaf judge's ``verdicts`` on ``claims``
    (claims the feature cannot read are left out)."""
    FEATURES.entry(feature, where="feature")
    get = FEATURES.get(feature)
    cells: dict[str, list[int]] = {}
    for c, v in zip(claims, verdicts, strict=True):
        cell = get(c, None)
        if cell is not None:
            cells.setdefault(cell, [0, 0])
            cells[cell][0] += int(v)
            cells[cell][1] += 1
    if not cells:
        raise UserError(f"feature {feature!r} reads none of the {len(claims)} claims")
    return BeliefTable(feature, {k: (t, n) for k, (t, n) in cells.items()}, dict(about or {}))


def load_table(name: str) -> BeliefTable:
    """A shipped table by name (``tables/<name>.json``) or a JSON file."""
    from llmdebate.records.paths import resolve_path

    shipped = TABLES / f"{name}.json"
    path = shipped if shipped.exists() else resolve_path(name)
    if not path.exists():
        known = ", ".join(sorted(p.stem for p in TABLES.glob("*.json")))
        raise UserError(f"prover.beliefs.table: no table {name!r} (shipped: {known}; or a "
                        "JSON file written by llmdebate.beliefs.build_table)")
    try:
        return BeliefTable.from_json(json.loads(path.read_text(encoding="utf-8")))
    except (KeyError, ValueError, TypeError) as exc:
        raise UserError(f"prover.beliefs.table: {path} is not a belief table ({exc})") from None


# ---------------------------------------------------------------------------- sources
def _clip(q: float) -> float:
    return min(1.0, max(0.0, q))


def _unit(seed: int, claim: str) -> float:
    """A uniform number in [0, 1) from the seed and the claim text (stable across runs)."""
    h = hashlib.sha256(f"{seed}\x00{claim}".encode()).digest()
    return int.from_bytes(h[:8], "big") / 2.0**64


@dataclass
class TableBeliefs:
    """A bounded prover: q = the table's rate of the claim's cell (+ shift), or of a cell drawn
    at random for the claim (``shuffle_seed``)."""

    table: BeliefTable
    shift: float = 0.0
    shuffle_seed: int | None = None
    name: str = "table"

    def belief(self, claim: str, item: dict[str, Any] | None = None) -> float:
        if self.shuffle_seed is None:
            q = self.table.rate(self.table.cell_of(claim, item))
        else:
            q = self.table.rate(self.drawn_cell(claim))
        return _clip(q + self.shift)

    def drawn_cell(self, claim: str) -> str:
        """The cell whose belief a shuffled prover gives ``claim``: drawn with the cells'
        frequencies among the estimation claims, by a hash of the seed and the text."""
        assert self.shuffle_seed is not None
        u = _unit(self.shuffle_seed, claim)
        total = sum(n for _, n in self.table.cells.values())
        acc = 0.0
        cells = sorted(self.table.cells.items())
        for cell, (_, n) in cells:
            acc += n / total
            if u < acc:
                return cell
        return cells[-1][0]


@dataclass
class OracleBeliefs:
    """An omniscient prover: q = the claim's exact truth (a claim the problem code cannot
    grade: 0.5), + shift."""

    shift: float = 0.0
    name: str = "oracle"

    def belief(self, claim: str, item: dict[str, Any] | None = None) -> float:
        from llmdebate.data.problems import claim_truth

        meta = (item or {}).get("meta") or {"problem": "divisors"}
        t = claim_truth(claim, meta)
        return _clip((0.5 if t is None else float(t)) + self.shift)


SourceFactory = Callable[[Any], "BeliefSource | None"]
"""Makes a prover's belief source from its ``prover.beliefs`` settings (None: the model)."""

BELIEF_SOURCES: Registry[SourceFactory] = Registry(
    "prover belief source", group="llmdebate.belief_sources")
"""Where a prover's own beliefs come from (``prover.beliefs.source``)."""


@BELIEF_SOURCES.register("model")
def _model(s: Any) -> BeliefSource | None:
    """The prover's own model, by prover.belief_method (the default)."""
    if s.shift or s.shuffle_seed is not None or s.table:
        raise UserError("prover.beliefs: shift, shuffle_seed and table apply to a table or "
                        "oracle source, not to the model's own beliefs")
    return None


@BELIEF_SOURCES.register("table")
def _table(s: Any) -> BeliefSource:
    """A bounded, calibrated prover: P(verdict | a feature of the claim) from other claims."""
    if not s.table:
        raise UserError("prover.beliefs.source table needs prover.beliefs.table (a shipped "
                        f"table's name: {', '.join(shipped_tables())}; or a JSON file)")
    return TableBeliefs(load_table(s.table), shift=s.shift, shuffle_seed=s.shuffle_seed)


@BELIEF_SOURCES.register("oracle")
def _oracle(s: Any) -> BeliefSource:
    """An omniscient prover: the claim's exact truth."""
    if s.table or s.shuffle_seed is not None:
        raise UserError("prover.beliefs.source oracle takes no table and no shuffle_seed")
    return OracleBeliefs(shift=s.shift)


def shipped_tables() -> list[str]:
    return sorted(p.stem for p in TABLES.glob("*.json"))


def make_source(settings: Any) -> BeliefSource | None:
    """The belief source of a prover's ``beliefs`` settings (None: its model)."""
    return BELIEF_SOURCES.get(settings.source, where="prover.beliefs.source")(settings)


def belief_direction(own: float, p: float, epsilon: float) -> int:
    """Eq. 13: +1 when A's own q exceeds B's p by more than ε, −1 when below by more, else 0."""
    if own - p > epsilon:
        return 1
    if own - p < -epsilon:
        return -1
    return 0


def brier(probs: Iterable[float], truths: Iterable[int]) -> float:
    pairs = list(zip(probs, truths, strict=True))
    return math.fsum((p - t) ** 2 for p, t in pairs) / max(1, len(pairs))
