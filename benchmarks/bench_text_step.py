"""One A step of text self-play with its B steps, for each decoder and precision, side by side
in one process (llmdebate/training/text_decode.py, text_logprob.py, precision.py).

    python benchmarks/bench_text_step.py --threads 1 --steps 2

Each variant loads the embedded model (``--model``) anew (the precision changes its weights),
then plays ``--steps`` A steps of ``--batch`` claims × ``--group`` sampled decompositions, each
with ``--estimator-steps`` B steps, from the same seeds and claims. Per step it records the
seconds of each phase (decoding, the replies' returns, the policy gradient's pass, A's
beliefs and the step, B's steps), the tokens decoded and decoding steps taken. Then, on the
replies the float32 batched decoder drew, every variant's log-probabilities against float32's
(the effect of the precision), and the batched decoder's greedy replies against the one-row
decoder's (the same tokens in float32). Writes ``--out`` (result.json) and prints a table.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_text_self_play import _lora, _split, cases

from llmdebate.models.grammar_cache import GrammarCache
from llmdebate.prompts import Prompts
from llmdebate.training.debate_reward import LeafTrainer
from llmdebate.training.precision import Head
from llmdebate.training.self_play import ESTIMATOR, PROVER, TwoSeats
from llmdebate.training.sft import torch_threads
from llmdebate.training.text_self_play import TextPlaySettings, oracle_verdicts
from llmdebate.training.text_self_play_steps import (
    Decomposer,
    estimator_step,
    prover_step,
)
from llmdebate.training.update import model_dir

VARIANTS = ["one-row/float32", "batched/float32", "batched/bfloat16", "batched/int8"]


class Timed(Decomposer):
    """The decomposer with its decoding and gradient pass timed."""

    spent: dict[str, float]
    replies_kept: list[Any]

    def groups(self, *a: Any, **k: Any) -> Any:
        t = time.perf_counter()
        out = super().groups(*a, **k)
        self.spent["decode"] += time.perf_counter() - t
        self.replies_kept.append(out)
        return out

    def group_logprobs(self, *a: Any, **k: Any) -> Any:
        t = time.perf_counter()
        out = super().group_logprobs(*a, **k)
        self.spent["gradient_forward"] += time.perf_counter() - t
        return out


def _args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--model", default="local")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--table", default="divisors-polarity-width")
    ap.add_argument("--train-numbers", type=int, default=30)
    ap.add_argument("--held-out", type=int, default=4)
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--group", type=int, default=4)
    ap.add_argument("--estimator-steps", type=int, default=2)
    ap.add_argument("--max-tokens", type=int, default=380)
    ap.add_argument("--top-layers", type=int, default=2)
    ap.add_argument("--rank", type=int, default=4)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--grammar-dir", type=Path,
                    default=Path.home() / ".cache" / "llmdebate" / "grammars")
    ap.add_argument("--out", type=Path, default=Path("bench-text-step"))
    a = ap.parse_args()
    for v in a.variants.split(","):
        if v not in VARIANTS:
            ap.error(f"--variants: unknown {v!r}: choose from {', '.join(VARIANTS)}")
    return a


def _variant(a: argparse.Namespace, name: str, weights: Path, train: list[Any],
             result: dict[str, Any]) -> tuple[Any, Any]:
    import torch

    decoder, precision = name.split("/")
    lora = _lora(weights, a)
    t0 = time.perf_counter()
    trainer = LeafTrainer(weights, lora, [c.prompt for c in train], device=a.device,
                          precision=precision)  # type: ignore[arg-type]
    if decoder == "one-row":  # the reference as it was: unseen prompts through every layer
        trainer.EXTRA = 0
    head = Head(trainer.model, precision)  # type: ignore[arg-type]
    d = Timed(TwoSeats(trainer, lora), GrammarCache(a.grammar_dir), a.device, a.max_tokens,
              Prompts(), decoder, head)
    d.replies_kept = []
    load = time.perf_counter() - t0
    s = TextPlaySettings(prover_steps=a.steps, estimator_steps=a.estimator_steps,
                         batch_size=a.batch, group=a.group, max_tokens=a.max_tokens, lora=lora)
    d.seats.reset(PROVER, 0)
    d.seats.reset(ESTIMATOR, 1)
    opt_a = torch.optim.AdamW(d.seats.params(PROVER), lr=s.learning_rate, weight_decay=0.0)
    opt_b = torch.optim.AdamW(d.seats.params(ESTIMATOR), lr=s.learning_rate, weight_decay=0.0)
    gen = torch.Generator().manual_seed(0)
    steps = []
    for k in range(a.steps):
        batch = train[k * a.batch : (k + 1) * a.batch]
        d.spent = {"decode": 0.0, "gradient_forward": 0.0}
        t1 = time.perf_counter()
        stats, plays = prover_step(d, opt_a, batch, s, s.learning_rate, oracle_verdicts, gen)
        t2 = time.perf_counter()
        for _ in range(a.estimator_steps):
            estimator_step(d.seats, opt_b, plays, s, s.learning_rate)
        t3 = time.perf_counter()
        tokens = sum(len(c.tokens) for g in d.replies_kept[-1] for c in g)
        longest = max(len(c.tokens) for g in d.replies_kept[-1] for c in g)
        rest = (t2 - t1) - d.spent["decode"] - d.spent["gradient_forward"]
        steps.append({"a_step_with_b_s": round(t3 - t1, 2), "a_step_s": round(t2 - t1, 2),
                      "decode_s": round(d.spent["decode"], 2),
                      "gradient_forward_s": round(d.spent["gradient_forward"], 2),
                      "returns_beliefs_backward_s": round(rest, 2),
                      "b_steps_s": round(t3 - t2, 2), "tokens": tokens,
                      "decoding_steps": longest, "valid": stats["valid"],
                      "load_1min": round(os.getloadavg()[0], 2)})
        print(f"{name} step {k}: {steps[-1]}", flush=True)
    result["variants"][name] = {"load_s": round(load, 1), "steps": steps,
                                "weight_bytes_per_decoding_step": _bytes_read(d, head)}
    return d, s


def _bytes_read(d: Decomposer, head: Head) -> int:
    """The bytes of weights one decoding step reads: every decoder layer's projections (the
    adapters' included) and the output projection in the precision it is read in."""
    from llmdebate.training.precision import decoder_of

    layers = decoder_of(d.seats.trainer.model).layers
    total = sum(p.numel() * p.element_size() for p in layers.parameters())
    if head.precision == "int8":
        return int(total + head.weight.numel())  # one byte a weight
    return int(total + head.weight.numel() * head.weight.element_size())


