"""Time and outcome of expert iteration for the embedded prover (configs/train-embedded.yaml).

    nice -n 10 python benchmarks/bench_train_expert.py                 # the whole run
    nice -n 10 python benchmarks/bench_train_expert.py --max-steps 4 --no-evaluate   # time/step
    python benchmarks/bench_train_expert.py --report runs/<training folder>         # read one

Runs ``llmdebate train`` with the config (or reads a finished training folder) and prints one
Markdown row: machine, load average, steps, seconds per step, training wall time, the held-out
exact-split share before and after, and the adapter's size.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
from pathlib import Path
from typing import Any

from llmdebate.training import load_train_config, train


def report(folder: Path) -> dict[str, Any]:
    expert = folder / "expert"
    steps = [json.loads(x) for x in (expert / "expert.jsonl").read_text().splitlines() if x]
    trained = [s for s in steps if "loss" in s]
    prov = json.loads((expert / "adapter" / "provenance.json").read_text())
    size = sum(f.stat().st_size for f in (expert / "adapter").iterdir())
    held = prov.get("held_out", {})
    return {
        "machine": f"{platform.machine()}, {len(os.sched_getaffinity(0))} cores",
        "load_1min": round(os.getloadavg()[0], 1),
        "steps": len(trained),
        "s_per_step": round(sum(s["step_s"] for s in trained) / max(1, len(trained)), 1),
        "train_s": prov["train_seconds"],
        "final_loss": prov["final_loss"],
        "held_out_loss": prov["held_out_loss"],
        "before": (held.get("before") or {}).get("exact_splits"),
        "after": (held.get("after") or {}).get("exact_splits"),
        "adapter_bytes": size,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="configs/train-embedded.yaml")
    ap.add_argument("--max-steps", type=int, default=None)
    ap.add_argument("--no-evaluate", action="store_true")
    ap.add_argument("--report", type=Path, default=None, help="a finished training folder")
    args = ap.parse_args()
    folder = args.report
    if folder is None:
        cfg = load_train_config(args.config)
        assert cfg.expert is not None, f"{args.config}: no expert section"
        update: dict[str, Any] = {}
        if args.max_steps:
            update["max_steps"] = args.max_steps
        if args.no_evaluate:
            update.update(evaluate=False, evaluate_before=False)
        cfg = cfg.model_copy(update={"expert": cfg.expert.model_copy(update=update)})
        folder = Path(tempfile.mkdtemp(prefix="bench-expert-"))
        train(cfg, folder)
    row = report(folder)
    print(json.dumps(row, indent=1))
    print("| machine | load | steps | s/step | training s | held-out exact before | after |"
          " adapter |")
    print(f"| {row['machine']} | {row['load_1min']} | {row['steps']} | {row['s_per_step']} | "
          f"{row['train_s']} | {row['before']} | {row['after']} | "
          f"{row['adapter_bytes'] / 1e6:.1f} MB |")


if __name__ == "__main__":
    main()
