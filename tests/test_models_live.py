"""Against the real provider APIs: run only where the user has set an API key."""

from __future__ import annotations

import os

import pytest

from llmdebate.core.schemas import ModelCallRecord
from llmdebate.elicit import estimate
from llmdebate.models import GenerateConfig, get_model

Q = [
    {"role": "system", "content": "Answer with one word: True or False."},
    {"role": "user", "content": "Claim: 7 is a prime number. True or False?"},
]
OPENAI = os.environ.get("LLMDEBATE_LIVE_OPENAI_MODEL", "gpt-4o-mini")
ANTHROPIC = os.environ.get("LLMDEBATE_LIVE_ANTHROPIC_MODEL", "claude-3-5-haiku-latest")

needs_openai = pytest.mark.skipif(
    not os.environ.get("OPENAI_API_KEY"), reason="needs OPENAI_API_KEY (a real OpenAI account)"
)
needs_anthropic = pytest.mark.skipif(
    not os.environ.get("ANTHROPIC_API_KEY"),
    reason="needs ANTHROPIC_API_KEY (a real Anthropic account)",
)


@pytest.mark.apikey
@needs_openai
async def test_openai_generates_and_gives_a_logprob_probability() -> None:
    model = get_model(f"openai/{OPENAI}", use_cache=False)
    log: list[ModelCallRecord] = []
    out = await model.generate(Q, GenerateConfig(max_tokens=4), role="judge", act="t", log=log)
    assert out.text.strip() and out.tokens_in > 0
    assert [(r.role, r.act) for r in log] == [("judge", "t")]
    est = await estimate(model, Q, "logprobs", role="judge", act="p", log=log)
    assert 0.5 < est.value <= 1.0 and est.method == "logprobs"
    assert len(log) == 2 and log[1].act == "p"


@pytest.mark.apikey
@needs_anthropic
async def test_anthropic_gives_a_sampled_and_a_verbalised_probability() -> None:
    model = get_model(f"anthropic/{ANTHROPIC}", use_cache=False)
    sampled = await estimate(model, Q, "sampling", samples=3)
    assert 0.5 < sampled.value < 1.0 and len(sampled.evidence.get("samples", [])) == 3
    stated = await estimate(model, Q, "verbalised")
    assert 0.5 < stated.value <= 1.0
