"""The main job's plots draw something, labelled: the accuracy plot a bar for honest beats
dishonest over pairs, the payoff plot both provers' payoffs (paired, or marked unpaired); a plot
with nothing to draw is not written, and the report says why."""

from __future__ import annotations

import io
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from llmdebate.experiment.loading import validate
from llmdebate.experiment.runner import run
from llmdebate.report import plots
from llmdebate.report.build import build_report
from llmdebate.report.metrics import calibration

REPO = Path(__file__).resolve().parents[1]
FIXTURE = str(REPO / "tests" / "fixtures" / "llm_fixtures.py")
GREEN, RED = (0x54, 0xA2, 0x4B), (0xE4, 0x57, 0x56)  # honest / dishonest (plots.py)

pytest.importorskip("matplotlib")


def _pixels(png: bytes) -> np.ndarray:
    import matplotlib.image

    return (matplotlib.image.imread(io.BytesIO(png), format="png")[..., :3] * 255).round()


def _near(img: np.ndarray, rgb: tuple[int, int, int], tol: float = 40.0) -> int:
    """Pixels within ``tol`` of ``rgb`` per channel (alpha-blended bars land near it)."""
    return int((np.abs(img - np.array(rgb)) <= tol).all(axis=-1).sum())


def _blend(a: tuple[int, int, int], b: tuple[int, int, int], alpha: float = 0.6
           ) -> tuple[int, int, int]:
    """The colour ``a`` drawn with ``alpha`` over ``b`` (overlapping translucent bars)."""
    r, g, bl = (round(alpha * x + (1 - alpha) * y) for x, y in zip(a, b, strict=True))
    return r, g, bl


def _png_at(fig: Any) -> tuple[np.ndarray, Any]:
    """The figure's pixels as the report saves them (dpi 90), and a function from display
    coordinates to (row, column)."""
    fig.tight_layout()
    fig.set_dpi(90)
    fig.canvas.draw()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    img = _pixels(buf.getvalue())
    height = img.shape[0]
    return img, lambda xy: (round(height - xy[1]), round(xy[0]))


def _main_job(tmp_path: Path) -> dict[str, Any]:
    """configs/local-divisors.yaml as shipped, its models swapped for the scripted ones."""
    data = yaml.safe_load((REPO / "configs" / "local-divisors.yaml").read_text())
    assert data["prover"]["assignment"] == "paired"  # the main job measures pairs
    scripted = {"responder": f"{FIXTURE}:responder", "probabilities": f"{FIXTURE}:probabilities"}
    for role in ("prover", "estimator", "judge"):
        data[role] = {**data[role], "model": "scripted", "options": scripted}
    data["dataset"]["path"] = str(REPO / data["dataset"]["path"])
    data["use_cache"] = False
    return data


@pytest.fixture(scope="module")
def main_job_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("main")
    res = run(validate(_main_job(tmp)), tmp / "r", progress=False)
    assert res.exit_code == 0
    build_report(tmp / "r")
    return tmp / "r"


def test_the_main_jobs_accuracy_plot_draws_the_pairs_bar(main_job_report: Path) -> None:
    m = json.loads((main_job_report / "comparison.json").read_text())
    row = next(r for r in m["rows"] if r["figure"] == "honest beats dishonest")
    assert row["value"] is not None and row["value"] > 0  # a bar with a height
    img = _pixels((main_job_report / "plots" / "accuracy.png").read_bytes())
    assert _near(img, GREEN, tol=10) > 2000  # the bar itself, not a legend swatch
    assert m["plots_not_drawn"] == {}


def test_the_main_jobs_payoff_plot_draws_both_sides_of_the_pairs(main_job_report: Path) -> None:
    m = json.loads((main_job_report / "comparison.json").read_text())
    assert m["protocols"]["prover-estimator"]["pairs"]["n"] >= 1
    img = _pixels((main_job_report / "plots" / "payoffs.png").read_bytes())
    assert _near(img, GREEN, 12) > 200 and _near(img, RED, 12) > 200


def _metrics(pairs: dict[str, Any], honest: list[float], dishonest: list[float]) -> dict:
    side = lambda v: {"normalized": v}  # noqa: E731
    return {
        "rows": [{"label": "prover-estimator", "figure": "honest beats dishonest",
                  "value": None, "items": 0, "ci95": None}],
        "protocols": {"prover-estimator": {
            "pairs": pairs, "payoff": {"honest": side(honest), "dishonest": side(dishonest)}}},
    }


