"""The embedded estimator on the debate dataset's own claims, with and without an adapter.

    nice -n 10 python benchmarks/bench_estimator_dataset.py --adapter divisors-estimator

The main job's ``summary.json`` "estimates" grades the probabilities its debates asked for,
but which claims a debate asks about depends on the estimator (a confident p_d ends a debate
at round 0 under ``early_stop``), so two estimators are graded on different claims there.
This script grades them on one fixed set: for every number of ``datasets/divisors.jsonl``
(numbers no training claim used), the top claim "n has no divisor d with 2 <= d < top" in
both polarities and one part of a split of it at a seeded random point, in both polarities;
each claim alone and the two subclaims of a split of it (the cases of
:mod:`llmdebate.training.estimate_eval`, ``splits="random"``). It prints one Markdown row per
estimator: Brier, log loss, accuracy, beside the constant base rate of the same cases.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from llmdebate.data.problems import prime_top  # noqa: E402
from llmdebate.models.hf_backend import HFBackend, adapter_path  # noqa: E402
from llmdebate.prompts import Prompts  # noqa: E402
from llmdebate.training.claims import IntervalClaim, dataset_numbers, split_point  # noqa: E402
from llmdebate.training.estimate_eval import estimate_cases, evaluate_estimates  # noqa: E402
from llmdebate.training.update import model_dir  # noqa: E402


def dataset_claims(path: Path, seed: int) -> list[IntervalClaim]:
    """Four claims per number of the dataset: the top claim and one part of a random split of
    it, each in both polarities."""
    rng = random.Random(seed)
    out: list[IntervalClaim] = []
    for n in sorted(dataset_numbers(path)):
        lo, top = prime_top(n)
        k = split_point(lo, top, "random", rng)
        part = (lo, k) if rng.random() < 0.5 else (k, top)
        for none in (True, False):
            out += [IntervalClaim(n, lo, top, none, 2), IntervalClaim(n, *part, none, 2)]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", type=Path, default=REPO / "datasets" / "divisors.jsonl")
    ap.add_argument("--adapter", action="append", default=[],
                    help="a shipped adapter name or folder (repeatable); the base model always")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", type=Path, default=None, help="write every probability here")
    args = ap.parse_args()
    cases = estimate_cases(Prompts(), dataset_claims(args.dataset, args.seed), args.seed + 1,
                           "random")
    weights = model_dir("local")
    print(f"{len(cases)} cases, {sum(c.truth for c in cases) / len(cases):.0%} true; "
          f"load {os.getloadavg()[0]:.1f}")
    print("| estimator | Brier | base rate | log loss | accuracy | mean p | s |")
    print("|---|---|---|---|---|---|---|")
    results = {}
    for name in [None, *args.adapter]:
        t0 = time.perf_counter()
        backend = HFBackend("local", weights, threads=args.threads,
                            adapter=adapter_path(name) if name else None)
        res = evaluate_estimates(backend, cases)
        results[name or "base model"] = res
        print(f"| {name or 'base Gemma 3 270M'} | {res['brier']:.4f} | "
              f"{res['brier_base_rate']:.4f} | {res['log_loss']:.3f} | {res['accuracy']:.3f} | "
              f"{res['mean_probability']:.3f} | {time.perf_counter() - t0:.0f} |", flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
