"""The n < 10 rule, one implementation: every interval the project prints counts its items
and gives none under 10, with the same sentence — rows, paired comparisons, pairs, payoffs,
people's clustered intervals, the mixed model, tournament ratings and accuracy points, and
the closing lines (which say "too few items to tell", not "not established")."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from judging_study import SCRIPTED

from llmdebate.cli import main
from llmdebate.intervals import too_few
from llmdebate.report.closing import closing_lines
from llmdebate.report.inference import clustered_interval, mixed_logit

try:
    from tests.fixtures import tournament_players
except ImportError:  # pytest run from inside tests/
    sys.path.insert(0, str(Path(__file__).parent))
    from fixtures import tournament_players  # type: ignore[no-redef]

REPO = Path(__file__).resolve().parents[1]
SENTENCE = too_few(3)


@pytest.fixture(scope="module")
def three_items(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tournament of two debaters (with self-play) on 3 items over every protocol that
    has a figure: 6 prover-estimator pairs (two estimator models), but 3 items."""
    tmp = tmp_path_factory.mktemp("three")
    rows = [json.loads(x) for x in (REPO / "datasets" / "divisors.jsonl").read_text().splitlines()]
    for r in rows[:3]:
        r["context"] = f"A note on the number {r['meta']['n']}. " * 30
    data = tmp / "items.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows[:3]))
    cfg = {
        "name": "three",
        "protocols": ["direct", "consultancy", "two-sided", "prover-estimator"],
        "dataset": {"path": str(data)},
        "prover": {**SCRIPTED, "decomposer": "formal"},
        "estimator": SCRIPTED,
        "judge": tournament_players.judge_settings(direct_passage=["hidden", "shown"]),
        "debate": {"depth": 1, "width": 2},
        "tournament": {
            "roster": {n: tournament_players.player(n) for n in ("strong", "random", "concede")},
            "self_play": True,
            "provers": ["random"],
            "estimators": ["random", "strong"],
        },
        "report": {"bootstrap": 50},
    }
    (tmp / "c.yaml").write_text(yaml.safe_dump(cfg))
    run_dir = tmp / "run"
    assert main(["run", "--config", str(tmp / "c.yaml"), "--run-dir", str(run_dir), "--quiet"]) == 0
    assert main(["report", str(run_dir), "--quiet"]) == 0
    return run_dir


def _none(ci: Any, note: Any, where: str) -> None:
    assert ci is None and note == SENTENCE, (where, ci, note)


def test_every_figure_of_a_three_item_run_gives_no_interval_and_the_same_sentence(
    three_items: Path,
) -> None:
    m = json.loads((three_items / "comparison.json").read_text())
    assert m["rows"] and m["comparisons"]
    for r in m["rows"]:
        assert r["items"] == 3
        _none(r["ci95"], r["interval_note"], r["label"])
    for c in m["comparisons"]:
        _none(c["ci95"], c["note"], f"{c['a']} - {c['b']}")
    pe = m["protocols"]["prover-estimator"]
    assert pe["pairs"]["n"] == 6 and pe["pairs"]["items"] == 3  # two seatings an item
    _none(pe["pairs"]["discrimination_ci95"], pe["pairs"]["discrimination_note"], "pairs")
    _none(pe["pairs"]["mean_gap_ci95"], pe["pairs"]["mean_gap_note"], "gap")
    for s in ("honest", "dishonest"):
        v = pe["payoff"][s]
        assert v["n"] == 6 and v["items"] == 3
        _none(v["mean_normalized_ci95"], v["mean_normalized_note"], s)
        _none(v["mean_expected_normalized_ci95"], v["mean_expected_normalized_note"], s)
    tour = m["tournament"]
    for proto, table in tour["ratings"].items():
        for r in table["ratings"]:
            _none(r["ci95"], r["interval_note"], f"{proto} {r['model']} {r['side']}")
            assert r["win_rate"] is None or not np.isnan(r["win_rate"])
    assert tour["accuracy_vs_rating"]
    for p in tour["accuracy_vs_rating"]:
        _none(p["accuracy_ci"], p["accuracy_note"], f"{p['protocol']} {p['model']}")
        assert p["rating_ci"] is None and p["items"] == 3
    md = (three_items / "comparison.md").read_text()
    assert "none (n < 10)" in md and "[0.000, 0.000]" not in md and "nan" not in md
    assert "No interval (" in md and SENTENCE in md


def test_the_closing_lines_of_a_three_item_run_say_too_few_items_to_tell(
    three_items: Path,
) -> None:
    lines = closing_lines(json.loads((three_items / "summary.json").read_text()))
    verdicts = [x for x in lines if "favour the truth?" in x]
    assert verdicts and all(f"too few items to tell ({SENTENCE})" in x for x in verdicts), lines
    assert not any("not established" in x for x in verdicts), lines
    assert all("CI [" not in x for x in lines), lines  # no interval anywhere


def test_peoples_intervals_and_the_mixed_model_count_items_too() -> None:
    rng = np.random.default_rng(0)
    items = [f"i{k % 3}" for k in range(60)]
    judges = [f"j{k % 10}" for k in range(60)]
    y = [float(v) for v in rng.integers(0, 2, 60)]
    ci, note = clustered_interval(y, items, judges, seed=0, n_boot=50)
    assert ci is None and note == SENTENCE
    rows = ["a" if k % 2 else "b" for k in range(60)]
    fit = mixed_logit(y, rows, judges, items)
    assert fit is not None
    (effect,) = fit["effects"]
    assert effect["ci95"] is None and effect["note"] == SENTENCE