def read_bandwidth() -> float:
    """GB/s of one thread summing a 1 GB float32 tensor (the best of 5)."""
    import torch

    x = torch.ones(1 << 28)
    best = float("inf")
    for _ in range(5):
        t = time.perf_counter()
        float(x.sum())
        best = min(best, time.perf_counter() - t)
    return round(x.numel() * 4 / best / 1e9, 2)


def _compare(ref: Any, others: dict[str, Any], batch: list[Any], result: dict[str, Any]
             ) -> None:
    """Every variant's log-probabilities of float32's first sampled replies, and the greedy
    replies of both decoders in float32."""
    import torch

    replies = ref.replies_kept[0]
    for d in [ref, *others.values()]:  # every A adapter as drawn at the start (seed 0)
        d.seats.reset(PROVER, 0)
    with torch.no_grad():
        base = [x.tolist() for x in ref.group_logprobs(batch, replies)]
        for name, d in others.items():
            got = [x.tolist() for x in d.group_logprobs(batch, _plain(replies))]
            diff = max(abs(u - v) for gb, gg in zip(base, got, strict=True)
                       for u, v in zip(gb, gg, strict=True))
            tokens = sum(len(c.tokens) for g in replies for c in g)
            result["logprob_vs_float32"][name] = {
                "max_abs_diff_per_reply": diff, "tokens": tokens,
                "reply_logprob_range": [min(min(g) for g in base), max(max(g) for g in base)]}


def _plain(groups: Any) -> Any:
    """The replies without their frozen states (another precision's layers differ)."""
    from dataclasses import replace

    return [[replace(c, frozen=None) for c in g] for g in groups]


def main() -> None:
    a = _args()
    a.out.mkdir(parents=True, exist_ok=True)
    prompts = Prompts()
    train_claims, _ = _split(a)
    train = cases(train_claims, prompts, None)
    weights = model_dir(a.model)
    result: dict[str, Any] = {"args": {k: str(v) for k, v in vars(a).items()}, "variants": {},
                              "logprob_vs_float32": {}, "cpu": _cpu()}
    kept: dict[str, Any] = {}
    with torch_threads(a.threads if a.device == "cpu" else None):
        result["read_bandwidth_gb_s"] = read_bandwidth()
        for name in a.variants.split(","):
            d, _ = _variant(a, name, weights, train, result)
            kept[name] = d
            (a.out / "result.json").write_text(json.dumps(result, indent=1) + "\n")
        if "batched/float32" in kept:
            ref = kept["batched/float32"]
            batch = train[: a.batch]
            _compare(ref, {k: v for k, v in kept.items() if k != "batched/float32"}, batch,
                     result)
            if "one-row/float32" in kept:
                one, bat = kept["one-row/float32"].greedy(batch), ref.greedy(batch)
                result["greedy_same_tokens"] = [x.tokens == y.tokens
                                                for x, y in zip(one, bat, strict=True)]
    (a.out / "result.json").write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "args"}, indent=1))


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


if __name__ == "__main__":
    main()
