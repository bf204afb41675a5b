"""The embedded estimator trained on the debate reward alone, with the leaf judge as its only label.

Each case is a probability the estimator gives in a debate about an interval claim
(:func:`llmdebate.training.estimate_eval.estimate_cases`: the claim, and each subclaim of a
split of it, under the prompt the estimator renders for a ``logprobs`` probability). Nothing
about a case's truth is read except the verdict of the leaf judge
(:class:`llmdebate.judging.model_judges.OracleJudge` by default: the judge of a debate that
stops at that claim). The estimator's probability is the ``logprobs`` method's
p = P(True) / (P(True) + P(False)) at the answer position, computed from the full next-token
distribution so that it is differentiable.

The reward is the estimator's payoff at the leaf, in the game's units:
B's payoff is −r_0 = −s_0 · (O − p_0) (:func:`llmdebate.core.scoring.leaf_reward`), where O
is the judge's verdict and s_0 is the direction A plays against B's probability: A's best
response, s_0 = sign(O − p_0) (the honest prover's direction when it knows the judge's
verdict). So B's payoff is −|O − p_0| and the LoRA adapter ascends its mean over a batch.
With an oracle judge the verdict is certain, and the payoff's maximiser is p_0 = O: the
reward pushes every probability towards the judge's verdict. It is linear in p on each side
of O, not a strictly proper score: on cases the model cannot tell apart it rewards the
majority verdict, not the frequency (which is why the held-out Brier score, not the payoff,
is what is reported, beside the base rate).

The shuffled-judge control trains the same way on the same cases with the judge's verdicts
permuted among them (a seeded shuffle): the same base rate and the same reward, no
information about which case is true.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import math
import random
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from llmdebate.core import scoring
from llmdebate.core.roles import DebateContext
from llmdebate.core.schemas import Claim, DebateConfig, Evidence
from llmdebate.elicit.prompts import FALSE_VARIANTS, TRUE_VARIANTS
from llmdebate.models.prefill import cache_of, cut_copy, shared_length, with_cache
from llmdebate.training.config import LoraSettings
from llmdebate.training.estimate_eval import EstimateCase
from llmdebate.training.packed_rows import packed_top
from llmdebate.training.precision import Precision, base_of, decoder_of, lower_frozen
from llmdebate.training.sft import save_adapter, torch_threads
from llmdebate.training.update import _need, peft_lora


@dataclass(frozen=True)
class LeafCase:
    """A case the estimator is trained on: its prompt, the leaf judge's verdict on it, and the
    prover's own belief q of its claim (None: an omniscient prover, who plays against B's p
    as if it knew the verdict)."""

    claim: str
    prompt: str
    verdict: int
    belief: float | None = None


def judge_verdicts(cases: Sequence[EstimateCase], judge: Any | None = None,
                   meta: dict[str, Any] | None = None) -> list[int]:
    """The leaf judge's verdict on each case's claim (a debate that stops at that claim).

    ``judge``: anything with the judges' ``async verdict(claim, evidence, ctx)``; default the
    oracle judge. ``meta``: the debate item's metadata the judge sees (default: a divisors
    problem). Only the verdict is read, never ``EstimateCase.truth``."""
    from llmdebate.judging.model_judges import OracleJudge

    j = judge if judge is not None else OracleJudge()
    ctx = DebateContext(config=DebateConfig(), rng=np.random.default_rng(0),
                        item={"meta": meta if meta is not None else {"problem": "divisors"}})

    async def one(i: int, c: EstimateCase) -> int:
        v = await j.verdict(Claim(id=f"leaf-{i}", text=c.claim), Evidence(text=""), ctx)
        if v is None:
            raise ValueError(f"the leaf judge gave no verdict on {c.claim!r}")
        return int(v.value)

    async def every() -> list[int]:
        return [await one(i, c) for i, c in enumerate(cases)]

    return asyncio.run(every())


def leaf_cases(cases: Sequence[EstimateCase], verdicts: Sequence[int],
               beliefs: Sequence[float | None] | None = None) -> list[LeafCase]:
    """The cases with the judge's verdicts (and the prover's beliefs, when given)."""
    qs = list(beliefs) if beliefs is not None else [None] * len(cases)
    return [LeafCase(c.claim, c.prompt, int(v), q)
            for c, v, q in zip(cases, verdicts, qs, strict=True)]


def prover_beliefs(claims: Sequence[str], source: Any,
                   item: dict[str, Any] | None = None) -> list[float]:
    """The prover's own belief of each claim from a belief source of
    :mod:`llmdebate.beliefs` (the one a ``prover.beliefs`` section makes)."""
    it = item if item is not None else {"meta": {"problem": "divisors"}}
    return [float(source.belief(c, it)) for c in claims]


def with_beliefs(cases: Sequence[LeafCase], beliefs: Sequence[float | None]) -> list[LeafCase]:
    return [LeafCase(c.claim, c.prompt, c.verdict, q)
            for c, q in zip(cases, beliefs, strict=True)]


def shuffled(cases: Sequence[LeafCase], seed: int) -> list[LeafCase]:
    """The control: the same cases with the judge's verdicts permuted among them."""
    verdicts = [c.verdict for c in cases]
    random.Random(seed).shuffle(verdicts)
    return [LeafCase(c.claim, c.prompt, v, c.belief)
            for c, v in zip(cases, verdicts, strict=True)]


