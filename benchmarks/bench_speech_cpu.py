"""CPU time of a speech protocol's debates in one process, on the scripted backend (no HTTP),
this tree against another checkout, side by side.

    PYTHONPATH=. python benchmarks/bench_speech_cpu.py --protocol two-sided --rounds 3 \
        --debates 4000 --against ../before --repeat 10

Every run is a fresh interpreter that imports llmdebate from one tree (``PYTHONPATH``) and
plays ``--debates`` debates one after another through ``run_one`` (the runner's debate, no
transcript file), every seat and the judge a scripted model answering each speech with one
sentence; it prints the process CPU seconds of the debates alone (imports excluded). The
trees alternate (before, after, after, before, ...), so a drift of the machine's load meets
both; the rows give each tree's median and the median of the pairwise ratios after/before.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def one(protocol: str, rounds: int, debates: int) -> dict[str, float]:
    """CPU seconds of ``debates`` debates of ``protocol`` in this process."""
    import asyncio

    from llmdebate.agents.factory import Team
    from llmdebate.data import Item
    from llmdebate.experiment.config import ExperimentConfig
    from llmdebate.experiment.debate import run_one
    from llmdebate.experiment.jobs import make_jobs
    from llmdebate.experiment.runtime import protocol_settings
    from llmdebate.models import Model, ScriptedBackend
    from llmdebate.prompts import Prompts

    cfg = ExperimentConfig.model_validate({
        "protocols": [protocol], "rounds": rounds,
        "prover": {"model": "scripted", "scratchpad": False}, "judge": {"model": "scripted"},
    })
    items = [Item(id=f"q{i}", question=f"Is {i} even?", choices=["yes", "no"],
                  answer="yes" if i % 2 == 0 else "no") for i in range(debates)]
    model = Model(ScriptedBackend(responder=lambda _: "An argument of a few words.", name="s"))
    team = Team({"prover": model, "estimator": model, "judge": model}, Prompts(), cfg.prover,
                cfg.estimator, cfg.judge)
    jobs = make_jobs(items, cfg)[:debates]
    settings = protocol_settings(cfg)

    async def play() -> None:
        for job in jobs:
            t, failed = await run_one(job, team, settings)
            if failed or t.status != "complete":
                raise RuntimeError(f"debate {t.id} failed: {t.failure}")

    cpu = time.process_time()
    asyncio.run(play())
    return {"debates": len(jobs), "cpu_s": time.process_time() - cpu}


def load() -> str:
    one_min, five_min, _ = os.getloadavg()
    return f"load {one_min:.2f}/{five_min:.2f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--protocol", default="two-sided")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--debates", type=int, default=4000)
    ap.add_argument("--against", default=None, help="the other checkout (before)")
    ap.add_argument("--repeat", type=int, default=10, help="runs of each tree")
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one(args.protocol, args.rounds, args.debates)))
        return
    trees = [("before", Path(args.against or REPO).resolve()), ("after", REPO)]
    cpu: dict[str, list[float]] = {"before": [], "after": []}
    print(f"{os.cpu_count()} CPU cores, python {sys.version.split()[0]}, {load()}", flush=True)
    for k in range(args.repeat):
        for label, tree in trees if k % 2 == 0 else trees[::-1]:
            cmd = [sys.executable, __file__, "--one", "--protocol", args.protocol,
                   "--rounds", str(args.rounds), "--debates", str(args.debates)]
            done = subprocess.run(cmd, env={**os.environ, "PYTHONPATH": str(tree)},
                                  capture_output=True, text=True, check=True)
            r = json.loads(done.stdout.strip().splitlines()[-1])
            cpu[label].append(r["cpu_s"])
            print(f"{label:6s} {args.protocol}: {r['debates']} debates, {r['cpu_s']:.2f} s CPU "
                  f"= {1000 * r['cpu_s'] / r['debates']:.3f} ms/debate [{load()}]", flush=True)
    ratios = [a / b for a, b in zip(cpu["after"], cpu["before"], strict=True)]
    print(f"median CPU: before {statistics.median(cpu['before']):.2f} s, after "
          f"{statistics.median(cpu['after']):.2f} s; after/before pairwise: median "
          f"{statistics.median(ratios):.3f} (min {min(ratios):.3f}, max {max(ratios):.3f})")


if __name__ == "__main__":
    main()
