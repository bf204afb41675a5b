"""The main job's plots draw something, labelled: the accuracy plot a bar for honest beats
dishonest over pairs, the payoff plot both provers' payoffs (paired, or marked unpaired); a plot
with nothing to draw is not written, and the report says why."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from llmdebate.experiment.loading import validate
from llmdebate.experiment.runner import run
from llmdebate.report import plots
from llmdebate.report.build import build_report

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


def _on_white(rgb: tuple[int, int, int], alpha: float = 0.6) -> tuple[int, int, int]:
    """The colour a histogram bar of ``alpha`` shows over the white axes."""
    r, g, b = (round(alpha * c + (1 - alpha) * 255) for c in rgb)
    return r, g, b


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
    assert _near(img, _on_white(GREEN), 12) > 200 and _near(img, _on_white(RED), 12) > 200


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
    assert _near(img, _on_white(GREEN), 12) > 200 and _near(img, _on_white(RED), 12) > 200
    assert plots.accuracy_plot(m) is None
    assert "no row has a value" in plots.not_drawn(m)["accuracy"]
    assert "payoffs" not in plots.not_drawn(m)
    empty = _metrics({"n": 0}, [], [])
    assert plots.payoff_plot(empty) is None
    assert plots.not_drawn(empty)["payoffs"] == "no prover-estimator debate has a payoff"
