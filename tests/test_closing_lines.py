"""The main job's closing lines: whether the debate favoured the truth, in plain words."""

from __future__ import annotations

from typing import Any

from llmdebate.agents.audit import _assessment
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


def test_closing_lines_say_the_debate_favoured_the_truth() -> None:
    text = "\n".join(closing_lines(_summary(0.9, [0.7, 1.0], 0.95, -0.4)))
    assert "did the debate favour the truth? yes: above chance" in text
    assert "in 11 of 12 pairs (same item, same seats) the prover of the true answer" in text
    # no "decided" figures in this summary: no lemma line, as none has every term
    assert "meets it" not in text and "misses it" not in text and "Lemma" not in text
    assert "leaf-claim accuracy: the judge ruled 0.800 of 5 leaf claims right" in text


def test_closing_lines_say_when_the_false_answer_was_favoured() -> None:
    text = "\n".join(closing_lines(_summary(0.1, [0.0, 0.3], 0.5, 2.25)))
    assert "no: below chance (0.5) with its interval, the false answer was favoured" in text
    assert "misses it" not in text


def test_closing_lines_say_too_few_items_instead_of_an_interval() -> None:
    # 12 pairs over 3 items: the pairs of an item are not independent, so the count is 3
    text = "\n".join(closing_lines(_summary(1.0, None, 0.9, 0.0)))
    assert ("did the debate favour the truth? too few items to tell (n = 3 items: too few "
            "for an interval (at least 10)); an interval needs at least 10 items: debate at "
            "least 10 items (dataset.limit)") in text
    assert "direct (blind): the judge chose the right answer on a share 0.250 of 4 items" in text
    assert "no interval: n = 4 items: too few" in text
    # the block's sentence once: its head says it, its figures do not repeat it
    block = text.split("\ndirect (blind)")[0]
    assert block.count("n = 3 items: too few for an interval (at least 10)") == 1


def test_a_verdict_needs_its_interval_to_clear_chance() -> None:
    assert verdict(0.6, [0.45, 0.75], 20).startswith("not established")
    assert verdict(None, None, 0).startswith("not measured")


def test_too_few_items_to_tell_is_not_not_established() -> None:
    """Without an interval for want of items the verdict says so; with items enough but
    every one scored alike, it says what they scored."""
    assert verdict(0.6, None, 4, too_few(4)) == (
        "too few items to tell (n = 4 items: too few for an interval (at least 10))")
    assert verdict(1.0, None, 12, no_spread(12, "items", 1.0)).startswith(
        "yes: every one of the 12 scored 1")
    assert verdict(0.5, None, 12, no_spread(12, "items", 0.5)).startswith(
        "not established: every one of the 12 scored 0.500")


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
    assert "the prover of the false answer earned the higher mean expected payoff" in text
    assert "meets it" not in text and "misses it" not in text


def _lines(s: dict[str, Any]) -> str:
    return "\n".join(closing_lines(s))


def _pe(s: dict[str, Any]) -> dict[str, Any]:
    return s["metrics"]["protocols"]["prover-estimator"]


def test_a_tie_between_the_unpaired_provers_is_said_as_a_tie() -> None:
    s = _summary(0.0, None, honest=-7.7, dishonest=-7.7)
    _pe(s)["pairs"] = {"n": 0}
    text = _lines(s)
    assert "both provers earned the same mean expected payoff (-7.700)" in text
    assert "neither" not in text and "earned the higher" not in text


def test_equal_scores_at_n_of_ten_or_more_are_not_too_few_to_tell() -> None:
    """20 wins of 20 pairs: no bootstrap spread, but the exact binomial interval
    [0.025^(1/20), 1] = [0.832, 1] lies above chance."""
    assert verdict(1.0, None, 20).startswith("yes: every one of the 20 scored 1")
    assert "[0.832, 1]" in verdict(1.0, None, 20)
    assert verdict(0.0, None, 12).startswith("no: every one of the 12 scored 0")
    assert verdict(0.5, None, 10).startswith("not established: every one of the 10")
    assert verdict(1.0, None, 9) == (
        "too few items to tell (n = 9 items: too few for an interval (at least 10))")
    s = _summary(1.0, None, 0.9, 0.0)
    _pe(s)["pairs"].update(n=20, items=20,
                           discrimination_note="every one of the 20 items scored 1")
    text = _lines(s)
    assert "too few" not in text.splitlines()[0]
    assert "did the debate favour the truth? yes: every one of the 20 scored 1" in text
    assert "in 20 of 20 pairs" in text


def test_all_ties_at_n_of_ten_or_more_are_not_a_win_for_the_false_answer() -> None:
    s = _summary(0.0, None, 0.5, 0.5)
    _pe(s)["pairs"].update(ties=12, items=12, discrimination_note=no_spread(12, "items", 0.0))
    text = _lines(s)
    assert "the false answer was favoured" not in text
    assert "not established" in text and "12 ties" in text


