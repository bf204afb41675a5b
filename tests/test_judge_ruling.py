"""One judge for the paid and the expected payoff: a model judge rules by argmax (its expected
leaf reward takes O) or by sampling O = 1[u < P] from the debate's seed (its expected leaf
reward takes P), and ``llmdebate score`` replays both."""

from __future__ import annotations

import json

import numpy as np
import pytest
from pydantic import ValidationError

from llmdebate.agents.llm import LLMEstimator, LLMProver
from llmdebate.agents.settings import JudgeSettings
from llmdebate.core.engine import run_prover_estimator
from llmdebate.core.schemas import Claim, DebateConfig, Transcript, Verdict
from llmdebate.core.scoring import (
    VERDICT_STREAM,
    leaf_reward,
    ratio_for,
    score_transcript,
    verdict_draw,
)
from llmdebate.judging.model_judges import LLMJudge
from llmdebate.models import ScriptedBackend, get_model

GOOD = json.dumps({"subclaims": ["A holds.", "B holds."], "rule": {"kind": "and"}})


def _model():  # type: ignore[no-untyped-def]
    backend = ScriptedBackend(
        replies=[GOOD, "Fact: A and B both hold."],
        probabilities={"A holds": 0.9, "B holds": 0.2},
    )
    return get_model("scripted", backend=backend, use_cache=False)


async def _debate(ruling: str, seed: int) -> Transcript:
    model = _model()
    return await run_prover_estimator(
        Claim(text="P is true", truth=1),
        LLMProver(model),
        LLMEstimator(model),
        LLMJudge(model, ruling=ruling),  # type: ignore[arg-type]
        DebateConfig(depth=1, width=2, epsilon=0.2),
        seed=seed,
        debate_id="d",
    )


def test_the_verdict_draw_is_the_first_uniform_of_the_seeds_verdict_stream() -> None:
    rng = np.random.default_rng(np.random.SeedSequence(11, spawn_key=(VERDICT_STREAM,)))
    assert verdict_draw(11) == rng.random()
    assert verdict_draw(11) == verdict_draw(11) != verdict_draw(12)


async def test_an_argmax_judge_pays_and_expects_its_verdict() -> None:
    t = await _debate("argmax", seed=3)
    leaf = t.rounds[-1]
    assert leaf.verdict is not None and leaf.verdict.ruling == "argmax"
    p = leaf.verdict.probability
    assert p is not None and 0.0 < p < 1.0 and leaf.verdict.u is None
    assert leaf.verdict.value == int(p >= 0.5)
    r = ratio_for(t.config)
    # the expectation takes the verdict O as ruled, not P: paid and expected leaf rewards agree
    o = leaf.verdict.value
    assert leaf.expected_reward == leaf.reward == leaf_reward(r, leaf.direction, o, leaf.p)
    assert leaf.expected_reward != leaf_reward(r, leaf.direction, p, leaf.p) or not leaf.direction
    assert score_transcript(t).mismatches == []


@pytest.mark.parametrize("seed", [3, 4, 5, 6])
async def test_a_sampling_judge_draws_from_the_seed_and_expects_p(seed: int) -> None:
    t = await _debate("sample", seed=seed)
    v = t.rounds[-1].verdict
    assert v is not None and v.ruling == "sample"
    assert v.u == verdict_draw(seed)  # replayable from the recorded seed, bit for bit
    assert v.probability is not None and v.value == int(v.u < v.probability)
    leaf = t.rounds[-1]
    r = ratio_for(t.config)
    assert leaf.reward == leaf_reward(r, leaf.direction, v.value, leaf.p)
    assert leaf.expected_reward == leaf_reward(r, leaf.direction, v.probability, leaf.p)
    assert score_transcript(t).mismatches == []


async def test_the_scorer_catches_a_verdict_its_ruling_does_not_give() -> None:
    t = await _debate("sample", seed=3)
    leaf = t.rounds[-1]
    assert leaf.verdict is not None and leaf.verdict.u is not None
    bad = t.model_copy(deep=True)
    v = bad.rounds[-1].verdict
    assert v is not None
    bad.rounds[-1].verdict = v.model_copy(update={"value": 1 - v.value})
    assert any("leaf verdict O" in m.where for m in score_transcript(bad).mismatches)
    moved = t.model_copy(deep=True)
    moved.rounds[-1].verdict = leaf.verdict.model_copy(update={"u": 0.5 * leaf.verdict.u})
    assert any("leaf verdict u" in m.where for m in score_transcript(moved).mismatches)
    argmax = await _debate("argmax", seed=3)
    flipped = argmax.model_copy(deep=True)
    va = flipped.rounds[-1].verdict
    assert va is not None
    flipped.rounds[-1].verdict = va.model_copy(update={"value": 1})
    assert any("leaf verdict O" in m.where for m in score_transcript(flipped).mismatches)


def test_a_sampled_verdict_needs_its_draw_and_sampling_needs_a_probability() -> None:
    with pytest.raises(ValidationError, match="records its probability and its draw"):
        Verdict(value=1, probability=0.4, ruling="sample")
    with pytest.raises(ValidationError, match="method generate gives none"):
        JudgeSettings(method="generate", ruling="sample")
    assert JudgeSettings().ruling == "argmax"


def test_a_run_with_a_sampling_judge_records_and_rescores_every_draw(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from llmdebate.experiment.runner import run
    from llmdebate.records.rundir import load_transcripts

    try:
        from tests.test_runner import DIVISORS, config, scripted
    except ImportError:  # pytest run from inside tests/
        from test_runner import DIVISORS, config, scripted  # type: ignore[no-redef]

    cfg = config(DIVISORS, judge={**scripted(), "kind": "llm", "ruling": "sample"})
    res = run(cfg, tmp_path / "r", progress=False)
    assert res.exit_code == 0
    assert res.summary["settings"]["judge.ruling"] == "sample"
    ts = load_transcripts(tmp_path / "r")
    assert len(ts) == 12  # paired: 6 items, both answers
    judged = [t for t in ts if t.rounds and t.rounds[-1].k == 0]  # early stops reach no leaf
    assert len(judged) >= 6
    for t in judged:
        v = t.rounds[-1].verdict
        assert v is not None and v.ruling == "sample" and v.u == verdict_draw(t.seed)
    assert all(score_transcript(t).mismatches == [] for t in ts)
