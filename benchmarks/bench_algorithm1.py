"""Algorithm 1 (Lemma A.4's estimator) beyond d <= 2, q <= 3: steps, δ reached, seconds.

Run: ``PYTHONPATH=. .venv/bin/python benchmarks/bench_algorithm1.py`` (NumPy on one core).
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
from llmdebate.formal.ogd import algorithm1_estimator
from llmdebate.formal.problems import make_problem
from llmdebate.formal.strategies import OracleJudge, make_prover

EPS, RHO, DELTA, N = 0.45, 0.1, 1e-3, 16
CASES = [("interval", 3, 3), ("interval", 2, 4), ("circuit", 3, 3), ("circuit", 2, 4)]


def main() -> None:
    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"numpy {np.__version__}; ε={EPS}, ρ={RHO}, δ target {DELTA:g}, {N} instances"
    )
    print(f"{'problem':>9} {'d':>2} {'q':>2} {'prover':>10} {'steps':>7} {'δ reached':>10} "
          f"{'conv':>5} {'build s':>8} {'E[R_A]':>10} {'exact s':>8}")
    for problem, d, q in CASES:
        prob = make_problem(problem, d, q, N, 0)
        for prover in ("dishonest", "honest"):
            pol = make_prover(prover, prob, EPS)
            t0 = time.perf_counter()
            est, rep = algorithm1_estimator(prob, pol, EPS, RHO, delta=DELTA)
            build = time.perf_counter() - t0
            t0 = time.perf_counter()
            ex = exact_prover_estimator(Game(prob, pol, est, OracleJudge(prob), EPS, RHO))
            ex_s = time.perf_counter() - t0
            print(
                f"{problem:>9} {d:>2} {q:>2} {prover:>10} {rep.steps:>7} "
                f"{rep.delta_reached:>10.2e} {rep.converged!s:>5} {build:>8.1f} "
                f"{ex.mean(prob.weights):>10.4g} {ex_s:>8.2f}"
            )


if __name__ == "__main__":
    main()
