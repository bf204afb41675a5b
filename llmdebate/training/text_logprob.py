"""The log-probability of sampled replies under the masked distribution they were drawn from,
with gradient in the active adapter, for every group of an A step in one forward and one
backward pass.

log π(t_k) = z_k[t_k] − log Σ_{v allowed at k} exp z_k[v], z_k the logits at reply position k
and "allowed" the grammar's bitmask recorded when the token was drawn. The output projection
over the 262,144-token vocabulary is the costly part, so :func:`masked_logprobs` works
through the positions in chunks and forms ∂/∂h = (onehot(t) − softmax_allowed(z)) · W itself
(the projection is frozen, so no gradient for W), keeping each chunk's probabilities for the
backward pass up to :data:`KEEP_FLOATS` and computing them again beyond it. A position where
the grammar allowed one token has log-probability 0 and no gradient: it is skipped; one where
it allowed at most :data:`SPARSE` tokens has its logits computed over those alone, from their
rows of the projection. Where the replies carry the hidden states entering the lowest adapted
layer (:attr:`Completion.frozen`, kept by the batched decoder), only the layers from there up
run, over the replies' shared beginning once (:func:`~llmdebate.training.packed_rows.packed_top`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any

from llmdebate.training.bitmasks import allowed_counts, allowed_ids, mask_logits
from llmdebate.training.packed_rows import packed_top
from llmdebate.training.precision import Head, decoder_of
from llmdebate.training.text_sample import Completion

CHUNK_FLOATS = 1 << 24
"""Positions per chunk: at most this many logits (64 positions of a 262,144-token vocabulary,
64 MB in float32)."""
SPARSE = 4096
"""A position whose grammar allowed at most this many tokens has its logits computed over
those tokens only (the softmax's normaliser runs over them alone), as the decoder does."""
KEEP_FLOATS = 1 << 27
"""The other positions' probabilities are kept from the forward pass for the backward one
when they total at most this many floats (512 MB) and the model has no final soft-capping;
otherwise the backward pass computes them again."""


@functools.cache
def _function() -> Any:
    import torch

    class MaskedLogprob(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, h: Any, targets: Any, bits: Any, head: Head) -> Any:
            h0 = h.detach()
            counts = allowed_counts(torch, bits, head.vocab)
            dense = (counts > SPARSE).nonzero()[:, 0]
            sparse = (counts <= SPARSE).nonzero()[:, 0].tolist()
            out = torch.empty(len(h), device=h.device)
            lse = torch.empty(len(dense), device=h.device)
            keep = head.softcap is None and len(dense) * head.vocab <= KEEP_FLOATS
            kept: list[Any] = []
            chunk = max(1, CHUNK_FLOATS // head.vocab)
            for s in range(0, len(dense), chunk):
                at = dense[s : s + chunk]
                z = _masked(torch, head, h0[at], bits[at])[0]
                lse[s : s + chunk] = torch.logsumexp(z, dim=-1)
                out[at] = z.gather(-1, targets[at, None])[:, 0] - lse[s : s + chunk]
                if keep:
                    kept.append(z.sub_(lse[s : s + chunk, None]).exp_())
            ids = [allowed_ids(torch, bits[k], head.vocab) for k in sparse]
            for k, allowed in zip(sparse, ids, strict=True):
                z, _ = _rows(head, h0[k], allowed)
                t = int((allowed == targets[k]).nonzero()[0, 0])
                out[k] = z[t] - torch.logsumexp(z, dim=-1)
            ctx.save_for_backward(h, targets, bits, lse, dense)
            ctx.head, ctx.kept, ctx.sparse, ctx.ids = head, kept if keep else None, sparse, ids
            return out

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            h, targets, bits, lse, dense = ctx.saved_tensors
            head: Head = ctx.head
            w = head.weight
            h0 = h.detach()
            chunk = max(1, CHUNK_FLOATS // head.vocab)
            grad = torch.zeros_like(h)
            for i, s in enumerate(range(0, len(dense), chunk)):
                at = dense[s : s + chunk]
                if ctx.kept is not None:  # the kept probabilities become the gradient
                    p, raw = ctx.kept[i], None
                    ctx.kept[i] = None
                else:
                    z, raw = _masked(torch, head, h0[at], bits[at])
                    p = z.sub_(lse[s : s + chunk, None]).exp_()
                gz = p.mul_(-g[at, None])
                gz.scatter_add_(-1, targets[at, None], g[at, None])
                if raw is not None and head.softcap is not None:
                    gz = gz * (1 - (raw / head.softcap).tanh() ** 2)
                grad[at] = (gz.to(w.dtype) @ w).to(h.dtype)
            for k, allowed in zip(ctx.sparse, ctx.ids, strict=True):
                z, raw = _rows(head, h0[k], allowed)
                gz = -torch.softmax(z, dim=-1) * g[k]
                gz[int((allowed == targets[k]).nonzero()[0, 0])] += g[k]
                if head.softcap is not None:
                    gz = gz * (1 - (raw / head.softcap).tanh() ** 2)
                grad[k] = (gz.to(w.dtype) @ w[allowed]).to(h.dtype)
            return grad, None, None, None

    return MaskedLogprob


def _masked(torch: Any, head: Head, h: Any, bits: Any) -> tuple[Any, Any]:
    """A chunk's logits with the disallowed tokens at −inf, and the raw (uncapped) logits."""
    raw = head.raw(h, decoding=False)
    z = mask_logits(head.cap(raw).contiguous(), bits, head.vocab)  # raw too, uncapped
    return z, raw


def _rows(head: Head, h: Any, allowed: Any) -> tuple[Any, Any]:
    """One position's logits over its ``allowed`` token ids only, and the raw ones."""
    raw = head.raw(h, allowed)
    return head.cap(raw), raw


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

    from llmdebate.models.prefill import left_padded, shared_length

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
        rows = packed_top(torch, inner, top_only, [c.frozen for c in comps],
                          shared_length(seqs), device)
        if rows is not None:  # left-padded as the batch would be
            hidden = torch.stack([torch.nn.functional.pad(h, (0, 0, width - len(h), 0))
                                  for h in rows])
        else:
            x = torch.zeros((len(comps), width, size), dtype=comps[0].frozen.dtype,
                            device=device)
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
    # a position with one allowed token has log π = 0
    keep = (allowed_counts(torch, bitmask, head.vocab) > 1).nonzero()[:, 0]
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
