"""The local backend after Ctrl-C: closing does not wait for a worker left with nothing but
the requests of callers gone, a batch whose callers are gone sets up no grammar, and the
grammar's tokenizer info is read back from the cache instead of being built again (building
it holds the GIL for seconds with Gemma's vocabulary). A tiny random Llama (built here, no
download)."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from llmdebate.agents.replies import direction_schema
from llmdebate.models.grammar_cache import GrammarCache
from llmdebate.models.hf_backend import HFBackend, _eos_ids
from llmdebate.models.interface import GenerateConfig

try:
    from tests.test_train_grpo import tiny_model
except ImportError:  # pytest run from inside tests/
    from test_train_grpo import tiny_model  # type: ignore[no-redef]

STRUCTURED = GenerateConfig(max_tokens=8, temperature=0.0, json_schema=direction_schema())


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_model(tmp_path_factory.mktemp("tiny") / "model")


def backend(model_dir: Path, tmp_path: Path) -> HFBackend:
    return HFBackend("hf/tiny", model_dir, cache_dir=tmp_path, threads=1)


def test_closing_does_not_wait_for_a_worker_whose_callers_are_gone(
    model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker is inside a step that no check can cut short (held here until released):
    once its caller is gone, closing returns without it, and the worker ends by itself."""
    b = backend(model_dir, tmp_path)
    b.load()
    inside, release = threading.Event(), threading.Event()

    def stuck(*args: Any, **kwargs: Any) -> list[Any]:
        inside.set()
        release.wait()
        return []

    monkeypatch.setattr(b, "run_batch", stuck)

    async def stopped() -> threading.Thread:
        task = asyncio.ensure_future(b.generate([{"role": "user", "content": "7?"}], STRUCTURED))
        assert await asyncio.to_thread(inside.wait, 60)
        assert b._worker is not None
        thread = b._worker.thread
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        try:
            await asyncio.wait_for(b.aclose(), 60)  # without a caller waiting, no wait
        except TimeoutError:
            release.set()
            raise
        assert thread.is_alive()  # still inside the step
        return thread

    try:
        thread = asyncio.run(stopped())
    finally:
        release.set()
    thread.join(60)
    assert not thread.is_alive()


def test_closing_waits_for_a_request_whose_caller_waits(model_dir: Path, tmp_path: Path) -> None:
    """Closed while a caller still waits (another task of the loop): its reply comes first."""
    b = backend(model_dir, tmp_path)

    async def both() -> str:
        call = asyncio.ensure_future(
            b.generate([{"role": "user", "content": "7?"}], GenerateConfig(max_tokens=4))
        )
        await asyncio.sleep(0.2)
        await b.aclose()
        assert call.done()
        return (await call).text

    assert isinstance(asyncio.run(both()), str)


def test_a_batch_whose_callers_are_gone_sets_up_no_grammar(
    model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    b = backend(model_dir, tmp_path)
    b.load()
    asked: list[str] = []

    def matcher(tok: Any, model: Any, eos: set[int], schema_json: str) -> Any:
        asked.append(schema_json)
        return None

    monkeypatch.setattr(b._grammar, "matcher", matcher)
    outs = b.run_batch([("Claim: 7 is prime", STRUCTURED, 0)] * 2, gone=lambda i: True)
    assert asked == [] and [o.tokens_out for o in outs] == [0, 0]
    b.run_batch([("Claim: 7 is prime", STRUCTURED, 0)] * 2, gone=lambda i: i == 1)
    assert len(asked) == 1  # the row whose caller waits


def test_the_tokenizer_info_is_read_back_from_the_cache(
    model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import xgrammar as xgr

    b = backend(model_dir, tmp_path)
    b.load()
    eos = _eos_ids(b.model, b.tokenizer)
    schema = direction_schema().schema_json
    first = GrammarCache(tmp_path / "grammars")
    built = first.matcher(b.tokenizer, b.model, eos, schema)
    assert built is not None
    again = GrammarCache(tmp_path / "grammars")

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("built again")

    monkeypatch.setattr(xgr.TokenizerInfo, "from_huggingface", refuse)
    read = again.matcher(b.tokenizer, b.model, eos, schema)
    assert read is not None
    assert again._info.vocab_size == first._info.vocab_size
    assert again._info.stop_token_ids == first._info.stop_token_ids
    assert again._info.decoded_vocab == first._info.decoded_vocab
    other = GrammarCache(tmp_path / "grammars")  # other stop tokens: built, not read back
    with pytest.raises(AssertionError, match="built again"):
        other.matcher(b.tokenizer, b.model, {*eos, 5}, schema)
