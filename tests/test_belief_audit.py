"""The summary's grading of the debaters' beliefs: the True/False mass of every belief call
(the prover's included), "noise" when it is low, Brier against the recorded truth, and
whether the prover's directions follow B's errors."""

from __future__ import annotations

import pytest

from llmdebate.agents.belief_audit import BeliefTally, belief_summary
from llmdebate.core.schemas import (
    Claim,
    CombinationRule,
    DebateConfig,
    Decomposition,
    Estimate,
    InitRecord,
    ModelCallRecord,
    RoundRecord,
    Transcript,
)
from llmdebate.elicit import estimate
from llmdebate.models import get_model

TOP = "91 has a divisor d with 2 <= d < 10."  # true (7)
SUBS = ["91 has a divisor d with 2 <= d < 6.", "91 has a divisor d with 6 <= d < 10."]  # 0, 1


def call(role: str, act: str, t: float, f: float) -> ModelCallRecord:
    masses = {"p_true_mass": t, "p_false_mass": f, "neither_mass": 1 - t - f}
    return ModelCallRecord(role=role, act=act, model="m", notes={"masses": masses})


def debate(beliefs: dict[str, float], directions: tuple[int, int], p1: float,
           calls: list[ModelCallRecord]) -> Transcript:
    subs = [Claim(text=s, truth=v) for s, v in zip(SUBS, (0, 1), strict=True)]
    dec = Decomposition(subclaims=subs, rule=CombinationRule(kind="or"))
    init = InitRecord(claim=Claim(text=TOP, truth=1), answer=1,
                      estimate=Estimate(value=0.7, method="logprobs"),
                      u=0.5, zhat=1, reward=0.0, expected_reward=0.0)
    top = RoundRecord(k=1, claim=Claim(text=TOP, truth=1), p=0.7, direction=directions[0],
                      decomposition=dec, b=[0.2, p1])
    leaf = RoundRecord(k=0, claim=Claim(text=SUBS[1], truth=1), p=p1, direction=directions[1])
    return Transcript(id="t", config=DebateConfig(width=2, depth=1, epsilon=0.2), seed=0,
                      init=init, rounds=[top, leaf], calls=calls,
                      meta={"prover_beliefs": beliefs})


def test_answer_masses_grades_and_directions() -> None:
    calls = [call("prover", "belief", 0.01, 0.02), call("prover", "belief", 0.2, 0.1),
             call("prover", "decompose", 0.0, 0.0),  # not a belief call
             call("estimator", "estimate", 0.7, 0.29), call("estimator", "conditional", 0.5, 0.5),
             call("judge", "verdict", 0.1, 0.1)]
    # the leaf claim SUBS[1] is true; B said 0.3: the prover's +1 follows B's error
    t = debate({SUBS[0]: 0.4, SUBS[1]: 0.9}, (1, 1), 0.3, calls)
    s = belief_summary([t])
    p, e = s["prover"], s["estimator"]
    assert p["calls"] == 2 and p["mean_answer_mass"] == pytest.approx(0.165)
    assert p["min_answer_mass"] == pytest.approx(0.03) and p["noise"] is True
    assert e["calls"] == 2 and e["mean_answer_mass"] == pytest.approx(0.995) and not e["noise"]
    assert p["graded"] == 2 and p["true_share"] == 0.5
    assert p["brier"] == pytest.approx((0.16 + 0.01) / 2) and p["brier_base_rate"] == 0.25
    assert e["graded"] == 3  # p_d of the top claim and b of both subclaims
    assert p["directions"] == {"rounds": 1, "nonzero": 1, "toward_truth": 1,
                               "toward_truth_share": 1.0, "as_oracle": 1,
                               "as_oracle_share": 1.0}
    assert p["assessment"].startswith("noise: True/False hold 16.5%")
    assert "1 of 1 nonzero directions point toward the truth" in p["assessment"]
    assert e["assessment"].startswith("beliefs: True/False hold 99.5%")
    # a direction against B's error; a 0 where B is within epsilon of the truth
    against = belief_summary([debate({SUBS[1]: 0.1}, (1, -1), 0.3, [])])["prover"]
    assert against["directions"]["toward_truth"] == 0
    assert against["directions"]["as_oracle"] == 0
    assert against["calls"] == 0 and against["noise"] is None
    assert against["assessment"].startswith("no prover probability call")
    close = belief_summary([debate({SUBS[1]: 0.9}, (1, 0), 0.9, [])])["prover"]["directions"]
    assert (close["nonzero"], close["toward_truth_share"], close["as_oracle"]) == (0, None, 1)


def test_the_top_round_and_unbelieved_claims_are_not_graded_as_directions() -> None:
    t = debate({}, (1, 1), 0.3, [])
    assert BeliefTally().summary()["prover"]["directions"]["rounds"] == 0
    assert belief_summary([t])["prover"]["directions"]["rounds"] == 0


async def test_every_logprobs_call_records_its_answer_masses() -> None:
    model = get_model("scripted", default_probability=0.8, responder=lambda m: "True")
    log: list[ModelCallRecord] = []
    msgs = [{"role": "user", "content": "Is 7 prime?"}]
    est = await estimate(model, msgs, "logprobs", role="prover", act="belief", log=log)
    masses = log[-1].notes["masses"]
    assert masses == {k: est.evidence[k] for k in ("p_true_mass", "p_false_mass",
                                                   "neither_mass")}
    assert masses["p_true_mass"] == pytest.approx(0.8)
    await estimate(model, msgs, "sampling", samples=2, role="prover", act="belief", log=log)
    assert "masses" not in log[-1].notes  # no masses without logprobs
