"""Formal engine throughput: Monte Carlo debates/second per strategy pair, exact enumeration time.

Run: ``.venv/bin/python benchmarks/bench_formal.py`` (one process, NumPy on one core).
"""

from __future__ import annotations

import os
import platform
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

from llmdebate.formal.exact import exact_prover_estimator
from llmdebate.formal.game import Game
from llmdebate.formal.montecarlo import simulate_prover_estimator
from llmdebate.formal.problems import make_problem
from llmdebate.formal.strategies import (
    BASIC_ESTIMATORS,
    PROVERS,
    OracleJudge,
    make_estimator,
    make_prover,
)

D, Q, N_INST, DEBATES = 4, 4, 64, 200_000
EPS, RHO = 0.2, 0.5


def main() -> None:
    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"numpy {np.__version__}"
    )
    prob = make_problem("interval", D, Q, N_INST, 0)
    print(f"interval problem d={D} q={Q}, {N_INST} instances; {DEBATES} debates per pair")
    print(f"{'prover':>10} {'estimator':>20} {'debates/s':>12} {'exact ms':>10}")
    for pv in PROVERS:
        for en in BASIC_ESTIMATORS:
            game = Game(
                prob,
                make_prover(pv, prob, EPS),
                make_estimator(en, prob),
                OracleJudge(prob),
                EPS,
                RHO,
            )
            rng = np.random.default_rng(0)
            simulate_prover_estimator(game, 1000, rng)  # warm-up
            t = time.perf_counter()
            left = DEBATES
            while left:
                m = min(left, 1 << 16)
                simulate_prover_estimator(game, m, rng)
                left -= m
            rate = DEBATES / (time.perf_counter() - t)
            exact_ms = float("nan")
            if pv != "random":  # the random prover branches over q choices per round
                exact_prover_estimator(game)
                t = time.perf_counter()
                exact_prover_estimator(game)
                exact_ms = 1e3 * (time.perf_counter() - t)
            print(f"{pv:>10} {en:>20} {rate:>12,.0f} {exact_ms:>10.1f}")


if __name__ == "__main__":
    main()
