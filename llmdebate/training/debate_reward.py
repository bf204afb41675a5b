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
import json
import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from llmdebate.core import scoring
from llmdebate.core.roles import DebateContext
from llmdebate.core.schemas import Claim, DebateConfig, Evidence
from llmdebate.elicit.prompts import FALSE_VARIANTS, TRUE_VARIANTS
from llmdebate.training.config import LoraSettings
from llmdebate.training.estimate_eval import EstimateCase
from llmdebate.training.sft import save_adapter, torch_threads
from llmdebate.training.update import _need, peft_lora


@dataclass(frozen=True)
class LeafCase:
    """A case the estimator is trained on: its prompt and the leaf judge's verdict on it."""

    claim: str
    prompt: str
    verdict: int


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


def leaf_cases(cases: Sequence[EstimateCase], verdicts: Sequence[int]) -> list[LeafCase]:
    return [LeafCase(c.claim, c.prompt, int(v)) for c, v in zip(cases, verdicts, strict=True)]


def shuffled(cases: Sequence[LeafCase], seed: int) -> list[LeafCase]:
    """The control: the same cases with the judge's verdicts permuted among them."""
    verdicts = [c.verdict for c in cases]
    random.Random(seed).shuffle(verdicts)
    return [LeafCase(c.claim, c.prompt, v) for c, v in zip(cases, verdicts, strict=True)]


def estimator_leaf_payoff(p: Any, verdict: Any) -> Any:
    """B's payoff at the leaf, −r_0, with A's best-response direction s_0 = sign(O − p_0):
    −|O − p_0| in the game's units (r^0 = 1). ``p`` and ``verdict`` may be floats, numpy
    arrays or torch tensors (the direction is then a constant of the gradient)."""
    diff = verdict - p
    direction = diff.sign().detach() if hasattr(diff, "detach") else _sign(diff)
    return -scoring.leaf_reward(1.0, direction, verdict, p)


def _sign(x: Any) -> Any:
    return np.sign(x)


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
            cache = model(input_ids=torch.tensor([list(prefix)], device=device),
                          use_cache=True).past_key_values
        cache.batch_repeat_interleave(len(enc))
        extra.update(past_key_values=cache, use_cache=True)
    out = model(input_ids=x.to(device), attention_mask=mask.to(device),
                position_ids=pos.to(device), logits_to_keep=1, **extra)
    probs = torch.softmax(out.logits[:, -1, :].float(), dim=-1)
    p_true = probs[:, ids[0]].sum(-1)
    p_false = probs[:, ids[1]].sum(-1)
    return p_true / (p_true + p_false).clamp_min(1e-12)


def shared_prefix(tokenizer: Any, prompts: Sequence[str]) -> list[int]:
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


def train_on_leaf_payoff(
    model_dir: Path, cases: Sequence[LeafCase], s: RewardTrainSettings, out: Path, *,
    seed: int, on_log: Callable[[dict[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
    """Train a LoRA adapter (saved in ``out``) by gradient ascent on the mean leaf payoff of
    seeded batches of ``cases``; returns one log entry per step (payoff, mean p, grad norm)."""
    torch, transformers, peft = _need("torch"), _need("transformers"), _need("peft")
    log: list[dict[str, Any]] = []
    with torch_threads(s.threads):
        torch.manual_seed(seed)
        tok = transformers.AutoTokenizer.from_pretrained(str(model_dir))
        base = transformers.AutoModelForCausalLM.from_pretrained(str(model_dir),
                                                                 dtype=torch.float32)
        model = peft.get_peft_model(base, peft_lora(s.lora)).to(s.device)
        model.peft_config["default"].base_model_name_or_path = model_dir.name
        ids = answer_token_ids(tok)
        prefix = shared_prefix(tok, [c.prompt for c in cases]) if s.shared_prefix else []
        params = [p for p in model.parameters() if p.requires_grad]
        opt = torch.optim.AdamW(params, lr=s.learning_rate, weight_decay=0.0)
        rng = random.Random(seed)
        order: list[int] = []
        model.train()
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
            p = answer_probability(model, tok, [c.prompt for c in batch], ids, s.device,
                                   prefix)
            verdict = torch.tensor([float(c.verdict) for c in batch], device=p.device)
            payoff = estimator_leaf_payoff(p, verdict).mean()
            opt.zero_grad()
            (-payoff).backward()
            norm = torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            entry = {"step": step + 1, "payoff": float(payoff.detach()),
                     "mean_p": float(p.detach().mean()),
                     "verdict_share": float(verdict.mean()), "grad_norm": float(norm),
                     "lr": lr, "step_s": round(time.perf_counter() - t0, 2)}
            log.append(entry)
            if on_log is not None:
                on_log(entry)
        save_adapter(model, out)
    return log


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
