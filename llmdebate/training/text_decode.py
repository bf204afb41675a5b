"""Batched constrained decoding for training: every claim's group of replies in one batch.

:func:`decode` draws ``n`` replies to each of several prompts, each under its schema's grammar
(xgrammar), as :func:`llmdebate.training.text_sample.sample` draws them one prompt at a time,
at the cost of far fewer weight reads:

* the prompts are processed once each, left-padded together (the beginning they share, their
  instructions and examples, once for all), and their keys and values repeated for the ``n``
  rows of their group (``DynamicCache.batch_repeat_interleave``);
* every decoding step runs the decoder once for all rows still open (a row that has ended is
  dropped from the batch and its cache), then the output projection (:class:`Head`, in the
  run's precision): on every row where the grammar allows more than ``SPARSE`` tokens, over
  the whole vocabulary; where it allows fewer, over the allowed tokens only; where it allows
  one, not at all (the token is forced);
* the grammar's bitmasks of all open rows are filled together (xgrammar's batch matcher, on
  every core), applied on the model's device, and every row's token is drawn from
  one seeded call per step (one uniform per row, ``torch.rand`` from ``generator``; the token
  is the inverse of the masked distribution's cumulative sum at it): only token ids go to the
  host;
* the hidden states entering decoder layer ``floor`` (the lowest layer with an adapter) are
  kept for every position, so that the policy gradient
  (:func:`llmdebate.training.text_logprob.group_logprobs`) runs only the layers from there up.

At temperature 0 each reply is the most likely allowed token at every step (the first on a
tie), as the one-row decoder's; no draw decides a token, so the replies equal the one-row
decoder's in float32 (to float rounding of the batched sums). At temperature τ > 0 the token
is drawn from softmax(logits / τ) over the allowed tokens; the draws come in another order
than the one-row decoder's (one uniform per row per step instead of one multinomial call per
row), so a seed gives other replies than it did there, from the same distribution.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from llmdebate.models.grammar_cache import GrammarCache
from llmdebate.training.bitmasks import allowed_counts, allowed_ids, mask_logits
from llmdebate.training.decode_cache import preallocate
from llmdebate.training.frozen_prefix import FrozenPrefix
from llmdebate.training.precision import Head, decoder_of
from llmdebate.training.text_sample import Completion, end_ids

SPARSE = 4096
"""At most this many allowed tokens: the output projection over those tokens only."""
MIN_SHARED = 16
"""Prompts sharing at least this many first tokens have them processed once."""
CHUNK_TOKENS = 1024
"""The prompts' pass runs at most this many tokens (rows times columns) per forward call."""


class _Capture:
    """The hidden states entering one decoder layer, as they pass (a forward pre-hook)."""

    def __init__(self, model: Any, floor: int) -> None:
        self.got: list[Any] = []
        self.handle = None
        if floor > 0:
            layer = decoder_of(model).layers[floor]
            self.handle = layer.register_forward_pre_hook(self._take, with_kwargs=True)

    def _take(self, module: Any, args: Any, kwargs: Any) -> None:
        self.got.append((args[0] if args else kwargs["hidden_states"]).detach())

    def pop(self) -> Any:
        out = self.got[0] if len(self.got) == 1 else None
        if len(self.got) > 1:
            import torch

            out = torch.cat(self.got, dim=1)
        self.got = []
        return out

    def close(self) -> None:
        if self.handle is not None:
            self.handle.remove()


