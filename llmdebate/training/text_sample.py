"""The prover's decompositions sampled from its own adapter under the decomposition schema,
and their log-probabilities under the same constrained distribution, for a policy gradient.

Decoding is the local backend's (:mod:`llmdebate.models.hf_backend`): at every step the
tokens the schema's grammar forbids (xgrammar, through the backend's
:class:`~llmdebate.models.grammar_cache.GrammarCache`) are set to −inf and the next token is
drawn from the softmax of what is left (``temperature`` 1: the model's own distribution
renormalised over the allowed tokens; 0: the most likely allowed token). A reply ends when
the grammar ends (it accepts an end token) or at ``max_tokens``. Each step's token bitmask is
kept, so :func:`sequence_logprobs` recomputes, with gradient, the log-probability of every
sampled token under the masked distribution it was drawn from.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from llmdebate.models.grammar_cache import GrammarCache


@dataclass
class Completion:
    """One sampled reply: its tokens (the grammar's end token included), its text, the
    bitmask of allowed tokens at each step, the log-probability it was drawn with and, from
    the batched decoder, the hidden states entering the lowest adapted layer at every
    position of its prompt and reply but the last (``frozen``; None: not kept)."""

    tokens: list[int]
    text: str
    masks: list[Any]
    logprob: float
    frozen: Any = None


def end_ids(model: Any, tok: Any) -> set[int]:
    """The model's end tokens (as the local backend reads them)."""
    from llmdebate.models.hf_backend import _eos_ids

    return _eos_ids(model, tok)


def _unpack(torch: Any, bitmask: Any, vocab: int) -> Any:
    """A bool row of the allowed tokens from xgrammar's int32 bitmask (bit i of word w:
    token 32·w + i)."""
    shifts = torch.arange(32, dtype=torch.int32, device=bitmask.device)
    bits = (bitmask[..., None] >> shifts) & 1
    return bits.reshape(*bitmask.shape[:-1], -1)[..., :vocab].bool()


class _Rows:
    """The rows being decoded, each under its grammar: its tokens, the bitmask of allowed
    tokens at each step, the log-probability of what it took and whether it has ended."""

    def __init__(self, grammar: GrammarCache, model: Any, tok: Any,
                 schemas: Sequence[str]) -> None:
        self.grammar, self.tok = grammar, tok
        self.eos = end_ids(model, tok)
        self.matchers = [grammar.matcher(tok, model, self.eos, s) for s in schemas]
        if any(m is None for m in self.matchers):
            raise RuntimeError("xgrammar is needed to decode constrained decompositions")
        self.pad = tok.pad_token_id if tok.pad_token_id is not None else 0
        n = len(schemas)
        self.tokens: list[list[int]] = [[] for _ in range(n)]
        self.masks: list[list[Any]] = [[] for _ in range(n)]
        self.logps = [0.0] * n
        self.done = [False] * n

    def step(self, logits: Any, pick: Callable[[Any], int]) -> list[int]:
        """Each row's next token, ``pick`` of its masked logits (rows in order; an ended row
        takes the pad token and no pick), recorded with its mask and log-probability."""
        import torch
        import xgrammar as xgr

        n = len(self.matchers)
        bitmask = xgr.allocate_token_bitmask(n, self.grammar._info.vocab_size)
        for i, m in enumerate(self.matchers):
            if not self.done[i]:
                m.fill_next_token_bitmask(bitmask, i)
        allowed = _unpack(torch, bitmask, logits.shape[-1])
        masked = logits.masked_fill(~allowed, float("-inf"))
        logp = torch.log_softmax(masked, dim=-1)
        step: list[int] = []
        for i in range(n):
            if self.done[i]:
                step.append(self.pad)
                continue
            nxt = pick(masked[i])
            self.tokens[i].append(nxt)
            self.masks[i].append(bitmask[i].clone())
            self.logps[i] += float(logp[i, nxt])
            self.matchers[i].accept_token(nxt)
            self.done[i] = nxt in self.eos or self.matchers[i].is_terminated()
            step.append(nxt)
        return step

    def completions(self) -> list[Completion]:
        return [Completion(t, self.tok.decode([x for x in t if x not in self.eos],
                                              skip_special_tokens=True), m, lp)
                for t, m, lp in zip(self.tokens, self.masks, self.logps, strict=True)]


def sample(model: Any, tok: Any, grammar: GrammarCache, schema_json: str, prompt: str, n: int,
           *, temperature: float, max_tokens: int, generator: Any, device: str
           ) -> list[Completion]:
    """``n`` replies to ``prompt`` from ``model`` (its active adapter) under the grammar of
    ``schema_json``, drawn with ``generator`` (a seeded ``torch.Generator`` on the CPU)."""
    import torch

    from llmdebate.models.prefill import cache_of, with_cache

    rows = _Rows(grammar, model, tok, [schema_json] * n)
    ids = list(tok(prompt, add_special_tokens=True)["input_ids"])

    def pick(row: Any) -> int:
        if temperature > 0:
            probs = torch.softmax(row / temperature, dim=-1)
            return int(torch.multinomial(probs, 1, generator=generator).item())
        return int(row.argmax().item())

    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            out = model(input_ids=torch.tensor([ids] * n, device=device), use_cache=True,
                        logits_to_keep=1)
            for _ in range(max_tokens):
                step = rows.step(out.logits[:, -1, :].float().cpu(), pick)
                if all(rows.done):
                    break
                out = model(input_ids=torch.tensor([[t] for t in step], device=device),
                            **with_cache(cache_of(out)))
    finally:
        model.train(was_training)
    return rows.completions()


def greedy(model: Any, tok: Any, grammar: GrammarCache, schemas: Sequence[str],
           prompts: Sequence[str], *, max_tokens: int, device: str) -> list[Completion]:
    """The most likely allowed reply to each of ``prompts`` (row i under the grammar of
    ``schemas[i]``), all rows decoded together: the local backend's batched pass
    (:func:`llmdebate.models.prefill.prefill`, left padding masked out) and then one token per
    row per step. No draw is made, so the replies are :func:`sample`'s at temperature 0 (to
    float rounding of the padded sums)."""
    import torch

    from llmdebate.models.prefill import cache_of, prefill, with_cache

    rows = _Rows(grammar, model, tok, schemas)
    encoded = [list(tok(p, add_special_tokens=True)["input_ids"]) for p in prompts]
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            first = prefill(torch, model, encoded, rows.pad, device, max_tokens)
            out, mask, positions = first.out, first.mask, first.positions
            for _ in range(max_tokens):
                step = rows.step(out.logits[:, -1, :].float().cpu(),
                                 lambda row: int(row.argmax().item()))
                if all(rows.done):
                    break
                ones = torch.ones((len(step), 1), dtype=torch.long, device=mask.device)
                mask, positions = torch.cat([mask, ones], dim=1), positions[:, -1:] + 1
                out = model(input_ids=torch.tensor(step, device=device)[:, None],
                            attention_mask=mask, position_ids=positions,
                            logits_to_keep=1, **with_cache(cache_of(out)))
    finally:
        model.train(was_training)
    return rows.completions()


def sequence_logprobs(model: Any, tok: Any, prompt: str, completions: Sequence[Completion],
                      device: str) -> Any:
    """The log-probability of each completion's tokens after ``prompt`` under the masked
    distribution it was drawn from (its recorded bitmasks; a completion without masks: the
    model's whole distribution), differentiable in the model's active adapter."""
    import torch

    ids = list(tok(prompt, add_special_tokens=True)["input_ids"])
    longest = max(len(c.tokens) for c in completions)
    pad = tok.pad_token_id if tok.pad_token_id is not None else 0
    rows = [ids + c.tokens + [pad] * (longest - len(c.tokens)) for c in completions]
    mask = [[1] * (len(ids) + len(c.tokens)) + [0] * (longest - len(c.tokens))
            for c in completions]
    out = model(input_ids=torch.tensor(rows, device=device),
                attention_mask=torch.tensor(mask, device=device), logits_to_keep=longest + 1)
    logits = out.logits[:, :-1, :].float()  # position t predicts completion token t
    vocab = logits.shape[-1]
    total = []
    for i, c in enumerate(completions):
        row = logits[i, : len(c.tokens)]
        if c.masks:
            allowed = _unpack(torch, torch.stack(c.masks).to(row.device), vocab)
            row = row.masked_fill(~allowed, float("-inf"))
        lp = torch.log_softmax(row, dim=-1)
        target = torch.tensor(c.tokens, device=row.device)
        total.append(lp.gather(1, target[:, None]).sum())
    return torch.stack(total)
