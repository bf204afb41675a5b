"""The tournament report: accuracy against rating, the prover × estimator grid; merging runs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from llmdebate.errors import UserError
from llmdebate.report.merge import MergeRefused, RunRecords, merge_runs
from llmdebate.tournament.figures import (
    AccuracyPoint,
    PERecord,
    accuracy_points,
    accuracy_vs_rating_plot,
    grid_cells,
    grid_markdown,
    grid_plot,
    ratings_by_protocol,
    ratings_markdown,
    section,
)
from llmdebate.tournament.ratings import Match, persuasiveness, win_probability
from llmdebate.tournament.schedule import consultancies, round_robin

PNG = b"\x89PNG\r\n\x1a\n"
STRENGTH = {"weak": -1.0, "mid": 0.3, "strong": 1.5}


def _debates(seed: int) -> list[Match]:
    """Cross-play with self-play: the judge is right more often as both debaters get stronger
    (a stronger honest debater helps more than a stronger liar hurts)."""
    rng = np.random.default_rng(seed)
    items = [f"q{k}" for k in range(30)]
    out = []
    for p in round_robin(list(STRENGTH), items, self_play=True):
        assert p.correct is not None and p.incorrect is not None
        pc = win_probability(0.2 + 1.3 * STRENGTH[p.correct], STRENGTH[p.incorrect])
        out.append(Match(p.correct, p.incorrect, float(rng.random() < pc), pc, p.item, "debate"))
    return out


def _consultancies(seed: int) -> list[Match]:
    rng = np.random.default_rng(seed)
    out = []
    for p in consultancies(list(STRENGTH), [f"q{k}" for k in range(30)]):
        m = p.correct or p.incorrect
        assert m is not None
        won = rng.random() < win_probability(STRENGTH[m], 0.0)
        jc = float(won) if p.correct else float(not won)
        out.append(Match(p.correct, p.incorrect, jc, None, p.item, "consultancy"))
    return out


def test_accuracy_points_and_plot(tmp_path: Path) -> None:
    debates = _debates(0)
    table = persuasiveness(debates, n_boot=40, seed=0)
    pts = accuracy_points(debates, table, protocol="debate", seed=0, n_boot=200)
    assert [p.model for p in pts] == ["mid", "strong", "weak"]
    by = {p.model: p for p in pts}
    for p in pts:
        assert p.n == 30  # the self-play debates only
        selfplay = [m.judge_correct for m in debates if m.correct == m.incorrect == p.model]
        assert p.accuracy == pytest.approx(sum(selfplay) / len(selfplay))
        assert p.accuracy_ci[0] <= p.accuracy <= p.accuracy_ci[1]
        assert p.rating == table.get(p.model).value
    assert by["strong"].rating > by["weak"].rating
    assert by["strong"].accuracy > by["weak"].accuracy
    every = accuracy_points(debates, table, protocol="debate", self_play=False, n_boot=50)
    # without self-play: one point per ordered pair (correct side vs incorrect side)
    assert len(every) == 6 and all(p.n == 30 and p.kind == "rating difference" for p in every)
    strong_weak = next(p for p in every if p.model == "strong vs weak")
    assert strong_weak.rating == pytest.approx(
        table.get("strong").value - table.get("weak").value
    )

    cons = _consultancies(1)
    ctable = persuasiveness(cons, n_boot=40, seed=0)
    cpts = accuracy_points(cons, ctable, protocol="consultancy", n_boot=200)
    assert {p.n for p in cpts} == {60}
    png = accuracy_vs_rating_plot(pts + cpts)
    assert png.startswith(PNG) and len(png) > 5000
    (tmp_path / "accuracy_vs_rating.png").write_bytes(png)  # kept for a look (--basetemp)


def test_empty_accuracy_plot_still_draws() -> None:
    assert accuracy_vs_rating_plot([]).startswith(PNG)


def test_plot_takes_a_point_outside_its_percentile_interval() -> None:
    pt = AccuracyPoint("debate", "m", 1.0, (1.2, 1.5), 0.7, (0.5, 0.9), 10)
    assert accuracy_vs_rating_plot([pt]).startswith(PNG)


def test_grid_cells_values_and_figure(tmp_path: Path) -> None:
    recs = [
        PERecord("big", "small", True, 0.9, 1.0),
        PERecord("big", "small", True, 0.7, 1.0),
        PERecord("big", "small", False, -0.5, 0.0),
        PERecord("small", "big", True, 0.1, 0.0),
        PERecord("small", "big", True, None, None),
        PERecord("small", "small", False, 0.2, 1.0),
    ]
    cells = {(c.prover, c.estimator): c for c in grid_cells(recs)}
    assert cells[("big", "small")].honest_payoff == pytest.approx(0.8)
    assert cells[("big", "small")].n_honest == 2
    assert cells[("big", "small")].leaf_claim_accuracy == pytest.approx(2 / 3)
    assert cells[("small", "big")].n_honest == 1 and cells[("small", "big")].n_leaves == 1
    assert cells[("small", "small")].honest_payoff is None
    assert ("big", "big") not in cells
    md = grid_markdown(list(cells.values()))
    assert "| big | – | 0.800 (n=2) |" in md
    assert "| small | 0.000 (n=1) (0 of 2 stopped early) | 1.000 (n=1) (0 of 1" in md
    png = grid_plot(list(cells.values()))
    assert png.startswith(PNG)
    (tmp_path / "prover_estimator_grid.png").write_bytes(png)


def test_accuracy_against_rating_is_not_a_flat_line_of_a_pair_without_self_play() -> None:
    # two models, no self-play: a strong liar fools the judge, a weak one does not; pooling
    # each model's debates on either side would give both the same accuracy (a flat line)
    rng = np.random.default_rng(5)
    ms = []
    for k in range(60):
        c, i = ("strong", "weak") if k % 2 else ("weak", "strong")
        p = 0.9 if c == "strong" else 0.4
        ms.append(Match(c, i, float(rng.random() < p), None, f"q{k // 2}", "debate"))
    table = persuasiveness(ms, n_boot=20, seed=0)
    pts = accuracy_points(ms, table, protocol="debate", self_play=False, n_boot=50)
    by = {p.model: p for p in pts}
    assert set(by) == {"strong vs weak", "weak vs strong"}
    assert by["strong vs weak"].rating == pytest.approx(-by["weak vs strong"].rating)
    assert by["strong vs weak"].accuracy > by["weak vs strong"].accuracy + 0.3
    d = by["strong vs weak"].to_dict()
    assert d["kind"] == "rating difference" and "correct answer" in d["definition"]


def test_the_grid_counts_honest_beats_dishonest_with_early_stops_included() -> None:
    recs = [
        PERecord("p", "e", True, 0.9, 1.0, "q1"),
        PERecord("p", "e", False, -0.3, None, "q1", stopped_early=True),
        PERecord("p", "e", True, 0.0, None, "q2", stopped_early=True),
        PERecord("p", "e", False, 0.4, 1.0, "q2"),
    ]
    (cell,) = grid_cells(recs)
    assert cell.honest_beats_dishonest == 0.5 and cell.n_pairs == 2  # both stops count
    assert cell.leaf_claim_accuracy == 1.0 and cell.n_leaves == 2 and cell.early_stops == 2
    md = grid_markdown([cell])
    assert "Honest beats dishonest: P[R(honest) > R(dishonest)]" in md
    assert "early stops included" in md and "early stops reach no leaf" in md


def test_a_side_rating_that_wins_every_match_gets_no_interval_and_a_near_sweep_a_dagger() -> None:
    # a@correct wins all 12 of its matches: its rating is the prior's, no interval (never
    # "[x†, x]"); b@correct wins 11 of 12, so a resample without its one loss (p ≈ 0.35) is
    # common: the upper end of its interval is the prior's, marked †
    ms = [Match("a", "b", 1.0, None, f"q{k}", "debate") for k in range(12)]
    ms += [Match("b", "a", float(k != 0), None, f"r{k}", "debate") for k in range(12)]
    table = persuasiveness(ms, n_boot=60, seed=0, resample="item")
    swept = table.get("a", "correct")
    assert swept.ci95 is None and swept.prior_bound is None
    assert swept.note == "won every one of its 12 matches: its rating is the prior's"
    assert table.get("b", "incorrect").note == (
        "lost every one of its 12 matches: its rating is the prior's")
    assert table.get("b", "correct").prior_bound == "upper"
    assert table.get("b", "correct").ci95 is not None
    md = ratings_markdown({"debate": table})
    assert "†]" in md and "held only by the prior" in md and "none (prior only)" in md
    assert "No interval (a correct): won every one of its 12 matches" in md


def test_ratings_and_accuracy_points_of_fewer_than_ten_items_have_no_interval() -> None:
    ms = [m for m in _debates(0) if m.item in ("q0", "q1", "q2")]
    table = persuasiveness(ms, n_boot=20, seed=0, resample="item")
    too_few = "n = 3 items: too few for an interval (at least 10)"
    assert all(r.ci95 is None and r.note == too_few for r in table.ratings)
    pts = accuracy_points(ms, table, protocol="debate", n_boot=50)
    assert pts and all(p.accuracy_ci is None and p.accuracy_note == too_few for p in pts)
    assert all(p.rating_ci is None and p.items == 3 for p in pts)
    assert "No interval (" in ratings_markdown({"debate": table})


def _run(name: str, **kw: object) -> RunRecords:
    base: dict[str, object] = {
        "items": frozenset({"q1", "q2", "q3"}),
        "protocols": frozenset({"prover-estimator", "consultancy"}),
        "settings": {
            "dataset": "gpqa",
            "judge_passage": False,
            "depth": 2,
            "epsilon": 0.1,
            "rho": 0.5,
            "variant": "figure2",
        },
        "records": ({"id": f"{name}-1", "protocol": "consultancy"},),
    }
    base.update(kw)
    return RunRecords(name, **base)  # type: ignore[arg-type]


def test_merge_tags_records_with_their_run() -> None:
    merged = merge_runs([_run("a"), _run("b"), _run("c")])
    assert merged.name == "a+b+c"
    assert [r["run"] for r in merged.records] == ["a", "b", "c"]
    assert [r["id"] for r in merged.records] == ["a-1", "b-1", "c-1"]
    assert merged.items == frozenset({"q1", "q2", "q3"})


def _refusal(runs: list[RunRecords]) -> str:
    with pytest.raises(MergeRefused) as info:
        merge_runs(runs)
    msg = str(info.value)
    assert "\n" not in msg and isinstance(info.value, UserError)
    return msg


def test_merge_refusals_name_runs_and_field() -> None:
    s = {
        "dataset": "gpqa",
        "judge_passage": True,
        "depth": 2,
        "epsilon": 0.1,
        "rho": 0.5,
        "variant": "figure2",
    }
    assert _refusal([_run("a"), _run("b", settings=s)]) == (
        "cannot merge runs a and b: judge_passage differs (a: false, b: true)"
    )
    assert _refusal([_run("a"), _run("b", settings={**s, "judge_passage": False, "rho": 0.4})]) == (
        "cannot merge runs a and b: rho differs (a: 0.5, b: 0.4)"
    )
    assert _refusal([_run("a"), _run("b", items=frozenset({"q1", "q2", "q9"}))]) == (
        "cannot merge runs a and b: items differ: 1 only in a (q3); 1 only in b (q9)"
    )
    assert "protocols differ (a: consultancy, prover-estimator; b: consultancy)" in _refusal(
        [_run("a"), _run("b", protocols=frozenset({"consultancy"}))]
    )
    no_passage = {k: v for k, v in s.items() if k != "judge_passage"}
    assert _refusal([_run("a"), _run("b", settings=no_passage)]) == (
        "cannot merge runs a and b: judge_passage is recorded in a, not in b"
    )
    assert "given twice" in _refusal([_run("a"), _run("a")])
    assert "none given" in _refusal([])


def test_pe_settings_only_matter_with_prover_estimator() -> None:
    a = _run("a", protocols=frozenset({"consultancy"}))
    b = _run(
        "b",
        protocols=frozenset({"consultancy"}),
        settings={"dataset": "gpqa", "judge_passage": False, "depth": 5},
    )
    assert merge_runs([a, b]).name == "a+b"


def test_section_rates_each_protocol_and_draws_figures() -> None:
    matches = _debates(3) + _consultancies(4)
    pe = [PERecord("big", "small", True, 0.5, 1.0), PERecord("small", "big", True, -0.2, 0.0)]
    data, figures = section(matches, pe, seed=2, n_boot=20)
    assert sorted(data["ratings"]) == ["consultancy", "debate"]
    assert data["ratings"]["consultancy"]["consultancy"] is True
    assert {p["protocol"] for p in data["accuracy_vs_rating"]} == {"consultancy", "debate"}
    assert len(data["prover_estimator_grid"]) == 2
    assert sorted(figures) == ["accuracy_vs_rating.png", "prover_estimator_grid.png"]
    assert all(png.startswith(PNG) for png in figures.values())
    again, _ = section(matches, pe, seed=2, n_boot=20)
    assert again == data
    only, figs = section(_debates(3), seed=2, n_boot=5)
    assert "prover_estimator_grid" not in only and list(figs) == ["accuracy_vs_rating.png"]


def test_ratings_markdown_lists_every_seat() -> None:
    tables = ratings_by_protocol(_debates(5), n_boot=10, seed=1)
    md = ratings_markdown(tables)
    assert md.startswith("**debate** (bradley-terry, logit; 10 bootstrap resamples of matches")
    assert md.count("| strong |") == 3 and md.count("| weak |") == 3
    # the strongest model's rows come first
    assert md.index("| strong |") < md.index("| mid |") < md.index("| weak |")
