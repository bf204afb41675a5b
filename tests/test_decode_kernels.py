"""The pieces of a decoding step (llmdebate/training/bitmasks.py, decode_cache.py and the
draw in text_decode.py) against their plain readings: bitmask counts, ids and masking
against unpacking every bit; the two-level inverse CDF against one cumulative sum over the
row; the in-place cache against transformers' ``DynamicCache`` on a tiny Gemma 3 whose
sliding window is shorter than the sequence, through prompt, repeated rows, dropped rows and
decoding steps."""

from __future__ import annotations

from typing import Any

import pytest
import torch
import transformers
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llmdebate.training.bitmasks import allowed_counts, allowed_ids, mask_logits
from llmdebate.training.decode_cache import preallocate
from llmdebate.training.text_decode import inverse_cdf


def _unpacked(bits: torch.Tensor, vocab: int) -> torch.Tensor:
    """Every bit, one at a time: row r allows token t when bit t % 32 of word t // 32 is set."""
    out = torch.zeros(bits.shape[0], vocab, dtype=torch.bool)
    for r in range(bits.shape[0]):
        for t in range(vocab):
            out[r, t] = bool((int(bits[r, t // 32]) >> (t % 32)) & 1)
    return out


@settings(deadline=None, max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.integers(1, 4), vocab=st.integers(1, 130), seed=st.integers(0, 10**6),
       density=st.sampled_from([0.0, 0.02, 0.5, 1.0]))
def test_bitmask_counts_ids_and_masking_equal_unpacking_every_bit(
        rows: int, vocab: int, seed: int, density: float) -> None:
    gen = torch.Generator().manual_seed(seed)
    words = -(-vocab // 32) + 1  # a word beyond the vocabulary, its bits set at random too
    on = torch.rand(rows, words * 32, generator=gen) < density
    bits = (on.view(rows, words, 32).long() << torch.arange(32)).sum(-1)
    bits = torch.where(bits >= 2**31, bits - 2**32, bits).to(torch.int32)
    want = _unpacked(bits, vocab)
    assert allowed_counts(torch, bits, vocab).tolist() == want.sum(-1).tolist()
    for r in range(rows):
        assert allowed_ids(torch, bits[r], vocab).tolist() == want[r].nonzero()[:, 0].tolist()
    z = torch.randn(rows, vocab, generator=gen)
    got = mask_logits(z.clone(), bits, vocab)
    assert torch.equal(got, z.masked_fill(~want, float("-inf")))


@settings(deadline=None, max_examples=80, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(1, 3000), block=st.sampled_from([1, 7, 64, 512]),
       seed=st.integers(0, 10**6), zeros=st.sampled_from([0.0, 0.5, 0.99]))
def test_the_two_level_draw_is_the_one_level_draw(n: int, block: int, seed: int,
                                                  zeros: float) -> None:
    gen = torch.Generator().manual_seed(seed)
    e = torch.rand(4, n, generator=gen, dtype=torch.float64)
    e[torch.rand(4, n, generator=gen) < zeros] = 0.0
    e[:, int(torch.randint(0, n, (1,), generator=gen))] = 0.5  # a positive sum in every row
    u = torch.rand(4, generator=gen, dtype=torch.float64)
    idx, total = inverse_cdf(torch, e, u, block)
    cdf = e.cumsum(-1)
    want = torch.searchsorted(cdf, (u * cdf[:, -1])[:, None], right=True)[:, 0]
    assert torch.allclose(total, cdf[:, -1])
    assert idx.tolist() == want.tolist()  # float64: no sum lands within rounding of a draw
    assert bool((e.gather(-1, idx[:, None]) > 0).all())


def test_a_draw_at_the_sums_end_takes_an_allowed_token() -> None:
    e = torch.tensor([[0.0, 0.25, 0.75, 0.0, 0.0, 0.0]])
    for u in (0.0, 0.2499, 0.25, 0.9999999, 1.0):  # 1.0: the rounding of a sum, at its worst
        idx, _ = inverse_cdf(torch, e, torch.tensor([u]), block=2)
        assert float(e[0, int(idx[0])]) > 0
    assert int(inverse_cdf(torch, e, torch.tensor([1.0]), block=2)[0][0]) == 2


def _gemma() -> Any:
    cfg = transformers.Gemma3TextConfig(
        vocab_size=100, hidden_size=32, intermediate_size=64, num_hidden_layers=4,
        num_attention_heads=2, num_key_value_heads=1, head_dim=16, sliding_window=6,
        layer_types=["sliding_attention", "sliding_attention", "full_attention",
                     "sliding_attention"], max_position_embeddings=128)
    cfg._attn_implementation = "sdpa"
    torch.manual_seed(0)
    return transformers.Gemma3ForCausalLM(cfg).model.eval()


def _play(inner: Any, in_place: bool, capacity: int) -> list[torch.Tensor]:
    """A prompt's shared beginning, its repeat for three rows, their tails, a dropped row and
    decoding steps past the window: the last hidden states at every call."""
    cache = transformers.DynamicCache(config=inner.config)
    if in_place:
        assert preallocate(cache, capacity)
    gen = torch.Generator().manual_seed(5)
    out = []
    with torch.no_grad():
        h = inner(input_ids=torch.randint(0, 100, (1, 4), generator=gen), cache=cache,
                  use_cache=True).last_hidden_state
        out.append(h)
        cache.batch_repeat_interleave(3)
        pos, rows = 4, 3
        for step in range(9):
            if step == 4:
                cache.batch_select_indices(torch.tensor([0, 2]))
                rows = 2
            width = 3 if step == 0 else 1
            ids = torch.randint(0, 100, (rows, width), generator=gen)
            positions = torch.arange(pos, pos + width)[None].expand(rows, -1)
            h = inner(input_ids=ids, position_ids=positions, cache=cache,
                      use_cache=True).last_hidden_state
            out.append(h)
            pos += width
    return out


@pytest.mark.parametrize("capacity", [20, 2])  # room for all, or grown by doubling
def test_the_in_place_cache_gives_the_dynamic_caches_states(capacity: int) -> None:
    inner = _gemma()
    want, got = _play(inner, False, capacity), _play(inner, True, capacity)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert torch.allclose(g, w, atol=1e-6), (g - w).abs().max()


def test_a_cache_of_other_layers_is_left_as_it_is() -> None:
    cache = transformers.DynamicCache()  # no config: layers made as they are needed
    assert not preallocate(cache, 10)
