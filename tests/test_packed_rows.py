"""Rows sharing a beginning, through the layers as one packed sequence
(llmdebate/training/packed_rows.py): each row's hidden states and the gradient equal a pass
over the row alone, on a tiny random Gemma 3 (sliding-window and full-attention layers, a
window shorter than the rows) and a tiny Llama, under both attention implementations."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
import torch
import transformers

from llmdebate.training.packed_rows import PACK_TOKENS, packed_top


def _gemma(impl: str) -> Any:
    cfg = transformers.Gemma3TextConfig(
        vocab_size=100, hidden_size=32, intermediate_size=64, num_hidden_layers=4,
        num_attention_heads=2, num_key_value_heads=1, head_dim=16, sliding_window=8,
        layer_types=["sliding_attention", "sliding_attention", "full_attention",
                     "sliding_attention"], max_position_embeddings=128)
    cfg._attn_implementation = impl
    torch.manual_seed(0)
    return transformers.Gemma3ForCausalLM(cfg).model


def _llama(impl: str) -> Any:
    cfg = transformers.LlamaConfig(
        vocab_size=100, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=128)
    cfg._attn_implementation = impl
    torch.manual_seed(0)
    return transformers.LlamaForCausalLM(cfg).model


def _rows(shared: int, tails: list[int]) -> list[Any]:
    gen = torch.Generator().manual_seed(1)
    head = torch.randint(0, 100, (shared,), generator=gen)
    return [torch.cat([head, torch.randint(0, 100, (n,), generator=gen)]) for n in tails]


@pytest.mark.parametrize("make", [_gemma, _llama])
@pytest.mark.parametrize("impl", ["sdpa", "eager"])
def test_packed_rows_equal_each_row_alone(make: Any, impl: str) -> None:
    inner = make(impl)
    rows = _rows(20, [3, 11, 1, 7])  # longer than the window of 8
    states = [inner.embed_tokens(r) for r in rows]
    got = packed_top(torch, inner, contextlib.nullcontext, states, 20, "cpu")
    assert got is not None
    want = [inner(inputs_embeds=s[None]).last_hidden_state[0] for s in states]
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape
        assert torch.allclose(g, w, atol=1e-5), (g - w).abs().max()
    weights = [torch.randn(len(r), 32, generator=torch.Generator().manual_seed(k))
               for k, r in enumerate(rows)]
    params = [p for p in inner.parameters() if p.requires_grad]
    g1 = torch.autograd.grad(sum((g * w).sum() for g, w in zip(got, weights, strict=True)),
                             params, allow_unused=True, retain_graph=True)
    g2 = torch.autograd.grad(sum((g * w).sum() for g, w in zip(want, weights, strict=True)),
                             params, allow_unused=True)
    for a, b in zip(g1, g2, strict=True):
        assert (a is None) == (b is None)
        if a is not None:
            # float rounding of sums over a few hundred terms of size up to 1e3
            assert (a - b).abs().max() <= 1e-5 * b.abs().max() + 1e-6


def test_rows_beyond_one_sequence_go_to_another(monkeypatch: pytest.MonkeyPatch) -> None:
    from llmdebate.training import packed_rows

    monkeypatch.setattr(packed_rows, "PACK_TOKENS", 30)
    inner = _gemma("sdpa")
    rows = _rows(18, [5, 9, 4, 8])
    states = [inner.embed_tokens(r) for r in rows]
    with torch.no_grad():
        got = packed_top(torch, inner, contextlib.nullcontext, states, 18, "cpu")
        want = [inner(inputs_embeds=s[None]).last_hidden_state[0] for s in states]
    assert packed_rows._packs([5, 9, 4, 8], 18) == [[0], [1], [2, 3]]
    assert got is not None
    for g, w in zip(got, want, strict=True):
        assert torch.allclose(g, w, atol=1e-5)
    assert PACK_TOKENS >= 1024


def test_too_little_shared_or_one_row_is_left_to_the_caller() -> None:
    inner = _gemma("sdpa")
    rows = _rows(20, [3, 4])
    states = [inner.embed_tokens(r) for r in rows]
    assert packed_top(torch, inner, contextlib.nullcontext, states, 8, "cpu") is None
    assert packed_top(torch, inner, contextlib.nullcontext, states[:1], 20, "cpu") is None
