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

Memory: a pass's activations grow with its rows times their length (about 60 MB per
thousand tokens on Gemma 3 270M), its keys and values by 36 KB a token. The prompts are
therefore run in slices of their columns of at most ``CHUNK_TOKENS`` tokens in all (the keys
and values of the earlier slices in the cache, as when decoding), and a batch of one-token
calls (nothing is decoded after this pass) of more than ``SHORT_TOKENS`` prompt tokens runs in
groups of rows of at most that many tokens, each with a copy of the shared beginning's keys
and values, so that no pass holds the keys and values of all its rows at once: the
estimator's probes of eight debates are 24 rows of 170 tokens.
"""

from __future__ import annotations

import copy
import functools
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

MIN_SHARED = 16
"""Fewer shared tokens than this: one plain pass (the extra pass would cost more)."""
SHORT_TOKENS = 512
"""A pass of one-token calls holds at most this many prompt tokens (beyond the shared
beginning), unless one row alone is longer."""
CHUNK_TOKENS = 512
"""A forward call over the prompts runs at most this many tokens (rows times columns), unless
one column of the rows is more."""


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


def groups(encoded: list[list[int]], shared: int, budget: int) -> list[list[int]]:
    """The row indices of ``encoded`` in consecutive groups of at most ``budget`` tokens
    beyond the first ``shared`` (as padded: rows times the longest), each at least a row."""
    out: list[list[int]] = [[]]
    longest = 0
    for i, e in enumerate(encoded):
        grown = max(longest, len(e) - shared)
        if out[-1] and grown * (len(out[-1]) + 1) > budget:
            out.append([])
            grown = len(e) - shared
        out[-1].append(i)
        longest = grown
    return out


def prefill(
    torch: Any, model: Any, encoded: list[list[int]], pad_id: int, device: str, new_tokens: int
) -> Prefilled:
    """The first forward pass over ``encoded`` (see the module docstring)."""
    shared = shared_length(encoded)
    width = max(len(e) for e in encoded)
    if new_tokens <= 1 and len(encoded) > 1:
        parts = groups(encoded, shared if shared >= MIN_SHARED else 0, SHORT_TOKENS)
        if len(parts) > 1:
            return _in_groups(torch, model, encoded, pad_id, device, new_tokens, parts, shared)
    if shared < MIN_SHARED or not fits_window(model, width, new_tokens):
        ids, mask = left_padded(torch, encoded, pad_id)
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        ids, mask, positions = ids.to(device), mask.to(device), positions.to(device)
        out = in_slices(model, ids, mask, positions, None)
        return Prefilled(out, mask, positions)
    head = _head(torch, model, encoded[0][:shared], device)
    return _after(torch, model, encoded, pad_id, device, head, shared)


def _after(
    torch: Any, model: Any, encoded: list[list[int]], pad_id: int, device: str, cache: Any,
    shared: int,
) -> Prefilled:
    """The pass over each row's own remainder after the shared beginning, whose keys and
    values ``cache`` holds for one row (repeated here for every row)."""
    cache.batch_repeat_interleave(len(encoded))
    ids, tail_mask = left_padded(torch, [e[shared:] for e in encoded], pad_id)
    mask = torch.cat([torch.ones((len(encoded), shared), dtype=torch.long), tail_mask], dim=1)
    positions = (mask.cumsum(-1) - 1).clamp(min=0)[:, shared:]
    ids, mask, positions = ids.to(device), mask.to(device), positions.to(device)
    return Prefilled(in_slices(model, ids, mask, positions, cache), mask, positions)


@functools.cache
def cache_key() -> str:
    """The name under which a transformers model takes its keys and values (a keyword of its
    forward pass) and returns them (an attribute of its output): ``cache`` where the output
    type has that field (transformers 5's newer name), else ``past_key_values``."""
    from transformers.modeling_outputs import CausalLMOutputWithPast

    fields = CausalLMOutputWithPast.__dataclass_fields__
    return "cache" if "cache" in fields else "past_key_values"


def cache_of(out: Any) -> Any:
    """The keys and values a forward pass returned."""
    return getattr(out, cache_key())


def cut_copy(cache: Any, n: int) -> Any:
    """A copy of ``cache`` holding its first ``n`` positions, or None where it cannot be cut
    (a release without layer objects, or a sliding-window layer that has let positions go)."""
    layers = getattr(cache, "layers", None)
    if not layers:
        return None
    for layer in layers:
        keys = getattr(layer, "keys", None)
        if keys is None or keys.numel() == 0:
            continue
        held = getattr(layer, "cumulative_length", keys.shape[-2])
        if keys.shape[-2] != held or held < n:
            return None
    out = copy.copy(cache)
    out.layers = []
    for layer in layers:
        new = copy.copy(layer)
        if getattr(layer, "keys", None) is not None and layer.keys.numel():
            new.keys = layer.keys[..., :n, :].clone()
            new.values = layer.values[..., :n, :].clone()
            if hasattr(layer, "cumulative_length"):
                new.cumulative_length = n
        out.layers.append(new)
    return out


def with_cache(cache: Any) -> dict[str, Any]:
    """The keywords handing a forward pass the keys and values ``cache``."""
    return {cache_key(): cache, "use_cache": True}


def in_slices(model: Any, ids: Any, mask: Any, positions: Any, cache: Any) -> Any:
    """The forward pass over ``ids`` (rows x columns, after the keys and values in ``cache``,
    which ``mask``'s first columns cover) in slices of columns of at most ``CHUNK_TOKENS``
    tokens; the last slice's output (its last column's logits, the whole cache)."""
    rows, width = ids.shape
    before = mask.shape[1] - width
    step = max(1, CHUNK_TOKENS // rows)
    out = None
    for start in range(0, width, step):
        end = min(width, start + step)
        out = model(
            input_ids=ids[:, start:end],
            attention_mask=mask[:, : before + end],
            position_ids=positions[:, start:end],
            logits_to_keep=1,
            **with_cache(cache),
        )
        cache = cache_of(out)
    return out


def _in_groups(
    torch: Any,
    model: Any,
    encoded: list[list[int]],
    pad_id: int,
    device: str,
    new_tokens: int,
    parts: list[list[int]],
    shared: int,
) -> Prefilled:
    """One-token calls, row groups one after another: only their last logits are kept (no
    keys and values: nothing is decoded after them), in the rows' order."""
    head = None
    if shared >= MIN_SHARED and fits_window(model, max(len(e) for e in encoded), new_tokens):
        head = _head(torch, model, encoded[0][:shared], device)
    logits = []
    for rows in parts:
        part = [encoded[i] for i in rows]
        if head is None:
            out = prefill(torch, model, part, pad_id, device, 0).out
        else:
            out = _after(torch, model, part, pad_id, device, copy.deepcopy(head), shared).out
        logits.append(out.logits[:, -1:, :])
        del out
    return Prefilled(SimpleNamespace(logits=torch.cat(logits, dim=0)), None, None)


def _head(torch: Any, model: Any, tokens: list[int], device: str) -> Any:
    """The keys and values of the shared beginning ``tokens`` (one row)."""
    ids = torch.tensor(tokens, dtype=torch.long, device=device)[None, :]
    ones = torch.ones_like(ids)
    positions = torch.arange(len(tokens), device=device)[None, :]
    return cache_of(in_slices(model, ids, ones, positions, None))
