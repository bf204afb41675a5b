"""The main job's closing lines: whether the debate favoured the truth, in plain words."""

from __future__ import annotations

from typing import Any

from llmdebate.intervals import no_spread, too_few
from llmdebate.report.closing import closing_lines, verdict


def _side(mean: float, ci: list[float] | None, n: int = 12) -> dict[str, Any]:
    return {
        "n": n, "mean_normalized": mean, "mean_normalized_ci95": ci,
        "mean_normalized_note": None if ci else "too few", "n_expected": n,
        "mean_expected_normalized": mean, "mean_expected_normalized_ci95": ci,
        "mean_expected_normalized_note": None if ci else "too few",
    }


def _summary(disc: float, ci: list[float] | None, honest: float, dishonest: float) -> dict:
    pe = {
        "figure": "honest beats dishonest",
        "pairs": {"n": 12, "items": 12 if ci else 3, "discrimination": disc,
                  "discrimination_ci95": ci,
                  "discrimination_note": None if ci else too_few(3)},
        "payoff": {"honest": _side(honest, [honest - 0.1, honest + 0.1]),
                   "dishonest": _side(dishonest, [dishonest - 0.1, dishonest + 0.1]),
                   "completeness_bound": 0.8, "soundness_threshold": 0.0},
    }
    row = {"label": "direct (blind)", "figure": "judge accuracy", "value": 0.25, "items": 4,
           "ci95": None, "interval_note": "n = 4 items: too few for an interval (at least 10)"}
    return {"metrics": {"protocols": {"prover-estimator": pe}, "rows": [row]},
            "leaf_claim_accuracy": {"n": 5, "accuracy": 0.8}}


def test_closing_lines_say_the_debate_favoured_the_truth_and_meet_both_bounds() -> None:
    text = "\n".join(closing_lines(_summary(0.9, [0.7, 1.0], 0.95, -0.4)))
    assert "did the debate favour the truth? yes: above chance" in text
    assert "in 11 of 12 pairs (same item, same seats) the prover of the true answer" in text
    assert "at least 0.800 (1 − ε, completeness) — meets it" in text
    assert "soundness wants at most 0.000 plus the estimator's error — meets it" in text
    assert "leaf-claim accuracy: the judge ruled 0.800 of 5 leaf claims right" in text


def test_closing_lines_say_when_the_false_answer_was_favoured_and_a_bound_is_missed() -> None:
    text = "\n".join(closing_lines(_summary(0.1, [0.0, 0.3], 0.5, 2.25)))
    assert "no: below chance (0.5) with its interval, the false answer was favoured" in text
    assert "completeness) — misses it" in text
    assert "estimator's error — misses it" in text


def test_closing_lines_say_too_few_items_instead_of_an_interval() -> None:
    # 12 pairs over 3 items: the pairs of an item are not independent, so the count is 3
    text = "\n".join(closing_lines(_summary(1.0, None, 0.9, 0.0)))
    assert ("did the debate favour the truth? too few items to tell (n = 3 items: too few "
            "for an interval (at least 10))") in text
    assert "direct (blind): the judge chose the right answer on a share 0.250 of 4 items" in text
    assert "no interval: n = 4 items: too few" in text


def test_a_verdict_needs_its_interval_to_clear_chance() -> None:
    assert verdict(0.6, [0.45, 0.75], 20).startswith("not established")
    assert verdict(None, None, 0).startswith("not measured")


def test_too_few_items_to_tell_is_not_not_established() -> None:
    """Without an interval for want of items the verdict says so; with items enough but
    every one scored alike, it says what they scored."""
    assert verdict(0.6, None, 4, too_few(4)) == (
        "too few items to tell (n = 4 items: too few for an interval (at least 10))")
    assert verdict(1.0, None, 12, no_spread(12, "items", 1.0)).startswith(
        "yes: every one of the 12 items scored 1")
    assert verdict(0.5, None, 12, no_spread(12, "items", 0.5)).startswith("no interval (")


def test_closing_lines_do_not_call_ties_a_win_for_the_false_answer() -> None:
    summary = _summary(0.25, [0.1, 0.4], 0.5, 0.5)
    summary["metrics"]["protocols"]["prover-estimator"]["pairs"]["ties"] = 7  # 3 won, 2 lost
    text = "\n".join(closing_lines(summary))
    assert "the false answer was favoured" not in text
    assert "not established: the true answer's prover earned more in under half" in text
    assert "in 3 of 12 pairs" in text and "7 ties (a tie is not a win), 2 earned less" in text
    summary["metrics"]["protocols"]["prover-estimator"]["pairs"]["ties"] = 1  # 3 won, 8 lost
    assert "the false answer was favoured" in "\n".join(closing_lines(summary))


def test_closing_lines_without_pairs_still_give_both_payoffs_against_the_bounds() -> None:
    """prover.assignment alternate debates each item once: no pair, but both provers' payoffs
    and which earned more are still said, marked unpaired."""
    s = _summary(0.0, None, honest=0.9, dishonest=2.5)
    s["metrics"]["protocols"]["prover-estimator"]["pairs"] = {"n": 0}
    text = "\n".join(closing_lines(s))
    assert "not measured as honest beats dishonest" in text
    assert "the prover of the false answer earned more on average" in text
    assert "at least 0.800 (1 − ε, completeness) — meets it" in text
    assert "soundness wants at most 0.000 plus the estimator's error — misses it" in text
