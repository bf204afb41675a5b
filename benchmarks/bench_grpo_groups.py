"""GRPO-shaped reward calls: how often an invalid completion outranks a valid one.

For every online row (``trl-prompt-only``) of a scripted run (prover-estimator, depth 2,
width 3, model-written decompositions, model directions and recursion), the reward function
is called as TRL's GRPOTrainer calls it: 4 completions for one prompt. Each group holds the
recorded completion, valid alternatives for the act, and invalid ones (a valid answer inside
junk: 200 kB then " lower" or " no", symbols then an index; a JSON fragment; for the
free-text evidence: empty and 240 kB). A group counts when any invalid completion scores at
least as high as any valid one. Run:
``PYTHONPATH=. .venv/bin/python benchmarks/bench_grpo_groups.py``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from llmdebate.experiment.runner import run  # noqa: E402
from llmdebate.export import build, decision_rows, run_info  # noqa: E402
from llmdebate.records.rundir import load_transcripts, read_run_config  # noqa: E402
from llmdebate.rl import DebateReward  # noqa: E402
from tests.export_fixtures import pe_config  # noqa: E402

GARBAGE = "{garbage ]]"
PADDED = "x" * 200_000
# act -> (valid alternatives, invalid completions); the recorded completion is added as valid.
# The invalid ones hold a valid answer somewhere inside junk: only a whole reply counts.
GROUPS = {
    "direction": (["higher", "lower"], [PADDED + " lower"]),
    "decompose": (["{recorded}"], [GARBAGE, ""]),
    "recurse": (["1", "3"], ["#$%^&*()_+ qwpoeiru 1"]),
    "estimate": (["True", "False"], [PADDED + " no"]),
    "evidence": (["Each candidate divisor fails, so the claim holds."], ["", "x" * 240_000]),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=2, help="problems in the scripted run")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        run(pe_config(dataset={"limit": args.items}, prover={"decomposer": "model"}), out,
            progress=False)
        config = read_run_config(out)
        ts = {t.id: t for t in load_transcripts(out)}
        pairs = decision_rows(list(ts.values()), run_info(out, config, 0.0))
        recs = build(pairs, "trl-prompt-only", config)
        reward = DebateReward(logprobs_as="answer")
        groups: Counter[str] = Counter()
        bad: Counter[str] = Counter()
        above: Counter[str] = Counter()
        for rec in recs:
            valid_alt, invalid = GROUPS[rec["act"]]
            call = rec["call"]
            recorded = ts[rec["debate_id"]].calls[call].completion if call >= 0 else None
            valid = [recorded or "", *(recorded or "" if v == "{recorded}" else v
                                       for v in valid_alt)]
            completions = valid + invalid
            assert len(completions) == 4, rec["act"]
            n_valid = len(valid)
            scores = reward([rec["prompt"]] * 4, completions, state=[rec["state"]] * 4)
            key = f"{rec['speaker']} {rec['act']}"
            groups[key] += 1
            if max(scores[n_valid:]) >= min(scores[:n_valid]):
                bad[key] += 1
            if max(scores[n_valid:]) > min(scores[:n_valid]):
                above[key] += 1
        print("groups where an invalid completion scores above / at least as high as a valid one")
        for key in sorted(groups):
            print(f"{key}: {above[key]}/{groups[key]} above, {bad[key]}/{groups[key]} at least")
        print(f"all: {sum(above.values())}/{sum(groups.values())} above, "
              f"{sum(bad.values())}/{sum(groups.values())} at least")


if __name__ == "__main__":
    main()
