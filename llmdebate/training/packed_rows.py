"""Rows that begin with the same tokens, through the adapted layers as one packed sequence.

The prompts of a text self-play step begin alike: every decomposition prompt shares its
instructions and examples (374 of about 394 tokens on the shipped templates), every
estimator prompt its first 30 tokens, and the conditional prompts of one split all but their
last lines. The layers below the lowest adapted one are frozen, so their outputs are kept
(:meth:`~llmdebate.training.debate_reward.LeafTrainer.frozen_states`,
:attr:`~llmdebate.training.text_sample.Completion.frozen`), and only the adapted layers run
at each step, with gradient. :func:`packed_top` runs them over the shared beginning once:
one sequence holds the beginning, then every row's own tokens after it, and an attention
mask lets each row's tokens see the beginning and the row's own earlier tokens only, at the
positions they have in the row (rotary positions restart after the beginning for each row;
sliding-window layers see the window measured in those positions). Each row's hidden states
are those of a pass over the row alone, to float rounding; the beginning's frozen states are
taken from the first row (the same tokens at the same positions).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any

MIN_SHARED = 16
"""Rows sharing fewer first tokens run as a padded batch instead."""
PACK_TOKENS = 4096
"""At most this many positions in one packed sequence (its mask is their square); more rows
go to further sequences, each with the beginning again."""


def packed_top(torch: Any, inner: Any, top_only: Callable[[], AbstractContextManager[Any]],
               states: Sequence[Any], shared: int, device: str) -> list[Any] | None:
    """The decoder's output hidden states (final norm applied) at every position of each row,
    its frozen states ``states[r]`` (positions × hidden) run through the adapted layers only
    (``top_only``), the first ``shared`` positions of every row the same tokens; None where
    packing does not apply (fewer than :data:`MIN_SHARED` shared positions, one row, or an
    attention implementation other than ``sdpa`` and ``eager``): the caller runs the rows
    as a padded batch."""
    impl = getattr(inner.config, "_attn_implementation", None) or "sdpa"
    if len(states) < 2 or shared < MIN_SHARED or impl not in ("sdpa", "eager"):
        return None
    out: list[Any] = [None] * len(states)
    for group in _packs([len(s) - shared for s in states], shared):
        pieces = [states[group[0]][:shared]] + [states[r][shared:] for r in group]
        x = torch.cat([p.to(device) for p in pieces])[None]
        seg = torch.cat([torch.full((shared,), -1)]
                        + [torch.full((len(states[r]) - shared,), k) for k, r in enumerate(group)])
        pos = torch.cat([torch.arange(shared)]
                        + [torch.arange(shared, len(states[r])) for r in group])
        mask = _mask(torch, inner.config, seg, pos, impl, x.dtype, device)
        with top_only():
            h = inner(inputs_embeds=x, attention_mask=mask,
                      position_ids=pos[None].to(device)).last_hidden_state[0]
        at = shared
        for r in group:
            n = len(states[r]) - shared
            out[r] = torch.cat([h[:shared], h[at : at + n]])
            at += n
    return out


def _packs(tails: Sequence[int], shared: int) -> list[list[int]]:
    """Consecutive rows in sequences of at most :data:`PACK_TOKENS` positions (a row longer
    than that alone)."""
    out: list[list[int]] = []
    size = 0
    for r, n in enumerate(tails):
        if out and size + n <= PACK_TOKENS:
            out[-1].append(r)
            size += n
        else:
            out.append([r])
            size = shared + n
    return out


def _mask(torch: Any, config: Any, seg: Any, pos: Any, impl: str, dtype: Any,
          device: str) -> Any:
    """The packed sequence's 4-D attention mask (a mapping by layer type where the model has
    sliding-window layers): position i sees j ≤ i of the beginning (segment −1) or of its own
    row, and within the window, measured in positions, on sliding layers."""
    idx = torch.arange(len(seg))
    seen = (idx[None, :] <= idx[:, None]) & ((seg[None, :] == -1) | (seg[None, :] == seg[:, None]))

    def form(m: Any) -> Any:
        m = m[None, None]
        if impl == "eager":
            m = torch.zeros(m.shape, dtype=dtype).masked_fill(~m, torch.finfo(dtype).min)
        return m.to(device)

    types = set(getattr(config, "layer_types", None) or [])
    window = getattr(config, "sliding_window", None)
    if "sliding_attention" not in types or not window:
        return form(seen)
    near = seen & (pos[:, None] - pos[None, :] < int(window))
    return {"full_attention": form(seen), "sliding_attention": form(near)}
