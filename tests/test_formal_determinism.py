"""The reproduction table's iterative rows do not depend on the BLAS library's threads or
kernels: Algorithm 1 and the exact engine sum without BLAS."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = """
import json
from llmdebate.formal.reproduce import _rounded, soundness_rows
rows = soundness_rows(0.45, 0.1, 1, 2, 16, 0, 2e-3, variants=("figure2", "marginal"),
                      grid_points=5)
print(json.dumps([_rounded({**r, "digits": 17}) for r in rows]))
"""


def _run(env: dict[str, str]) -> list[dict[str, object]]:
    full = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=full, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def test_algorithm1_rows_are_bit_identical_across_blas_settings() -> None:
    a = _run({"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"})
    b = _run({"OPENBLAS_NUM_THREADS": "2", "OPENBLAS_CORETYPE": "Prescott"})
    assert a == b  # every float to 17 digits, i.e. to the bit
    assert {r["variant"] for r in a} == {"figure2", "marginal"}
