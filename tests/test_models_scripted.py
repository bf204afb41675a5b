"""The wrapper, through the scripted backend: replies, records, cache, retries, estimates."""

from __future__ import annotations

import asyncio

import pytest

from llmdebate.errors import InvalidOutputError, ModelError, UserError
from llmdebate.models import (
    GenerateConfig,
    Model,
    ScriptedBackend,
    call_context,
    get_model,
)
from llmdebate.schemas import ModelCallRecord

Q = [{"role": "user", "content": "Is 7 prime?"}]


def _model(backend: ScriptedBackend, records: list[ModelCallRecord] | None = None) -> Model:
    m = get_model("scripted", backend=backend, retry_base_delay=0.001)
    if records is not None:
        m.on_call = records.append
    return m


async def test_replies_then_responder_then_error():
    backend = ScriptedBackend(["one", "two"], responder=lambda msgs: msgs[-1]["content"].upper())
    m = _model(backend)
    assert (await m.generate([{"role": "user", "content": "a"}])).text == "one"
    assert (await m.generate([{"role": "user", "content": "b"}])).text == "two"
    assert (await m.generate([{"role": "user", "content": "c"}])).text == "C"
    assert [r[-1]["content"] for r in backend.requests] == ["a", "b", "c"]
    bare = _model(ScriptedBackend())
    with pytest.raises(InvalidOutputError, match="no scripted reply"):
        await bare.generate(Q)


async def test_records_carry_role_and_act_from_context_or_kwargs():
    records: list[ModelCallRecord] = []
    m = _model(ScriptedBackend(responder=lambda msgs: "ok"), records)
    with call_context(role="prover", act="decompose"):
        await m.generate(Q)
        await asyncio.gather(m.generate(Q, sample_index=1), m.generate(Q, sample_index=2))
        await m.generate(Q, role="judge", sample_index=3)
    await m.generate(Q, sample_index=4)
    assert [(r.role, r.act) for r in records] == [
        ("prover", "decompose"),
        ("prover", "decompose"),
        ("prover", "decompose"),
        ("judge", "decompose"),
        ("", ""),
    ]
    assert records[0].messages == Q and records[0].completion == "ok"
    assert records[0].tokens_in == 3


async def test_cache_hit_makes_no_request_and_is_accounted():
    backend = ScriptedBackend(responder=lambda msgs: "ok")
    m = _model(backend)
    a = await m.generate(Q)
    b = await m.generate(Q)
    c = await m.generate(Q, GenerateConfig(temperature=1.0))
    assert len(backend.requests) == 2
    assert not a.cached and b.cached and not c.cached
    assert m.usage.calls == 3 and m.usage.cached_calls == 1 and m.usage.requests == 2
    assert m.usage.tokens_in == 2 * 3
    nocache = get_model("scripted", backend=backend, use_cache=False)
    await nocache.generate(Q)
    await nocache.generate(Q)
    assert len(backend.requests) == 4


async def test_scripted_cache_is_per_instance():
    first = ScriptedBackend(["a"])
    await _model(first).generate(Q)
    second = ScriptedBackend(["b"])
    assert (await _model(second).generate(Q)).text == "b"


async def test_transient_failures_are_retried_then_give_up():
    records: list[ModelCallRecord] = []
    m = _model(ScriptedBackend(["fine"], fail_first=2), records)
    assert (await m.generate(Q)).text == "fine"
    assert m.usage.retries == 2
    failing = get_model(
        "scripted", backend=ScriptedBackend(fail_first=10), max_retries=3, retry_base_delay=0.001
    )
    failing.on_call = records.append
    with pytest.raises(ModelError, match="gave up after 4 attempts"):
        await failing.generate(Q)
    assert failing.usage.retries == 3 and failing.usage.errors == 1
    assert records[-1].error is not None and "gave up" in records[-1].error


async def test_probability_methods_follow_the_script():
    probs = {"prime": 0.9, "even": 0.2}
    records: list[ModelCallRecord] = []
    m = _model(ScriptedBackend(probabilities=probs), records)
    est = await m.probability(Q, "logprobs")
    assert est.value == pytest.approx(0.9)
    assert est.evidence["p_true_mass"] == pytest.approx(0.9)
    assert records[-1].logprobs and records[-1].logprobs[0]["token"] == " True"
    verbal = await m.probability([{"role": "user", "content": "Is 4 even?"}], "verbalised")
    assert verbal.value == pytest.approx(0.2) and verbal.method == "verbalised"
    sampled = await m.probability(Q, "sampling", samples=40, temperature=1.0)
    k = sampled.evidence["k_true"]
    assert sampled.value == pytest.approx((k + 1) / 42)
    assert 28 <= k <= 40  # p = 0.9; a deterministic draw, but checks the wiring
    assert records[-1].samples is not None and len(records[-1].samples) == 40
    again = await m.probability(Q, "sampling", samples=40, temperature=1.0)
    assert again.value == sampled.value and records[-1].cached


async def test_probability_callable_and_zero_one_edges():
    backend = ScriptedBackend(probabilities=lambda msgs: 0.0 if "no" in msgs[-1]["content"] else 1)
    m = _model(backend)
    assert (await m.probability([{"role": "user", "content": "no"}])).value == 0.0
    assert (await m.probability([{"role": "user", "content": "yes"}])).value == 1.0


async def test_probabilities_batch_and_logprob_refusal():
    m = _model(ScriptedBackend(probabilities={"a": 0.25, "b": 0.75}))
    ests = await m.probabilities([[{"role": "user", "content": c}] for c in "ab"])
    assert [e.value for e in ests] == pytest.approx([0.25, 0.75])
    nolp = _model(ScriptedBackend(supports_logprobs=False))
    with pytest.raises(UserError, match="sampling"):
        await nolp.probability(Q, "logprobs")
    with pytest.raises(UserError, match="unknown probability method"):
        await m.probability(Q, "vibes")  # type: ignore[arg-type]


async def test_bad_messages_and_options():
    m = _model(ScriptedBackend(["x"]))
    with pytest.raises(UserError, match="message 0"):
        await m.generate([{"role": "bot", "content": "x"}])
    with pytest.raises(UserError, match="at least one message"):
        await m.generate([])
    with pytest.raises(UserError, match="unexpected keyword"):
        get_model("scripted", replys=["typo"])
    with pytest.raises(UserError, match=r"\[0, 1\]"):
        ScriptedBackend(default_probability=1.5)


def test_model_is_reusable_across_event_loops():
    backend = ScriptedBackend(responder=lambda msgs: "ok", delay_s=0.01)
    m = get_model("scripted", backend=backend, max_concurrency=1)  # calls wait: loop-bound

    async def three(offset: int) -> None:
        await asyncio.gather(*(m.generate(Q, sample_index=offset + i) for i in range(3)))

    for run in range(2):
        asyncio.run(three(10 * run))
    assert m.usage.requests == 6
