"""The elicitation registry: one name list, one class per method, one record per estimate."""

from __future__ import annotations

import typing

import numpy as np
import pydantic
import pytest

from llmdebate.agents.settings import JudgeSettings
from llmdebate.core.roles import DebateContext
from llmdebate.core.schemas import Claim, DebateConfig, Estimate, Evidence, ModelCallRecord
from llmdebate.elicit import (
    METHODS,
    Method,
    ProbMethod,
    estimate,
    estimates,
    get_method,
)
from llmdebate.elicit.prompts import TF_INSTRUCTION, VERBALISED_INSTRUCTION
from llmdebate.errors import InvalidOutputError, UserError
from llmdebate.judging.model_judges import LLMJudge
from llmdebate.models import GenerateConfig, ScriptedBackend, get_model

QS = [[{"role": "user", "content": f"Is {n} prime?"}] for n in (7, 9, 11)]
PROBS = {"7": 0.83, "9": 0.12, "11": 0.5}

# Computed by Model.probabilities before the methods moved here (same script, same seeds).
OLD_VALUES = {
    "logprobs": [0.83, 0.12000000000000001, 0.5],
    "sampling": [0.8888888888888888, 0.2222222222222222, 0.4444444444444444],
    "verbalised": [0.83, 0.12, 0.5],
}


def scripted(**kw: typing.Any):
    return get_model("scripted", backend=ScriptedBackend(probabilities=PROBS, **kw))


def test_the_registry_is_the_one_name_list():
    assert METHODS.builtin_names() == ("logprobs", "sampling", "verbalised")
    for name in METHODS:  # Estimate.method accepts every registered name
        assert Estimate(value=0.5, method=name).method == name
    for name in METHODS:
        method = get_method(name)
        assert isinstance(method, Method) and method.name == name
    assert METHODS.with_capability("logprobs") == ("logprobs",)


def test_a_registered_method_is_accepted_by_config_fields_at_once():
    class Settings(pydantic.BaseModel):
        method: ProbMethod = "logprobs"

    with pytest.raises(pydantic.ValidationError, match="unknown probability method 'half'"):
        Settings(method="half")

    @METHODS.register("half")
    class Half(Method):
        async def elicit(self, model, messages, options, trace):
            return Estimate(value=0.5, method="half")

    try:
        assert Settings(method="half").method == "half"
        assert isinstance(get_method("half"), Half)
    finally:
        METHODS.remove("half")
    with pytest.raises(UserError, match="unknown probability method 'half'"):
        get_method("half")


async def test_a_registered_method_estimates_for_the_estimator_and_the_judge():
    @METHODS.register("first-sample")
    class FirstSample(Method):
        """One True/False reply at temperature 0, as 0 or 1."""

        async def elicit(self, model, messages, options, trace):
            last = {**messages[-1], "content": f"{messages[-1]['content']}\n{TF_INSTRUCTION}"}
            trace.sent = [*messages[:-1], last]
            out = await model.generate(trace.sent, GenerateConfig(temperature=0.0), log=trace.calls)
            trace.completion = out.text
            return Estimate(value=float(out.text.strip() == "True"), method=self.name)

    try:
        log: list[ModelCallRecord] = []
        est = await estimate(scripted(), QS[0], "first-sample", log=log)
        assert (est.value, est.method) == (1.0, "first-sample")  # P(7 is prime) = 0.83
        assert len(log) == 1 and log[0].completion == "True" and log[0].error is None
        settings = JudgeSettings(model="scripted", method="first-sample")
        judge = LLMJudge(scripted(), method=settings.method)
        ctx = DebateContext(config=DebateConfig(), rng=np.random.default_rng(0))
        verdict = await judge.verdict(Claim(id="x", text="7 is prime."), Evidence(text=""), ctx)
        assert (verdict.value, verdict.probability) == (1, 1.0)
        assert (
            ctx.calls[-1].role == "judge"
            and TF_INSTRUCTION in ctx.calls[-1].messages[-1]["content"]
        )
        assert JudgeSettings(method="generate").method == "generate"
    finally:
        METHODS.remove("first-sample")
    names = "choose from logprobs, sampling, verbalised, generate"
    with pytest.raises(pydantic.ValidationError, match=f"judge method 'first-sample': {names}"):
        JudgeSettings(method="first-sample")


async def test_a_model_without_logprobs_is_told_the_methods_that_need_none():
    model = scripted(supports_logprobs=False)
    with pytest.raises(UserError) as info:
        await estimate(model, QS[0], "logprobs")
    assert "use method='sampling' or method='verbalised'" in str(info.value)


