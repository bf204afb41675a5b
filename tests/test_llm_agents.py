"""LLM agents with the scripted backend: structured output, eq. 13 directions, the call log
and the item carried by the debate context, fresh agents per debate."""

from __future__ import annotations

import json

import numpy as np
import pytest

from llmdebate.agents.factory import Team, item_decomposition
from llmdebate.agents.llm import LLMEstimator, LLMProver
from llmdebate.agents.parsing import (
    ReplyError,
    parse_decomposition,
    parse_direction,
    parse_index,
)
from llmdebate.agents.settings import EstimatorSettings, JudgeSettings, ProverSettings
from llmdebate.core.engine import run_prover_estimator
from llmdebate.core.roles import DebateContext, DirectionChoice
from llmdebate.core.schemas import Claim, CombinationRule, DebateConfig, Decomposition, Evidence
from llmdebate.core.scoring import score_transcript
from llmdebate.errors import InvalidOutputError
from llmdebate.judging.model_judges import DeferredJudge, LLMJudge, OracleJudge
from llmdebate.models import ScriptedBackend, get_model
from llmdebate.prompts import Prompts

GOOD = json.dumps({"subclaims": ["A holds.", "B holds."], "rule": {"kind": "and"}})


def scripted(**kw):
    backend = ScriptedBackend(**kw)
    return get_model("scripted", backend=backend, use_cache=False), backend


def ctx(item: dict | None = None, **kw) -> DebateContext:
    cfg = DebateConfig(**{"epsilon": 0.2, "depth": 1, "width": 3, **kw})
    return DebateContext(config=cfg, rng=np.random.default_rng(0), debate_id="d", item=item)


def test_parse_decomposition_accepts_common_shapes() -> None:
    parent = Claim(id="x", text="P")
    fenced = "```json\n" + json.dumps({"subclaims": ["a", "b"], "rule": "or"}) + "\n```"
    dec = parse_decomposition(fenced, parent, 3)
    assert [s.text for s in dec.subclaims] == ["a", "b"]
    assert dec.rule.kind == "or"
    assert [s.id for s in dec.subclaims] == ["x.1", "x.2"]
    expr = parse_decomposition(
        '{"subclaims": ["a", "b"], "rule": {"kind": "expr", "expr": "y1 & !y2"}}', parent, 2
    )
    assert expr.rule.expr == "y1 & !y2"


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ("no json here", "JSON object alone"),
        ('Sure: {"subclaims": ["a", "b"], "rule": "or"}', "JSON object alone"),
        ('{"subclaims": ["a", "b"], "rule": "or"} and more', "one JSON object"),
        ("{garbage ]]", "one JSON object"),
        ('{"subclaims": ["a", "b"], "rule": "or", "rationale": "' + "x" * 9000 + '"}',
         "too long"),
        ('{"subclaims": [], "rule": "and"}', "non-empty"),
        ('{"subclaims": ["a", "b", "c", "d"], "rule": "and"}', "at most 3"),
        ('{"subclaims": ["a"]}', "no 'rule'"),
        ('{"subclaims": ["a", "b"], "rule": {"kind": "expr", "expr": "y1 & y7"}}', "y7"),
        ('{"subclaims": ["a", "b"], "rule": {"kind": "at_least"}}', "k"),
    ],
)
def test_parse_decomposition_rejects_with_a_reason(reply: str, message: str) -> None:
    with pytest.raises(ReplyError, match=message):
        parse_decomposition(reply, Claim(text="P"), 3)


def test_parse_direction_reads_only_a_whole_one_word_reply() -> None:
    assert parse_direction("Higher.") == 1
    assert parse_direction(" lower\n") == -1
    assert parse_direction("RIGHT") == 0
    for junk in ("it is overestimated", "about right", "upwards", "lowering", "dunno",
                 "x" * 200_000 + " lower", "higher lower"):
        with pytest.raises(ReplyError):
            parse_direction(junk)


def test_parse_index_reads_only_a_whole_number_reply() -> None:
    assert parse_index(" 2.\n", 3) == 1
    for junk in ("option 2", "2 or 3", "#$%^&*()_+ 1", "9" * 100, ""):
        with pytest.raises(ReplyError):
            parse_index(junk, 3)


async def test_decompose_reasks_with_the_error_then_succeeds() -> None:
    model, backend = scripted(replies=["not json", GOOD])
    c = ctx()
    dec = await LLMProver(model).decompose(Claim(text="P"), 1, c)
    assert [s.text for s in dec.subclaims] == ["A holds.", "B holds."]
    assert "not valid" in backend.requests[1][-1]["content"]
    assert [(r.role, r.act) for r in c.calls] == [("prover", "decompose")] * 2


