"""The log-probability of sampled replies under the masked distribution they were drawn from,
with gradient in the active adapter, for every group of an A step in one forward and one
backward pass.

log π(t_k) = z_k[t_k] − log Σ_{v allowed at k} exp z_k[v], z_k the logits at reply position k
and "allowed" the grammar's bitmask recorded when the token was drawn. The output projection
over the 262,144-token vocabulary is the costly part, so :func:`masked_logprobs` never keeps
a full-vocabulary tensor per position: it works through the positions in chunks, keeps only
each position's log-normaliser, and in the backward pass recomputes a chunk's logits to form
∂/∂h = (onehot(t) − softmax_allowed(z)) · W (the projection is frozen, so no gradient for W).
A position where the grammar allowed one token has log-probability 0 and no gradient: it is
skipped. Where the replies carry the hidden states entering the lowest adapted layer
(:attr:`Completion.frozen`, kept by the batched decoder), only the layers from there up run.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any

from llmdebate.training.precision import Head, decoder_of
from llmdebate.training.text_sample import Completion, _unpack

CHUNK_FLOATS = 1 << 24
"""Positions per chunk: at most this many logits (64 positions of a 262,144-token vocabulary,
64 MB in float32)."""


def popcount(torch: Any, bits: Any) -> Any:
    """The number of allowed tokens in each row of an int32 bitmask."""
    table = torch.tensor([bin(i).count("1") for i in range(256)], dtype=torch.int32,
                         device=bits.device)
    as_bytes = bits.contiguous().view(torch.uint8).long()
    return table[as_bytes].sum(-1)


@functools.cache
def _function() -> Any:
    import torch

    class MaskedLogprob(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, h: Any, targets: Any, bits: Any, head: Head) -> Any:
            chunk = max(1, CHUNK_FLOATS // head.vocab)
            out, lse = torch.empty(len(h), device=h.device), torch.empty(len(h), device=h.device)
            for s in range(0, len(h), chunk):
                z = _masked(torch, head, h[s : s + chunk], bits[s : s + chunk])[0]
                lse[s : s + chunk] = torch.logsumexp(z, dim=-1)
                out[s : s + chunk] = (z.gather(-1, targets[s : s + chunk, None])[:, 0]
                                      - lse[s : s + chunk])
            ctx.save_for_backward(h, targets, bits, lse)
            ctx.head = head
            return out

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            h, targets, bits, lse = ctx.saved_tensors
            head: Head = ctx.head
            chunk = max(1, CHUNK_FLOATS // head.vocab)
            grad = torch.empty_like(h)
            for s in range(0, len(h), chunk):
                z, raw = _masked(torch, head, h[s : s + chunk], bits[s : s + chunk])
                gz = -(z - lse[s : s + chunk, None]).exp() * g[s : s + chunk, None]
                gz.scatter_add_(-1, targets[s : s + chunk, None], g[s : s + chunk, None])
                if head.softcap is not None:
                    gz = gz * (1 - (raw / head.softcap).tanh() ** 2)
                grad[s : s + chunk] = (gz.to(head.weight.dtype) @ head.weight).to(h.dtype)
            return grad, None, None, None

    return MaskedLogprob


def _masked(torch: Any, head: Head, h: Any, bits: Any) -> tuple[Any, Any]:
    """A chunk's logits with the disallowed tokens at −inf, and the raw (uncapped) logits."""
    raw = (h.to(head.weight.dtype) @ head.weight.T).float()
    z = head.cap(raw).masked_fill(~_unpack(torch, bits, head.vocab), float("-inf"))
    return z, raw


def masked_logprobs(head: Head, h: Any, targets: Any, bits: Any) -> Any:
    """log π(target) of each row of hidden states ``h`` (n × hidden, differentiable) under
    the softmax of its logits over the tokens its int32 bitmask row ``bits`` allows."""
    return _function().apply(h, targets, bits, head)


def group_logprobs(model: Any, tok: Any, head: Head, prompts: Sequence[str],
                   groups: Sequence[Sequence[Completion]], device: str,
                   top_only: Callable[[], AbstractContextManager[Any]] | None = None
                   ) -> list[Any]:
    """Each group's replies' log-probabilities (a tensor per group, differentiable in the
    active adapter), group i replying to ``prompts[i]``; one pass for all groups.
    ``top_only``: a context in which the layers below the lowest adapted one pass their
    input through (then the replies' :attr:`Completion.frozen` states are its input)."""
    import torch

    from llmdebate.models.prefill import left_padded

    comps = [c for g in groups for c in g]
    encoded = [list(tok(p, add_special_tokens=True)["input_ids"]) for p in prompts]
    seqs = [encoded[i] + c.tokens[:-1] for i, g in enumerate(groups) for c in g]
    pad = tok.pad_token_id if tok.pad_token_id is not None else 0
    ids, mask = left_padded(torch, seqs, pad)
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    inner = decoder_of(model)
    kw = {"attention_mask": mask.to(device), "position_ids": positions.to(device)}
    if top_only is not None and all(c.frozen is not None for c in comps):
        width, size = ids.shape[1], comps[0].frozen.shape[-1]
        x = torch.zeros((len(comps), width, size), dtype=comps[0].frozen.dtype, device=device)
        for r, c in enumerate(comps):
            x[r, width - len(c.frozen):] = c.frozen.to(device)
        with top_only():
            hidden = inner(inputs_embeds=x, **kw).last_hidden_state
    else:
        hidden = inner(input_ids=ids.to(device), **kw).last_hidden_state
    width = hidden.shape[1]
    words = (head.vocab + 31) // 32
    rows, cols, targets, bits = [], [], [], []
    for r, c in enumerate(comps):
        every = torch.full((words,), -1, dtype=torch.int32)
        for k, t in enumerate(c.tokens):
            rows.append(r)
            cols.append(width - len(c.tokens) + k)
            targets.append(t)
            bits.append(c.masks[k][:words] if c.masks else every)
    bitmask = torch.stack(bits).to(device)
    keep = (popcount(torch, bitmask) > 1).nonzero()[:, 0]  # one allowed token: log π = 0
    row_t = torch.tensor(rows, device=device)
    total = torch.zeros(len(comps), device=device, dtype=hidden.dtype)
    if len(keep):
        sel = hidden[row_t[keep], torch.tensor(cols, device=device)[keep]]
        lp = masked_logprobs(head, sel, torch.tensor(targets, device=device)[keep],
                             bitmask[keep])
        total = total.index_add(0, row_t[keep], lp)
    out, at = [], 0
    for g in groups:
        out.append(total[at : at + len(g)])
        at += len(g)
    return out
