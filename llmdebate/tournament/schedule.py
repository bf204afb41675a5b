"""Which debater model argues which side of which item: schedules of a debater tournament.

Pure functions of a roster of model names, item ids, a seed and (Swiss) the current ratings;
nothing here runs a debate. A :class:`Pairing` seats one model on the correct answer and one
on the incorrect answer of an item (one seat is ``None`` in consultancy).

* :func:`round_robin`: every ordered pair of models on every item, so every pair meets on
  every item with both side assignments (optionally each model against itself too);
* :func:`consultancies`: every model on both sides of every item, alone;
* :func:`swiss_round`: one round of a Swiss tournament (Khan et al. 2024 run ⌈log2 n⌉
  of them): models are paired where a debate tells most about the ratings — pairs whose
  ratings are close (the outcome is least predictable) and uncertain (large σ), avoiding
  pairs that met before — and each pair debates fresh items with the sides swapped.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from llmdebate.errors import UserError

REMATCH_FACTOR = 0.01
"""A pair's information is multiplied by this for every earlier meeting."""


class ScheduleError(UserError, ValueError):
    """A roster or items that cannot be scheduled; the one-line message says which."""


@dataclass(frozen=True, slots=True)
class Pairing:
    """One debate to run: ``correct`` argues the correct answer of ``item``, ``incorrect``
    the incorrect one (``None``: no one, in consultancy); ``round`` is the Swiss round."""

    item: str
    correct: str | None
    incorrect: str | None
    round: int = 0

    def models(self) -> frozenset[str]:
        return frozenset(m for m in (self.correct, self.incorrect) if m is not None)


def _check_roster(models: Sequence[str], items: Sequence[str]) -> None:
    if len(set(models)) != len(models):
        raise ScheduleError("the roster names a model twice")
    if len(set(items)) != len(items):
        raise ScheduleError("an item id appears twice")


def round_robin(
    models: Sequence[str], items: Sequence[str], *, self_play: bool = False
) -> list[Pairing]:
    """Every ordered pair of distinct models on every item (A correct and B incorrect, and
    B correct and A incorrect), plus each model against itself with ``self_play``: per item
    n(n-1) debates (n² with self-play), each model on each side equally often."""
    _check_roster(models, items)
    return [
        Pairing(item, a, b) for item in items for a in models for b in models if a != b or self_play
    ]


def consultancies(models: Sequence[str], items: Sequence[str]) -> list[Pairing]:
    """Every model alone on each side of every item: 2·n consultancies per item."""
    _check_roster(models, items)
    return [
        p
        for item in items
        for m in models
        for p in (Pairing(item, m, None), Pairing(item, None, m))
    ]


def swiss_rounds(n_models: int) -> int:
    """⌈log2 n⌉ rounds: as many as a Swiss tournament needs to separate n players."""
    return max(1, math.ceil(math.log2(max(2, n_models))))


def pair_information(a: tuple[float, float], b: tuple[float, float]) -> float:
    """How much a debate between players rated (μ_a, σ_a) and (μ_b, σ_b) (logits) is expected
    to tell: (σ_a² + σ_b²)·p(1-p), p = σ(μ_a - μ_b), the variance of the rating difference
    times the Fisher information of one outcome."""
    d = min(max(a[0] - b[0], -700.0), 700.0)
    p = 1.0 / (1.0 + math.exp(-d))
    return (a[1] ** 2 + b[1] ** 2) * p * (1.0 - p)


def _exchange(
    pairs: list[tuple[str, str]], idle: list[str], weight: Callable[[str, str], float]
) -> bool:
    """One pass of partner exchanges that raise the total weight (in place); True if any."""
    improved = False
    for x in range(len(pairs)):
        for y in range(x + 1, len(pairs)):
            (a, b), (c, d) = pairs[x], pairs[y]
            now = weight(a, b) + weight(c, d)
            for p, q in (((a, c), (b, d)), ((a, d), (b, c))):
                if weight(*p) + weight(*q) > now + 1e-12:
                    pairs[x], pairs[y] = p, q
                    improved = True
                    break
        for k, m in enumerate(idle):
            a, b = pairs[x]
            for keep, leave in ((a, b), (b, a)):
                if weight(keep, m) > weight(a, b) + 1e-12:
                    pairs[x], idle[k] = (keep, m), leave
                    improved = True
                    break
    return improved


def _pairs(
    order: Sequence[str],
    ratings: Mapping[str, tuple[float, float]],
    met: Counter[frozenset[str]],
) -> list[tuple[str, str]]:
    """A matching of high total weight (:func:`pair_information`, times
    :data:`REMATCH_FACTOR` per earlier meeting): greedy, the heaviest pair first (ties in the
    seeded ``order``), then improved by exchanging partners between two pairs, or with the
    model that sits out when their number is odd, while the total weight rises."""

    def weight(a: str, b: str) -> float:
        return pair_information(ratings[a], ratings[b]) * REMATCH_FACTOR ** met[frozenset((a, b))]

    rank = {m: k for k, m in enumerate(order)}
    candidates = sorted(
        (-weight(a, b), rank[a], rank[b], a, b) for x, a in enumerate(order) for b in order[x + 1 :]
    )
    seated: set[str] = set()
    out: list[tuple[str, str]] = []
    for _, _, _, a, b in candidates:
        if a not in seated and b not in seated:
            seated |= {a, b}
            out.append((a, b))
    idle = [m for m in order if m not in seated]
    while _exchange(out, idle, weight):
        pass
    return out


def swiss_round(
    ratings: Mapping[str, tuple[float, float]],
    items: Sequence[str],
    *,
    round_index: int,
    seed: int,
    history: Sequence[Pairing] = (),
    items_per_pair: int = 1,
) -> list[Pairing]:
    """One Swiss round over the models of ``ratings`` (model -> (μ, σ), logits; before any
    debate give every model the same (0, σ)).

    Models are paired to make :func:`pair_information` high in total, down-weighted by
    :data:`REMATCH_FACTOR` per earlier round of ``history`` in which they met; no model
    debates twice in a round. Each pair gets ``items_per_pair`` items it has not debated
    yet (drawn at random; items it has debated once all are used), each twice with the
    sides swapped. Deterministic given ``seed`` and ``round_index``.
    """
    _check_roster(list(ratings), items)
    if not items:
        raise ScheduleError("no items to schedule")
    if items_per_pair < 1:
        raise ScheduleError("items_per_pair must be at least 1")
    rng = np.random.default_rng([seed, round_index])
    names = sorted(ratings)
    order = [names[int(k)] for k in rng.permutation(len(names))]
    used: dict[frozenset[str], set[str]] = {}
    rounds: set[tuple[frozenset[str], int]] = set()
    for p in history:
        pair = p.models()
        if len(pair) == 2:
            used.setdefault(pair, set()).add(p.item)
            rounds.add((pair, p.round))
    met: Counter[frozenset[str]] = Counter(pair for pair, _ in rounds)
    out: list[Pairing] = []
    for a, b in _pairs(order, ratings, met):
        done = used.get(frozenset((a, b)), set())
        fresh = [i for i in items if i not in done]
        rest = [i for i in items if i in done]
        picks = [fresh[int(k)] for k in rng.permutation(len(fresh))]
        picks += [rest[int(k)] for k in rng.permutation(len(rest))]
        for item in picks[:items_per_pair]:
            out.append(Pairing(item, a, b, round_index))
            out.append(Pairing(item, b, a, round_index))
    return out
