"""The embedded Gemma 3 270M, loaded for real (once per session; weights from the package).

The first run dequantises the GGUF (~1 min on 2 cores) and caches safetensors under
$LLMDEBATE_CACHE_DIR/weights (default ~/.cache/llmdebate/weights); later runs load in seconds.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from llmdebate.elicit import estimate, estimates
from llmdebate.models import GenerateConfig, Model, get_model
from llmdebate.models.get_model import create_backend
from llmdebate.models.hf_backend import HFBackend, format_prompt

pytestmark = pytest.mark.integration

QUESTIONS = [
    "Is Paris the capital of France?",
    "Is 7 an even number?",
    "Is the sun a star?",
    "Do fish live in water? Think about it carefully before you answer the question.",
    "Is ice colder than boiling water?",
]


def _ask(q: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": "Answer questions."}, {"role": "user", "content": q}]


@pytest.fixture(scope="session")
def local_backend() -> HFBackend:
    backend = create_backend("local")
    assert isinstance(backend, HFBackend)
    backend.load()
    return backend


async def test_probability_valid_and_batched_equals_single(local_backend: HFBackend):
    model = Model(local_backend, use_cache=False)
    single = [await estimate(model, _ask(q), "logprobs") for q in QUESTIONS]
    before = sum(n for size, n in local_backend.batch_sizes.items() if size > 1)
    batched = await estimates(model, [_ask(q) for q in QUESTIONS], "logprobs")
    after = sum(n for size, n in local_backend.batch_sizes.items() if size > 1)
    assert after > before  # the concurrent calls really shared a forward pass
    for s, b in zip(single, batched, strict=True):
        assert 0.0 <= s.value <= 1.0 and s.method == "logprobs"
        assert s.evidence["p_true_mass"] > 0 and s.evidence["p_false_mass"] > 0
        assert 0.0 <= s.evidence["neither_mass"] < 1.0
        assert abs(s.value - b.value) < 1e-4
        assert abs(s.evidence["p_true_mass"] - b.evidence["p_true_mass"]) < 1e-4
    # exact variant masses: every True/False variant is reported, not only the top 20
    assert {" True", "True", " False", "False"} <= set(single[0].evidence["top"])
    assert local_backend.load_info.weights_dir
    assert (Path(local_backend.load_info.weights_dir) / "model.safetensors").exists()


async def test_generation_is_deterministic_and_bounded(local_backend: HFBackend):
    model = Model(local_backend, use_cache=False)
    msgs = _ask("Name a colour.")
    cfg = GenerateConfig(temperature=1.0, max_tokens=6, seed=11, top_logprobs=3)
    a = await model.generate(msgs, cfg, sample_index=2)
    b = await model.generate(msgs, cfg, sample_index=2)
    assert a.text == b.text and 1 <= a.tokens_out <= 6
    assert a.tokens_in == len(local_backend.tokenizer(format_prompt(msgs))["input_ids"])
    assert a.logprobs is not None and len(a.logprobs) == a.tokens_out
    assert all(lp.logprob <= 0 and len(lp.top) >= 3 for lp in a.logprobs)
    greedy = await model.generate(msgs, GenerateConfig(max_tokens=4))
    assert greedy.tokens_out <= 4 and greedy.logprobs is None and greedy.cost == 0.0


async def test_sampling_and_cache(local_backend: HFBackend, tmp_path: Path):
    model = Model(local_backend, cache_dir=tmp_path)
    est = await estimate(model, _ask(QUESTIONS[2]), "sampling", samples=4)
    assert est.evidence["n"] == 4 and 1 / 6 <= est.value <= 5 / 6
    calls = model.usage.requests
    again = await estimate(model, _ask(QUESTIONS[2]), "sampling", samples=4)
    assert again.value == est.value and model.usage.requests == calls


async def test_hf_directory_matches_local(local_backend: HFBackend):
    weights = Path(local_backend.load_info.weights_dir)
    hf = get_model(f"hf/{weights}", use_cache=False)
    local = Model(local_backend, use_cache=False)
    p_hf = await estimate(hf, _ask(QUESTIONS[0]), "logprobs")
    p_local = await estimate(local, _ask(QUESTIONS[0]), "logprobs")
    assert math.isclose(p_hf.value, p_local.value, abs_tol=1e-5)
    await hf.aclose()


def test_prompt_format_for_a_base_model():
    msgs = [
        {"role": "system", "content": "S"},
        {"role": "user", "content": "U"},
        {"role": "assistant", "content": "A"},
        {"role": "user", "content": "V"},
    ]
    assert format_prompt(msgs) == "System: S\n\nUser: U\n\nAssistant: A\n\nUser: V\n\nAnswer:"
    assert format_prompt(msgs[:3]).endswith("Assistant: A")