def estimator_leaf_payoff(p: Any, verdict: Any, belief: Any = None,
                          epsilon: float = 0.0) -> Any:
    """B's payoff at the leaf, −r_0 = −s_0 · (O − p_0), in the game's units (r^0 = 1).

    s_0 is the prover's direction: eq. 13 on its own belief q (``belief``), +1 when q − p > ε,
    −1 when q − p < −ε, else 0 (:func:`llmdebate.beliefs.belief_direction`); without a belief,
    an omniscient prover's best response, sign(O − p), so the payoff is −|O − p|. ``p``,
    ``verdict`` and ``belief`` may be floats, numpy arrays or torch tensors (the direction is
    then a constant of the gradient, as A's move is: the gradient in p is s_0 and the verdict
    sets only the payoff's value)."""
    gap = (verdict if belief is None else belief) - p
    if hasattr(gap, "detach"):
        gap = gap.detach()
        direction = (gap > epsilon).to(gap.dtype) - (gap < -epsilon).to(gap.dtype)
    else:
        direction = (np.asarray(gap > epsilon, dtype=float)
                     - np.asarray(gap < -epsilon, dtype=float))
        if np.ndim(direction) == 0:
            direction = float(direction)
    return -scoring.leaf_reward(1.0, direction, verdict, p)


Objective = Literal["payoff", "brier", "log_loss"]
"""What B ascends: its leaf payoff in the game (``payoff``), or, as a ceiling on the same
verdicts, a proper score: −(O − p)² (``brier``) or log p(O) (``log_loss``)."""


def objective_value(objective: Objective, p: Any, verdict: Any, belief: Any = None,
                    epsilon: float = 0.0) -> Any:
    """The per-case value B ascends (torch tensors)."""
    if objective == "payoff":
        return estimator_leaf_payoff(p, verdict, belief, epsilon)
    if objective == "brier":
        return -((verdict - p) ** 2)
    if objective == "log_loss":
        q = p.clamp(1e-6, 1 - 1e-6)
        return verdict * q.log() + (1 - verdict) * (1 - q).log()
    raise ValueError(f"unknown objective {objective!r}")


def answer_token_ids(tokenizer: Any) -> tuple[list[int], list[int]]:
    """The first token of each True and each False answer word, without the tokens both sets
    start with (a character-level tokenizer's leading space)."""

    def firsts(words: Sequence[str]) -> set[int]:
        return {int(tokenizer(w, add_special_tokens=False)["input_ids"][0]) for w in words}

    t, f = firsts(TRUE_VARIANTS), firsts(FALSE_VARIANTS)
    both = t & f
    if not t - both or not f - both:
        raise ValueError("the tokenizer gives no token of its own to True or to False")
    return sorted(t - both), sorted(f - both)