def test_unpaired_payoffs_are_plotted_and_an_empty_accuracy_plot_is_not_written() -> None:
    m = _metrics({"n": 0}, [-6000.0, -5000.0, -7000.0], [-6500.0, -6200.0, -5100.0])
    h, d, paired = plots.payoff_values(m, "prover-estimator")
    assert (len(h), len(d), paired) == (3, 3, False)
    png = plots.payoff_plot(m)
    assert png is not None
    img = _pixels(png)
    assert _near(img, GREEN, 12) > 200 and _near(img, RED, 12) > 200
    assert plots.accuracy_plot(m) is None
    assert "no row has a value" in plots.not_drawn(m)["accuracy"]
    assert "payoffs" not in plots.not_drawn(m)
    empty = _metrics({"n": 0}, [], [])
    assert plots.payoff_plot(empty) is None
    assert plots.not_drawn(empty)["payoffs"] == "no prover-estimator debate has a payoff"


def test_the_two_payoff_distributions_are_told_apart_and_counted_in_whole_numbers() -> None:
    """The same payoffs on both sides, the worst case for overlapping histograms: each side
    keeps its own colour (no bar over another, so no blend of the two), counts are integers."""
    same = [-4.0, -4.0, 1.0, 33.0]
    drawn = plots.payoff_figure(_metrics({"n": 0}, same, same))
    assert drawn is not None
    fig, ax = drawn
    img, _ = _png_at(fig)
    assert _near(img, GREEN, 6) > 300 and _near(img, RED, 6) > 300
    assert _near(img, _blend(GREEN, RED), 6) == 0 and _near(img, _blend(RED, GREEN), 6) == 0
    ticks = ax.get_yticks()
    assert len(ticks) >= 2 and all(float(t).is_integer() for t in ticks)


def _rows() -> dict[str, Any]:
    note = "n = 4 items: too few for an interval (at least 10)"
    return {"rows": [
        {"label": "prover-estimator", "figure": "honest beats dishonest", "value": 0.75,
         "items": 4, "ci95": None, "interval_note": note},
        {"label": "direct (blind)", "figure": "judge accuracy", "value": 0.55, "items": 20,
         "ci95": [0.3, 0.8], "interval_note": None},
        {"label": "consultancy", "figure": "judge accuracy", "value": 0.7, "items": 20,
         "ci95": [0.5, 0.85], "interval_note": None},
    ]}


def _rgb(colour: str) -> tuple[int, int, int]:
    r, g, b = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
    return r, g, b


def test_every_interval_the_accuracy_plot_promises_is_drawn() -> None:
    """Each row with an interval: the interval's colour at both of its ends and on its line;
    a row without one says why on its label."""
    m = _rows()
    drawn = plots.accuracy_figure(m)
    assert drawn is not None
    fig, ax = drawn
    img, at = _png_at(fig)
    dark = _rgb(plots.INTERVAL_COLOUR)
    for k, r in enumerate(m["rows"]):
        if r["ci95"] is None:
            continue
        for y in r["ci95"]:
            row, col = at(ax.transData.transform((k, y)))
            patch = img[row - 2:row + 3, col - 4:col + 5]
            assert _near(patch, dark, 60) >= 3, (r["label"], y)  # the cap at the end
        row, col = at(ax.transData.transform((k, (r["ci95"][0] + r["value"]) / 2)))
        assert _near(img[row - 1:row + 2, col - 1:col + 2], dark, 60) >= 1  # the line
    assert "95% CI" in ax.get_ylabel()
    labels = [t.get_text() for t in ax.texts]
    assert "0.75 (n = 4 pairs; no CI: 4 < 10 items)" in labels
    assert "0.55 (n = 20 items)" in labels


def test_cost_bars_are_labelled_with_their_numbers() -> None:
    m = {"protocols": {"prover-estimator": {"cost": {"calls": 120, "tokens_in": 50000,
                                                      "tokens_out": 3000, "cost": 0.0}},
                       "direct": {"cost": {"calls": 20, "tokens_in": 8000, "tokens_out": 200,
                                           "cost": 0.0}}}}
    fig, axes = plots.cost_figure(m)
    assert [a.get_title() for a in axes] == ["model calls per protocol",
                                             "tokens (in + out) per protocol"]
    assert [t.get_text() for t in axes[0].texts] == ["120", "20"]
    assert [t.get_text() for t in axes[1].texts] == ["53,000", "8,200"]
    img, _ = _png_at(fig)
    for colour in plots.COST_COLOURS[:2]:
        assert _near(img, _rgb(colour), 6) > 500


def test_the_calibration_plot_draws_its_curve() -> None:
    cal = calibration([(0.85, 1), (0.85, 1), (0.15, 0), (0.2, 1)])
    img = _pixels(plots.calibration_plot({"calibration": asdict(cal)}))
    assert _near(img, _rgb(plots.CALIBRATION_COLOUR), 20) > 100
