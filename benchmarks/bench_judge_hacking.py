"""The judge-hacking audit on a trained policy: a run where the trained side hacks its judge
and one where it cannot.

The policy is a table, not a language model: a softmax over the leaf direction's three
words (higher, lower, right) for each probability the prompt states (0.00, 1.00, other),
starting uniform. Its rows are the leaf-direction decisions of scripted debates on the
divisors problem (``tests/fixtures/honesty_fixtures.py``: the honest prover for every other
act; the estimator calibrated in one run and blind to small divisors in another, so that
some leaves hold an estimate that is right and some one that is wrong; depth 2, width 2,
ε = 0.2, ρ = 0.5); each step
samples 4 words per row (numpy, seeded), plays each into the rest of its debate with
``DebateRewardBase.play`` (the frozen scripted seats, the reward in the decision's frame),
forms TRL's GRPO advantages ((r − mean)/(std + 1e-4) over the row's 4, float32) and takes one
policy-gradient step on the table. The audit of each step is that of the played debates
(:mod:`llmdebate.report.judge_audit`, the prover's side), and the run's line is
:func:`~llmdebate.report.judge_audit.hacking_line` over the steps.

Two judges: ``credulous_judge`` (believes every claim the prover makes: P(True) = 1) and
``calibrated`` (knows each leaf claim's truth). Expected before the run: against the
credulous judge the policy learns ``higher`` where the estimator says 0.00, wins on the false
claims too, and the line says judge hacking; against the judge that knows the truth a false
argument never wins, so the wins that rise are truthful ones, and the line says no judge
hacking.

Run: ``nice -n 10 .venv/bin/python benchmarks/bench_judge_hacking.py [--steps 30]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from llmdebate.experiment.loading import validate  # noqa: E402
from llmdebate.experiment.runner import run  # noqa: E402
from llmdebate.export import build, decision_rows, run_info  # noqa: E402
from llmdebate.records.rundir import load_transcripts, read_run_config  # noqa: E402
from llmdebate.report.judge_audit import hacking_line, judge_audit  # noqa: E402
from llmdebate.rl.rewards import DebateRewardBase  # noqa: E402

FIX = str(REPO / "tests" / "fixtures" / "honesty_fixtures.py")
WORDS = ("higher", "lower", "right")
BUCKETS = ("0.00", "1.00", "other")
ESTIMATORS = ("calibrated", "blind_to_small_divisors")
"""The leaves where the estimator is right (calibrated) and where it is wrong (blind: the
honest prover recurses into what it got wrong)."""


def leaf_rows(tmp: Path, judge: str, estimator: str) -> list[dict[str, Any]]:
    cfg = validate({
        "name": "hacking", "dataset": {"path": str(REPO / "datasets" / "divisors.jsonl"),
                                       "limit": 8},
        "debate": {"depth": 2, "width": 2, "epsilon": 0.2, "early_stop": False},
        "prover": {"model": "scripted", "options": {"responder": f"{FIX}:honest_prover"},
                   "decomposer": "model", "direction": "model", "recursion": "model"},
        "estimator": {"model": "scripted",
                      "options": {"probabilities": f"{FIX}:{estimator}"}},
        "judge": {"model": "scripted", "kind": "llm",
                  "options": {"probabilities": f"{FIX}:{judge}"}},
        "max_concurrency": 4,
    })
    where = tmp / f"{judge}-{estimator}"
    run(cfg, where, progress=False)
    config = read_run_config(where)
    rows = build(decision_rows(load_transcripts(where), run_info(where, config, 0.0)),
                 "trl-prompt-only", config)
    return [r for r in rows if r["act"] == "direction" and r["round_k"] == 0]


def bucket(prompt: list[dict[str, str]]) -> int:
    found = re.search(r"this claim is true is ([0-9]+\.[0-9]+)", prompt[-1]["content"])
    stated = found.group(1) if found else ""
    return BUCKETS.index(stated) if stated in BUCKETS[:2] else 2


def advantages(rewards: list[float]) -> np.ndarray:
    r = np.asarray(rewards, dtype=np.float32)
    return (r - r.mean()) / (r.std(ddof=1) + np.float32(1e-4))


def train(rows: list[dict[str, Any]], steps: int, lr: float, seed: int) -> list[dict[str, Any]]:
    rng = np.random.default_rng(seed)
    logits = np.zeros((len(BUCKETS), len(WORDS)))
    reward = DebateRewardBase()
    history: list[dict[str, Any]] = []
    for step in range(steps + 1):
        played, grad = [], np.zeros_like(logits)
        for row in rows:
            b = bucket(row["prompt"])
            pi = np.exp(logits[b] - logits[b].max())
            pi /= pi.sum()
            picks = rng.choice(len(WORDS), size=4, p=pi)
            outs = [asyncio.run(reward.play(WORDS[i], row["state"])) for i in picks]
            played += [t for _, t in outs if t is not None]
            for i, a in zip(picks, advantages([r for r, _ in outs]), strict=True):
                grad[b] += float(a) * (np.eye(len(WORDS))[i] - pi) / 4
        audit = judge_audit(played)
        history.append({"step": step, **{f"audit_{k}": v for k, v in audit.items()},
                        "policy": {BUCKETS[b]: dict(zip(WORDS, np.round(
                            np.exp(logits[b]) / np.exp(logits[b]).sum(), 3).tolist(),
                            strict=True)) for b in range(2)}})
        logits += lr * grad / max(len(rows), 1)
    return history


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--lr", type=float, default=4.0)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for judge in ("credulous_judge", "calibrated"):
            rows = [r for est in ESTIMATORS for r in leaf_rows(Path(tmp), judge, est)]
            history = train(rows, args.steps, args.lr, args.seed)
            for h in (history[0], history[len(history) // 2], history[-1]):
                shown = {k[6:]: (round(v, 3) if isinstance(v, float) else v)
                         for k, v in h.items() if k.startswith("audit_")}
                print(f"{judge} step {h['step']}: {json.dumps(shown)} policy "
                      f"{json.dumps(h['policy'])}")
            print(f"{judge} ({len(rows)} leaf rows): {hacking_line(history)}")
    print(f"wall {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
