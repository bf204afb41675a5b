"""Formal engine throughput: Monte Carlo debates/second per strategy pair, exact enumeration time.

Run: ``.venv/bin/python benchmarks/bench_formal.py`` (one process, NumPy on one core).

``--against COMMIT`` times this tree and the tree at COMMIT side by side: the old tree is
extracted with ``git archive`` into a temporary directory, each tree gets one long-lived worker
process, and the two workers time the same pair in turn (old, new, old, new, ...), ``--rounds``
times each, so both see the same load. It prints the median rate of each tree and the median
of the per-round ratios new/old; only pairs that both trees define are compared.
``--variants`` times every protocol variant of this tree as well (no counterpart before them).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this tree's llmdebate, whatever the environment installed
D, Q, N_INST, DEBATES = 4, 4, 64, 200_000
EPS, RHO = 0.2, 0.5
OLD_PAIRS = [
    (pv, en)
    for pv in ("honest", "dishonest", "random")
    for en in ("omniscient", "calibrated-ignorant", "adversarial")
]

# One worker per tree: reads "prover estimator variant debates" lines, answers with debates/s.
WORKER = f"""
import sys, time
import numpy as np
import llmdebate
print(llmdebate.__file__, flush=True)
from llmdebate.formal.game import Game
from llmdebate.formal.montecarlo import simulate_prover_estimator
from llmdebate.formal.problems import make_problem
from llmdebate.formal.strategies import OracleJudge, make_estimator, make_prover
D, Q, N_INST, EPS, RHO = {D}, {Q}, {N_INST}, {EPS}, {RHO}
prob = make_problem("interval", D, Q, N_INST, 0)
games = {{}}
for line in sys.stdin:
    pv, en, variant, debates = line.split()
    key = (pv, en, variant)
    if key not in games:
        extra = () if variant == "-" else (variant,)
        games[key] = Game(prob, make_prover(pv, prob, EPS), make_estimator(en, prob),
                          OracleJudge(prob), EPS, RHO, *extra)
        simulate_prover_estimator(games[key], 1000, np.random.default_rng(0))  # warm-up
    game, rng, left = games[key], np.random.default_rng(0), int(debates)
    t = time.perf_counter()
    while left:
        m = min(left, 1 << 16)
        simulate_prover_estimator(game, m, rng)
        left -= m
    print(int(debates) / (time.perf_counter() - t), flush=True)
"""


class Worker:
    """A Python process importing llmdebate from ``tree``, timing one pair per request."""

    def __init__(self, tree: Path):
        env = {**os.environ, "PYTHONPATH": str(tree)}
        self.proc = subprocess.Popen(
            [sys.executable, "-c", WORKER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            text=True,
            cwd=tree,
        )
        assert self.proc.stdout is not None
        self.where = self.proc.stdout.readline().strip()
        if not self.where.startswith(str(tree)):
            raise RuntimeError(f"the worker for {tree} imported llmdebate from {self.where}")

    def rate(self, pv: str, en: str, variant: str, debates: int) -> float:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"{pv} {en} {variant} {debates}\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"worker stopped while timing {pv}/{en}")
        return float(line)

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait()


def extract(commit: str, dest: Path) -> str:
    """The tree of ``commit`` under ``dest`` (git archive); returns the full commit id."""
    full = subprocess.run(
        ["git", "rev-parse", "--verify", f"{commit}^{{commit}}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    data = subprocess.run(
        ["git", "archive", "--format=tar", full], cwd=ROOT, capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(dest, filter="data")
    return full


def machine() -> str:
    import numpy as np

    load = os.getloadavg()
    return (
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"numpy {np.__version__}, python {platform.python_version()}; load average "
        f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f} at start"
    )


def side_by_side(commit: str, rounds: int, debates: int) -> list[dict[str, object]]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        full = extract(commit, Path(tmp))
        print(f"against {full[:12]} (git archive into a temporary directory)")
        old, new = Worker(Path(tmp)), Worker(ROOT)
        try:
            print(f"{'prover':>10} {'estimator':>20} {'old /s':>11} {'new /s':>11} {'new/old':>8}")
            for pv, en in OLD_PAIRS:
                a: list[float] = []
                b: list[float] = []
                for _ in range(rounds):  # alternate, so both trees see the same load
                    a.append(old.rate(pv, en, "-", debates))
                    b.append(new.rate(pv, en, "figure2", debates))
                ratio = statistics.median(y / x for x, y in zip(a, b, strict=True))
                row = {
                    "prover": pv,
                    "estimator": en,
                    "old": statistics.median(a),
                    "new": statistics.median(b),
                    "ratio": ratio,
                }
                rows.append(row)
                print(f"{pv:>10} {en:>20} {row['old']:>11,.0f} {row['new']:>11,.0f} {ratio:>8.2f}")
        finally:
            old.close()
            new.close()
    return rows


def this_tree(variants: bool, debates: int) -> None:
    from llmdebate.core.schemas import VARIANTS
    from llmdebate.formal.exact import exact_prover_estimator
    from llmdebate.formal.game import Game
    from llmdebate.formal.problems import make_problem
    from llmdebate.formal.strategies import (
        BASIC_ESTIMATORS,
        PROVERS,
        OracleJudge,
        make_estimator,
        make_prover,
    )

    prob = make_problem("interval", D, Q, N_INST, 0)
    print(f"interval problem d={D} q={Q}, {N_INST} instances; {debates} debates per pair")
    print(f"{'variant':>15} {'prover':>20} {'estimator':>20} {'debates/s':>12} {'exact ms':>10}")
    worker = Worker(ROOT)
    try:
        for variant in VARIANTS if variants else ("figure2",):
            for pv in PROVERS:
                for en in BASIC_ESTIMATORS:
                    rate = worker.rate(pv, en, variant, debates)
                    exact_ms = float("nan")
                    if pv != "random":  # the random prover branches over q choices per round
                        game = Game(
                            prob,
                            make_prover(pv, prob, EPS),
                            make_estimator(en, prob),
                            OracleJudge(prob),
                            EPS,
                            RHO,
                            variant,
                        )
                        exact_prover_estimator(game)
                        t = time.perf_counter()
                        exact_prover_estimator(game)
                        exact_ms = 1e3 * (time.perf_counter() - t)
                    print(f"{variant:>15} {pv:>20} {en:>20} {rate:>12,.0f} {exact_ms:>10.1f}")
    finally:
        worker.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--against", metavar="COMMIT", help="time COMMIT's tree side by side")
    ap.add_argument("--rounds", type=int, default=5, help="alternations per pair (--against)")
    ap.add_argument("--debates", type=int, default=DEBATES, help="debates per timing")
    ap.add_argument("--variants", action="store_true", help="every protocol variant too")
    ap.add_argument("--json", metavar="PATH", help="write the side-by-side rows here")
    args = ap.parse_args()
    print(machine())
    if args.against:
        rows = side_by_side(args.against, args.rounds, args.debates)
        worst = min(float(r["ratio"]) for r in rows)  # type: ignore[arg-type]
        print(f"smallest new/old ratio: {worst:.2f}")
        if args.json:
            Path(args.json).write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    else:
        this_tree(args.variants, args.debates)
    load = os.getloadavg()
    print(f"load average at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")


if __name__ == "__main__":
    main()
