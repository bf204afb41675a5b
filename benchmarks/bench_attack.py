"""``llmdebate attack``: time and result of the searches at d <= 2, q <= 7.

Completeness: the estimator search against the honest prover (majority, stable instances);
soundness: the exact best-response prover (wrong answer) against the calibrated-ignorant
estimator. Run: ``PYTHONPATH=. .venv/bin/python benchmarks/bench_attack.py [--budget N]``
(NumPy on one thread; the load average is printed with the figures). *inst*: instances used,
``s`` stable at every node, ``a`` all (no instance is stable at q = 3: timing only).
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import platform
import tempfile
from pathlib import Path

import numpy as np

from llmdebate.errors import ConfigError
from llmdebate.formal.attack import AttackSpec, run_attack
from llmdebate.formal.attack_estimator import SearchBudget

GRID = [(1, 3), (1, 5), (1, 7), (2, 3), (2, 5), (2, 7)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--budget", type=int, default=256, help="candidate tables per state")
    ap.add_argument("--variants", default="figure2,marginal")
    args = ap.parse_args()
    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"numpy {np.__version__}, load average {os.getloadavg()[0]:.2f}; "
        f"budget {args.budget} tables per state, population 64, seed 0"
    )
    print(
        f"{'target':>12} {'variant':>9} {'d':>2} {'q':>2} {'inst':>4} {'states':>6} "
        f"{'tables':>8} {'seconds':>8} {'normalized':>11} {'worst':>11} {'bound':>7} "
        f"{'exact break':>11}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for variant in args.variants.split(","):
            for target in ("completeness", "soundness"):
                for d, q in GRID:
                    spec = AttackSpec(
                        target=target,
                        problem="majority",
                        variant=variant,
                        depth=d,
                        width=q,
                        noise=0.05,
                        instances=40,
                        estimator="calibrated-ignorant",
                        budget=SearchBudget(evaluations=args.budget),
                    )
                    try:
                        res = run_attack(spec, Path(tmp) / "s.json")
                    except ConfigError:  # no stable instance (q = 3): time it on all of them
                        spec.stable_only = False
                        res = run_attack(spec, Path(tmp) / "s.json")
                    s, ex = res["search"], res["exact"]  # ex: rational, no tolerance
                    states, tables = s.get("states_searched", "-"), s.get("tables_evaluated", "-")
                    print(
                        f"{target:>12} {variant:>9} {d:>2} {q:>2} {res['instances_used']:>3}"
                        f"{'s' if res['stable_only'] else 'a'} "
                        f"{states!s:>6} {tables!s:>8} "
                        f"{res['seconds']:>8.2f} {ex['normalized_payoff']:>11.4g} "
                        f"{ex['min_instance_normalized']:>11.4g} {res['bound_normalized']:>7.3g} "
                        f"{'yes' if ex['breaks'] else 'no':>11}"
                    )


if __name__ == "__main__":
    main()
