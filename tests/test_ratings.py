"""Persuasiveness ratings: Bradley–Terry and openskill, with bootstrap intervals."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llmdebate.errors import MissingExtraError
from llmdebate.tournament.ratings import (
    ELO_PER_LOGIT,
    JUDGE,
    Match,
    Rating,
    RatingError,
    bradley_terry,
    games_of,
    openskill_ratings,
    persuasiveness,
    win_probability,
)
from llmdebate.tournament.schedule import consultancies, round_robin

# Scripted debaters of known strength: the judge picks the correct answer with probability
# σ(truth + θ_correct - θ_incorrect). "conceding" gives its side up: it (nearly) always loses.
STRENGTH = {"strong": 1.5, "random": 0.0, "conceding": -4.0}
TRUTH = 0.5


def _tournament(seed: int, items: int = 40) -> list[Match]:
    rng = np.random.default_rng(seed)
    out = []
    for p in round_robin(list(STRENGTH), [f"q{k}" for k in range(items)]):
        assert p.correct is not None and p.incorrect is not None
        pc = win_probability(TRUTH + STRENGTH[p.correct], STRENGTH[p.incorrect])
        out.append(Match(p.correct, p.incorrect, float(rng.random() < pc), pc, p.item, "debate"))
    return out


def _separated(lo: Rating, hi: Rating) -> bool:
    assert lo.ci95 is not None and hi.ci95 is not None
    return lo.ci95[1] < hi.ci95[0]


@pytest.mark.parametrize("method", ["bradley-terry", "openskill"])
def test_known_strengths_are_ordered_with_separated_intervals(method: str) -> None:
    table = persuasiveness(_tournament(7), method=method, n_boot=60, seed=3)  # type: ignore[arg-type]
    strong, rand, conc = (table.get(m) for m in ("strong", "random", "conceding"))
    assert strong.value > rand.value > conc.value
    assert _separated(rand, strong)
    if method == "bradley-terry":  # it lost every match: the prior alone holds its rating
        assert conc.ci95 is None and conc.note is not None and "lost every one" in conc.note
        assert rand.ci95 is not None and conc.value < rand.ci95[0]
    else:
        assert _separated(conc, rand)
    for r in (strong, rand, conc):
        assert r.ci95 is None or r.ci95[0] <= r.value <= r.ci95[1]
        assert r.matches == 160
    # per side: the strong debater is the most persuasive on either side
    for side in ("correct", "incorrect"):
        vals = {m: table.get(m, side).value for m in STRENGTH}
        assert max(vals, key=vals.__getitem__) == "strong"
        assert min(vals, key=vals.__getitem__) == "conceding"
    # and arguing the truth is easier than arguing against it
    assert table.get("random", "correct").win_rate > table.get("random", "incorrect").win_rate


def test_bootstrap_is_deterministic_given_the_seed() -> None:
    ms = _tournament(1, items=10)
    a = persuasiveness(ms, n_boot=30, seed=5).to_dict()
    b = persuasiveness(ms, n_boot=30, seed=5).to_dict()
    c = persuasiveness(ms, n_boot=30, seed=6).to_dict()
    assert a == b and a != c
    assert a["seed"] == 5 and a["n_boot"] == 30 and a["scale"] == "logit"


def test_soft_outcome_uses_the_judges_probability() -> None:
    # the decisions are all ties; only the probabilities say who persuades
    ms = [Match("a", "b", 0.5, 0.9), Match("b", "a", 0.5, 0.1)] * 5
    dec = persuasiveness(ms, n_boot=5)
    soft = persuasiveness(ms, outcome="probability", n_boot=5)
    assert dec.get("a").value == pytest.approx(0.0, abs=1e-9)
    assert soft.get("a").value > 1.0 > -1.0 > soft.get("b").value
    assert soft.get("a").win_rate == pytest.approx(0.9)


def test_bt_recovers_known_strengths() -> None:
    rng = np.random.default_rng(11)
    true = {"a": 1.2, "b": 0.4, "c": -0.3, "d": -1.3}
    names = list(true)
    games = []
    for _ in range(12000):
        i, j = rng.choice(len(names), 2, replace=False)
        a, b = names[int(i)], names[int(j)]
        games.append((a, b, float(rng.random() < win_probability(true[a], true[b]))))
    fit = bradley_terry(games)
    assert sum(fit.values()) == pytest.approx(0.0, abs=1e-9)
    for n in names:
        assert fit[n] == pytest.approx(true[n], abs=0.1)


def test_bt_ties_count_half_and_anchor_pins() -> None:
    # a beats b 3 times in 4 with ties counted as halves: 2 wins + 2 ties of 4 = 0.75
    fit = bradley_terry(
        [("a", "b", 1.0), ("a", "b", 1.0), ("a", "b", 0.5), ("b", "a", 0.5)], prior=1e-9
    )
    assert win_probability(fit["a"], fit["b"]) == pytest.approx(0.75, abs=1e-6)
    pinned = bradley_terry([("x", JUDGE, 1.0)] * 3 + [("x", JUDGE, 0.0)], anchor=JUDGE, prior=1e-9)
    assert pinned[JUDGE] == 0.0
    assert pinned["x"] == pytest.approx(math.log(3.0), abs=1e-6)


def test_bt_stays_finite_when_one_player_never_wins() -> None:
    fit = bradley_terry([("a", "b", 1.0)] * 50)
    assert math.isfinite(fit["b"]) and fit["a"] > 3.0 and fit["a"] == pytest.approx(-fit["b"])


names = st.sampled_from(["m1", "m2", "m3", "m4"])
games_st = st.lists(
    st.tuples(names, names, st.sampled_from([0.0, 0.25, 0.5, 1.0])), min_size=1, max_size=30
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(games_st, st.permutations(["m1", "m2", "m3", "m4"]))
def test_bt_is_invariant_to_relabelling(
    games: list[tuple[str, str, float]], perm: list[str]
) -> None:
    relabel = dict(zip(["m1", "m2", "m3", "m4"], [f"x{p}" for p in perm], strict=True))
    a = bradley_terry(games)
    b = bradley_terry([(relabel[i], relabel[j], s) for i, j, s in games])
    assert set(b) == {relabel[n] for n in a}
    for n, v in a.items():
        assert b[relabel[n]] == pytest.approx(v, abs=1e-7)


def test_consultancy_rates_how_often_the_judge_is_persuaded() -> None:
    rng = np.random.default_rng(2)
    persuade = {"smooth": 0.8, "plain": 0.5, "blunt": 0.15}
    ms = []
    for p in consultancies(list(persuade), [f"q{k}" for k in range(60)]):
        m = p.correct or p.incorrect
        assert m is not None
        won = rng.random() < persuade[m]
        judge_correct = float(won) if p.correct else float(not won)
        ms.append(Match(p.correct, p.incorrect, judge_correct, item=p.item))
    table = persuasiveness(ms, n_boot=50, seed=1)
    assert table.consultancy
    for m, rate in persuade.items():
        r = table.get(m)
        assert r.matches == 120
        assert r.win_rate == pytest.approx(rate, abs=0.1)
        assert r.value == pytest.approx(math.log(r.win_rate / (1 - r.win_rate)), abs=0.05)
    assert table.get("smooth").ci95[0] > table.get("plain").ci95[1]
    assert table.get("plain").ci95[0] > table.get("blunt").ci95[1]
    assert JUDGE not in table.models()
    os_table = persuasiveness(ms, method="openskill", n_boot=10, seed=1)
    assert os_table.get("smooth").value > os_table.get("plain").value > os_table.get("blunt").value


def test_self_play_informs_sides_only() -> None:
    ms = [Match("a", "a", 1.0)] * 4 + [Match("a", "b", 1.0), Match("b", "a", 0.0)]
    t = persuasiveness(ms, n_boot=5)
    assert t.get("a").matches == 2  # self-play says nothing about a against others
    assert t.get("a", "correct").matches == 5 and t.get("a", "incorrect").matches == 5


def test_games_of_names_side_players() -> None:
    gs = games_of([Match("a", "b", 1.0, 0.7)], "probability", by_side=True)
    assert gs == [("a@correct", "b@incorrect", 0.7)]
    assert games_of([Match(None, "a", 1.0)]) == [("a", JUDGE, 0.0)]


def test_openskill_draws_and_orders() -> None:
    even = openskill_ratings([("a", "b", 0.5)] * 6, seed=0)
    assert even["a"] == pytest.approx(even["b"])
    wins = openskill_ratings([("a", "b", 1.0)] * 6, seed=0)
    assert wins["a"] > 25.0 > wins["b"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"method": "elo"}, "method must be one of"),
        ({"outcome": "vibes"}, "outcome must be one of"),
        ({"method": "openskill", "outcome": "probability"}, "openskill rates decisions"),
        ({"n_boot": 0}, "n_boot"),
    ],
)
def test_bad_arguments_are_named(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        persuasiveness([Match("a", "b", 1.0)], **kwargs)  # type: ignore[arg-type]


def test_mixed_matches_are_refused() -> None:
    with pytest.raises(ValueError, match="separately"):
        persuasiveness([Match("a", "b", 1.0), Match("a", None, 1.0)])
    with pytest.raises(ValueError, match="one protocol"):
        persuasiveness([Match("a", "b", 1.0, protocol="x"), Match("a", "b", 1.0, protocol="y")])
    with pytest.raises(ValueError, match="at least one side"):
        Match(None, None, 1.0)
    with pytest.raises(ValueError, match="judge_correct"):
        Match("a", "b", 2.0)


def test_match_round_trips_and_elo_scale() -> None:
    m = Match("a", None, 0.0, 0.2, "q1", "consultancy")
    assert Match.from_dict(m.to_dict()) == m
    # 400 Elo points: odds of 10 to 1
    assert win_probability(400 / ELO_PER_LOGIT, 0.0) == pytest.approx(10 / 11)


def test_openskill_missing_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "openskill", None)
    monkeypatch.setitem(sys.modules, "openskill.models", None)
    with pytest.raises(MissingExtraError, match=r"llmdebate\[tournament\]"):
        persuasiveness([Match("a", "b", 1.0)], method="openskill", n_boot=1)


def test_openskill_unknown_model_is_named() -> None:
    with pytest.raises(RatingError, match=r"unknown openskill model 'Glicko'.*PlackettLuce"):
        openskill_ratings([("a", "b", 1.0)], model="Glicko")


def test_item_bootstrap_resamples_whole_items() -> None:
    # every item is decided by its difficulty alone: item-level resampling sees that the
    # evidence comes from few items, and its interval is wider than the match-level one
    ms = []
    for k in range(12):
        won = float(k % 4 != 0)
        ms += [Match("a", "b", won, item=f"q{k}"), Match("b", "a", 1.0 - won, item=f"q{k}")] * 6
    by_match = persuasiveness(ms, n_boot=200, seed=0).get("a")
    by_item = persuasiveness(ms, n_boot=200, seed=0, resample="item").get("a")
    assert by_item.value == by_match.value
    assert by_item.ci95 is not None and by_match.ci95 is not None
    assert by_item.ci95[1] - by_item.ci95[0] > by_match.ci95[1] - by_match.ci95[0]
    assert persuasiveness(ms, n_boot=2, resample="item").to_dict()["resample"] == "item"
    with pytest.raises(RatingError, match="resample must be one of"):
        persuasiveness(ms, n_boot=2, resample="debate")  # type: ignore[arg-type]


def test_extreme_strengths_and_bad_scores() -> None:
    assert win_probability(1000.0, 0.0) == 1.0 and win_probability(0.0, 1000.0) == 0.0
    with pytest.raises(RatingError, match=r"score must lie in \[0, 1\], got 1.5 \(a v b\)"):
        bradley_terry([("a", "b", 1.5)])
