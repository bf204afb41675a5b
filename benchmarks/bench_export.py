"""Export throughput: decision rows per second from a run directory of 10,000 transcripts.

The transcripts are scripted-run debates (prover-estimator, depth 2, width 3, model-mode
prover) replicated under new ids. Run:
``PYTHONPATH=. .venv/bin/python benchmarks/bench_export.py [--transcripts 10000]``.
Optionally times one training iteration on the embedded model as well (``--train``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from llmdebate.experiment.runner import run  # noqa: E402
from llmdebate.export import export_run  # noqa: E402
from llmdebate.records.rundir import TRANSCRIPTS_FILE, load_transcripts  # noqa: E402
from tests.export_fixtures import pe_config  # noqa: E402


def synthesize(root: Path, n: int) -> Path:
    """A run directory holding ``n`` transcripts: a scripted run's debates, replicated."""
    seed_run = root / "seed"
    run(pe_config(dataset={"limit": 6}), seed_run, progress=False)
    base = load_transcripts(seed_run)
    out = root / "big"
    out.mkdir()
    shutil.copy(seed_run / "config.yaml", out / "config.yaml")
    with (out / TRANSCRIPTS_FILE).open("w", encoding="utf-8") as fh:
        for i in range(n):
            t = base[i % len(base)].model_copy(deep=True)
            t.id = f"{t.id}#{i}"
            t.meta["item_id"] = f"{t.meta['item_id']}#{i // len(base)}"
            fh.write(t.model_dump_json() + "\n")
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--transcripts", type=int, default=10_000)
    ap.add_argument("--train", action="store_true", help="also time one training iteration")
    args = ap.parse_args()
    load = os.getloadavg()[0]
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, load average {load:.2f}")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        run_dir = synthesize(root, args.transcripts)
        t0 = time.perf_counter()
        n = len(load_transcripts(run_dir))
        read_s = time.perf_counter() - t0
        print(f"{n} transcripts ({(run_dir / TRANSCRIPTS_FILE).stat().st_size / 1e6:.0f} MB), "
              f"read and validated in {read_s:.1f} s")
        results = []
        for role, fmt, suffix in [
            ("prover", "trl-prompt-completion", ".jsonl"),
            ("estimator", "trl-prompt-completion", ".parquet"),
            ("estimator", "trl-unpaired", ".jsonl"),
            ("prover", "trl-prompt-only", ".parquet"),
        ]:
            t0 = time.perf_counter()
            res = export_run(run_dir, root / f"out-{role}-{fmt}{suffix}", role=role, fmt=fmt)
            s = time.perf_counter() - t0
            results.append({"role": role, "format": fmt, "container": res.kind,
                            "rows": res.rows, "seconds": round(s, 2),
                            "rows_per_s": round(res.rows / s)})
            print(json.dumps(results[-1]))
    if args.train:
        from llmdebate.training import load_train_config, train

        cfg = load_train_config(REPO / "configs" / "train-local.yaml")
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            res = train(cfg.model_copy(update={"evaluate_last": False}), Path(tmp) / "t",
                        progress=False)
            print(json.dumps({"training_iteration_s": round(time.perf_counter() - t0, 1),
                              "updates": [(u.role, u.rows, u.steps, round(u.seconds, 1))
                                          for u in res.updates],
                              "load_average_after": round(os.getloadavg()[0], 2)}))


if __name__ == "__main__":
    main()
