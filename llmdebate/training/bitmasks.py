"""xgrammar's token bitmasks (int32 words; bit i of word w allows token 32·w + i) as the
decoder and the policy gradient read them, without unpacking a whole vocabulary per row:

* :func:`allowed_counts`: how many tokens each row allows (a population count of the words);
* :func:`allowed_ids`: the token ids one row allows, unpacking only its non-zero words;
* :func:`mask_logits`: logits with the tokens a row does not allow at −inf, in place
  (xgrammar's kernel on the logits' device, for whole words).

Each equals the plain reading (``tests/test_bitmasks.py``: against unpacking every bit).
"""

from __future__ import annotations

from typing import Any


def _words(bits: Any, vocab: int) -> Any:
    """The words of ``bits`` (… × words) that cover tokens below ``vocab``, the bits of the
    last one above ``vocab`` cleared."""
    words = bits[..., : -(-vocab // 32)]
    if vocab % 32:
        words = words.clone()
        words[..., -1] &= (1 << (vocab % 32)) - 1
    return words


def allowed_counts(torch: Any, bits: Any, vocab: int) -> Any:
    """The number of tokens below ``vocab`` each row of ``bits`` allows (int32)."""
    v = _words(bits, vocab)
    # a population count of each 32-bit word: bit pairs, nibbles, bytes, then the bytes' sum;
    # every shift is masked after it, so the sign bit's arithmetic shift changes nothing
    v = v - ((v >> 1) & 0x55555555)
    v = (v & 0x33333333) + ((v >> 2) & 0x33333333)
    v = (v + (v >> 4)) & 0x0F0F0F0F
    v = v + (v >> 8)
    v = (v + (v >> 16)) & 0x3F
    return v.sum(-1, dtype=torch.int32)


def allowed_ids(torch: Any, row: Any, vocab: int) -> Any:
    """The token ids (ascending) that one bitmask row allows below ``vocab``."""
    words = _words(row, vocab)
    at = words.nonzero()[:, 0]
    shifts = torch.arange(32, dtype=torch.int32, device=row.device)
    on = ((words[at][:, None] >> shifts) & 1).bool()
    return (at[:, None] * 32 + shifts)[on]


def mask_logits(z: Any, bits: Any, vocab: int) -> Any:
    """``z`` (rows × at least ``vocab`` float32 logits) with every token that the rows of
    ``bits`` do not allow at −inf, in place; returns ``z``. xgrammar's kernel masks the
    whole words (it misreads a last, partial word: xgrammar 0.2.9 masks an allowed token
    there), the few tokens of a partial last word are masked here."""
    import torch
    import xgrammar as xgr

    end = min(vocab, bits.shape[-1] * 32)
    full = end // 32 * 32
    if full:
        view = z if full == z.shape[-1] else z[:, :full]
        xgr.apply_token_bitmask_inplace(view, bits, vocab_size=full)
    if end > full:
        shifts = torch.arange(end - full, dtype=torch.int32, device=bits.device)
        allowed = ((bits[:, full // 32, None] >> shifts) & 1).bool()
        z[:, full:end].masked_fill_(~allowed, float("-inf"))
    if end < z.shape[-1]:
        z[:, end:] = float("-inf")
    return z
