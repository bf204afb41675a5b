"""Local roles on one model folder share one copy of the weights; each call runs under its
own LoRA adapter (switched per call, per worker thread), with the replies the merged adapter
gives; ``act_adapters`` gives an act another adapter or the base model. A tiny random Llama
with random adapters (built here, no download)."""

from __future__ import annotations

import asyncio
import gc
import weakref
from pathlib import Path
from typing import Any

import pytest

from llmdebate.core.decisions import calling
from llmdebate.models.hf_backend import HFBackend, _Request, format_prompt
from llmdebate.models.interface import GenerateConfig, ModelOutput
from llmdebate.models.lora import plain_lora

try:
    from tests.test_train_grpo import tiny_model
except ImportError:  # pytest run from inside tests/
    from test_train_grpo import tiny_model  # type: ignore[no-redef]

GEN = GenerateConfig(max_tokens=6, temperature=0.0, top_logprobs=3)
PROBE = GenerateConfig(max_tokens=1, temperature=0.0, top_logprobs=3)
QUESTIONS = ["91 is prime.", "2 is even", "7 is odd. Is it?"]
TOL = 1e-4
"""Unmerged and merged adapters differ by float rounding only."""


def adapter(model_dir: Path, out: Path, seed: int, **lora: Any) -> Path:
    """A random LoRA adapter (B is not zero, so it changes the replies) saved by peft."""
    import peft
    import torch
    from transformers import AutoModelForCausalLM

    torch.manual_seed(seed)
    base = AutoModelForCausalLM.from_pretrained(str(model_dir))
    config = peft.LoraConfig(
        r=4, lora_alpha=8, target_modules=["q_proj", "v_proj", "down_proj"],
        init_lora_weights=False, **lora,
    )
    peft.get_peft_model(base, config).save_pretrained(str(out))
    return out


def merged(model_dir: Path, adapter_dir: Path, out: Path) -> Path:
    """The model folder of ``adapter_dir`` merged into the weights (how backends ran it
    before)."""
    import peft
    from transformers import AutoModelForCausalLM, AutoTokenizer

    base = AutoModelForCausalLM.from_pretrained(str(model_dir))
    peft.PeftModel.from_pretrained(base, str(adapter_dir)).merge_and_unload().save_pretrained(
        str(out)
    )
    AutoTokenizer.from_pretrained(str(model_dir)).save_pretrained(str(out))
    return out


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("adapters")
    model = tiny_model(root / "model")
    one, two = adapter(model, root / "one", 1), adapter(model, root / "two", 2)
    return {
        "model": model,
        "one": one,
        "two": two,
        "one merged": merged(model, one, root / "one-merged"),
        "two merged": merged(model, two, root / "two-merged"),
    }


def backend(folder: Path, tmp_path: Path, **kw: Any) -> HFBackend:
    return HFBackend("hf/tiny", folder, cache_dir=tmp_path, threads=1, **kw)


