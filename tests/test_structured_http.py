"""Structured outputs, text completions and batched prompts: the real openai and anthropic SDKs
against the fake server on 127.0.0.1, with the request bodies checked."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import numpy as np
import pytest

from llmdebate.agents.llm import LLMEstimator, LLMProver
from llmdebate.agents.replies import DecompositionReply, decomposition_schema, index_schema
from llmdebate.core.engine import _estimator_table
from llmdebate.core.roles import DebateContext
from llmdebate.core.schemas import Claim, CombinationRule, DebateConfig, Decomposition
from llmdebate.elicit import estimate, estimates
from llmdebate.elicit.methods import PROBABILITY_SCHEMA
from llmdebate.errors import UserError
from llmdebate.models import GenerateConfig, Model, get_model
from llmdebate.models.gbnf import schema_to_gbnf

try:
    from tests.fixtures.fake_server import FakeServer
except ImportError:  # tests/ is not a package: pytest put tests/ itself on sys.path
    from fixtures.fake_server import FakeServer

PARENT = Claim(text="2647 has no divisor d with 2 <= d < 52.", id="x")
GOOD = {
    "subclaims": [
        "2647 has no divisor d with 2 <= d < 27.",
        "2647 has no divisor d with 27 <= d < 52.",
    ],
    "rule": {"kind": "and", "k": None, "expr": None},
}


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLMDEBATE_CACHE_DIR", str(tmp_path / "cache"))
    for var in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as s:
        yield s


def ctx(width: int = 2) -> DebateContext:
    return DebateContext(config=DebateConfig(depth=2, width=width), rng=np.random.default_rng(0))


def openai(server: FakeServer, **options: Any) -> Model:
    # declared enforcing: these tests check the request bodies (the probe that finds out is
    # tested in test_structured_enforcement.py)
    options.setdefault("enforcement", "enforced")
    return get_model("openai/gpt-4o-mini", base_url=server.url, retry_base_delay=0.01, **options)


async def test_openai_decomposition_uses_strict_response_format(server: FakeServer) -> None:
    server.responder = lambda body: json.dumps(GOOD)
    c = ctx()
    dec = await LLMProver(openai(server)).decompose(PARENT, 2, c)
    assert [s.text for s in dec.subclaims] == GOOD["subclaims"]
    rf = server.bodies[0]["response_format"]
    assert rf["type"] == "json_schema" and rf["json_schema"]["strict"] is True
    assert rf["json_schema"]["name"] == "decomposition"
    schema = rf["json_schema"]["schema"]
    assert schema == decomposition_schema(2).schema
    assert schema["properties"]["subclaims"]["maxItems"] == 2
    assert schema["additionalProperties"] is False
    assert schema["properties"]["rule"]["required"] == ["kind", "k", "expr"]
    assert [(r.act, r.constrained, r.invalid) for r in c.calls] == [("decompose", True, None)]


@pytest.mark.parametrize(
    ("mode", "field", "expected"),
    [
        ("guided_json", "guided_json", lambda s: s),
        ("structured_outputs", "structured_outputs", lambda s: {"json": s}),
        (
            "structured_outputs_grammar",
            "structured_outputs",
            lambda s: {"grammar": schema_to_gbnf(s)},
        ),
        ("json_schema", "json_schema", lambda s: s),
    ],
)
async def test_compatible_servers_get_their_own_schema_field(
    server: FakeServer, mode: str, field: str, expected: Any
) -> None:
    server.responder = lambda body: json.dumps(GOOD)
    c = ctx()
    await LLMProver(openai(server, structured=mode)).decompose(PARENT, 2, c)
    body = server.bodies[0]
    assert body[field] == expected(decomposition_schema(2).schema)
    assert "response_format" not in body
    assert c.calls[0].constrained is True


async def test_plain_prompt_mode_sends_no_schema_and_parses(server: FakeServer) -> None:
    server.responder = lambda body: "```json\n" + json.dumps(GOOD) + "\n```"
    c = ctx()
    dec = await LLMProver(openai(server, structured="none")).decompose(PARENT, 2, c)
    assert dec.width == 2
    assert not {"response_format", "guided_json", "json_schema"} & set(server.bodies[0])
    assert c.calls[0].constrained is False


async def test_rejected_schema_field_falls_back_to_prompt_and_parse(server: FakeServer) -> None:
    server.reject_fields = {"response_format"}
    server.responder = lambda body: json.dumps(GOOD)
    model = openai(server)
    c = ctx()
    await LLMProver(model).decompose(PARENT, 2, c)
    assert "response_format" in server.bodies[0] and "response_format" not in server.bodies[1]
    assert c.calls[0].constrained is False and c.calls[0].error is None
    await LLMProver(model).decompose(Claim(text="91 has a divisor d with 2 <= d < 10."), 2, c)
    assert len(server.bodies) == 3 and "response_format" not in server.bodies[2]


async def test_a_server_error_naming_the_schema_field_is_a_refusal_not_a_retry_storm(
    server: FakeServer, caplog: pytest.LogCaptureFixture
) -> None:
    server.reject_fields = {"response_format"}
    server.reject_status = 500  # llama-cpp-python's chat endpoint
    server.responder = lambda body: json.dumps(GOOD)
    model = openai(server)
    c = ctx()
    with caplog.at_level("WARNING", logger="llmdebate.models"):
        await LLMProver(model).decompose(PARENT, 2, c)
        await LLMProver(model).decompose(Claim(text="91 has a divisor d with 2 <= d < 10."), 2, c)
    assert server.requests == 3  # one refusal, then plain prompts: no retries
    assert "response_format" not in server.bodies[1] and "response_format" not in server.bodies[2]
    assert [x.constrained for x in c.calls] == [False, False]
    assert all(x.error is None and x.retries == 0 for x in c.calls)
    lines = [r.getMessage() for r in caplog.records if "structured" in r.getMessage()]
    assert len(lines) == 1 and "fails (HTTP 500) on structured: response_format" in lines[0]


async def test_a_server_error_not_naming_the_field_is_retried(server: FakeServer) -> None:
    server.faults.append({"status": 500})
    server.responder = lambda body: json.dumps(GOOD)
    c = ctx()
    await LLMProver(openai(server)).decompose(PARENT, 2, c)
    assert server.requests == 2 and "response_format" in server.bodies[1]


async def test_anthropic_forces_a_tool_whose_input_schema_is_the_schema(
    server: FakeServer,
) -> None:
    server.responder = lambda body: json.dumps(GOOD)
    model = get_model("anthropic/claude-haiku-4-5", base_url=server.root)
    c = ctx()
    dec = await LLMProver(model).decompose(PARENT, 2, c)
    assert dec.rule.kind == "and"
    body = server.bodies[0]
    tool = body["tools"][0]
    assert tool["strict"] is True and tool["name"] == "decomposition"
    # strict tools take a subset of JSON schema: the rest moves into descriptions
    sent = tool["input_schema"]
    assert sent == anthropic.transform_schema(decomposition_schema(2).schema)
    assert sent["required"] == ["subclaims", "rule"] and sent["additionalProperties"] is False
    assert sent["properties"]["rule"]["properties"]["kind"]["enum"][0] == "and"
    subs = sent["properties"]["subclaims"]
    assert "maxItems" not in subs and "maxItems: 2" in subs["description"]
    assert body["tool_choice"] == {"type": "tool", "name": "decomposition"}
    assert DecompositionReply.model_validate_json(c.calls[0].completion or "")
    assert c.calls[0].constrained is True


async def test_anthropic_strict_off_sends_the_schema_as_is(server: FakeServer) -> None:
    server.responder = lambda body: '{"index": 2}'
    model = get_model("anthropic/claude-haiku-4-5", base_url=server.root, strict=False)
    schema = index_schema(3)
    out = await model.generate(
        [{"role": "user", "content": "Which?"}], GenerateConfig(json_schema=schema)
    )
    tool = server.bodies[0]["tools"][0]
    assert "strict" not in tool and tool["input_schema"] == schema.schema
    # parsed, not constrained: without the flag nothing guarantees the tool input's schema
    assert not out.constrained and json.loads(out.text) == {"index": 2}


async def test_reask_for_what_the_schema_cannot_express(server: FakeServer) -> None:
    repeat = {**GOOD, "subclaims": [PARENT.text, GOOD["subclaims"][1]]}
    replies = iter([json.dumps(repeat), json.dumps(GOOD)])
    server.responder = lambda body: next(replies)
    c = ctx()
    prover = LLMProver(openai(server))
    await prover.decompose(PARENT, 2, c)
    assert [r.constrained for r in c.calls] == [True, True]
    assert c.calls[0].invalid is not None and "repeats the claim" in c.calls[0].invalid
    assert c.calls[1].invalid is None
    assert "repeats the claim" in server.bodies[1]["messages"][-1]["content"]
    audit = prover.audits[0]
    assert audit["attempts"] == 2 and audit["source"] == "model"


async def test_verbalised_probability_is_structured(server: FakeServer) -> None:
    server.responder = lambda body: '{"probability": 0.3}'
    calls: list = []
    est = await estimate(
        openai(server), [{"role": "user", "content": "Is 9 prime?"}], "verbalised", log=calls
    )
    assert est.value == pytest.approx(0.3)
    rf = server.bodies[0]["response_format"]["json_schema"]
    assert rf["schema"] == PROBABILITY_SCHEMA.schema and rf["strict"] is True
    assert calls[0].constrained is True  # the estimate's one record sums up its calls


async def test_text_completions_probability_from_logprobs(server: FakeServer) -> None:
    server.top_logprobs = {" True": math.log(0.6), " False": math.log(0.3), "\n": -3.0}
    model = openai(server, endpoint="completions")
    messages = [
        {"role": "system", "content": "Be calibrated."},
        {"role": "user", "content": "Is 7 prime?"},
    ]
    est = await estimate(model, messages, "logprobs")
    assert est.value == pytest.approx(0.6 / 0.9)
    body = server.bodies[0]
    assert body["prompt"].startswith("System: Be calibrated.\n\nUser: Is 7 prime?")
    assert body["prompt"].endswith("\n\nAnswer:")
    assert body["logprobs"] == 20 and body["max_tokens"] == 1 and "messages" not in body


async def test_text_completions_with_the_model_chat_template(
    server: FakeServer, tmp_path: Path
) -> None:
    template = (
        "{{ bos_token }}{% for m in messages %}<|{{ m.role }}|>{{ m.content }}\n{% endfor %}"
        "{% if add_generation_prompt %}<|assistant|>{% endif %}"
    )
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"chat_template": template}))
    model = openai(server, endpoint="completions", chat_template=str(tmp_path))
    await model.generate([{"role": "user", "content": "Hi"}])
    assert server.bodies[0]["prompt"] == "<|user|>Hi\n<|assistant|>"


async def test_estimator_table_is_one_batched_completions_request(server: FakeServer) -> None:
    # each prompt gets its own probability, so a mix-up of the batch's order would show
    def by_prompt(prompt: str) -> dict[str, float]:
        p = 0.2 + 0.1 * prompt.count("is true") + 0.05 * prompt.count("is false")
        return {" True": math.log(p), " False": math.log(1 - p)}

    server.prompt_logprobs = by_prompt
    model = openai(server, endpoint="completions")
    dec = Decomposition(
        subclaims=[Claim(text=f"Part {i} holds.") for i in (1, 2, 3)],
        rule=CombinationRule(kind="and"),
    )
    c = ctx(width=3)
    _table, levels = await _estimator_table(LLMEstimator(model), PARENT, dec, c)
    assert server.requests == 1  # 2^3 - 1 = 7 probabilities in one request
    prompts = server.bodies[0]["prompt"]
    assert isinstance(prompts, list) and len(prompts) == 7
    flat = [e for lv in levels for e in lv]
    for est, call in zip(flat, c.calls, strict=True):
        prompt = call.messages[-1]["content"]
        expected = 0.2 + 0.1 * prompt.count("is true") + 0.05 * prompt.count("is false")
        assert est.value == pytest.approx(expected)
    # the probes share their prefix (claim, rule, subclaims): only the stated outcomes differ
    shared = min(len(p.split("Suppose")[0]) for p in prompts)
    assert len({p[:shared] for p in prompts}) == 1
    usage = model.usage
    assert usage.requests == 7 and usage.tokens_out == 7
    assert all(call.batch_size == 7 for call in c.calls)


async def test_batched_prompts_can_be_switched_off(server: FakeServer) -> None:
    model = openai(server, endpoint="completions", batch_prompts=False)
    batch = [[{"role": "user", "content": f"Is {n} prime?"}] for n in (2, 3, 4)]
    await estimates(model, batch, "logprobs")
    assert server.requests == 3 and all(isinstance(b["prompt"], str) for b in server.bodies)


def test_bad_endpoint_and_mode_are_one_line_errors(server: FakeServer) -> None:
    with pytest.raises(UserError, match="endpoint must be one of chat, completions"):
        openai(server, endpoint="text")
    with pytest.raises(UserError, match="structured must be one of"):
        openai(server, structured="xml")
