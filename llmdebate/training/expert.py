"""Expert iteration on exactly graded decompositions: the embedded prover learns to split
interval claims.

The training claims are interval claims about numbers drawn apart from the debate dataset
(:mod:`llmdebate.training.claims`); each is paired with its exact split written by the problem
code (the expert: :func:`llmdebate.data.problems.formal_decomposition`), under the very prompt
the prover renders for the decompose act. A LoRA adapter is trained on the pairs
(:mod:`llmdebate.training.sft`), and the prover's greedy constrained decompositions of
held-out claims are graded before and after (:mod:`llmdebate.training.decompose_eval`).

Output, in the training folder: ``adapter/`` (peft files and ``provenance.json``),
``expert.jsonl`` (one line per step), ``expert-eval.json`` (before and after, every reply),
``learning-curve.png``.
"""

from __future__ import annotations

import json
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from llmdebate.prompts import Prompts
from llmdebate.records.paths import resolve_path
from llmdebate.training.claims import (
    IntervalClaim,
    check_apart,
    dataset_numbers,
    draw_claims,
    exact_reply,
)
from llmdebate.training.config import ExpertSettings
from llmdebate.training.decompose_eval import decompose_prompt, evaluate
from llmdebate.training.sft import Pair, SFTSettings, step_logger, train_adapter


def claim_sets(s: ExpertSettings) -> tuple[list[IntervalClaim], list[IntervalClaim]]:
    """The training claims of round 0 and the held-out claims, checked apart from each other
    and the debates."""
    held_out = draw_claims(s.held_out_numbers_count, s.held_out_seed, s.held_out_numbers,
                           s.widths, debate_like=True, exclude=_debate_numbers(s),
                           law=s.number_law, factors=s.semiprime_factors, splits=s.split_points)
    return round_claims(s, 0, held_out), held_out


def round_claims(s: ExpertSettings, r: int, held_out: list[IntervalClaim]) -> list[IntervalClaim]:
    """Round ``r``'s fresh training claims (seed ``train_seed + 1000 r``), drawn past the
    held-out and debate numbers and checked apart from them."""
    debate = _debate_numbers(s)
    train = draw_claims(s.train_claims, s.train_seed + 1000 * r, s.train_numbers, s.widths,
                        debate_like=s.train_shape == "debate",
                        exclude=debate | {c.n for c in held_out}, law=s.number_law,
                        factors=s.semiprime_factors, splits=s.split_points)
    check_apart(train, held_out, debate)
    return train


def train_in_rounds(
    s: ExpertSettings, model_dir: Path, out: Path, round_pairs: Callable[[int], list[Pair]],
    held_pairs: list[Pair], *, seed: int, device: str,
    on_log: Callable[[dict[str, Any]], None], say: Callable[[str], None], label: str,
) -> tuple[int, float, list[dict[str, Any]]]:
    """``s.rounds`` rounds of LoRA SFT on ``round_pairs(r)``, each going on from the last
    round's adapter (``out/round-<r>``) with a fresh optimizer and schedule (seed ``seed +
    r``); the last round's adapter in ``out/adapter``. Returns the steps, the seconds of
    training and the log of every round."""
    steps_done, seconds, log = 0, 0.0, list[dict[str, Any]]()
    for r in range(s.rounds):
        sft = SFTSettings(
            lora=s.lora, learning_rate=s.learning_rate, batch_size=s.batch_size,
            epochs=s.epochs, warmup_steps=s.warmup_steps, max_steps=s.max_steps,
            eval_every=s.eval_every, threads=s.threads, device=device,
            init_adapter=out / f"round-{r - 1}" if r else None, step_offset=steps_done,
        )
        target = out / "adapter" if r == s.rounds - 1 else out / f"round-{r}"
        res = train_adapter(model_dir, round_pairs(r), held_pairs, sft, target, seed=seed + r,
                            on_log=on_log)
        steps_done, seconds, log = steps_done + res.steps, seconds + res.seconds, log + res.log
        say(f"{label}: round {r}: {res.steps} steps in {res.seconds:.0f} s; adapter in {target}")
    return steps_done, seconds, log


def _debate_numbers(s: ExpertSettings) -> set[int]:
    return dataset_numbers(resolve_path(s.apart_from)) if s.apart_from else set()


def _backend(adapter: Path | None, threads: int | None) -> Any:
    from llmdebate.models.hf_backend import HFBackend

    return HFBackend("local", adapter=adapter, threads=threads)


def _summary(result: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in result.items() if k != "rows"}


