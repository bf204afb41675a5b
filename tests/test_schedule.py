"""Tournament schedules: round robin, consultancies, Swiss rounds."""

from __future__ import annotations

from collections import Counter
from itertools import permutations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llmdebate.tournament.ratings import Match, persuasiveness, win_probability
from llmdebate.tournament.schedule import (
    Pairing,
    consultancies,
    pair_information,
    round_robin,
    swiss_round,
    swiss_rounds,
)

ROSTER = ["m0", "m1", "m2", "m3", "m4"]
ITEMS = [f"q{k}" for k in range(6)]


def test_round_robin_every_ordered_pair_on_every_item() -> None:
    sched = round_robin(ROSTER, ITEMS)
    assert len(sched) == len(ITEMS) * len(ROSTER) * (len(ROSTER) - 1)
    seen = Counter((p.item, p.correct, p.incorrect) for p in sched)
    want = {(i, a, b) for i in ITEMS for a, b in permutations(ROSTER, 2)}
    assert set(seen) == want and set(seen.values()) == {1}
    for m in ROSTER:  # each model argues each side equally often
        assert sum(p.correct == m for p in sched) == sum(p.incorrect == m for p in sched)
    with_self = round_robin(ROSTER, ITEMS, self_play=True)
    assert len(with_self) == len(ITEMS) * len(ROSTER) ** 2
    assert sum(p.correct == p.incorrect for p in with_self) == len(ITEMS) * len(ROSTER)


def test_consultancies_both_sides_alone() -> None:
    sched = consultancies(ROSTER, ITEMS)
    assert len(sched) == 2 * len(ROSTER) * len(ITEMS)
    for m in ROSTER:
        assert sum(p.correct == m and p.incorrect is None for p in sched) == len(ITEMS)
        assert sum(p.incorrect == m and p.correct is None for p in sched) == len(ITEMS)


def test_rosters_with_repeats_are_refused() -> None:
    with pytest.raises(ValueError, match="twice"):
        round_robin(["a", "a"], ITEMS)
    with pytest.raises(ValueError, match="twice"):
        consultancies(["a"], ["q", "q"])


def test_swiss_rounds_is_log2() -> None:
    assert [swiss_rounds(n) for n in (1, 2, 3, 4, 5, 8, 9)] == [1, 1, 2, 2, 3, 3, 4]


def test_pair_information_prefers_close_and_uncertain() -> None:
    assert pair_information((0, 1), (0.1, 1)) > pair_information((0, 1), (3, 1))
    assert pair_information((0, 2), (0, 2)) > pair_information((0, 1), (0, 1))


def _check_round(rnd: list[Pairing], models: list[str], per_pair: int) -> None:
    counts = Counter(m for p in rnd for m in p.models())
    assert set(counts.values()) <= {2 * per_pair}  # one pair per model, sides swapped
    assert len(counts) == len(models) - len(models) % 2
    pairs = Counter(p.models() for p in rnd)
    assert set(pairs.values()) == {2 * per_pair}
    for pair in pairs:  # each side equally, on the same items
        mine = [p for p in rnd if p.models() == pair]
        assert Counter(p.correct for p in mine) == Counter(p.incorrect for p in mine)
        assert sorted(p.item for p in mine if p.correct == min(pair)) == sorted(
            p.item for p in mine if p.incorrect == min(pair)
        )


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.floats(-3, 3), min_size=2, max_size=9),
    st.integers(0, 2**31),
    st.integers(1, 3),
)
def test_swiss_round_no_repeats_and_sides_equal(mus: list[float], seed: int, k: int) -> None:
    ratings = {f"m{i}": (mu, 1.0) for i, mu in enumerate(mus)}
    rnd = swiss_round(ratings, ITEMS, round_index=0, seed=seed, items_per_pair=k)
    _check_round(rnd, list(ratings), k)
    again = swiss_round(ratings, ITEMS, round_index=0, seed=seed, items_per_pair=k)
    assert rnd == again