def answer_probability(model: Any, tokenizer: Any, prompts: Sequence[str],
                       ids: tuple[list[int], list[int]], device: str,
                       prefix: Sequence[int] = ()) -> Any:
    """p = P(True) / (P(True) + P(False)) at the next token of each prompt (left-padded
    batch), differentiable through the model.

    ``prefix``: tokens every prompt starts with (the estimate prompt's instructions), whose
    keys and values are computed once, without gradient, as
    :func:`llmdebate.training.sft.batch_loss` does; the prompts' own tokens run on top."""
    torch = _need("torch")
    skip = len(prefix)
    enc = [list(tokenizer(p, add_special_tokens=True)["input_ids"])[skip:] for p in prompts]
    width = max(len(e) for e in enc)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    x = torch.full((len(enc), width), pad, dtype=torch.long)
    mask = torch.zeros((len(enc), skip + width), dtype=torch.long)
    mask[:, :skip] = 1
    pos = torch.full((len(enc), width), skip, dtype=torch.long)
    for i, e in enumerate(enc):
        x[i, width - len(e):] = torch.tensor(e)
        mask[i, skip + width - len(e):] = 1
        pos[i, width - len(e):] = torch.arange(skip, skip + len(e))
    extra: dict[str, Any] = {}
    if skip:
        with torch.no_grad():
            cache = cache_of(model(input_ids=torch.tensor([list(prefix)], device=device),
                                   use_cache=True))
        cache.batch_repeat_interleave(len(enc))
        extra.update(with_cache(cache))
    out = model(input_ids=x.to(device), attention_mask=mask.to(device),
                position_ids=pos.to(device), logits_to_keep=1, **extra)
    probs = torch.softmax(out.logits[:, -1, :].float(), dim=-1)
    p_true = probs[:, ids[0]].sum(-1)
    p_false = probs[:, ids[1]].sum(-1)
    return p_true / (p_true + p_false).clamp_min(1e-12)


def shared_prefix_ids(tokenizer: Any, prompts: Sequence[str]) -> list[int]:
    """The tokens every prompt starts with, less one (each keeps a token of its own)."""
    from llmdebate.training.sft import Encoded, common_prefix

    return common_prefix([Encoded(tokenizer, (p, "")) for p in prompts])


@dataclass(frozen=True)
class RewardTrainSettings:
    """One training run of the estimator on the leaf payoff."""

    steps: int = 60
    batch_size: int = 16
    learning_rate: float = 5e-4
    warmup_steps: int = 5
    threads: int | None = None
    device: str = "cpu"
    shared_prefix: bool = True
    lora: LoraSettings = field(default_factory=LoraSettings)
    objective: Objective = "payoff"
    epsilon: float = 0.0
    """The prover's threshold ε in eq. 13 (0: the sign of q − p)."""
    optimizer: Literal["adamw", "sgd"] = "adamw"
    """adamw; or plain sgd, whose step is proportional to the gradient (a mean push of zero
    moves nothing, where Adam's normalised step still moves by about the learning rate)."""
    frozen_cache: bool = True
    """With adapters only in the top layers: compute the hidden states below them once per
    case (they do not change) and run only the top layers at each step (same result)."""


