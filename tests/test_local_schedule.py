"""The local workers' batching across debates: a row's reply goes back as soon as the row is
done, short calls run at once, and generations wait for the short calls pending at any local
model so that they share one pass; backends on one model folder share its tokenizer and
weights. A tiny random Llama (built here, no download)."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path
from typing import Any

import pytest

from llmdebate.models.hf_backend import HFBackend, _Request, format_prompt
from llmdebate.models.interface import GenerateConfig, ModelOutput
from llmdebate.models.local_schedule import SHORT_WORK, ShortWork, is_short

try:
    from tests.test_train_grpo import tiny_model
except ImportError:  # pytest run from inside tests/
    from test_train_grpo import tiny_model  # type: ignore[no-redef]

GEN = GenerateConfig(max_tokens=6, temperature=0.0, top_logprobs=3)
PROBE = GenerateConfig(max_tokens=1, temperature=0.0, top_logprobs=3)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_model(tmp_path_factory.mktemp("tiny") / "model")


def ask(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


def backend(model_dir: Path, tmp_path: Path, **kw: Any) -> HFBackend:
    return HFBackend("hf/tiny", model_dir, cache_dir=tmp_path, threads=1, **kw)


def test_short_calls_are_one_token_and_are_counted() -> None:
    assert is_short(PROBE) and not is_short(GEN)
    work = ShortWork()
    assert work.idle()
    work.add(2)
    work.add(-1)
    assert not work.idle()
    work.add(-1)
    assert work.idle()


def test_generations_wait_for_pending_short_calls(model_dir: Path, tmp_path: Path) -> None:
    b = backend(model_dir, tmp_path, hold_s=60.0)
    gens = [_Request("a", GEN, 0), _Request("b", GEN, 0)]
    probe = _Request("c", PROBE, 0)
    assert b._next_batch([*gens, probe], force=False) == [probe]  # short calls first
    SHORT_WORK.add(1)  # a short call pending at another local model
    try:
        assert b._next_batch(gens, force=False) == []
        assert b._next_batch(gens, force=True) == gens  # the worker is stopping
        gens[0].queued_at -= 61.0
        assert b._next_batch(gens, force=False) == gens  # held long enough
    finally:
        SHORT_WORK.add(-1)
    assert b._next_batch([_Request("d", GEN, 0)], force=False) != []  # nothing pending: go


def test_a_finished_row_is_answered_before_the_batch_ends(
    model_dir: Path, tmp_path: Path
) -> None:
    b = backend(model_dir, tmp_path)
    done: list[tuple[int, int]] = []
    long = GenerateConfig(max_tokens=8, temperature=0.0, stop=[])
    outs = b.run_batch(
        [("Claim: 7 is prime", long, 0), ("Is it true?", PROBE, 0)],
        on_done=lambda i, out: done.append((i, out.tokens_out)),
    )
    assert done[0] == (1, 1)  # the one-token row first
    assert sorted(i for i, _ in done) == [0, 1]
    assert [o.tokens_out for o in outs] == [done[1][1], 1]


def test_concurrent_calls_share_passes_and_match_single_calls(
    model_dir: Path, tmp_path: Path
) -> None:
    prompts = ["Claim: 91 is prime.", "Claim: 13 is prime, and so is 17.", "Is 2 even?"]
    single = backend(model_dir, tmp_path / "single")
    alone = [
        single.run_batch([(format_prompt(ask(p)), cfg, 0)])[0]
        for p in prompts
        for cfg in (GEN, PROBE)
    ]
    b = backend(model_dir, tmp_path / "shared")

    async def together() -> list[ModelOutput]:
        calls = [b.generate(ask(p), cfg) for p in prompts for cfg in (GEN, PROBE)]
        try:
            return list(await asyncio.gather(*calls))
        finally:
            await b.aclose()

    replies = asyncio.run(together())
    assert SHORT_WORK.idle()
    # one pass of the three probes, then one of the three generations
    assert b.batch_sizes == {3: 2}
    for x, y in zip(alone, replies, strict=True):
        assert x.text == y.text and x.tokens_out == y.tokens_out
        for lx, ly in zip(x.logprobs or [], y.logprobs or [], strict=True):
            assert lx.token == ly.token
            assert abs(lx.logprob - ly.logprob) < 1e-4


def test_backends_on_one_model_folder_share_its_tokenizer_and_weights(
    model_dir: Path, tmp_path: Path
) -> None:
    a, b = backend(model_dir, tmp_path), backend(model_dir, tmp_path, structured="none")
    a.load()
    b.load()
    assert a.tokenizer is b.tokenizer and a.model is b.model and a.weights is b.weights
    other = tiny_model(tmp_path / "other")
    c = backend(other, tmp_path)
    c.load()
    assert c.tokenizer is not a.tokenizer


def test_a_shared_prompt_beginning_is_computed_once_with_the_same_replies(
    model_dir: Path, tmp_path: Path
) -> None:
    from llmdebate.models.prefill import MIN_SHARED, shared_length

    head = "System: Say whether the claim is true. Answer True or False.\n\nUser: "
    prompts = [head + tail for tail in ("91 is prime.", "13 and 17 are prime.", "2 is even")]
    b = backend(model_dir, tmp_path)
    b.load()
    encoded = [b.tokenizer(p)["input_ids"] for p in prompts]
    assert shared_length(encoded) >= MIN_SHARED
    assert shared_length([[1, 2, 3], [1, 2, 3]]) == 2  # each row keeps a token of its own
    assert shared_length([[1, 2, 3]]) == 0
    alone = [b.run_batch([(p, cfg, 0)])[0] for p in prompts for cfg in (GEN, PROBE)]
    together = b.run_batch([(p, cfg, 0) for p in prompts for cfg in (GEN, PROBE)])
    for x, y in zip(alone, together, strict=True):
        assert x.text == y.text and x.tokens_out == y.tokens_out
        for lx, ly in zip(x.logprobs or [], y.logprobs or [], strict=True):
            assert lx.token == ly.token
            assert abs(lx.logprob - ly.logprob) < 1e-4
            assert lx.top.keys() == ly.top.keys()


def test_a_row_whose_caller_is_gone_stops_at_the_next_step(
    model_dir: Path, tmp_path: Path
) -> None:
    """Ctrl-C cancels the calls in flight: their rows stop between steps, and a batch with
    no caller left stops at once (the run answers the interrupt in a step, not a reply)."""
    b = backend(model_dir, tmp_path)
    long = GenerateConfig(max_tokens=40, temperature=0.0, stop=[])
    steps = {"n": 0}

    def gone(i: int) -> bool:
        steps["n"] += i == 0
        return i == 1 or steps["n"] > 3

    outs = b.run_batch([("Claim: 7 is prime", long, 0), ("Is it true?", long, 0)], gone=gone)
    assert outs[1].tokens_out == 0 and 1 <= outs[0].tokens_out <= 3

    async def cancelled() -> None:
        task = asyncio.ensure_future(b.generate(ask("Claim: 7 is prime"), long))
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.wait_for(b.aclose(), 30)

    asyncio.run(cancelled())


def test_structured_budgets_are_counted_in_the_models_own_tokenizer(
    model_dir: Path, tmp_path: Path
) -> None:
    from llmdebate.agents.replies import direction_schema
    from llmdebate.models.reply_budget import MARGIN, SLACK, longest_reply, spellings
    from llmdebate.models.wrapper import Model

    b = backend(model_dir, tmp_path)
    b.load()
    texts = spellings(longest_reply(direction_schema().schema))
    counts = [len(b.tokenizer(t, add_special_tokens=False)["input_ids"]) for t in texts]
    assert [b.count_tokens(t) for t in texts] == counts
    budget = Model(b, use_cache=False).reply_tokens(direction_schema())
    assert budget == max(8, math.ceil(max(counts) * MARGIN) + SLACK)
