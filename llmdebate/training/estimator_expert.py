"""Expert iteration on exactly known truths: the embedded estimator learns the answer word.

The claims are drawn as for the prover (:func:`llmdebate.training.expert.claim_sets`: training
and held-out claims about numbers apart from each other and from the debate dataset); each
gives the cases a debate asks the estimator about (:mod:`llmdebate.training.estimate_eval`),
and each case is paired with the answer word of its exact truth (" True" / " False") under
the very prompt the estimator renders for a ``logprobs`` probability. A LoRA adapter is
trained on the pairs (:mod:`llmdebate.training.sft`: the cross-entropy of the answer word,
whose minimiser is the calibrated probability), and the Brier score of the estimator's
probabilities on the held-out cases is measured before and after, beside the constant base
rate of the same cases.

Output, in the training folder: ``adapter/`` (peft files and ``provenance.json``),
``estimator.jsonl`` (one line per step), ``estimator-eval.json`` (before and after, every
probability), ``learning-curve.png``.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from llmdebate.prompts import Prompts
from llmdebate.training.config import ExpertSettings
from llmdebate.training.estimate_eval import estimate_cases, evaluate_estimates, pairs
from llmdebate.training.expert import (
    claim_sets,
    loss_panel,
    round_claims,
    train_in_rounds,
    write_provenance,
)
from llmdebate.training.sft import step_logger

CASE_SEED = 7919
"""Offset of the seed of the stated outcomes (claims seed + this), apart from the claims'."""


def _backend(model_dir: Path, adapter: Path | None, threads: int | None, device: str) -> Any:
    """The local backend of the weights in ``model_dir`` (the estimator's starting point)."""
    from llmdebate.models.hf_backend import HFBackend

    return HFBackend("local", model_dir, adapter=adapter, threads=threads, device=device)


def _summary(result: dict[str, Any]) -> dict[str, Any]:
    return {k: (round(v, 5) if isinstance(v, float) else v)
            for k, v in result.items() if k != "rows"}


def estimator_iteration(
    s: ExpertSettings, model_dir: Path, out: Path, *, prompts: Prompts, seed: int,
    device: str = "cpu", progress: bool = True,
) -> dict[str, Any]:
    """Train the estimator's adapter on exact truths and score it on held-out claims."""
    t0 = time.perf_counter()
    say = print if progress else (lambda *_a, **_k: None)
    train, held_out = claim_sets(s)
    train_cases = estimate_cases(prompts, train, s.train_seed + CASE_SEED, s.split_points)
    held_cases = estimate_cases(prompts, held_out, s.held_out_seed + CASE_SEED, s.split_points)
    held_loss = held_cases[: 3 * s.held_out_loss_claims]
    out.mkdir(parents=True, exist_ok=True)
    evals: dict[str, Any] = {}
    if s.evaluate_before:
        say(f"estimator: scoring the base model on {len(held_cases)} held-out cases")
        base = _backend(model_dir, None, s.threads, device)
        evals["before"] = evaluate_estimates(base, held_cases)
        say(f"estimator: before: {_summary(evals['before'])}")
    steps = out / "estimator.jsonl"
    on_log = step_logger(steps, "estimator", progress=progress)

    adapter = out / "adapter"
    steps_done, seconds, log = train_in_rounds(
        s, model_dir, out, lambda r: pairs(train_cases if r == 0 else estimate_cases(
            prompts, round_claims(s, r, held_out), s.train_seed + 1000 * r + CASE_SEED,
            s.split_points)),
        pairs(held_loss), seed=seed, device=device, on_log=on_log, say=say, label="estimator")
    if s.evaluate:
        tuned = _backend(model_dir, adapter, s.threads, device)
        evals["after"] = evaluate_estimates(tuned, held_cases)
        say(f"estimator: after: {_summary(evals['after'])}")
    (out / "estimator-eval.json").write_text(json.dumps(evals, indent=1) + "\n",
                                             encoding="utf-8")
    provenance = {
        "what": "LoRA adapter of the embedded Gemma 3 270M estimator for logprobs "
                "probabilities (the answer word of the estimate prompt)",
        "command": " ".join(["llmdebate", *sys.argv[1:]]) if sys.argv else None,
        "expert": "the exact truth of every claim and subclaim (claim_truth), not the "
                  "model's own answers",
        "settings": s.model_dump(mode="json"),
        "seed": seed,
        "rounds": s.rounds,
        "train_claims": len(train) * s.rounds,
        "train_cases": len(train_cases) * s.rounds,
        "held_out_claims": len(held_out),
        "held_out_cases": len(held_cases),
    }
    provenance = write_provenance(
        provenance, adapter, steps=steps_done, seconds=seconds, log=log,
        held_out={k: _summary(v) for k, v in evals.items()}, machine=f", device {device}", t0=t0,
    )
    plot_brier(log, evals, out / "learning-curve.png")
    return provenance


def plot_brier(log: list[dict[str, Any]], evals: dict[str, Any], path: Path) -> None:
    """Training and held-out loss of the answer word per step; held-out Brier before and
    after beside the base rate's."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10, 3.8), width_ratios=[3, 1.3])
    loss_panel(ax, log, "held-out cases", "cross-entropy of the answer word",
               "Estimator: loss on the exact truth")
    names = [k for k in ("before", "after") if k in evals]
    bars = [("base rate", next((evals[k]["brier_base_rate"] for k in names), 0.0), "#bbb")]
    bars += [(k, evals[k]["brier"], "#999" if k == "before" else
              "#2a7" if evals[k]["brier"] < bars[0][1] else "#c33") for k in names]
    bx.bar([b[0] for b in bars], [b[1] for b in bars], color=[b[2] for b in bars])
    for i, (_, v, _) in enumerate(bars):
        bx.text(i, v + 0.005, f"{v:.3f}", ha="center")
    bx.set_ylim(0, max(b[1] for b in bars) * 1.15 or 1.0)
    bx.set_ylabel("Brier score (lower is better)")
    bx.set_title("held-out cases")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
