"""Plain-text prompt templates (``prompts/text/<act>.j2``) for base models behind a
text-completions endpoint: the real openai SDK against the fake server, request bodies and
call records checked."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from llmdebate.agents.factory import Team, build_models
from llmdebate.agents.llm import LLMEstimator, LLMProver
from llmdebate.agents.settings import EstimatorSettings, JudgeSettings, ProverSettings
from llmdebate.agents.text_prompts import TextPrompts, wants_text_prompts
from llmdebate.core.engine import _estimator_table
from llmdebate.core.roles import DebateContext
from llmdebate.core.schemas import Claim, CombinationRule, DebateConfig, Decomposition
from llmdebate.elicit import estimate
from llmdebate.models import GenerateConfig, Model, get_model
from llmdebate.models.cache import cache_key
from llmdebate.prompts import Prompts

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


@pytest.fixture
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeServer]:
    monkeypatch.setenv("LLMDEBATE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with FakeServer() as s:
        yield s


def ctx(width: int = 2) -> DebateContext:
    return DebateContext(config=DebateConfig(depth=2, width=width), rng=np.random.default_rng(0))


def base_model(server: FakeServer, **options: Any) -> Model:
    # declared enforcing: these tests check the prompts (the probe: test_structured_enforcement)
    return get_model(
        "openai/base", base_url=server.url, endpoint="completions", use_cache=False,
        enforcement="enforced", **options,
    )


async def test_probe_reads_p_true_from_the_text_template_prompt(server: FakeServer) -> None:
    server.top_logprobs = {" True": math.log(0.6), " False": math.log(0.2), "\n": -3.0}
    c = ctx()
    est = await LLMEstimator(base_model(server), TextPrompts(Prompts(), "logprobs")).estimate(
        Claim(text="2647 is a prime number."), c
    )
    assert est.value == pytest.approx(0.75)  # P(True) from the completion's logprobs
    body = server.bodies[0]
    prompt = body["prompt"]
    assert prompt.startswith("Each statement is marked True or False.")
    assert prompt.endswith("Statement: 2647 is a prime number.\nAnswer:")
    assert "Answer with exactly one word" not in prompt and "User:" not in prompt
    assert body["stop"] == ["\n"] and body["logprobs"] == 20 and body["max_tokens"] == 1
    # the record says which template and which few-shot examples the prompt holds
    (record,) = c.calls
    sent = record.messages[0]
    assert sent["template"] == "text/estimate.j2" and sent["content"] == prompt
    assert len(sent["examples"]) == 4
    assert all(
        f"Statement: {e['statement']}\nAnswer: {e['answer']}" in prompt for e in sent["examples"]
    )


async def test_verbalised_probe_asks_for_a_number(server: FakeServer) -> None:
    server.responder = lambda body: " 0.8"
    calls: list = []
    messages = TextPrompts(Prompts(), "verbalised").render(
        "estimate",
        claim="7 is odd.",
        parent=None,
        rule=None,
        subclaims=None,
        index=None,
        outcomes=[],
        context=None,
    )
    est = await estimate(base_model(server, structured="none"), messages, "verbalised", log=calls)
    assert est.value == pytest.approx(0.8)
    prompt = server.bodies[0]["prompt"]
    assert prompt.endswith("Statement: 7 is odd.\nProbability:")
    assert "Probability: 0.97" in prompt  # the examples cued for a number
    assert calls[0].messages[0]["template"] == "text/estimate.j2"


async def test_conditional_table_is_one_request_of_text_prompts(server: FakeServer) -> None:
    def by_prompt(prompt: str) -> dict[str, float]:
        tail = prompt.rsplit("Subclaims:", 1)[-1]
        p = 0.2 + 0.1 * tail.count("is true.") + 0.05 * tail.count("is false.")
        return {" True": math.log(p), " False": math.log(1 - p)}

    server.prompt_logprobs = by_prompt
    dec = Decomposition(
        subclaims=[Claim(text=f"Part {i} holds.") for i in (1, 2, 3)],
        rule=CombinationRule(kind="and"),
    )
    c = ctx(width=3)
    estimator = LLMEstimator(base_model(server), TextPrompts(Prompts(), "logprobs"))
    _table, levels = await _estimator_table(estimator, PARENT, dec, c)
    assert server.requests == 1
    prompts = server.bodies[0]["prompt"]
    assert len(prompts) == 7 and all(p.endswith("\nAnswer:") for p in prompts)
    for est, call in zip([e for lv in levels for e in lv], c.calls, strict=True):
        expected = math.exp(by_prompt(call.messages[0]["content"])[" True"])
        assert est.value == pytest.approx(expected)
        assert call.messages[0]["template"] == "text/estimate.j2"
    # examples, claim, rule and subclaims first: only the stated outcomes differ
    shared = min(len(p.split("\nGiven:")[0].split("\nStatement: subclaim")[0]) for p in prompts)
    assert len({p[:shared] for p in prompts}) == 1 and "3. Part 3 holds." in prompts[0][:shared]


async def test_decomposition_from_the_text_template_with_a_reask(server: FakeServer) -> None:
    repeat = {**GOOD, "subclaims": [PARENT.text, GOOD["subclaims"][1]]}
    replies = iter([" " + json.dumps(repeat), " " + json.dumps(GOOD)])
    server.responder = lambda body: next(replies)
    c = ctx()
    dec = await LLMProver(base_model(server), TextPrompts(Prompts(), "logprobs")).decompose(
        PARENT, 2, c
    )
    assert [s.text for s in dec.subclaims] == GOOD["subclaims"]
    first, second = (b["prompt"] for b in server.bodies)
    assert first.endswith(f"Claim: {PARENT.text}\nJSON:")
    assert 'JSON: {"subclaims": ["221 has no divisor d with 2 <= d < 8.",' in first
    assert server.bodies[0]["response_format"]["json_schema"]["name"] == "decomposition"
    # the re-ask: the reply continues the prompt, then the error and the cue again
    assert second.startswith(first + " " + json.dumps(repeat) + "\n\nThat reply is not valid:")
    assert second.endswith("Try again.\nJSON:")
    records = c.calls
    assert [r.constrained for r in records] == [True, True] and records[0].invalid
    assert records[0].messages[0]["template"] == "text/decompose.j2"
    assert [e["claim"] for e in records[0].messages[0]["examples"]][:2] == [
        "221 has no divisor d with 2 <= d < 15.",
        "91 has a divisor d with 2 <= d < 10.",
    ]


async def test_an_act_without_a_text_template_falls_back_to_plain_turns(
    server: FakeServer,
) -> None:
    server.responder = lambda body: ' {"direction": "lower"}'
    c = ctx()
    prover = LLMProver(base_model(server), TextPrompts(Prompts()), direction="model")
    assert await prover.direction(Claim(text="7 is odd."), 0.9, 1, c) == -1
    body = server.bodies[0]
    assert body["prompt"].startswith("System: You judge whether a stated probability")
    assert body["prompt"].endswith("\n\nAnswer:") and body["stop"] == ["\n\nUser:", "\n\nSystem:"]
    assert "template" not in c.calls[0].messages[0]


async def test_a_prompt_folder_can_bring_its_own_text_template(
    server: FakeServer, tmp_path: Path
) -> None:
    (tmp_path / "text").mkdir()
    (tmp_path / "text" / "estimate.j2").write_text(
        '{% set examples = ["Q: Is 2 even? A: yes"] %}{% set stop = ["\\n\\n", "Q:"] %}'
        "{{ examples[0] }}\nQ: Is it true that {{ claim }} A:"
    )
    server.top_logprobs = {" yes": math.log(0.9), " no": math.log(0.1)}
    c = ctx()
    est = await LLMEstimator(base_model(server), TextPrompts(Prompts(tmp_path))).estimate(
        Claim(text="3 is odd?"), c
    )
    assert est.value == pytest.approx(0.9)
    body = server.bodies[0]
    assert body["prompt"] == "Q: Is 2 even? A: yes\nQ: Is it true that 3 is odd? A:"
    assert body["stop"] == ["\n\n", "Q:"]
    assert c.calls[0].messages[0]["examples"] == ["Q: Is 2 even? A: yes"]


def test_the_team_gives_text_prompts_only_to_models_that_read_plain_text(
    server: FakeServer, tmp_path: Path
) -> None:
    template = tmp_path / "t.jinja"
    template.write_text("{% for m in messages %}{{ m.content }}{% endfor %}")
    roles = {
        "prover": ProverSettings(model="openai/base", base_url=server.url),
        "estimator": EstimatorSettings(
            model="openai/base",
            base_url=[server.url, "http://127.0.0.1:9/v1"],
            options={"endpoint": "completions"},
            method="verbalised",
        ),
        "judge": JudgeSettings(
            model="openai/base",
            base_url=server.url,
            options={"endpoint": "completions", "chat_template": str(template)},
        ),
    }
    models = build_models(roles, use_cache=False)  # type: ignore[arg-type]
    team = Team(models, Prompts(), roles["prover"], roles["estimator"], roles["judge"])  # type: ignore[arg-type]
    assert not wants_text_prompts(models["prover"].backend)  # chat endpoint
    assert wants_text_prompts(models["estimator"].backend)  # every replica reads plain text
    assert not wants_text_prompts(models["judge"].backend)  # the chat template renders
    estimator = team.make_estimator()
    assert isinstance(estimator.prompts, TextPrompts) and estimator.prompts.method == "verbalised"
    assert not isinstance(team.make_prover().prompts, TextPrompts)


def test_a_text_prompt_is_cached_apart_from_the_same_text_as_a_message() -> None:
    text = "Statement: 7 is odd.\nAnswer:"
    plain = [{"role": "user", "content": text}]
    templated = [{**plain[0], "template": "text/estimate.j2"}]
    cfg = GenerateConfig()
    assert cache_key("m", plain, cfg, 0) != cache_key("m", templated, cfg, 0)
