"""The task runs offline: the model ``llmdebate/scripted`` plays every protocol's roles from
Inspect's own model string, and Inspect's mock model counts tokens without tiktoken (which
would download its encoding)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import inspect_ai
import pytest
from inspect_ai.log import read_eval_log
from inspect_ai.model import ChatMessageUser, get_model

from llmdebate.commands.score import score_file
from llmdebate.inspect_ext.task import debate
from llmdebate.models.inspect_backend import InspectBackend
from llmdebate.protocols.registry import PROTOCOLS

REPO = Path(__file__).resolve().parents[1]
DIVISORS = str(REPO / "datasets" / "divisors.jsonl")


@pytest.mark.parametrize("protocol", PROTOCOLS.builtin_names())
def test_the_scripted_model_plays_every_protocol(
    protocol: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "tiktoken"))
    task = debate(protocol=protocol, dataset=DIVISORS, limit=2, depth=2, width=2)
    [log] = inspect_ai.eval(task, model="llmdebate/scripted", log_dir=str(tmp_path),
                            display="none")
    assert log.status == "success", log.error
    [path] = list(tmp_path.glob("*.eval"))
    assert len(read_eval_log(str(path)).samples or []) == 2
    res = score_file(path)
    assert res.ok and res.scored == res.transcripts >= 2, res
    assert not (tmp_path / "tiktoken").exists()


def test_the_mock_model_counts_its_tokens_without_tiktoken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tiktoken

    def no_download(name: str) -> None:
        raise AssertionError(f"tiktoken asked for {name}")

    monkeypatch.setattr(tiktoken, "get_encoding", no_download)
    mock = get_model("mockllm/model", memoize=False)
    InspectBackend("inspect/mockllm/model", "mockllm/model", inspect_model=mock, native=True)
    out = asyncio.run(mock.generate([ChatMessageUser(content="x" * 40)]))
    assert out.usage is not None and out.usage.input_tokens >= 10
    other = get_model("mockllm/model", memoize=False)  # not wrapped: Inspect's own count
    with pytest.raises(AssertionError, match="o200k_base"):
        asyncio.run(other.generate([ChatMessageUser(content="x")]))