def train_on_leaf_payoff(
    model_dir: Path, cases: Sequence[LeafCase], s: RewardTrainSettings, out: Path, *,
    seed: int, on_log: Callable[[dict[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
    """Train a LoRA adapter (saved in ``out``) by gradient ascent on the mean leaf payoff of
    seeded batches of ``cases``; returns one log entry per step (payoff, mean p, grad norm)."""
    with torch_threads(s.threads):
        trainer = LeafTrainer(model_dir, s.lora, [c.prompt for c in cases], device=s.device,
                              frozen_cache=s.frozen_cache, shared_prefix=s.shared_prefix)
        log = trainer.train(cases, s, seed=seed, on_log=on_log)
        trainer.save(out)
    return log


class _Reached(Exception):
    """Ends a forward pass at the layer whose input is cached."""


def _pass_layer() -> Any:
    """Stands for a frozen decoder layer whose output is cached: returns its input."""
    torch = _need("torch")

    def forward(self: Any, hidden_states: Any, *args: Any, **kwargs: Any) -> Any:
        return hidden_states

    return type("Pass", (torch.nn.Module,), {"forward": forward})()


def _decoder_layers(model: Any) -> Any:
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    inner = getattr(base, "model", None)
    layers = getattr(inner, "layers", None)
    if layers is None:
        raise ValueError(f"{type(base).__name__}: no decoder layers at .model.layers")
    return layers


class LeafTrainer:
    """The base model with one LoRA adapter, trained (and re-initialised) arm after arm on
    the leaf payoff, and its probabilities on any of the prompts it was built with.

    When the adapter sits only in the top layers (``lora.layers``) and ``frozen_cache``, the
    hidden states entering the lowest adapted layer are computed once per prompt, without
    the adapter (nothing below it changes), and each forward pass runs only the layers from
    there up: the same probabilities as the whole model (to float rounding), at a fraction
    of the cost. Otherwise the whole model runs at each step, the prompts' shared beginning
    once (:func:`answer_probability`)."""

    EXTRA = 1024
    """Prompts beyond those the trainer was built with whose frozen layers' outputs are kept
    (the most recently used; about 0.4 MB each on Gemma 3 270M): the replies' prompts of a
    text self-play step are scored several times within the step."""

    def __init__(self, model_dir: Path, lora: LoraSettings, prompts: Sequence[str], *,
                 device: str = "cpu", frozen_cache: bool = True,
                 shared_prefix: bool = True, cache_file: Path | None = None,
                 precision: Precision = "float32") -> None:
        torch, transformers, peft = _need("torch"), _need("transformers"), _need("peft")
        self.torch = torch
        self.device = device
        self.tok = transformers.AutoTokenizer.from_pretrained(str(model_dir))
        base = transformers.AutoModelForCausalLM.from_pretrained(str(model_dir),
                                                                 dtype=torch.float32)
        self.model = peft.get_peft_model(base, peft_lora(lora)).to(device)
        self.model.peft_config["default"].base_model_name_or_path = model_dir.name
        self.precision = precision
        lower_frozen(self.model, precision)
        self.ids = answer_token_ids(self.tok)
        self.layers = _decoder_layers(self.model)
        self.floor = min(lora.layers) if lora.layers else 0
        self.cache: dict[str, Any] = {}
        self.extra: OrderedDict[str, Any] = OrderedDict()
        self._cache: Any = None
        self._beginning: tuple[list[int], Any, Any] | None = None
        self.prefix = shared_prefix_ids(self.tok, list(prompts)) if shared_prefix else []
        self.frozen = frozen_cache and self.floor > 0
        if self.frozen:
            key = f"{model_dir.resolve()}|{self.floor}|{precision}"
            if cache_file is not None and cache_file.exists():
                saved = torch.load(str(cache_file), weights_only=True, map_location=device)
                if saved.get("key") == key:
                    self.cache.update(saved["cache"])
            missing = [p for p in dict.fromkeys(prompts) if p not in self.cache]
            if missing:
                self._fill_cache(missing)
                if cache_file is not None:
                    torch.save({"key": key, "cache": self.cache}, str(cache_file))

    # -- the frozen layers' outputs ---------------------------------------------------
    def _fill_cache(self, prompts: list[str], batch: int = 16,
                    into: dict[str, Any] | None = None) -> None:
        """The hidden states entering layer ``floor`` for each prompt (the forward pass stops
        there: a hook on that layer takes its input and ends the pass), kept in ``into``
        (default: the cache of the prompts the trainer was built with)."""
        torch = self.torch
        into = self.cache if into is None else into
        was_training = self.model.training
        self.model.eval()
        got: list[Any] = []

        def take(module: Any, args: Any, kwargs: Any) -> None:
            got.append(args[0] if args else kwargs["hidden_states"])
            raise _Reached

        handle = self.layers[self.floor].register_forward_pre_hook(take, with_kwargs=True)
        encoded = {p: list(self.tok(p, add_special_tokens=True)["input_ids"]) for p in prompts}
        try:
            with torch.no_grad():
                for part in _sharing(sorted(prompts, key=encoded.__getitem__), encoded, batch):
                    enc = [encoded[p] for p in part]
                    shared = shared_length(enc)
                    got.clear()
                    if shared >= SHARED_TOKENS:
                        cache, head = self._beginning_of(enc[0][:shared], got)
                        self._fill_shared(part, encoded, into, got, cache, shared, head)
                        continue
                    self._pass(enc, None, None)
                    h = got[0]
                    for j, (p, e) in enumerate(zip(part, enc, strict=True)):
                        into[p] = h[j, h.shape[1] - len(e) :, :].detach().clone()
        finally:
            handle.remove()
            self.model.train(was_training)
            self._cache = None

    def _beginning_of(self, tokens: list[int], got: list[Any]) -> tuple[Any, Any]:
        """The frozen layers' keys and values (one row) and states over ``tokens``: the part
        they share with the beginning kept by the last call (at least ``SHARED_TOKENS``)
        from a copy of its cache cut to it, the rest computed; kept in turn for the next
        call (the conditional prompts of every step begin with the same instructions)."""
        torch = self.torch
        kept, done, cache = self._beginning, 0, None
        if kept is not None:
            done = shared_length([kept[0], tokens])
            cache = cut_copy(kept[1], done) if done >= SHARED_TOKENS else None
        got.clear()
        if cache is None:
            self._pass(tokens, None, None)
            cache, head = self._cache, got[0][0]
        else:
            assert kept is not None
            head = kept[2][:done]
            if done < len(tokens):
                self._pass([tokens[done:]], cache, done)
                head = torch.cat([head, got[0][0]])
        self._beginning = (list(tokens), cache, head)  # _fill_shared copies before it adds
        return cache, head

    def _fill_shared(self, part: list[str], encoded: dict[str, list[int]],
                     into: dict[str, Any], got: list[Any], cache: Any, done: int,
                     head: Any) -> None:
        """The frozen states of ``part``'s prompts, which all begin with the ``done`` tokens
        whose keys and values ``cache`` holds (one row) and whose states are ``head``: the
        tokens a subgroup shares beyond those computed once for it, recursively (a split's
        conditional prompts share a claim's beginning with every other split's, and all but
        their last lines with each other), the rest of each prompt in one batch."""
        torch = self.torch
        rest: list[str] = []
        for sub in _sharing(part, encoded, len(part), start=done):
            more = shared_length([encoded[p] for p in sub]) if len(sub) > 1 else 0
            if more - done >= SHARED_TOKENS:
                c = copy.deepcopy(cache)
                got.clear()
                self._pass([encoded[sub[0]][done:more]], c, done)
                self._fill_shared(sub, encoded, into, got, c, more,
                                  torch.cat([head, got[0][0]]))
            else:
                rest += sub
        if not rest:
            return
        cache = copy.deepcopy(cache)
        cache.batch_repeat_interleave(len(rest))
        got.clear()
        self._pass([encoded[p][done:] for p in rest], cache, done)
        h = got[0]
        for j, p in enumerate(rest):
            tail = h[j, h.shape[1] - (len(encoded[p]) - done) :, :]
            into[p] = torch.cat([head, tail]).detach().clone()

    def _pass(self, rows: Any, cache: Any, shared: int | None) -> None:
        """A forward pass up to layer ``floor`` (the hook ends it): over ``rows`` (a list of
        token lists, left-padded; or one list, alone, its keys and values kept in
        ``self._cache``), after ``shared`` tokens whose keys and values ``cache`` holds."""
        torch = self.torch
        from transformers import DynamicCache

        if shared is None and rows and isinstance(rows[0], int):
            ids = torch.tensor([rows], device=self.device)
            self._cache = DynamicCache(config=self.model.config)
            with contextlib.suppress(_Reached):
                self.model(input_ids=ids, logits_to_keep=1, **with_cache(self._cache))
            return
        x, mask, pos = _left_padded(torch, rows, self.tok)
        if shared is not None:
            mask = torch.cat([torch.ones((len(rows), shared), dtype=mask.dtype), mask], dim=1)
            pos = (mask.cumsum(-1) - 1).clamp(min=0)[:, shared:]
        with contextlib.suppress(_Reached):
            self.model(input_ids=x.to(self.device), attention_mask=mask.to(self.device),
                       position_ids=pos.to(self.device), logits_to_keep=1,
                       **(with_cache(cache) if cache is not None else {"use_cache": False}))

    def frozen_states(self, prompts: Sequence[str]) -> list[Any] | None:
        """The frozen layers' outputs of each prompt, computed for those not yet kept (and
        kept among the :attr:`EXTRA` most recent); None when they are not cached."""
        if not self.frozen:
            return None
        missing = [p for p in dict.fromkeys(prompts) if p not in self.cache and p not in self.extra]
        if missing and self.EXTRA == 0:  # none kept: the whole model for these
            return None
        if missing:
            self._fill_cache(missing, into=self.extra)
        out = []
        for p in prompts:
            if p in self.cache:
                out.append(self.cache[p])
            else:
                self.extra.move_to_end(p)
                out.append(self.extra[p])
        while len(self.extra) > self.EXTRA:
            self.extra.popitem(last=False)
        return out

    @contextlib.contextmanager
    def _skipped(self, which: Iterable[int]) -> Iterator[None]:
        """The decoder layers ``which`` replaced by pass-throughs for the block."""
        saved = {i: self.layers[i] for i in which}
        try:
            for i in saved:
                self.layers[i] = _pass_layer()
            yield
        finally:
            for i, layer in saved.items():
                self.layers[i] = layer

    def top_only(self) -> Any:
        """A context in which the layers below the lowest adapted one pass their input
        through (their outputs are what :meth:`frozen_states` keeps)."""
        return self._skipped(range(self.floor))

    def probabilities(self, prompts: Sequence[str], cached: bool = True) -> Any:
        """p = P(True) / (P(True) + P(False)) of each prompt under the current adapter
        (differentiable: call under ``torch.no_grad()`` to score); ``cached=False``: through
        the whole model even where the frozen layers' outputs are cached."""
        torch = self.torch
        rows = self.frozen_states(prompts) if cached else None
        if rows is None:
            return answer_probability(self.model, self.tok, prompts, self.ids, self.device,
                                      self.prefix)
        ids = [list(self.tok(p, add_special_tokens=True)["input_ids"]) for p in prompts]
        packed = packed_top(torch, decoder_of(self.model), self.top_only, rows,
                            shared_length(ids), self.device)
        if packed is not None:  # the prompts' shared beginning through the top layers once
            return self._answer_odds(torch.stack([h[-1] for h in packed]))
        width = max(r.shape[0] for r in rows)
        dev = rows[0].device
        x = torch.zeros((len(rows), width, rows[0].shape[1]), dtype=rows[0].dtype, device=dev)
        mask = torch.zeros((len(rows), width), dtype=torch.long, device=dev)
        pos = torch.zeros((len(rows), width), dtype=torch.long, device=dev)
        for i, r in enumerate(rows):
            x[i, width - r.shape[0] :] = r
            mask[i, width - r.shape[0] :] = 1
            pos[i, width - r.shape[0] :] = torch.arange(r.shape[0], device=dev)
        with self.top_only():
            out = decoder_of(self.model)(inputs_embeds=x.to(self.device),
                                         attention_mask=mask.to(self.device),
                                         position_ids=pos.to(self.device))
        return self._answer_odds(out.last_hidden_state[:, -1])

    def _answer_odds(self, h: Any) -> Any:
        """P(True) / (P(True) + P(False)) from the last hidden states ``h``: the softmax's
        normaliser cancels, so only the answer words' logits are computed (the output
        projection's rows of those tokens, not its 262,144 rows):
        σ(logsumexp z_True − logsumexp z_False)."""
        torch = self.torch
        base = base_of(self.model)
        ids = [*self.ids[0], *self.ids[1]]
        w = base.get_output_embeddings().weight[torch.tensor(ids, device=h.device)]
        z = h.float() @ w.float().T
        cap = getattr(base.config, "final_logit_softcapping", None)
        if cap:
            z = cap * torch.tanh(z / cap)
        k = len(self.ids[0])
        return torch.sigmoid(torch.logsumexp(z[:, :k], -1) - torch.logsumexp(z[:, k:], -1))

    def score(self, prompts: Sequence[str], batch: int = 16, cached: bool = True) -> list[float]:
        """:meth:`probabilities` without gradient, in batches."""
        self.model.eval()
        out: list[float] = []
        with self.torch.no_grad():
            for i in range(0, len(prompts), batch):
                out += [float(x) for x in self.probabilities(prompts[i : i + batch], cached)]
        return out

    # -- training ---------------------------------------------------------------------
    def reset(self, seed: int) -> None:
        """A fresh adapter: A drawn anew from ``seed``, B zero (the base model's outputs)."""
        self.torch.manual_seed(seed)
        for m in self.model.modules():
            if hasattr(m, "reset_lora_parameters") and "default" in getattr(m, "lora_A", {}):
                m.reset_lora_parameters("default", True)

    def train(self, cases: Sequence[LeafCase], s: RewardTrainSettings, *, seed: int,
              on_log: Callable[[dict[str, Any]], None] | None = None) -> list[dict[str, Any]]:
        """Re-initialise the adapter (``seed``) and ascend the mean of ``s.objective`` over
        seeded batches of ``cases``; one log entry per step."""
        torch = self.torch
        self.reset(seed)
        log: list[dict[str, Any]] = []
        params = [p for p in self.model.parameters() if p.requires_grad]
        opt = (torch.optim.AdamW(params, lr=s.learning_rate, weight_decay=0.0)
               if s.optimizer == "adamw" else torch.optim.SGD(params, lr=s.learning_rate))
        rng = random.Random(seed)
        order: list[int] = []
        self.model.train()
        for step in range(s.steps):
            t0 = time.perf_counter()
            if len(order) < s.batch_size:
                more = list(range(len(cases)))
                rng.shuffle(more)
                order += more
            batch = [cases[i] for i in order[: s.batch_size]]
            del order[: s.batch_size]
            lr = s.learning_rate * min(1.0, (step + 1) / max(1, s.warmup_steps)) * (
                1 - step / s.steps)
            for g in opt.param_groups:
                g["lr"] = lr
            p = self.probabilities([c.prompt for c in batch])
            verdict = torch.tensor([float(c.verdict) for c in batch], device=p.device)
            belief = None
            if s.objective == "payoff" and any(c.belief is not None for c in batch):
                if any(c.belief is None for c in batch):
                    raise ValueError("some cases have the prover's belief and some do not")
                belief = torch.tensor([float(c.belief or 0.0) for c in batch], device=p.device)
            value = objective_value(s.objective, p, verdict, belief, s.epsilon).mean()
            opt.zero_grad()
            (-value).backward()
            norm = torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            payoff = estimator_leaf_payoff(p.detach(), verdict, belief, s.epsilon).mean()
            entry = {"step": step + 1, "payoff": float(payoff), "objective": float(value.detach()),
                     "mean_p": float(p.detach().mean()),
                     "verdict_share": float(verdict.mean()), "grad_norm": float(norm),
                     "lr": lr, "step_s": round(time.perf_counter() - t0, 2)}
            if belief is not None:
                entry["mean_abs_p_q"] = float((p.detach() - belief).abs().mean())
            log.append(entry)
            if on_log is not None:
                on_log(entry)
        self.model.eval()
        return log

    def save(self, out: Path) -> None:
        save_adapter(self.model, out)


SHARED_TOKENS = 16
"""Prompts sharing at least this many first tokens have them computed once when their
frozen layers' outputs are filled (the estimator's conditional prompts on one split share
all but their last lines; every estimator prompt shares its first 30 tokens, about half of a
subclaim's prompt)."""


def _sharing(prompts: list[str], encoded: dict[str, list[int]], batch: int, start: int = 0
             ) -> list[list[str]]:
    """``prompts`` (sorted by their tokens) in consecutive groups of at most ``batch``, a
    group growing while its members share at least :data:`SHARED_TOKENS` first tokens beyond
    the first ``start`` (which they all share)."""
    out: list[list[str]] = []
    for p in prompts:
        if out and len(out[-1]) < batch and shared_length(
                [encoded[q] for q in (out[-1][0], p)]) - start >= SHARED_TOKENS:
            out[-1].append(p)
        else:
            out.append([p])
    return out


def _left_padded(torch: Any, enc: list[list[int]], tok: Any) -> tuple[Any, Any, Any]:
    width = max(len(e) for e in enc)
    pad = tok.pad_token_id if tok.pad_token_id is not None else 0
    x = torch.full((len(enc), width), pad, dtype=torch.long)
    mask = torch.zeros((len(enc), width), dtype=torch.long)
    pos = torch.zeros((len(enc), width), dtype=torch.long)
    for i, e in enumerate(enc):
        x[i, width - len(e) :] = torch.tensor(e)
        mask[i, width - len(e) :] = 1
        pos[i, width - len(e) :] = torch.arange(len(e))
    return x, mask, pos


def cluster_bootstrap(
    rows_a: Sequence[dict[str, Any]], rows_b: Sequence[dict[str, Any]], *,
    key: Callable[[str], Any], draws: int = 2000, seed: int = 0,
) -> dict[str, float]:
    """Brier(a) − Brier(b) on the same cases (rows with ``claim``, ``truth``, ``p``), with a
    95 % bootstrap interval resampling the clusters ``key(claim)`` (a number's cases together).
    Positive: b is better."""
    if [r["claim"] for r in rows_a] != [r["claim"] for r in rows_b]:
        raise ValueError("the two sets of rows are not the same cases")
    clusters: dict[Any, list[float]] = {}
    for ra, rb in zip(rows_a, rows_b, strict=True):
        d = (ra["p"] - ra["truth"]) ** 2 - (rb["p"] - rb["truth"]) ** 2
        clusters.setdefault(key(ra["claim"]), []).append(d)
    groups = list(clusters.values())
    n = sum(len(g) for g in groups)
    rng = random.Random(seed)
    stats = []
    for _ in range(draws):
        pick = [groups[rng.randrange(len(groups))] for _ in groups]
        stats.append(sum(sum(g) for g in pick) / max(1, sum(len(g) for g in pick)))
    stats.sort()
    return {"difference": sum(sum(g) for g in groups) / n,
            "low": stats[int(0.025 * draws)], "high": stats[min(draws - 1, int(0.975 * draws))],
            "clusters": len(groups), "cases": n}


def base_rate_rows(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The constant base rate of ``rows``' own truths, as rows of probabilities."""
    base = sum(r["truth"] for r in rows) / len(rows)
    return [{**r, "p": base} for r in rows]


def number_of(claim: str) -> int:
    """The number an interval claim is about (its bootstrap cluster)."""
    from llmdebate.data.problems import parse_divisor_claim

    parsed = parse_divisor_claim(claim)
    if parsed is None:
        raise ValueError(f"not an interval claim: {claim!r}")
    return int(parsed[0])


def settings_record(s: RewardTrainSettings) -> dict[str, Any]:
    out = asdict(s)
    out["lora"] = s.lora.model_dump(mode="json")
    return dict(json.loads(json.dumps(out)))


def mean(xs: Sequence[float]) -> float:
    return math.fsum(xs) / max(1, len(xs))


def leaf_probabilities(model_dir: Path, adapter: Path | None, cases: Sequence[LeafCase], *,
                       batch_size: int = 8, threads: int | None = None,
                       device: str = "cpu") -> list[float]:
    """The estimator's probability on each case (:func:`answer_probability`, no gradient), by
    the weights in ``model_dir`` with ``adapter`` (a folder of peft files) when given."""
    torch, transformers, peft = _need("torch"), _need("transformers"), _need("peft")
    with torch_threads(threads), torch.no_grad():
        tok = transformers.AutoTokenizer.from_pretrained(str(model_dir))
        model = transformers.AutoModelForCausalLM.from_pretrained(str(model_dir),
                                                                  dtype=torch.float32)
        if adapter is not None:
            model = peft.PeftModel.from_pretrained(model, str(adapter))
        model = model.to(device).eval()
        ids = answer_token_ids(tok)
        out: list[float] = []
        for i in range(0, len(cases), batch_size):
            part = [c.prompt for c in cases[i : i + batch_size]]
            out += [float(x) for x in answer_probability(model, tok, part, ids, device)]
    return out


def mean_leaf_payoff(probs: Sequence[float], cases: Sequence[LeafCase]) -> float:
    """The estimator's mean leaf payoff on ``cases`` with these probabilities."""
    return mean([float(estimator_leaf_payoff(p, float(c.verdict)))
                 for p, c in zip(probs, cases, strict=True)])