def test_swiss_pairs_near_ratings() -> None:
    ratings = {f"m{i}": (float(i), 0.5) for i in range(8)}
    rnd = swiss_round(ratings, ITEMS, round_index=0, seed=4)
    pairs = {tuple(sorted(p.models())) for p in rnd}
    assert pairs == {("m0", "m1"), ("m2", "m3"), ("m4", "m5"), ("m6", "m7")}


def test_swiss_spends_debates_on_uncertain_ratings() -> None:
    # m_new has barely been rated: it is paired before two well-rated equals are
    ratings = {"a": (0.0, 0.1), "b": (0.0, 0.1), "new": (0.3, 2.0)}
    rnd = swiss_round(ratings, ITEMS, round_index=0, seed=0)
    assert "new" in {m for p in rnd for m in p.models()}


def test_swiss_avoids_rematches_and_reuses_no_item() -> None:
    ratings = {m: (0.0, 1.0) for m in ROSTER[:4]}
    history: list[Pairing] = []
    met: Counter[frozenset[str]] = Counter()
    for r in range(3):
        rnd = swiss_round(ratings, ITEMS, round_index=r, seed=9, history=history)
        for pair in {p.models() for p in rnd}:
            met[pair] += 1
        history += rnd
    # three rounds of four equal players: every pair met exactly once
    assert len(met) == 6 and set(met.values()) == {1}
    # a pair that meets again gets an item it has not debated
    rnd = swiss_round(ratings, ITEMS, round_index=3, seed=9, history=history)
    for p in rnd:
        before = {h.item for h in history if h.models() == p.models()}
        assert p.item not in before


def test_swiss_is_seeded() -> None:
    ratings = {m: (0.0, 1.0) for m in ROSTER}
    a = swiss_round(ratings, ITEMS, round_index=0, seed=1)
    assert a == swiss_round(ratings, ITEMS, round_index=0, seed=1)
    others = {tuple(swiss_round(ratings, ITEMS, round_index=0, seed=s)) for s in range(2, 12)}
    assert len(others) > 1


def test_swiss_tournament_ranks_known_strengths() -> None:
    """A whole Swiss tournament: rate after each round, pair by the ratings."""
    strength = {"s0": -2.0, "s1": -0.7, "s2": 0.0, "s3": 0.8, "s4": 2.2, "s5": 3.0}
    items = [f"q{k}" for k in range(50)]
    rng = np.random.default_rng(0)
    ratings = {m: (0.0, 2.0) for m in strength}
    history: list[Pairing] = []
    matches: list[Match] = []
    for r in range(6):
        rnd = swiss_round(ratings, items, round_index=r, seed=0, history=history, items_per_pair=6)
        history += rnd
        for p in rnd:
            assert p.correct is not None and p.incorrect is not None
            pc = win_probability(0.3 + strength[p.correct], strength[p.incorrect])
            matches.append(Match(p.correct, p.incorrect, float(rng.random() < pc)))
        table = persuasiveness(matches, n_boot=20, seed=r)
        ratings = {m: (table.get(m).value, max(table.get(m).sd, 0.05)) for m in strength}
    order = sorted(strength, key=lambda m: ratings[m][0])
    assert order[0] == "s0" and order[-1] in ("s4", "s5")
    assert ratings["s5"][0] - ratings["s0"][0] > 2.0


def test_swiss_bad_arguments() -> None:
    with pytest.raises(ValueError, match="no items"):
        swiss_round({"a": (0, 1), "b": (0, 1)}, [], round_index=0, seed=0)
    with pytest.raises(ValueError, match="items_per_pair"):
        swiss_round({"a": (0, 1), "b": (0, 1)}, ITEMS, round_index=0, seed=0, items_per_pair=0)


def test_pair_information_of_far_apart_ratings_is_finite() -> None:
    assert 0.0 <= pair_information((0.0, 1.0), (5000.0, 1.0)) < 1e-300