def test_the_paired_hint_is_printed_only_where_the_assignment_is_not_paired() -> None:
    s = _summary(0.0, None, honest=0.9, dishonest=2.5)
    _pe(s)["pairs"] = {"n": 0}
    s["settings"] = {"prover.assignment": "alternate", "judge.ruling": "argmax"}
    text = _lines(s)
    assert "this run's prover.assignment is alternate" in text
    assert "set prover.assignment: paired (--prover-assignment paired)" in text
    s["settings"]["prover.assignment"] = "paired"  # paired, but no item has both debates
    text = _lines(s)
    assert "prover.assignment" not in text and "paired debates every item" not in text
    assert "no item has both an honest and a dishonest debate complete" in text
    del s["settings"]  # a summary that does not say: no hint
    assert "prover.assignment" not in _lines(s)
    paired = _summary(0.9, [0.7, 1.0], 0.95, -0.4)
    paired["settings"] = {"prover.assignment": "paired"}
    assert "prover.assignment" not in _lines(paired)


def test_both_payoffs_are_printed_and_the_bound_stands_on_the_expectation() -> None:
    s = _summary(0.9, [0.7, 1.0], 0.95, -0.4)
    s["settings"] = {"judge.ruling": "argmax"}
    honest = _pe(s)["payoff"]["honest"]
    honest.update(mean_normalized=-6156.0, mean_expected_normalized=0.9)  # paid misses
    text = _lines(s)
    assert "expected 0.900 (95% CI" in text and "paid -6156.000 (95% CI" in text
    assert "an unbiased estimate of E[R_A], not E[R_A] itself" in text
    assert "judge.ruling argmax: the judge rules O = 1[P ≥ 1/2], so E takes its O" in text
    s["settings"] = {"judge.ruling": "sample"}
    assert "so E takes its P[O = 1]" in _lines(s)
    honest.update(mean_expected_normalized=None)  # no expectation recorded: no check
    line = next(x for x in closing_lines(s) if x.startswith("  honest prover"))
    assert "expected not recorded" in line and "meets it" not in line
    assert "misses it" not in line


def test_the_estimators_grade_is_tied_to_the_payoffs() -> None:
    s = _summary(0.9, [0.7, 1.0], 0.95, -0.4)
    s["estimates"] = {"graded": 24, "brier": 0.181409, "brier_base_rate": 0.181406}
    assert "no better than the base rate, so it does not tell true claims from false" in (
        _lines(s)
    )
    s["estimates"] = {"graded": 24, "brier": 0.05, "brier_base_rate": 0.18}
    assert "better than the base rate, so it tells true claims from false" in _lines(s)
    s["estimates"] = {"graded": 0}
    assert "\nestimator Brier" not in _lines(s)


def test_the_provers_beliefs_are_graded_where_the_summary_has_them() -> None:
    s = _summary(0.9, [0.7, 1.0], 0.95, -0.4)
    assert "prover beliefs" not in _lines(s)  # no "beliefs" key: nothing said, no failure
    s["beliefs"] = {
        "prover": {"calls": 24, "mean_answer_mass": 0.021, "min_answer_mass": 0.003,
                   "noise": True},
        "estimator": {"calls": 40, "mean_answer_mass": 0.9, "min_answer_mass": 0.6,
                      "noise": False},
    }
    line = _lines(s).splitlines()[-1]
    assert line.startswith("prover beliefs: True/False carry 0.021 of the probability mass")
    assert "over 24 belief calls (least 0.003): noise" in line
    s["beliefs"]["prover"].update(mean_answer_mass=0.8, min_answer_mass=0.55, noise=False,
                                  graded=24, brier=0.1, brier_base_rate=0.25)
    line = _lines(s).splitlines()[-1]
    assert "noise" not in line and line.endswith("which makes them beliefs, not right ones")
    s["beliefs"]["prover"]["directions"] = {"rounds": 8, "nonzero": 8, "toward_truth": 2,
                                            "as_oracle": 1}
    line = _lines(s).splitlines()[-1]
    assert ("directions below the top: 8 of 8 nonzero, 2 of those toward the truth, 1 of 8 as "
            "the honest oracle's") in line
    assert "against the truth, Brier 0.1000 against 0.2500 for the base rate over 24" in line


def test_decompositions_with_nothing_graded_are_not_called_mostly_right() -> None:
    s = {"model_decompositions": 4, "calls": 4, "unanswered_calls": 0, "played_invalid": 0,
         "graded": 0, "rule_right": None}
    said = _assessment(s, 0, 0)
    assert "mostly right" not in said and "WRONG" not in said
    assert said.startswith("not graded (no decomposition's truth is computable)")
    assert _assessment({**s, "graded": 4, "rule_right": 1.0}, 0, 0).startswith("mostly right")
