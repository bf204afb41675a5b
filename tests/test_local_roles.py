"""The main job's roles on the embedded Gemma 3 270M, loaded for real: one copy of the weights
for the prover (its adapter, and the estimator's for its beliefs), the estimator and the
judge (the base model), "preparing local" said once, each call under its own adapter with
the replies of the merged adapter, and the prover's beliefs carrying their mass on
True/False."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from llmdebate.agents.factory import build_models
from llmdebate.elicit import estimate
from llmdebate.experiment.loading import read_yaml
from llmdebate.experiment.runner import _prepare_models
from llmdebate.models import GenerateConfig, Model
from llmdebate.models.hf_backend import HFBackend, adapter_path, format_prompt
from llmdebate.records.paths import resolve_path

pytestmark = pytest.mark.integration

BELIEF = [
    {"role": "system", "content": "You estimate how likely statements are to be true."},
    {"role": "user", "content": "Statement: 161 has no divisor d with 2 <= d < 10.\n\n"
                                "Question: is this statement true?"},
]


@pytest.fixture(scope="module")
def roles() -> dict[str, Model]:
    from llmdebate.agents.settings import EstimatorSettings, JudgeSettings, ProverSettings

    cfg = read_yaml(resolve_path("configs/local-divisors.yaml"))
    settings: dict[str, Any] = {
        "prover": ProverSettings(**cfg["prover"]),
        "estimator": EstimatorSettings(**cfg["estimator"]),
        "judge": JudgeSettings(**cfg["judge"]),
    }
    return build_models(settings, use_cache=False)


def test_one_copy_of_the_weights_said_once(roles: dict[str, Model]) -> None:
    said: list[str] = []
    _prepare_models(roles, said.append)
    assert len(said) == 1 and said[0].startswith("preparing local")
    backends = [m.backend for m in roles.values()]
    assert all(isinstance(b, HFBackend) for b in backends) and len(set(map(id, backends))) == 3
    weights = {id(b.weights) for b in backends if isinstance(b, HFBackend)}
    assert len(weights) == 1
    first = backends[0]
    assert isinstance(first, HFBackend) and first.weights is not None
    assert len(first.weights.adapters) == 2  # the prover's and the estimator's
    # the shared tokenizer, without the Python copies of its vocabulary and merges, encodes
    # and decodes as a freshly loaded one
    from transformers import AutoTokenizer

    fresh = AutoTokenizer.from_pretrained(str(first.weights_dir))
    text = "Statement: 2339 has no divisor d with 34 <= d < 49. {\"subclaims\": [\u00e9]}"
    ids = first.tokenizer(text)["input_ids"]
    assert ids == fresh(text)["input_ids"] and first.tokenizer.decode(ids) == fresh.decode(ids)


def test_the_provers_beliefs_are_the_estimators_adapters(roles: dict[str, Model]) -> None:
    async def both() -> tuple[Any, Any, Any]:
        log: list[Any] = []
        prover = estimate(roles["prover"], BELIEF, "logprobs", role="prover", act="belief",
                          log=log)
        mine = estimate(roles["estimator"], BELIEF, "logprobs", role="estimator",
                        act="estimate")
        own = roles["prover"].generate(BELIEF, GenerateConfig(max_tokens=1, top_logprobs=5),
                                       role="prover", act="decompose")
        return await asyncio.gather(prover, mine, own), log

    (belief, estimator, own), log = asyncio.run(both())
    assert abs(belief.value - estimator.value) < 1e-5  # the same adapter, another worker
    masses = log[-1].notes["masses"]
    assert masses["p_true_mass"] + masses["p_false_mass"] > 0.5
    # the prover's own adapter answers the same prompt with something else than True/False
    assert own.text.strip() not in ("True", "False")


def test_an_adapter_switched_per_call_gives_the_merged_adapters_replies(
    roles: dict[str, Model],
) -> None:
    import peft

    prover = roles["prover"].backend
    assert isinstance(prover, HFBackend) and prover.weights is not None
    base, _, _ = prover._read_weights()
    merged = peft.PeftModel.from_pretrained(base, str(adapter_path("divisors-prover")))
    model = merged.merge_and_unload().eval()
    prompt = format_prompt(BELIEF)
    cfg = GenerateConfig(max_tokens=4, top_logprobs=5)
    shared = prover.run_batch([(prompt, cfg, 0)])[0]
    reference = prover._run_batch([(prompt, cfg, 0)], None, model, lambda i: False)[0]
    assert shared.text == reference.text
    for a, b in zip(shared.logprobs or [], reference.logprobs or [], strict=True):
        assert a.token == b.token and abs(a.logprob - b.logprob) < 1e-4