async def test_decompose_gives_up_after_max_attempts() -> None:
    model, backend = scripted(responder=lambda m: "nope")
    with pytest.raises(InvalidOutputError, match="3 attempts"):
        await LLMProver(model, max_attempts=3).decompose(Claim(text="P"), 1, ctx())
    assert len(backend.requests) == 3


async def test_direction_at_top_follows_eq13_with_rest_zero() -> None:
    model, _ = scripted(default_probability=0.5)
    prover = LLMProver(model)
    top = Claim(text="T")
    c = ctx(depth=1)
    c.top_claim, c.answer = top, 1
    assert await prover.direction(top, 0.85, 1, c) == DirectionChoice(0, rest_zero=True)
    assert await prover.direction(top, 0.5, 1, c) == 1
    assert c.calls == []  # the top direction uses the answer a, no model call


@pytest.mark.parametrize(("own", "p", "s"), [(0.9, 0.5, 1), (0.1, 0.5, -1), (0.6, 0.5, 0)])
async def test_direction_below_top_uses_own_probability(own: float, p: float, s: int) -> None:
    model, _ = scripted(default_probability=own)
    c = ctx()
    assert await LLMProver(model).direction(Claim(text="sub"), p, 0, c) == s
    assert [(r.role, r.act) for r in c.calls] == [("prover", "belief")]


async def test_model_chosen_direction_and_recursion() -> None:
    model, _ = scripted(replies=["lower", "2"])
    prover = LLMProver(model, direction="model", recursion="model")
    c = ctx()
    assert await prover.direction(Claim(text="sub"), 0.5, 0, c) == -1
    dec = Decomposition(
        subclaims=[Claim(text="a"), Claim(text="b")], rule=CombinationRule(kind="and")
    )
    assert await prover.choose(Claim(text="P"), dec, [0.5, 0.5], [1, 0], c) == 1


async def test_recursion_is_argmax_of_belief_gap() -> None:
    model, _ = scripted(probabilities={"alpha": 0.5, "beta": 0.9, "gamma": 0.1})
    dec = Decomposition(
        subclaims=[Claim(text="alpha"), Claim(text="beta"), Claim(text="gamma")],
        rule=CombinationRule(kind="and"),
    )
    j = await LLMProver(model).choose(Claim(text="P"), dec, [0.5, 0.5, 0.8], [1, 1, 1], ctx())
    assert j == 2  # |0.8 - 0.1| beats |0.5 - 0.9|


async def test_estimator_states_earlier_outcomes() -> None:
    model, backend = scripted(default_probability=0.7)
    dec = Decomposition(
        subclaims=[Claim(text="first"), Claim(text="second")], rule=CombinationRule(kind="or")
    )
    est = await LLMEstimator(model).conditional(Claim(text="P"), dec, 1, (0,), ctx())
    assert est.value == pytest.approx(0.7)
    assert est.method == "logprobs"
    assert "subclaim 1 is false" in backend.requests[0][-1]["content"]


async def test_independent_estimator_asks_one_batch_per_round() -> None:
    model, backend = scripted(probabilities={'"first"': 0.2, '"second"': 0.9})
    dec = Decomposition(
        subclaims=[Claim(text="first"), Claim(text="second")], rule=CombinationRule(kind="and")
    )
    est = LLMEstimator(model, independent=True)
    c = ctx()
    vals = [
        (await est.conditional(Claim(text="P"), dec, i, pre, c)).value
        for i, pre in [(0, ()), (1, (0,)), (1, (1,))]
    ]
    assert vals == pytest.approx([0.2, 0.9, 0.9])
    assert len(backend.requests) == 2  # one request per subclaim, once
    assert all("settled" not in r[-1]["content"] for r in backend.requests)
    assert {r.act for r in c.calls} == {"independent"}


async def test_llm_judge_carries_probability_and_oracle_uses_truth() -> None:
    model, _ = scripted(default_probability=0.3)
    v = await LLMJudge(model).verdict(Claim(text="leaf"), Evidence(text="e"), ctx())
    assert (v.value, v.probability) == (0, pytest.approx(0.3))
    gen, _ = scripted(replies=["True, because."])
    v2 = await LLMJudge(gen, method="generate").verdict(Claim(text="leaf"), Evidence(), ctx())
    assert (v2.value, v2.probability) == (1, None)
    oracle = OracleJudge()
    v3 = await oracle.verdict(
        Claim(text="91 has no divisor d with 2 <= d < 10."),
        Evidence(),
        ctx(item={"meta": {"problem": "divisors"}}),
    )
    assert v3.value == 0
    with pytest.raises(InvalidOutputError, match="unknown"):
        await oracle.verdict(Claim(text="the sky is green"), Evidence(), ctx())
    assert await DeferredJudge().verdict(Claim(text="x"), Evidence(), ctx()) is None


