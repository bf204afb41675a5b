"""The embedded estimator trained on the debate reward alone: held-out Brier before and after.

    nice -n 10 python benchmarks/bench_estimator_debate_reward.py            # full size
    python benchmarks/bench_estimator_debate_reward.py --model hf/<folder> --steps 4 ...

Starting point: the base model (``--model local``: Gemma 3 270M as the local backend runs
it), not the shipped adapter, which was trained on exact truths. The training cases are those
of the estimator's expert iteration (numbers drawn by the dataset's law, apart from the
held-out and the debate numbers; the claim and the parts of a random split of it), labelled
by nothing but the leaf judge (the oracle judge's verdict on each claim), and trained on the
estimator's leaf payoff in game units (:mod:`llmdebate.training.debate_reward`). The same
training with the judge's verdicts shuffled among the cases is the control. The held-out
cases are those of ``configs/train-estimator.yaml`` (50 numbers, seed 2), scored by the
``logprobs`` method through the local backend, beside the constant base rate; differences
come with a 95 % bootstrap interval over the held-out numbers.

Writes ``--out`` (default a temporary folder): ``result.json`` (every figure and setting),
``<arm>.jsonl`` (one line per step), the two adapters; prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from llmdebate.prompts import Prompts
from llmdebate.training.config import ExpertSettings, LoraSettings
from llmdebate.training.debate_reward import (
    RewardTrainSettings,
    base_rate_rows,
    cluster_bootstrap,
    judge_verdicts,
    leaf_cases,
    mean,
    number_of,
    settings_record,
    shuffled,
    train_on_leaf_payoff,
)
from llmdebate.training.estimate_eval import estimate_cases, evaluate_estimates
from llmdebate.training.estimator_expert import CASE_SEED
from llmdebate.training.expert import claim_sets
from llmdebate.training.update import model_dir

PROJECTIONS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def _args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="local", help="local, or hf/<model folder>")
    ap.add_argument("--train-numbers", type=int, default=120)
    ap.add_argument("--held-out-numbers", type=int, default=50)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--learning-rate", type=float, default=3e-4)
    ap.add_argument("--top-layers", type=int, default=6,
                    help="adapters in this many top decoder layers (0: every layer)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=None)
    return ap.parse_args()


def _top_layers(weights: Path, n: int) -> list[int] | None:
    if n <= 0:
        return None
    cfg = json.loads((weights / "config.json").read_text())
    layers = int(cfg.get("num_hidden_layers") or cfg["text_config"]["num_hidden_layers"])
    return list(range(max(0, layers - n), layers))


def _evaluate(weights: Path, adapter: Path | None, cases: Any, threads: int) -> dict[str, Any]:
    from llmdebate.models.hf_backend import HFBackend

    t0 = time.perf_counter()
    got = evaluate_estimates(HFBackend("local", weights, adapter=adapter, threads=threads),
                             cases)
    got["seconds"] = round(time.perf_counter() - t0, 1)
    return got


def _row(name: str, ev: dict[str, Any]) -> str:
    return (f"| {name} | {ev['brier']:.4f} | {ev['log_loss']:.3f} | {ev['accuracy']:.3f} | "
            f"{ev['mean_probability']:.3f} |")


def main() -> None:
    a = _args()
    t0 = time.perf_counter()
    out = a.out or Path(tempfile.mkdtemp(prefix="bench-debate-reward-"))
    out.mkdir(parents=True, exist_ok=True)
    weights = model_dir(a.model)
    s = ExpertSettings(number_law="dataset", train_claims=a.train_numbers, train_seed=1,
                       train_numbers=(100, 3000), train_shape="debate", split_points="random",
                       held_out_numbers_count=a.held_out_numbers, held_out_seed=2)
    train, held = claim_sets(s)
    prompts = Prompts()
    train_cases = estimate_cases(prompts, train, s.train_seed + CASE_SEED, s.split_points)
    held_cases = estimate_cases(prompts, held, s.held_out_seed + CASE_SEED, s.split_points)
    judged = leaf_cases(train_cases, judge_verdicts(train_cases))
    control = shuffled(judged, a.seed + 1)
    rs = RewardTrainSettings(steps=a.steps, batch_size=a.batch_size,
                             learning_rate=a.learning_rate, threads=a.threads,
                             lora=LoraSettings(r=8, alpha=16, target_modules=PROJECTIONS,
                                               layers=_top_layers(weights, a.top_layers)))
    evals: dict[str, Any] = {"base model": _evaluate(weights, None, held_cases, a.threads)}
    logs: dict[str, list[dict[str, Any]]] = {}
    for arm, cases in (("leaf judge", judged), ("shuffled judge", control)):
        name = arm.replace(" ", "-")
        path = out / f"{name}.jsonl"
        path.unlink(missing_ok=True)

        def on_log(e: dict[str, Any], path: Path = path, arm: str = arm) -> None:
            with path.open("a", encoding="utf-8") as f:
                f.write(json.dumps(e) + "\n")
            print(f"{arm}: step {e['step']} payoff {e['payoff']:.4f} mean p "
                  f"{e['mean_p']:.3f} ({e['step_s']} s)", flush=True)

        logs[arm] = train_on_leaf_payoff(weights, cases, rs, out / f"adapter-{name}",
                                         seed=a.seed, on_log=on_log)
        evals[arm] = _evaluate(weights, out / f"adapter-{name}", held_cases, a.threads)
    rows = {k: v["rows"] for k, v in evals.items()}
    base_rate = base_rate_rows(rows["base model"])
    margins = {
        "base rate - leaf judge": cluster_bootstrap(base_rate, rows["leaf judge"], key=number_of),
        "base model - leaf judge": cluster_bootstrap(rows["base model"], rows["leaf judge"],
                                                     key=number_of),
        "base model - shuffled judge": cluster_bootstrap(rows["base model"],
                                                         rows["shuffled judge"], key=number_of),
        "shuffled judge - leaf judge": cluster_bootstrap(rows["shuffled judge"],
                                                         rows["leaf judge"], key=number_of),
    }
    result = {
        "model": a.model, "start": "base model (no adapter)",
        "train_cases": len(judged), "train_true_share": mean([c.verdict for c in judged]),
        "held_out_cases": len(held_cases), "seed": a.seed,
        "settings": settings_record(rs),
        "held_out": {k: {x: y for x, y in v.items() if x != "rows"} for k, v in evals.items()},
        "brier_differences": margins,
        "train_payoff_first_last": {k: [mean([e["payoff"] for e in v[:5]]),
                                        mean([e["payoff"] for e in v[-5:]])]
                                    for k, v in logs.items()},
        "load_1min_at_end": round(os.getloadavg()[0], 2),
        "wall_s": round(time.perf_counter() - t0, 1),
    }
    (out / "result.json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    (out / "held-out-rows.json").write_text(json.dumps(rows) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=1))
    print("| estimator | Brier | log loss | accuracy | mean p |\n|---|---|---|---|---|")
    print(f"| constant base rate | {evals['base model']['brier_base_rate']:.4f} | | | |")
    for k, v in evals.items():
        print(_row(k, v))
    for k, m in margins.items():
        print(f"{k}: {m['difference']:+.4f} [{m['low']:+.4f}, {m['high']:+.4f}]")


if __name__ == "__main__":
    main()