def ask(text: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": "Is it true?"}, {"role": "user", "content": text}]


PROMPTS = [format_prompt(ask(q)) for q in QUESTIONS]


def replies(b: HFBackend, **kw: Any) -> list[ModelOutput]:
    return [b.run_batch([(p, cfg, 0)], **kw)[0] for p in PROMPTS for cfg in (GEN, PROBE)]


def same(xs: list[ModelOutput], ys: list[ModelOutput]) -> float:
    """The largest logprob difference of two lists of replies with the same tokens."""
    worst = 0.0
    for x, y in zip(xs, ys, strict=True):
        assert x.text == y.text and x.tokens_out == y.tokens_out
        for lx, ly in zip(x.logprobs or [], y.logprobs or [], strict=True):
            assert lx.token == ly.token and lx.top.keys() == ly.top.keys()
            worst = max(worst, abs(lx.logprob - ly.logprob))
    assert worst < TOL
    return worst


def test_roles_on_one_folder_share_one_copy_with_each_adapter_as_merged(
    folders: dict[str, Path], tmp_path: Path
) -> None:
    base = backend(folders["model"], tmp_path)
    one = backend(folders["model"], tmp_path, adapter=folders["one"])
    two = backend(folders["model"], tmp_path, adapter=folders["two"])
    for b in (base, one, two):
        b.load()
    assert base.weights is one.weights is two.weights and base.model is one.model is two.model
    assert base.weights is not None and len(base.weights.adapters) == 2
    plain = replies(base)
    for b, name in ((one, "one merged"), (two, "two merged")):
        reference = backend(folders[name], tmp_path)
        mine = replies(b)
        same(mine, replies(reference))
        assert [r.logprobs[0].top for r in mine] != [r.logprobs[0].top for r in plain]
    same(replies(base), plain)  # the base model is untouched by the adapters beside it
    assert base.identity != one.identity != two.identity


def test_concurrent_roles_each_get_their_own_adapter(
    folders: dict[str, Path], tmp_path: Path
) -> None:
    """Three workers (three threads) run at once on one copy of the weights."""
    bs = [
        backend(folders["model"], tmp_path),
        backend(folders["model"], tmp_path, adapter=folders["one"]),
        backend(folders["model"], tmp_path, adapter=folders["two"]),
    ]
    alone = [replies(b) for b in bs]

    async def together() -> list[list[ModelOutput]]:
        async def role(b: HFBackend) -> list[ModelOutput]:
            return list(await asyncio.gather(
                *(b.generate(ask(q), cfg) for q in QUESTIONS for cfg in (GEN, PROBE))
            ))

        try:
            return list(await asyncio.gather(*(role(b) for b in bs)))
        finally:
            for b in bs:
                await b.aclose()

    async def interleaved() -> list[ModelOutput]:
        try:
            return list(
                await asyncio.gather(
                    *(b.generate(ask(q), cfg) for q in QUESTIONS for cfg in (GEN, PROBE)
                      for b in bs)
                )
            )
        finally:
            for b in bs:
                await b.aclose()

    for mine, ref in zip(asyncio.run(together()), alone, strict=True):
        same(mine, ref)
    mixed = asyncio.run(interleaved())
    for i, ref in enumerate(alone):
        same(mixed[i :: len(bs)], ref)


def test_an_act_runs_under_its_own_adapter(folders: dict[str, Path], tmp_path: Path) -> None:
    base = backend(folders["model"], tmp_path)
    one = backend(folders["model"], tmp_path, adapter=folders["one"])
    prover = backend(
        folders["model"], tmp_path, adapter=folders["one"],
        act_adapters={"belief": None, "evidence": folders["two"]},
    )
    two = backend(folders["model"], tmp_path, adapter=folders["two"])
    assert prover.adapters == [folders["one"], None, folders["two"]]
    refs = {"decompose": base, "belief": base, "evidence": two}
    refs["decompose"] = one
    alone = {act: [b.run_batch([(p, PROBE, 0)])[0] for p in PROMPTS] for act, b in refs.items()}
    assert prover.identity == one.identity
    with calling("prover", "belief"):
        assert prover.identity_for(PROBE) == base.identity_for(PROBE)
    with calling("prover", "decompose"):
        assert prover.identity_for(PROBE) == one.identity_for(PROBE)

    async def ask_all() -> dict[str, list[ModelOutput]]:
        async def under(act: str) -> list[ModelOutput]:
            with calling("prover", act):
                return list(await asyncio.gather(*(prover.generate(ask(q), PROBE)
                                                   for q in QUESTIONS)))

        try:
            acts = list(refs)
            got = await asyncio.gather(*(under(a) for a in acts))
            return dict(zip(acts, got, strict=True))
        finally:
            await prover.aclose()

    got = asyncio.run(ask_all())
    for act, ref in alone.items():
        same(got[act], ref)
    assert sum(prover.batch_sizes.values()) >= 3  # one pass per adapter at least


def test_a_batch_holds_one_adapter() -> None:
    b = HFBackend.__new__(HFBackend)
    b.max_batch, b.hold_s = 8, 30.0
    reqs = [_Request("a", PROBE, 0, "x"), _Request("b", PROBE, 0, None),
            _Request("c", PROBE, 0, "x"), _Request("d", GEN, 0, None)]
    assert b._next_batch(reqs, force=True) == [reqs[0], reqs[2]]
    assert b._next_batch([reqs[3], reqs[1]], force=True) == [reqs[1]]  # short calls first
    assert b._next_batch([reqs[3]], force=True) == [reqs[3]]


def test_an_adapter_of_another_form_gets_a_merged_copy(
    folders: dict[str, Path], tmp_path: Path
) -> None:
    odd = adapter(folders["model"], tmp_path / "odd", 3, bias="lora_only")
    import json

    assert plain_lora(json.loads((odd / "adapter_config.json").read_text())) == "bias lora_only"
    b = backend(folders["model"], tmp_path, adapter=odd)
    base = backend(folders["model"], tmp_path)
    b.load()
    base.load()
    assert b.weights is base.weights and b.model is not base.model
    same(replies(b), replies(backend(merged(folders["model"], odd, tmp_path / "m"), tmp_path)))


def test_the_last_backend_released_frees_the_weights(
    folders: dict[str, Path], tmp_path: Path
) -> None:
    gc.collect()
    a = backend(folders["model"], tmp_path, adapter=folders["one"])
    b = backend(folders["model"], tmp_path, adapter=folders["one"])
    a.load()
    b.load()
    held = weakref.ref(a.weights)
    assert held() is b.weights and held().adapters == [a.adapter_id]
    c = backend(folders["model"], tmp_path, adapter=folders["two"])
    c.load()
    assert held().adapters == sorted([a.adapter_id, c.adapter_id])
    del c  # a backend collected lets go of its adapter
    gc.collect()
    assert held().adapters == [a.adapter_id]
    a.release()
    assert a.model is None and held() is not None and held().adapters == [a.adapter_id]
    b.release()
    gc.collect()
    assert held() is None