def expert_iteration(
    s: ExpertSettings, model_dir: Path, out: Path, *, prompts: Prompts, seed: int,
    device: str = "cpu", progress: bool = True,
) -> dict[str, Any]:
    """Train the prover's adapter on exact splits and grade it on held-out claims."""
    t0 = time.perf_counter()
    say = print if progress else (lambda *_a, **_k: None)
    train, held_out = claim_sets(s)
    pairs = [(decompose_prompt(prompts, c), exact_reply(c)) for c in train]
    held_pairs = [(decompose_prompt(prompts, c), exact_reply(c))
                  for c in held_out[: s.held_out_loss_claims]]
    out.mkdir(parents=True, exist_ok=True)
    evals: dict[str, Any] = {}
    if s.evaluate_before:
        say(f"expert: grading the base model on {len(held_out)} held-out claims")
        evals["before"] = evaluate(_backend(None, s.threads), prompts, held_out)
        say(f"expert: before: {_summary(evals['before'])}")
    steps = out / "expert.jsonl"
    on_log = step_logger(steps, "expert", progress=progress)

    adapter = out / "adapter"
    steps_done, seconds, log = train_in_rounds(
        s, model_dir, out, lambda r: pairs if r == 0 else [
            (decompose_prompt(prompts, c), exact_reply(c)) for c in round_claims(s, r, held_out)
        ], held_pairs, seed=seed, device=device, on_log=on_log, say=say, label="expert")
    if s.evaluate:
        evals["after"] = evaluate(_backend(adapter, s.threads), prompts, held_out)
        say(f"expert: after: {_summary(evals['after'])}")
    (out / "expert-eval.json").write_text(json.dumps(evals, indent=1) + "\n", encoding="utf-8")
    provenance = {
        "what": "LoRA adapter of the embedded Gemma 3 270M prover for the decompose act",
        "command": " ".join(["llmdebate", *sys.argv[1:]]) if sys.argv else None,
        "expert": "exact splits written by the problem code (formal_decomposition), not the "
                  "model's own samples",
        "settings": s.model_dump(mode="json"),
        "seed": seed,
        "train_claims": len(train) * s.rounds,
        "held_out_claims": len(held_out),
        "rounds": s.rounds,
    }
    provenance = write_provenance(
        provenance, adapter, steps=steps_done, seconds=seconds, log=log,
        held_out={k: _summary(v) for k, v in evals.items()}, machine="", t0=t0,
    )
    plot_curve(log, evals, out / "learning-curve.png")
    return provenance


def write_provenance(
    head: dict[str, Any],
    adapter: Path,
    *,
    steps: int,
    seconds: float,
    log: list[dict[str, Any]],
    held_out: dict[str, Any],
    machine: str,
    t0: float,
) -> dict[str, Any]:
    """``head`` and what every adapter's training records after it (its steps, seconds and
    losses, the ``held_out`` figures, the machine with ``machine`` after its cores, the wall
    time since ``t0``), written to ``adapter/provenance.json``."""
    provenance = {
        **head,
        "steps": steps,
        "train_seconds": round(seconds, 1),
        "final_loss": next((e["loss"] for e in reversed(log) if "loss" in e), None),
        "held_out_loss": [e["held_out_loss"] for e in log if "held_out_loss" in e],
        "held_out": held_out,
        "machine": f"{platform.machine()}, {_cpus()} CPU cores{machine}",
        "wall_s": round(time.perf_counter() - t0, 1),
    }
    text = json.dumps(provenance, indent=1) + "\n"
    (adapter / "provenance.json").write_text(text, encoding="utf-8")
    return provenance


def _cpus() -> int:
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 0


def loss_panel(ax: Any, log: list[dict[str, Any]], held_label: str, ylabel: str,
               title: str) -> None:
    """The training batches' loss and the held-out loss per optimizer step, on ``ax``."""
    train = [(e["step"], e["loss"]) for e in log if "loss" in e]
    held = [(e["step"], e["held_out_loss"]) for e in log if "held_out_loss" in e]
    if train:
        ax.plot(*zip(*train, strict=True), lw=1, alpha=0.6, label="training batch")
    if held:
        ax.plot(*zip(*held, strict=True), "o-", label=held_label)
    ax.set_xlabel("optimizer step")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend()


def plot_curve(log: list[dict[str, Any]], evals: dict[str, Any], path: Path) -> None:
    """Training and held-out loss per step; the held-out exact-split share before and after."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10, 3.8), width_ratios=[3, 1])
    loss_panel(ax, log, "held-out claims", "cross-entropy per completion token",
               "Decompose act: loss on the exact split")
    ax.set_yscale("log")
    names = [k for k in ("before", "after") if k in evals]
    shares = [100 * (evals[k]["exact_splits"] or 0) for k in names]
    bx.bar(names, shares, color=[{"before": "#999", "after": "#2a7"}[k] for k in names])
    for i, v in enumerate(shares):
        bx.text(i, v + 1, f"{v:.0f} %", ha="center")
    bx.set_ylim(0, 105)
    bx.set_ylabel("exact interval splits (%)")
    bx.set_title("held-out claims, greedy")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
