"""The first forward pass of a local batch, with the prompts' common beginning computed once.

The calls of one role share most of their prompt: the role's instructions come first and
only the claim, the decomposition or the stated outcomes at the end differ (the estimator's
2^q - 1 conditional probabilities of a round differ only in their last lines). Most of a
debate's compute on a CPU is this prompt processing, not decoding. :func:`prefill` runs the
tokens that every row of the batch begins with once, copies their keys and values to every
row, and then runs each row's own remainder, left-padded after the shared part (the padding
is masked out and the positions continue the shared part's). The logits equal those of the
whole prompts within float rounding (the sums are taken in another order).

Used when at least ``MIN_SHARED`` tokens are shared and, for a model with sliding-window
attention, the prompts and the reply fit in the window (padding in the middle counts towards
the window's distances).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

MIN_SHARED = 16
"""Fewer shared tokens than this: one plain pass (the extra pass would cost more)."""


@dataclass
class Prefilled:
    """The first pass's output (logits and cache) and the mask and positions of its last
    column, from which decoding goes on."""

    out: Any
    mask: Any
    positions: Any


def shared_length(encoded: list[list[int]]) -> int:
    """The length of the tokens every row begins with, leaving each row one token of its own."""
    if len(encoded) < 2:
        return 0
    first, n = encoded[0], min(len(e) for e in encoded) - 1
    for e in encoded[1:]:
        k = 0
        while k < n and e[k] == first[k]:
            k += 1
        n = k
    return max(n, 0)


def fits_window(model: Any, width: int, new_tokens: int) -> bool:
    window = getattr(model.config, "sliding_window", None)
    return window is None or width + new_tokens <= int(window)


def left_padded(torch: Any, rows: list[list[int]], pad_id: int) -> tuple[Any, Any]:
    """Token ids and attention mask, each row right-aligned."""
    size, width = len(rows), max(len(r) for r in rows)
    ids = torch.full((size, width), pad_id, dtype=torch.long)
    mask = torch.zeros((size, width), dtype=torch.long)
    for i, r in enumerate(rows):
        ids[i, width - len(r) :] = torch.tensor(r, dtype=torch.long)
        mask[i, width - len(r) :] = 1
    return ids, mask


def prefill(
    torch: Any, model: Any, encoded: list[list[int]], pad_id: int, device: str, new_tokens: int
) -> Prefilled:
    """The first forward pass over ``encoded`` (see the module docstring)."""
    shared = shared_length(encoded)
    width = max(len(e) for e in encoded)
    if shared < MIN_SHARED or not fits_window(model, width, new_tokens):
        ids, mask = left_padded(torch, encoded, pad_id)
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        ids, mask, positions = ids.to(device), mask.to(device), positions.to(device)
        out = model(
            input_ids=ids,
            attention_mask=mask,
            position_ids=positions,
            use_cache=True,
            logits_to_keep=1,
        )
        return Prefilled(out, mask, positions)
    head = torch.tensor(encoded[0][:shared], dtype=torch.long, device=device)[None, :]
    first = model(input_ids=head, use_cache=True, logits_to_keep=1)
    cache = first.past_key_values
    cache.batch_repeat_interleave(len(encoded))
    ids, tail_mask = left_padded(torch, [e[shared:] for e in encoded], pad_id)
    mask = torch.cat([torch.ones((len(encoded), shared), dtype=torch.long), tail_mask], dim=1)
    positions = (mask.cumsum(-1) - 1).clamp(min=0)[:, shared:]
    ids, mask, positions = ids.to(device), mask.to(device), positions.to(device)
    out = model(
        input_ids=ids,
        attention_mask=mask,
        position_ids=positions,
        past_key_values=cache,
        use_cache=True,
        logits_to_keep=1,
    )
    return Prefilled(out, mask, positions)
