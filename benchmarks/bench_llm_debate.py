"""Wall time and model calls per LLM debate as depth and width grow.

    python benchmarks/bench_llm_debate.py                       # scripted backend (calls only)
    python benchmarks/bench_llm_debate.py --model local --debates 3 --grid 2x3,1x2,2x2

Each grid point runs ``--debates`` debates of ``datasets/divisors.jsonl`` (prover decompositions
from the problem, every probability from the model's logprobs, the model judges the leaf)
through the real runner into a temporary run directory with an empty response cache, and
prints wall time per debate and model calls per debate. The first grid point with the local
model includes loading the weights; it is reported on its own line.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from llmdebate.experiment.loading import validate
from llmdebate.experiment.runner import run
from llmdebate.models import get_model
from llmdebate.records.rundir import load_transcripts

REPO = Path(__file__).resolve().parents[1]


def config(depth: int, width: int, n: int, model: str, independent: bool, cache: str) -> dict:
    return {
        "name": f"bench-d{depth}w{width}",
        "dataset": {"path": str(REPO / "datasets" / "divisors.jsonl"), "limit": n},
        "debate": {"depth": depth, "width": width, "expected_rewards": True},
        "prover": {"model": model, "decomposer": "formal", "max_tokens": 24},
        "estimator": {"model": model, "independent": independent},
        "judge": {"kind": "llm", "model": model},
        "max_concurrency": n,
        "cache_dir": cache,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="scripted", help="scripted or local")
    ap.add_argument("--debates", type=int, default=6)
    ap.add_argument("--grid", default="1x2,1x3,2x2,2x3,3x2,3x3,2x4", help="DEPTHxWIDTH,...")
    ap.add_argument("--independent", action="store_true", help="batched b_i ignoring z_<i")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        if args.model == "local":  # load the weights once, outside the timings
            start = time.perf_counter()
            get_model("local", cache_dir=None).backend.load()  # type: ignore[attr-defined]
            print(f"local model load: {time.perf_counter() - start:.1f} s")
        for point in args.grid.split(","):
            d, w = (int(x) for x in point.split("x"))
            cache = str(Path(tmp) / f"cache-{point}")
            cfg = validate(config(d, w, args.debates, args.model, args.independent, cache))
            models = None
            if args.model == "scripted":
                m = get_model("scripted", responder=lambda _: "evidence", default_probability=0.7)
                models = {"prover": m, "estimator": m, "judge": m}
            elif args.model == "local":
                m = get_model("local", cache_dir=None, use_cache=False)
                models = {"prover": m, "estimator": m, "judge": m}
            start = time.perf_counter()
            res = run(cfg, Path(tmp) / point, models=models, progress=False)
            wall = time.perf_counter() - start
            s = res.summary
            n = s["transcripts"]
            rows.append(
                {
                    "depth": d,
                    "width": w,
                    "debates": n,
                    "failed": s["status"].get("failed", 0),
                    "stopped_early": sum(
                        t.stopped_early for t in load_transcripts(Path(tmp) / point)
                    ),
                    "wall_s_per_debate": wall / n,
                    "wall_s_total": wall,
                    "calls_per_debate": s["usage"]["calls_per_debate"],
                    "tokens_in_per_debate": s["usage"]["tokens_in"] / n,
                }
            )
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"model={args.model} independent={args.independent} debates/point={args.debates}")
    print("depth width  calls/debate  tokens_in/debate  wall s/debate  wall s total  early")
    for r in rows:
        print(
            f"{r['depth']:5d} {r['width']:5d}  {r['calls_per_debate']:12.1f}  "
            f"{r['tokens_in_per_debate']:16.0f}  {r['wall_s_per_debate']:13.2f}  "
            f"{r['wall_s_total']:12.1f}  {r['stopped_early']:5d}"
        )


if __name__ == "__main__":
    main()
