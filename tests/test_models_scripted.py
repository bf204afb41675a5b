"""The wrapper, through the scripted backend: replies, records, cache, retries, estimates."""

from __future__ import annotations

import asyncio

import pytest

from llmdebate.core.schemas import ModelCallRecord
from llmdebate.elicit import estimate, estimates
from llmdebate.errors import InvalidOutputError, RetriesExhaustedError, UserError
from llmdebate.models import GenerateConfig, Model, ScriptedBackend, get_model

Q = [{"role": "user", "content": "Is 7 prime?"}]


def _model(backend: ScriptedBackend) -> Model:
    return get_model("scripted", backend=backend, retry_base_delay=0.001)


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


async def test_records_go_to_the_log_given_with_role_and_act():
    records: list[ModelCallRecord] = []
    other: list[ModelCallRecord] = []
    m = _model(ScriptedBackend(responder=lambda msgs: "ok"))
    await m.generate(Q, role="prover", act="decompose", log=records)
    await asyncio.gather(
        m.generate(Q, sample_index=1, role="prover", act="decompose", log=records),
        m.generate(Q, sample_index=2, role="judge", log=other),
    )
    await m.generate(Q, sample_index=4)  # no log: no record anywhere
    assert [(r.role, r.act) for r in records] == [("prover", "decompose")] * 2
    assert [(r.role, r.act) for r in other] == [("judge", "")]
    assert records[0].messages == Q and records[0].completion == "ok"
    assert records[0].tokens_in == 3 and records[0].retries == 0


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
    m = _model(ScriptedBackend(["fine"], fail_first=2))
    assert (await m.generate(Q, log=records)).text == "fine"
    assert m.usage.retries == 2 and records[-1].retries == 2
    failing = get_model(
        "scripted", backend=ScriptedBackend(fail_first=10), max_retries=3, retry_base_delay=0.001
    )
    with pytest.raises(RetriesExhaustedError, match="gave up after 4 attempts") as info:
        await failing.generate(Q, log=records)
    assert failing.usage.retries == 3 and failing.usage.errors == 1
    assert records[-1].error is not None and "gave up" in records[-1].error
    assert records[-1].retries == 3
    assert getattr(info.value, "attempts", None) == 4


async def test_probability_methods_follow_the_script():
    probs = {"prime": 0.9, "even": 0.2}
    records: list[ModelCallRecord] = []
    m = _model(ScriptedBackend(probabilities=probs))
    est = await estimate(m, Q, "logprobs", log=records)
    assert est.value == pytest.approx(0.9)
    assert est.evidence["p_true_mass"] == pytest.approx(0.9)
    assert records[-1].logprobs and records[-1].logprobs[0]["token"] == " True"
    verbal = await estimate(m, [{"role": "user", "content": "Is 4 even?"}], "verbalised")
    assert verbal.value == pytest.approx(0.2) and verbal.method == "verbalised"
    sampled = await estimate(m, Q, "sampling", samples=40, temperature=1.0, log=records)
    k = sampled.evidence["k_true"]
    assert sampled.value == pytest.approx((k + 1) / 42)
    assert 28 <= k <= 40  # p = 0.9; a deterministic draw, but checks the wiring
    assert records[-1].samples is not None and len(records[-1].samples) == 40
    again = await estimate(m, Q, "sampling", samples=40, temperature=1.0, log=records)
    assert again.value == sampled.value and records[-1].cached


async def test_probability_callable_and_zero_one_edges():
    backend = ScriptedBackend(probabilities=lambda msgs: 0.0 if "no" in msgs[-1]["content"] else 1)
    m = _model(backend)
    assert (await estimate(m, [{"role": "user", "content": "no"}], "logprobs")).value == 0.0
    assert (await estimate(m, [{"role": "user", "content": "yes"}], "logprobs")).value == 1.0


async def test_probabilities_batch_and_logprob_refusal():
    m = _model(ScriptedBackend(probabilities={"a": 0.25, "b": 0.75}))
    ests = await estimates(m, [[{"role": "user", "content": c}] for c in "ab"], "logprobs")
    assert [e.value for e in ests] == pytest.approx([0.25, 0.75])
    nolp = _model(ScriptedBackend(supports_logprobs=False))
    with pytest.raises(UserError, match="sampling"):
        await estimate(nolp, Q, "logprobs")
    with pytest.raises(UserError, match="unknown probability method"):
        await estimate(m, Q, "vibes")


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