async def test_full_debate_records_every_call_and_rescores() -> None:
    replies = [GOOD, "Fact: A and B both hold."]
    model, _ = scripted(replies=replies, probabilities={"A holds": 0.9, "B holds": 0.2})
    prover, est = LLMProver(model), LLMEstimator(model)
    t = await run_prover_estimator(
        Claim(text="P is true", truth=1),
        prover,
        est,
        LLMJudge(model),
        DebateConfig(depth=1, width=2, epsilon=0.2),
        seed=3,
        debate_id="d1",
    )
    assert t.status == "complete"
    acts = [(c.role, c.act) for c in t.calls]
    assert ("prover", "decompose") in acts and ("prover", "evidence") in acts
    assert ("judge", "verdict") in acts and ("estimator", "conditional") in acts
    assert sum(a == ("estimator", "conditional") for a in acts) == 3  # 2^q - 1 prefixes
    evidence_call = next(c for c in t.calls if c.act == "evidence")
    assert "P is true" not in json.dumps(evidence_call.messages)  # fresh context
    assert all(c.messages for c in t.calls)
    assert score_transcript(t).mismatches == []


async def test_prover_beliefs_are_asked_once_per_claim_and_kept_flat() -> None:
    model, backend = scripted(probabilities={"alpha": 0.9, "beta": 0.2})
    prover = LLMProver(model)
    c = ctx()
    for _ in range(2):
        assert await prover.belief(Claim(text="alpha"), c) == pytest.approx(0.9)
    assert await prover.belief(Claim(text="beta"), c) == pytest.approx(0.2)
    assert prover.beliefs == pytest.approx({"alpha": 0.9, "beta": 0.2})
    assert [(r.role, r.act) for r in c.calls] == [("prover", "belief")] * 2
    assert len(backend.requests) == 2


def test_team_makes_fresh_agents_for_every_debate() -> None:
    model, _ = scripted(default_probability=0.5)
    team = Team(
        {"prover": model, "estimator": model, "judge": model},
        Prompts(),
        ProverSettings(model="scripted"),
        EstimatorSettings(model="scripted"),
        JudgeSettings(model="scripted"),
    )
    a, b = team.make_prover(), team.make_prover()
    assert a is not b
    a.beliefs["claim"] = 0.9
    assert b.beliefs == {} and team.make_prover().beliefs == {}
    assert team.make_estimator() is not team.make_estimator()
    assert isinstance(team.make_judge(), LLMJudge)


async def test_item_and_call_log_reach_the_leaf_through_the_context() -> None:
    """The passage of the item is shown to the prover at the leaf (fresh context), to the
    judge only with ``passage="shown"``, and every call, including those of a debate that
    fails part-way, lands in the log the caller passed in."""
    replies = [GOOD, "Fact: A and B both hold."]
    model, _ = scripted(replies=replies, probabilities={"A holds": 0.9, "B holds": 0.2})
    log: list = []
    item = {"question": "Q?", "answer": "x", "context": "THE PASSAGE TEXT"}
    t = await run_prover_estimator(
        Claim(text="P is true", truth=1),
        LLMProver(model),
        LLMEstimator(model),
        LLMJudge(model, passage="shown"),
        DebateConfig(depth=1, width=2, epsilon=0.2),
        seed=3,
        debate_id="d1",
        item=item,
        calls=log,
    )
    assert t.calls is log and len(log) > 0
    evidence_call = next(c for c in log if c.act == "evidence")
    assert "THE PASSAGE TEXT" in json.dumps(evidence_call.messages)
    assert "P is true" not in json.dumps(evidence_call.messages)
    verdict_call = next(c for c in log if c.act == "verdict")
    assert "THE PASSAGE TEXT" in json.dumps(verdict_call.messages)

    bad, _ = scripted(responder=lambda m: "no json", default_probability=0.5)
    failed_log: list = []
    with pytest.raises(InvalidOutputError):
        await run_prover_estimator(
            Claim(text="P is true"),
            LLMProver(bad, max_attempts=2),
            LLMEstimator(bad),
            LLMJudge(bad),
            DebateConfig(depth=1, width=2, epsilon=0.2),
            seed=3,
            calls=failed_log,
        )
    assert [c.act for c in failed_log].count("decompose") == 2


async def test_formal_decomposer_reads_the_item_from_the_context() -> None:
    model, backend = scripted(responder=lambda m: "unused")
    claim = Claim(id="x", text="91 has no divisor d with 2 <= d < 10.")
    prover = LLMProver(model, decomposer="formal", formal=item_decomposition)
    c = ctx(item={"question": "q", "answer": "a", "meta": {"problem": "divisors"}}, width=2)
    dec = await prover.decompose(claim, 1, c)
    assert len(dec.subclaims) == 2 and backend.requests == []
    # without an item the model is asked
    with pytest.raises(InvalidOutputError):
        await LLMProver(model, decomposer="formal", formal=item_decomposition).decompose(
            claim, 1, ctx(width=2)
        )
