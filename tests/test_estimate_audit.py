"""The summary's grading of a model estimator's probabilities against computable truth."""

from __future__ import annotations

import pytest

from llmdebate.agents.estimate_audit import EstimateTally, graded_estimates
from llmdebate.commands.run import graded_lines
from llmdebate.core.schemas import (
    Claim,
    CombinationRule,
    DebateConfig,
    Decomposition,
    Estimate,
    InitRecord,
    RoundRecord,
    Transcript,
)
from llmdebate.report.closing import estimator_line

TOP = "91 has a divisor d with 2 <= d < 10."  # true (7)
SUBS = ["91 has a divisor d with 2 <= d < 6.", "91 has a divisor d with 6 <= d < 10."]  # 0, 1


def debate(p: float, table: list[list[float]] | None, b: list[float],
           method: str = "logprobs") -> Transcript:
    dec = Decomposition(subclaims=[Claim(text=s) for s in SUBS],
                        rule=CombinationRule(kind="or"))
    init = InitRecord(claim=Claim(text=TOP), answer=1, estimate=Estimate(value=p, method=method),
                      u=0.5, zhat=1, reward=0.0, expected_reward=0.0)
    rd = RoundRecord(k=1, claim=Claim(text=TOP), p=p, decomposition=dec, b=b, table=table)
    return Transcript(id="t", config=DebateConfig(width=2, depth=1), seed=0,
                      item={"meta": {"problem": "divisors"}}, init=init, rounds=[rd])


def test_every_probability_of_the_table_is_graded_against_its_subclaim() -> None:
    t = debate(0.9, [[0.2], [0.6, 0.7]], [0.2, 0.7])
    assert graded_estimates(t) == [(0.9, 1), (0.2, 0), (0.6, 1), (0.7, 1)]
    # without a table: the drawn path
    assert graded_estimates(debate(0.9, None, [0.2, 0.7])) == [(0.9, 1), (0.2, 0), (0.7, 1)]
    # a formal strategy is not a model: nothing graded
    assert graded_estimates(debate(0.9, None, [0.2, 0.7], method="strategy")) == []


def test_the_summary_compares_with_the_base_rate_of_the_same_claims() -> None:
    good, bad = EstimateTally(), EstimateTally()
    good.add(debate(0.9, [[0.2], [0.6, 0.7]], [0.2, 0.7]))
    bad.add(debate(0.1, [[0.9], [0.2, 0.3]], [0.9, 0.3]))
    g, b = good.summary(), bad.summary()
    assert g["graded"] == b["graded"] == 4 and g["true_share"] == 0.75
    assert g["brier_base_rate"] == pytest.approx(0.1875)  # 3 x 0.0625 + 0.5625, over 4
    assert g["brier"] == pytest.approx((0.01 + 0.04 + 0.16 + 0.09) / 4)
    assert g["assessment"].startswith("beats the base rate")
    assert b["assessment"].startswith("does not beat the base rate")
    assert EstimateTally().summary()["graded"] == 0
    lines = graded_lines({"decompositions": {"model_decompositions": 0, "calls": 0},
                          "estimates": g})
    assert lines == []  # graded once, by the closing lines' estimator line
    one = {**g, "brier_base_rate": 0.0}  # every claim alike: no skill, the assessment itself
    assert estimator_line(one) == (
        f"estimator Brier over every graded probability (p_d and each b_i, 4 of them): "
        f"{g['assessment']}")
