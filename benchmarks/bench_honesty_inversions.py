"""Where an honest estimate does not pay B: the two conditional inversions of the training
reward (docs/training.md, "Where honesty does not pay B").

1. **B wrong further down** (scripted, seconds): the honesty fixtures' debates
   (``tests/fixtures/honesty_fixtures.py``: honest prover, checking judge; depth 2, width 2,
   ε = 0.2, ρ = 0.5) with the rest of B played by each estimator; every estimator decision
   (p_d and each b_i, one per prompt of a debate) scored by ``DebateReward`` with the
   calibrated word and the false one. Counted: decisions where each is ahead, and every
   inversion's gap in the game's units.
2. **The embedded models** (``--embedded``; the main job's config, the embedded model with
   both shipped adapters): B's p_d scored "True" and "False" on every debate, and whether the
   continuation stopped early.

Run: ``nice -n 10 .venv/bin/python benchmarks/bench_honesty_inversions.py [--embedded]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from llmdebate.experiment.loading import load  # noqa: E402
from llmdebate.experiment.runner import run  # noqa: E402
from llmdebate.export import build, decision_rows, run_info  # noqa: E402
from llmdebate.records.rundir import load_transcripts, read_run_config  # noqa: E402
from llmdebate.rl import DebateReward  # noqa: E402
from tests.test_reward_honesty import estimate_pair, honesty_config  # noqa: E402

ESTIMATORS = ("calibrated", "blind_to_small_divisors", "blind_to_wide_intervals")


def online_rows(where: Path, config: Any) -> list[dict[str, Any]]:
    run(config, where, progress=False)
    cfg = read_run_config(where)
    ts = load_transcripts(where)
    return build(decision_rows(ts, run_info(where, cfg, 0.0)), "trl-prompt-only", cfg)


def scripted(tmp: Path) -> None:
    game = DebateReward(normalize=False)
    for name in ESTIMATORS:
        rows = online_rows(tmp / name, honesty_config(name))
        seen: set[tuple[str, str]] = set()
        for kind, first in (("p_d", True), ("b_i", False)):
            ahead = behind = total = 0
            for rec in rows:
                if rec["speaker"] != "estimator" or (rec["index"] is None) != first:
                    continue
                key = (rec["debate_id"], json.dumps(rec["prompt"]))
                if key in seen:  # one decision, two rows (two terms)
                    continue
                seen.add(key)
                total += 1
                honest, lie = estimate_pair(rec)
                g = game([rec["prompt"]] * 2, [honest, lie], state=[rec["state"]] * 2)
                ahead += g[0] > g[1]
                if g[0] < g[1]:
                    behind += 1
                    print(f"    inversion: {rec['debate_id']} {kind} (round {rec['round_k']}, "
                          f"index {rec['index']}): truth behind by {g[1] - g[0]:.6g}")
            print(f"{name}: {kind}: {total} decisions, truth ahead {ahead}, lie ahead {behind}")


def embedded(tmp: Path) -> None:
    rows = online_rows(tmp / "main", load(REPO / "configs" / "local-divisors.yaml"))
    scaled = DebateReward(relative=False)
    for rec in rows:
        if rec["speaker"] != "estimator" or rec["index"] is not None or rec["term"] != "r_init":
            continue
        yes, no = scaled([rec["prompt"]] * 2, ["True", "False"], state=[rec["state"]] * 2)
        truth = rec["claim_truth"]
        won = "truth" if (yes > no) == bool(truth) else "lie"
        print(f"{rec['debate_id']}: claim {'true' if truth else 'false'}; p_d True {yes:.6g}, "
              f"False {no:.6g} (debate's scale): the {won} wins by {abs(yes - no):.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--embedded", action="store_true", help="also the embedded models' run")
    args = ap.parse_args()
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        scripted(Path(tmp))
        if args.embedded:
            embedded(Path(tmp))
    print(f"wall {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