def _prompts_pass(torch: Any, inner: Any, encoded: list[list[int]], pad: int, device: str,
                  cache: Any, capture: _Capture, prefix: FrozenPrefix | None = None,
                  floor: int = 0) -> tuple[Any, Any, Any, list[Any] | None]:
    """The prompts in one batch: their shared beginning (at least ``MIN_SHARED`` tokens) once,
    then the rest of each, left-padded, in slices of columns. The last column's hidden states,
    the attention mask, the positions, and each prompt's captured states (None: no capture).
    With ``prefix`` (and ``floor`` > 0), the frozen layers replay what it kept of the shared
    beginning, and it keeps this one's."""
    from llmdebate.models.prefill import left_padded, shared_length

    shared = shared_length(encoded)
    if shared < MIN_SHARED:
        shared = 0
    head = None
    if shared:
        _shared_pass(torch, inner, encoded[0][:shared], device, cache, prefix, floor)
        head = capture.pop()
        if prefix is not None and head is not None:
            prefix.keep(encoded[0][:shared], cache, head[0], floor)
        cache.batch_repeat_interleave(len(encoded))
    ids, mask = left_padded(torch, [e[shared:] for e in encoded], pad)
    positions = shared + (mask.cumsum(-1) - 1).clamp(min=0)
    ones = torch.ones((len(encoded), shared), dtype=mask.dtype)
    mask = torch.cat([ones, mask], dim=1)
    ids, mask, positions = ids.to(device), mask.to(device), positions.to(device)
    rows, width = ids.shape
    step = max(1, CHUNK_TOKENS // rows)
    last = None
    for start in range(0, width, step):
        end = min(width, start + step)
        out = inner(input_ids=ids[:, start:end], attention_mask=mask[:, : shared + end],
                    position_ids=positions[:, start:end], cache=cache, use_cache=True)
        last = out.last_hidden_state[:, -1]
    tails = capture.pop()
    states = None
    if tails is not None:
        states = [tails[r, tails.shape[1] - (len(e) - shared) :] for r, e in enumerate(encoded)]
        if head is not None:
            states = [torch.cat([head[0], s]) for s in states]
    return last, mask, positions, states


BLOCK = 512
"""A draw's cumulative sums run over blocks of this many tokens, then within one block."""


def _shared_pass(torch: Any, inner: Any, tokens: list[int], device: str, cache: Any,
                 prefix: FrozenPrefix | None, floor: int) -> None:
    """The prompts' shared beginning, one row: the part ``prefix`` kept replayed through the
    frozen layers, the rest computed."""
    done = prefix.match(tokens, floor) if prefix is not None and floor > 0 else 0
    one = torch.tensor([tokens], device=device)
    at = torch.arange(len(tokens), device=device)[None]
    if done:
        assert prefix is not None
        with prefix.replaying(inner.layers, done):
            inner(input_ids=one[:, :done], position_ids=at[:, :done], cache=cache,
                  use_cache=True)
    if done < len(tokens):
        inner(input_ids=one[:, done:], position_ids=at[:, done:], cache=cache, use_cache=True)


class _Draw:
    """Each open row's next token from its logits over its allowed tokens, with one uniform
    per row (``u``); the token's log-probability under the distribution it came from."""

    def __init__(self, torch: Any, temperature: float) -> None:
        self.torch, self.temperature = torch, temperature

    def pick(self, z: Any, u: Any) -> tuple[Any, Any]:
        """Rows of logits ``z`` (−inf where not allowed): the index drawn and its
        log-probability."""
        torch = self.torch
        if self.temperature <= 0:
            idx = z.argmax(-1)
            return idx, z.gather(-1, idx[:, None])[:, 0] - torch.logsumexp(z, dim=-1)
        s = z / self.temperature
        s -= s.amax(-1, keepdim=True)
        e = s.exp()
        idx, total = inverse_cdf(torch, e, u)
        return idx, s.gather(-1, idx[:, None])[:, 0] - total.log()


def inverse_cdf(torch: Any, e: Any, u: Any, block: int = BLOCK) -> tuple[Any, Any]:
    """Per row of non-negative weights ``e`` (rows × n, a positive sum), the first index whose
    cumulative sum exceeds ``u`` (one uniform per row) times the row's sum, and the sums.

    The cumulative sum runs over the sums of blocks of ``block`` entries, then within the block
    the draw falls in: the same index as one cumulative sum over the row, up to the rounding of
    the sums (a draw within rounding of a boundary may fall on its other side), at a fraction
    of the cost over a large vocabulary. A draw on a zero weight, where the rounding of the
    sums leaves one, takes the last positive weight of its block: never a token the weights
    exclude."""
    rows, n = e.shape
    nb = -(-n // block)
    if nb * block != n:
        e = torch.nn.functional.pad(e, (0, nb * block - n))
    blocks = e.view(rows, nb, block)
    cb = blocks.sum(-1).cumsum(-1)
    total = cb[:, -1]
    x = (u.to(cb.dtype) * total)[:, None]
    pos = torch.arange(nb, device=e.device)
    last_block = torch.where(cb > torch.cat([cb.new_zeros((rows, 1)), cb[:, :-1]], 1), pos,
                             0).amax(-1, keepdim=True)
    j = torch.minimum(torch.searchsorted(cb, x, right=True), last_block)
    before = torch.where(j > 0, cb.gather(-1, (j - 1).clamp(min=0)), 0.0)
    inner = blocks.gather(1, j[:, :, None].expand(rows, 1, block))[:, 0]
    k = torch.searchsorted(inner.cumsum(-1) + before, x, right=True).clamp(max=block - 1)
    zero = inner.gather(-1, k) <= 0
    if bool(zero.any()):
        ks = torch.arange(block, device=e.device)
        k = torch.where(zero, torch.where(inner > 0, ks, -1).amax(-1, keepdim=True), k)
    return (j * block + k)[:, 0], total


def decode(model: Any, tok: Any, grammar: GrammarCache, head: Head, prompts: Sequence[str],
           schemas: Sequence[str], n: int, *, temperature: float, max_tokens: int,
           generator: Any, device: str, floor: int = 0,
           prefix: FrozenPrefix | None = None) -> list[list[Completion]]:
    """``n`` replies to each of ``prompts`` (prompt i under the grammar of ``schemas[i]``)
    from ``model``'s active adapter, decoded together (module docstring); with ``floor`` > 0
    each reply keeps the hidden states entering decoder layer ``floor`` at every position of
    its prompt and reply (:attr:`Completion.frozen`) and ``prefix`` (if given) replays and
    keeps the frozen layers' part of the prompts' shared beginning
    (:mod:`llmdebate.training.frozen_prefix`)."""
    import torch

    inner = decoder_of(model)
    eos = end_ids(model, tok)
    pad = tok.pad_token_id if tok.pad_token_id is not None else 0
    matchers = [grammar.matcher(tok, model, eos, schemas[i // n])
                for i in range(len(prompts) * n)]
    if any(m is None for m in matchers):
        raise RuntimeError("xgrammar is needed to decode constrained decompositions")
    encoded = [list(tok(p, add_special_tokens=True)["input_ids"]) for p in prompts]
    draw = _Draw(torch, temperature)
    capture = _Capture(model, floor)
    rows = len(matchers)
    tokens: list[list[int]] = [[] for _ in range(rows)]
    masks: list[list[Any]] = [[] for _ in range(rows)]
    logps = [0.0] * rows
    states: list[list[Any]] = [[] for _ in range(rows)]
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad(), head.decoding():
            from transformers import DynamicCache

            cache = DynamicCache(config=decoder_of(model).config)
            preallocate(cache, max(len(e) for e in encoded) + max_tokens)
            h, mask, positions, prompt_states = _prompts_pass(torch, inner, encoded, pad,
                                                              device, cache, capture, prefix,
                                                              floor)
            cache.batch_repeat_interleave(n)
            h, mask = h.repeat_interleave(n, 0), mask.repeat_interleave(n, 0)
            positions = positions[:, -1:].repeat_interleave(n, 0)
            open_rows = list(range(rows))
            for t_step in range(max_tokens):
                u = (torch.rand(rows, generator=generator).to(device) if temperature > 0
                     else torch.zeros(rows, device=device))
                picked = _step(torch, head, grammar, matchers, open_rows, h, u, draw)
                still = []
                for k, (i, (t, lp, bits)) in enumerate(zip(open_rows, picked, strict=True)):
                    tokens[i].append(t)
                    masks[i].append(bits)
                    logps[i] += lp
                    matchers[i].accept_token(t)
                    if not (t in eos or matchers[i].is_terminated()):
                        still.append(k)
                if not still or t_step == max_tokens - 1:
                    break
                if len(still) < len(open_rows):
                    keep = torch.tensor(still, device=device)
                    cache.batch_select_indices(keep)
                    mask, positions = mask[keep], positions[keep]
                open_rows = [open_rows[k] for k in still]
                ones = torch.ones((len(open_rows), 1), dtype=mask.dtype, device=mask.device)
                mask, positions = torch.cat([mask, ones], dim=1), positions + 1
                step_ids = torch.tensor([[tokens[i][-1]] for i in open_rows], device=device)
                out = inner(input_ids=step_ids, attention_mask=mask, position_ids=positions,
                            cache=cache, use_cache=True)
                h = out.last_hidden_state[:, -1]
                got = capture.pop()
                if got is not None:
                    for k, i in enumerate(open_rows):
                        states[i].append(got[k, -1])
    finally:
        capture.close()
        model.train(was_training)
    return _completions(torch, tok, eos, encoded, n, prompt_states,
                        list(zip(tokens, masks, logps, states, strict=True)))


def _completions(torch: Any, tok: Any, eos: set[int], encoded: list[list[int]], n: int,
                 prompt_states: list[Any] | None,
                 rows: list[tuple[list[int], list[Any], float, list[Any]]]
                 ) -> list[list[Completion]]:
    """Each prompt's group of replies, with their frozen states (the prompt's, then each
    fed token's) where kept."""
    out: list[list[Completion]] = []
    for p in range(len(encoded)):
        group = []
        for tokens, masks, logp, states in rows[p * n : (p + 1) * n]:
            frozen = None
            if prompt_states is not None:
                mine = prompt_states[p]
                frozen = torch.cat([mine, torch.stack(states)]) if states else mine
            text = tok.decode([x for x in tokens if x not in eos], skip_special_tokens=True)
            group.append(Completion(tokens, text, masks, logp, frozen))
        out.append(group)
    return out


@functools.cache
def _filler() -> Any:
    """xgrammar's batch matcher: every open row's bitmask filled in parallel, on as many
    threads as the processor has (``max_threads="auto"``)."""
    import xgrammar as xgr

    return xgr.BatchGrammarMatcher()


def _step(torch: Any, head: Head, grammar: GrammarCache, matchers: Sequence[Any],
          open_rows: Sequence[int], h: Any, u: Any, draw: _Draw
          ) -> list[tuple[int, float, Any]]:
    """The open rows' tokens, log-probabilities and bitmask rows (h: their hidden states in
    the order of ``open_rows``)."""
    import xgrammar as xgr

    bitmask = xgr.allocate_token_bitmask(len(open_rows), grammar._info.vocab_size)
    _filler().batch_fill_next_token_bitmask([matchers[i] for i in open_rows], bitmask)
    counts = allowed_counts(torch, bitmask, head.vocab).tolist()
    on_device = bitmask.to(h.device)
    mine = u[list(open_rows)]
    picks: list[tuple[int, float] | None] = [None] * len(open_rows)
    dense = [k for k, c in enumerate(counts) if c > SPARSE]
    if dense:
        pick = torch.tensor(dense, device=h.device)
        z = mask_logits(head.logits(h[pick]).contiguous(), on_device[pick], head.vocab)
        idx, lp = draw.pick(z, mine[pick])
        for k, t, p in zip(dense, idx.tolist(), lp.tolist(), strict=True):
            picks[k] = (int(t), float(p))
    for k, c in enumerate(counts):
        if c > SPARSE:
            continue
        ids = allowed_ids(torch, on_device[k], head.vocab)
        if c == 1:
            picks[k] = (int(ids[0]), 0.0)
            continue
        z = head.logits(h[k], ids)[None, :]
        idx, lp = draw.pick(z, mine[k : k + 1])
        picks[k] = (int(ids[int(idx[0])]), float(lp[0]))
    return [(p[0], p[1], bitmask[k].clone()) for k, p in enumerate(picks) if p is not None]