def test_unknown_method_is_a_one_line_user_error_listing_the_names():
    with pytest.raises(UserError) as info:
        get_method("vibes")
    message = str(info.value)
    assert "\n" not in message and "'vibes'" in message
    assert all(name in message for name in METHODS)


@pytest.mark.parametrize("method", METHODS)
async def test_estimates_equal_the_values_before_the_move(method: str):
    log: list[ModelCallRecord] = []
    ests = await estimates(scripted(), QS, method, samples=16, temperature=0.9, log=log)
    assert [e.value for e in ests] == OLD_VALUES[method]
    assert [e.method for e in ests] == [method] * 3
    assert all(e.evidence["model"] == "scripted" for e in ests)
    # one record per estimate, in input order
    assert len(log) == 3
    assert [r.messages[0]["content"].split("\n")[0] for r in log] == [q[0]["content"] for q in QS]
    single = [await estimate(scripted(), q, method, samples=16, temperature=0.9) for q in QS]
    assert [e.value for e in single] == OLD_VALUES[method]


async def test_one_record_per_estimate_with_what_was_sent_and_received():
    m = scripted()
    log: list[ModelCallRecord] = []
    await estimate(m, QS[0], "logprobs", role="judge", act="verdict", log=log)
    rec = log[-1]
    assert (rec.role, rec.act, rec.model) == ("judge", "verdict", "scripted")
    assert rec.messages[-1]["content"].endswith(TF_INSTRUCTION)
    assert rec.completion == " True" and rec.logprobs and rec.samples is None
    await estimate(m, QS[1], "sampling", samples=5, log=log)
    rec = log[-1]
    assert len(log) == 2 and rec.samples is not None and len(rec.samples) == 5
    assert rec.completion is None and rec.tokens_in > 0 and not rec.cached
    await estimate(m, QS[1], "sampling", samples=5, log=log)
    assert len(log) == 3 and log[-1].cached  # every sample from the cache
    await estimate(m, QS[2], "verbalised", log=log)
    assert len(log) == 4 and log[-1].messages[-1]["content"].endswith(VERBALISED_INSTRUCTION)
    assert log[-1].completion == "0.5"


async def test_verbalised_reask_record_holds_the_last_messages_sent():
    replies = iter(["dunno", "0.4"])
    m = get_model("scripted", responder=lambda msgs: next(replies))
    log: list[ModelCallRecord] = []
    m.backend.generate = _responder_only(m.backend)  # type: ignore[method-assign]
    est = await estimate(m, QS[0], "verbalised", log=log)
    assert est.value == pytest.approx(0.4) and est.evidence["attempts"] == 2
    assert len(log) == 1 and len(log[0].messages) == 3 and log[0].completion == "0.4"


def _responder_only(backend: ScriptedBackend):
    from llmdebate.models import ModelOutput

    async def generate(messages, config, sample_index=0):
        return ModelOutput(backend.responder(messages), backend.name, 1, 1)

    return generate


async def test_failures_leave_one_error_record_and_batches_finish():
    m = get_model("scripted", responder=lambda msgs: "no idea")
    m.backend.generate = _responder_only(m.backend)  # type: ignore[method-assign]
    log: list[ModelCallRecord] = []
    with pytest.raises(InvalidOutputError, match="3 attempts"):
        await estimate(m, QS[0], "verbalised", log=log)
    assert len(log) == 1 and log[0].error and "InvalidOutputError" in log[0].error
    assert log[0].tokens_in == 3  # the three attempts' tokens are summed
    mixed = get_model("scripted", responder=lambda msgs: "banana" if "bad" in str(msgs) else "Yes")
    mixed.backend.generate = _responder_only(mixed.backend)  # type: ignore[method-assign]
    log.clear()
    batch = [QS[0], [{"role": "user", "content": "bad?"}], QS[1]]
    with pytest.raises(InvalidOutputError, match="none of 3 samples"):
        await estimates(mixed, batch, "sampling", samples=3, log=log)
    assert [r.error is None for r in log] == [True, False, True]  # all ran, input order
    assert log[0].samples == ["Yes"] * 3


async def test_capability_and_option_checks():
    nolp = get_model("scripted", backend=ScriptedBackend(supports_logprobs=False))
    log: list[ModelCallRecord] = []
    with pytest.raises(UserError, match=r"no logprobs.*'sampling' or .*'verbalised'") as info:
        await estimate(nolp, QS[0], "logprobs", log=log)
    assert "\n" not in str(info.value)
    assert len(log) == 1 and log[0].error
    with pytest.raises(UserError, match="samples must be >= 1"):
        await estimate(scripted(), QS[0], "sampling", samples=0)
