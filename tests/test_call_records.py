"""Call records are tagged where they are made: the protocol states the decision before it
asks (llmdebate.core.decisions), concurrent asks keep their own tags, records of schema version 1
(flat decision fields) still load and re-score."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from llmdebate.agents.llm import LLMEstimator
from llmdebate.core.decisions import current_decision, deciding, narrowed, tagged
from llmdebate.core.engine import run_sync
from llmdebate.core.roles import DebateContext
from llmdebate.core.schemas import (
    SCHEMA_VERSION,
    Claim,
    CombinationRule,
    DebateConfig,
    DecisionTag,
    Decomposition,
    ModelCallRecord,
    Transcript,
)
from llmdebate.core.scoring import score_transcript
from llmdebate.experiment.runner import run
from llmdebate.models import GenerateConfig, ScriptedBackend, get_model
from llmdebate.models.interface import ChatMessage, ModelOutput
from llmdebate.records.rundir import load_transcripts
from llmdebate.records.transcripts import iter_transcripts

try:
    from tests.export_fixtures import judged_config, pe_config, scripted
except ImportError:  # pytest run from inside tests/
    from export_fixtures import judged_config, pe_config, scripted  # type: ignore[no-redef]

V1 = Path(__file__).resolve().parent / "fixtures" / "transcript_v1.jsonl"
"""Transcripts written by llmdebate with schema version 1 (decision, round, index, prefix
flat on each call record): a commit-marginal debate with an LLM judge, and a naive and a
prover-estimator debate whose prover chose its answer."""


class Staggered(ScriptedBackend):
    """A scripted model whose reply to a prompt takes ``delay[prompt]`` seconds (the prompt
    as the agent wrote it; the probability method adds its instruction after it)."""

    def __init__(self, delay: dict[str, float], **kw: Any) -> None:
        super().__init__(**kw)
        self.delay = delay

    async def generate(
        self, messages: list[ChatMessage], config: GenerateConfig, sample_index: int = 0
    ) -> ModelOutput:
        await asyncio.sleep(self.delay[_asked(list(self.delay), messages)])
        return await super().generate(messages, config, sample_index)


def _asked(prompts: list[str], messages: list[dict[str, str]]) -> str:
    """Which of ``prompts`` the conversation asks."""
    (hit,) = [p for p in prompts if messages[-1]["content"].startswith(p)]
    return hit


def _dec(q: int) -> Decomposition:
    return Decomposition(
        subclaims=[Claim(text=f"subclaim number {i}") for i in range(q)],
        rule=CombinationRule(kind="and"),
    )


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    q=st.integers(1, 3),
    k=st.integers(1, 4),
    delays=st.lists(st.floats(0.0, 0.004), min_size=7, max_size=7),
)
def test_concurrent_estimates_each_keep_their_own_tag(
    q: int, k: int, delays: list[float]
) -> None:
    """Every b_i at every prefix asked at once into ONE shared log, replies finishing in an
    order the delays choose: each record still names the i and prefix it was asked for."""
    asks = [(i, tuple((t >> (i - 1 - b)) & 1 for b in range(i))) for i in range(q)
            for t in range(1 << i)]
    dec, claim = _dec(q), Claim(text="the parent claim")
    est = LLMEstimator(get_model("scripted", backend=ScriptedBackend(), use_cache=False))
    ctx = DebateContext(config=DebateConfig(width=3), rng=None)  # type: ignore[arg-type]
    prompts = [est._messages(claim, dec, i, pre, ctx)[-1]["content"] for i, pre in asks]
    assert len(set(prompts)) == len(prompts)
    backend = Staggered(dict(zip(prompts, delays, strict=False)))
    est.model = get_model("scripted", backend=backend, use_cache=False)

    async def go() -> None:
        await asyncio.gather(*(
            tagged(est.conditional(claim, dec, i, pre, ctx), "estimate", k, index=i, prefix=pre)
            for i, pre in asks
        ))
        assert current_decision() is None  # nothing leaks out of the tasks

    run_sync(go())
    assert len(ctx.calls) == len(asks)
    for rec in ctx.calls:
        i, pre = asks[prompts.index(_asked(prompts, rec.messages))]
        assert rec.tag == DecisionTag(decision="estimate", round=k, index=i, prefix=list(pre))
        assert (rec.decision, rec.round, rec.index, rec.prefix) == ("estimate", k, i, list(pre))


def test_the_shared_log_really_fills_out_of_ask_order() -> None:
    """The property above is not vacuous: with the later asks answering first, the shared log
    holds the records in another order than the asks."""
    dec, claim = _dec(2), Claim(text="the parent claim")
    asks = [(0, ()), (1, (0,)), (1, (1,))]
    est = LLMEstimator(get_model("scripted", backend=ScriptedBackend(), use_cache=False))
    ctx = DebateContext(config=DebateConfig(width=3), rng=None)  # type: ignore[arg-type]
    prompts = [est._messages(claim, dec, i, pre, ctx)[-1]["content"] for i, pre in asks]
    est.model = get_model(
        "scripted", backend=Staggered({p: 0.02 * (3 - n) for n, p in enumerate(prompts)}),
        use_cache=False,
    )

    async def go() -> None:
        await asyncio.gather(*(
            tagged(est.conditional(claim, dec, i, pre, ctx), "estimate", 1, index=i, prefix=pre)
            for i, pre in asks
        ))

    run_sync(go())
    assert [r.index for r in ctx.calls] == [1, 1, 0]
    assert [r.prefix for r in ctx.calls] == [[1], [0], []]


def test_an_independent_batch_names_each_b_j_and_scoring_stays_whole() -> None:
    dec, claim = _dec(3), Claim(text="the parent claim")
    ctx = DebateContext(config=DebateConfig(width=3), rng=None)  # type: ignore[arg-type]

    async def ask(decision: str, index: int | None) -> None:
        est = LLMEstimator(
            get_model("scripted", backend=ScriptedBackend(), use_cache=False), independent=True
        )
        with deciding(decision, 2, index=index, prefix=() if index is not None else None):
            await est.conditional(claim, dec, 1, (), ctx)

    run_sync(ask("estimate", 1))
    assert [(r.act, r.index, r.prefix) for r in ctx.calls] == [
        ("independent", 0, []), ("independent", 1, []), ("independent", 2, []),
    ]
    ctx.calls.clear()
    run_sync(ask("scoring", None))
    assert {(r.decision, r.round, r.index, r.prefix) for r in ctx.calls} == {
        ("scoring", 2, None, None)
    }
    with narrowed(1, ()) as tag:
        assert tag is None and current_decision() is None


def test_the_innermost_decision_wins_and_ends_with_its_statement() -> None:
    with deciding("direction", 3) as outer:
        with deciding("scoring", 3):
            assert current_decision() == DecisionTag(decision="scoring", round=3)
        assert current_decision() is outer
    assert current_decision() is None


def _flat(line: str) -> list[dict[str, Any]]:
    return list(json.loads(line)["calls"])


def test_a_version_1_transcript_loads_and_rescores() -> None:
    lines = V1.read_text().splitlines()
    ts = list(iter_transcripts(V1))
    assert len(ts) == 3 and {t.protocol for t in ts} == {"prover-estimator", "naive-recursive"}
    for line, t in zip(lines, ts, strict=True):
        assert t.schema_version == 1 < SCHEMA_VERSION
        old = _flat(line)
        assert "tag" not in old[0] and "decision" in old[0]
        assert len(t.calls) == len(old)
        for c, o in zip(t.calls, old, strict=True):
            assert c.tag is not None and c.tag.decision == o["decision"]
            assert (c.decision, c.round, c.index, c.prefix) == (
                o["decision"], o["round"], o["index"], o["prefix"]
            )
        score = score_transcript(t)
        assert score.mismatches == []
        assert score.total == pytest.approx(json.loads(line)["total"])
        again = Transcript.model_validate_json(t.model_dump_json())  # written as version 2
        assert again.calls == t.calls and again.rounds == t.rounds
    pe = ts[0]
    est = [c for c in pe.calls if c.decision == "estimate" and c.round is not None]
    assert est and all(c.index is not None and c.prefix is not None for c in est)


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ({"round": 2}, "round given without the decision"),
        ({"decision": "estimate", "tag": {"decision": "estimate"}}, "beside the tag"),
        ({"tag": {"decision": "estimate", "colour": 1}}, "colour"),
    ],
)
def test_a_record_with_a_stray_or_doubled_decision_is_refused(
    record: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        ModelCallRecord.model_validate({"role": "prover", "model": "m", **record})


def test_a_records_decision_is_read_only_and_flat_keywords_build_the_tag() -> None:
    rec = ModelCallRecord(role="estimator", model="m", decision="estimate", round=1, index=0,
                          prefix=[])
    assert rec.tag == DecisionTag(decision="estimate", round=1, index=0, prefix=[])
    with pytest.raises(AttributeError):
        rec.decision = "scoring"  # type: ignore[misc]
    with pytest.raises(ValidationError):
        rec.tag.round = 2  # type: ignore[union-attr]
    assert ModelCallRecord(role="judge", model="m").decision is None


PE_RUNS = {
    "figure2": pe_config(judge={**scripted(), "kind": "llm"}),
    "path-only, independent estimator": pe_config(
        estimator={**scripted(), "independent": True},
        debate={"depth": 2, "width": 3, "expected_rewards": False},
    ),
    "independent variant": pe_config(debate={"depth": 2, "width": 3, "variant": "independent"}),
    "commit-marginal": pe_config(debate={"depth": 2, "width": 2, "variant": "commit-marginal"}),
    "best of 2 (direction, decompose)": pe_config(
        prover={**scripted(), "decomposer": "model", "direction": "model", "recursion": "model",
                "best_of": 2, "best_of_acts": ["decompose", "direction"]},
        debate={"depth": 1, "width": 2},
    ),
    "prover chooses its answer": judged_config(
        protocols=["prover-estimator"],
        prover={**scripted(), "decomposer": "model", "assignment": "choose"},
    ),
}
SERVES = {
    "prover": {"answer", "direction", "decompose", "recurse", "evidence", "scoring"},
    "estimator": {"estimate", "scoring"},
    "judge": {"verdict"},
}


@pytest.mark.parametrize("name", list(PE_RUNS))
def test_every_call_of_a_prover_estimator_debate_names_its_decision(
    name: str, tmp_path: Path
) -> None:
    run(PE_RUNS[name], tmp_path / "run", progress=False)
    ts = load_transcripts(tmp_path / "run")
    assert ts and all(t.status == "complete" for t in ts)
    for t in ts:
        assert t.calls
        for c in t.calls:
            assert c.tag is not None, (t.id, c.role, c.act)
            assert c.decision in SERVES[c.role], (t.id, c.role, c.act, c.decision)
            if c.decision == "estimate" and c.round is not None:  # a b_i: which, and given what
                assert c.index is not None and c.prefix is not None
                assert len(c.prefix) == c.index or c.act == "independent" or (
                    t.config.variant == "independent")
                assert 0 <= c.index < t.config.width
            else:
                assert c.index is None and c.prefix is None
            rounds = {None, *range(t.config.depth + 1)}
            assert c.round in rounds
            assert (c.round is None) == (c.decision in ("answer", "estimate") and c.index is None)
        if t.meta.get("claimed_answer") and "choose" in name:
            assert any(c.decision == "answer" for c in t.calls)
