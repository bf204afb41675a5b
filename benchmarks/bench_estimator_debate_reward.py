"""The embedded estimator trained on its debate payoff alone, against provers of five kinds.

    python benchmarks/bench_estimator_debate_reward.py               # full size, about 1 h
    python benchmarks/bench_estimator_debate_reward.py --steps 8 --seeds 0 --arms bounded

B is the base model (``--model local``: Gemma 3 270M, no adapter) with a fresh LoRA adapter
in its top layers, trained by gradient ascent on its leaf payoff −r_0 = −s·(O − p)
(:func:`llmdebate.training.debate_reward.estimator_leaf_payoff`, through
:func:`llmdebate.core.scoring.leaf_reward`), O the oracle leaf judge's verdict (the only
label), s the direction the prover A plays against B's p: eq. 13 on A's own belief q of the
claim, from the belief source a ``prover.beliefs`` section names (:mod:`llmdebate.beliefs`,
the same objects the debate's prover uses). The arms:

* ``bounded``: ``source: table`` with the shipped table ``divisors-polarity-width``
  (P(verdict | polarity, width bucket) estimated on 60 other numbers' claims);
* ``biased``: the same table with ``shift: --shift`` (a known bias);
* ``shuffled``: the same table with ``shuffle_seed`` (each claim the belief of a random
  claim: the same beliefs, none about the claim);
* ``omniscient``: ``source: oracle`` (q = the claim's truth = the verdict; the earlier
  benchmark's only arm);
* ``proper``: no prover; B ascends −(O − p)² on the same verdicts (a ceiling).

Claims (:mod:`llmdebate.training.bounded`): numbers by the dataset's law (half primes in
[100, 3000), half products of two primes in [7, 60)), for each number the top claim and a
part of a random split of it, each with the two parts of a random split of its own; training
numbers (seed 1) and held-out numbers (seed 2) apart from each other, from the table's
numbers and from the debate dataset's. Each case's prompt is the estimator's prompt for the
claim alone (``estimate.j2``, the ``logprobs`` method's instruction), short.

Held-out figures for each arm and seed, each with a 95 % bootstrap interval over the
held-out numbers (a number's cases resampled together): Brier score, log loss, reliability
slope (least-squares slope of the truth on p), mean p, the share of p in (0.1, 0.9), mean
|p − q_A| (q_A the arm's own prover's belief; for the base model and the proper arm, the
bounded table's). Beside them: the constant base rate, the base model, the bounded prover's
own q (what B can at best learn from it).

Writes ``--out`` (default a temporary folder): ``result.json`` (rewritten after every arm),
``<arm>-seed<s>.jsonl`` (one line per step), ``held-out.json`` (every p); prints a Markdown
table.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from llmdebate.agents.settings import BeliefSettings
from llmdebate.beliefs import load_table, make_source
from llmdebate.data.problems import claim_truth
from llmdebate.training.bounded import (
    leaf_split,
    leaf_verdicts,
)
from llmdebate.training.config import LoraSettings
from llmdebate.training.debate_reward import (
    LeafCase,
    LeafTrainer,
    RewardTrainSettings,
    number_of,
    prover_beliefs,
    settings_record,
)
from llmdebate.training.sft import torch_threads
from llmdebate.training.update import model_dir

PROJECTIONS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
ARMS = ("bounded", "biased", "shuffled", "omniscient", "proper")
EXPECTED = {
    "bounded": "Brier below the base model's and the base rate's; p near the table's q",
    "biased": "B tracks the bias: mean p about the shift above the bounded arm's, |p - q_A| "
              "small, Brier worse than bounded",
    "shuffled": "no gain: p about a constant (the median of the beliefs), Brier not below "
                "the base rate",
    "omniscient": "collapse towards 0 or 1 (the median verdict), Brier far above the base rate",
    "proper": "a ceiling: Brier at or below the bounded arm's",
}


def _args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="local", help="local, or hf/<model folder>")
    ap.add_argument("--table", default="divisors-polarity-width")
    ap.add_argument("--train-numbers", type=int, default=30)
    ap.add_argument("--held-out-numbers", type=int, default=30)
    ap.add_argument("--steps", type=int, default=120)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--learning-rate", type=float, default=1e-3)
    ap.add_argument("--top-layers", type=int, default=2,
                    help="adapters in this many top decoder layers")
    ap.add_argument("--rank", type=int, default=4)
    ap.add_argument("--shift", type=float, default=0.25)
    ap.add_argument("--shuffle-seed", type=int, default=7)
    ap.add_argument("--epsilon", type=float, default=0.0,
                    help="the prover's threshold in eq. 13 (0: the sign of q - p)")
    ap.add_argument("--arms", default=",".join(ARMS))
    ap.add_argument("--seeds", default="0,1")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch threads (on 2 shared cores, 1 thread ran a step 4x faster "
                         "than 2)")
    ap.add_argument("--draws", type=int, default=2000, help="bootstrap draws")
    ap.add_argument("--cache-file", type=Path, default=None,
                    help="keep the frozen layers' outputs here (default: in --out), so that a "
                         "rerun of the same claims and top layers skips computing them")
    ap.add_argument("--out", type=Path, default=None)
    return ap.parse_args()


def arm_settings(arm: str, table: str, shift: float, shuffle_seed: int) -> BeliefSettings | None:
    """The ``prover.beliefs`` section of an arm's prover (None: no prover, the proper arm)."""
    return {
        "bounded": BeliefSettings(source="table", table=table),
        "biased": BeliefSettings(source="table", table=table, shift=shift),
        "shuffled": BeliefSettings(source="table", table=table, shuffle_seed=shuffle_seed),
        "omniscient": BeliefSettings(source="oracle"),
        "proper": None,
    }[arm]


# ------------------------------------------------------------------------ statistics
def slope(ps: Sequence[float], ts: Sequence[float]) -> float | None:
    """Least-squares slope of the truth on p (1: calibrated in the large; None: p about
    constant, its standard deviation under 0.01, where a slope says nothing)."""
    n = len(ps)
    mp, mt = sum(ps) / n, sum(ts) / n
    var = sum((p - mp) ** 2 for p in ps)
    if var < 1e-4 * n:
        return None
    return sum((p - mp) * (t - mt) for p, t in zip(ps, ts, strict=True)) / var


def _clamped(p: float) -> float:
    return min(1 - 1e-6, max(1e-6, p))


STATS: dict[str, Callable[[list[dict[str, float]]], float | None]] = {
    "brier": lambda rs: sum((r["p"] - r["t"]) ** 2 for r in rs) / len(rs),
    "log_loss": lambda rs: -sum(math.log(_clamped(r["p"]) if r["t"] else 1 - _clamped(r["p"]))
                                for r in rs) / len(rs),
    "slope": lambda rs: slope([r["p"] for r in rs], [r["t"] for r in rs]),
    "mean_p": lambda rs: sum(r["p"] for r in rs) / len(rs),
    "share_mid": lambda rs: sum(0.1 < r["p"] < 0.9 for r in rs) / len(rs),
    "abs_p_q": lambda rs: sum(abs(r["p"] - r["q"]) for r in rs) / len(rs),
}


def figures(rows: list[dict[str, Any]], draws: int, seed: int = 0) -> dict[str, Any]:
    """Every statistic of ``rows`` (p, t, q, number) with a 95 % interval from resampling the
    numbers."""
    clusters: dict[int, list[dict[str, Any]]] = {}
    for r in rows:
        clusters.setdefault(r["number"], []).append(r)
    groups = list(clusters.values())
    rng = random.Random(seed)
    samples: dict[str, list[float]] = {k: [] for k in STATS}
    for _ in range(draws):
        pick = [r for _ in groups for r in groups[rng.randrange(len(groups))]]
        for k, f in STATS.items():
            v = f(pick)
            if v is not None:
                samples[k].append(v)
    out: dict[str, Any] = {}
    for k, f in STATS.items():
        s = sorted(samples[k])
        v = f(rows)
        out[k] = {"value": None if v is None else round(v, 4),
                  "low": round(s[int(0.025 * len(s))], 4) if s else None,
                  "high": round(s[min(len(s) - 1, int(0.975 * len(s)))], 4) if s else None}
    return out


def paired_difference(a: list[dict[str, Any]], b: list[dict[str, Any]], draws: int,
                      seed: int = 0) -> dict[str, float]:
    """Brier(a) − Brier(b) on the same cases, with a 95 % interval over numbers (positive:
    b is better)."""
    clusters: dict[int, list[float]] = {}
    for ra, rb in zip(a, b, strict=True):
        clusters.setdefault(ra["number"], []).append((ra["p"] - ra["t"]) ** 2
                                                     - (rb["p"] - rb["t"]) ** 2)
    groups = list(clusters.values())
    rng = random.Random(seed)
    stats = []
    for _ in range(draws):
        pick = [groups[rng.randrange(len(groups))] for _ in groups]
        stats.append(sum(sum(g) for g in pick) / sum(len(g) for g in pick))
    stats.sort()
    n = sum(len(g) for g in groups)
    return {"difference": round(sum(sum(g) for g in groups) / n, 4),
            "low": round(stats[int(0.025 * draws)], 4),
            "high": round(stats[min(draws - 1, int(0.975 * draws))], 4)}


def _cell(f: dict[str, Any], k: str, digits: int = 3) -> str:
    v = f[k]
    if v["value"] is None:
        return "n/a"
    lo = "" if v["low"] is None else f" [{v['low']:.{digits}f}, {v['high']:.{digits}f}]"
    return f"{v['value']:.{digits}f}{lo}"


def markdown(result: dict[str, Any]) -> str:
    lines = ["| arm | seed | Brier | log loss | slope | mean p | p in (0.1, 0.9) | "
             "mean abs(p - q_A) |", "|---|---|---|---|---|---|---|---|"]
    for name, f in result["held_out"].items():
        arm, _, seed = name.partition("@")
        lines.append(f"| {arm} | {seed or '-'} | {_cell(f, 'brier', 4)} | "
                     f"{_cell(f, 'log_loss')} | {_cell(f, 'slope', 2)} | "
                     f"{_cell(f, 'mean_p')} | {_cell(f, 'share_mid', 2)} | "
                     f"{_cell(f, 'abs_p_q')} |")
    return "\n".join(lines)


# ------------------------------------------------------------------------------ main
def main() -> None:
    a = _args()
    t0 = time.perf_counter()
    out = a.out or Path(tempfile.mkdtemp(prefix="bench-debate-reward-"))
    out.mkdir(parents=True, exist_ok=True)
    arms = [x for x in a.arms.split(",") if x]
    seeds = [int(x) for x in a.seeds.split(",") if x]
    for arm in arms:
        if arm not in ARMS:
            raise SystemExit(f"unknown arm {arm!r}: choose from {', '.join(ARMS)}")
    table = load_table(a.table)
    split = leaf_split(table, a.train_numbers, a.held_out_numbers)
    train_claims, train_texts, held_texts = split.train_claims, split.train_texts, split.held_texts
    train_prompts, held_prompts = split.train_prompts, split.held_prompts
    verdicts = leaf_verdicts(train_texts)
    held_truth = [int(claim_truth(t, {"problem": "divisors"}) or 0) for t in held_texts]
    bounded_q = prover_beliefs(held_texts, make_source(arm_settings("bounded", a.table, 0, 0)))

    weights = model_dir(a.model)
    cfg = json.loads((weights / "config.json").read_text())
    n_layers = int(cfg.get("num_hidden_layers") or cfg["text_config"]["num_hidden_layers"])
    lora = LoraSettings(r=a.rank, alpha=2 * a.rank, target_modules=PROJECTIONS,
                        layers=list(range(max(0, n_layers - a.top_layers), n_layers)))
    result: dict[str, Any] = {
        "model": a.model, "start": "base model (no adapter)", "table": table.to_json(),
        "arms": arms, "seeds": seeds, "expected": {k: EXPECTED[k] for k in arms},
        "train": {"numbers": len({c.n for c in train_claims}), "claims": len(train_claims),
                  "cases": len(train_texts),
                  "verdict_true_share": round(sum(verdicts) / len(verdicts), 4)},
        "held_out": {}, "held_out_cases": len(held_texts),
        "held_out_true_share": round(sum(held_truth) / len(held_truth), 4),
        "shift": a.shift, "shuffle_seed": a.shuffle_seed, "epsilon": a.epsilon,
        "differences": {}, "train_log": {}, "load_1min": [round(os.getloadavg()[0], 2)],
        "seconds": {},
    }
    rows_of: dict[str, list[dict[str, Any]]] = {}

    def rows(ps: Sequence[float], qs: Sequence[float]) -> list[dict[str, Any]]:
        return [{"p": float(p), "t": t, "q": float(q), "number": number_of(c)}
                for p, t, q, c in zip(ps, held_truth, qs, held_texts, strict=True)]

    def record(name: str, ps: Sequence[float], qs: Sequence[float]) -> None:
        rows_of[name] = rows(ps, qs)
        result["held_out"][name] = figures(rows_of[name], a.draws)
        result["wall_s"] = round(time.perf_counter() - t0, 1)
        result["load_1min"].append(round(os.getloadavg()[0], 2))
        (out / "result.json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
        (out / "held-out.json").write_text(json.dumps(
            {"claims": held_texts, "truth": held_truth,
             "p": {k: [r["p"] for r in v] for k, v in rows_of.items()}}) + "\n",
            encoding="utf-8")
        f = result["held_out"][name]
        print(f"{name}: Brier {_cell(f, 'brier', 4)} mean p {_cell(f, 'mean_p')} "
              f"|p - q_A| {_cell(f, 'abs_p_q')} ({result['wall_s']} s)", flush=True)

    base = sum(held_truth) / len(held_truth)
    record("constant base rate", [base] * len(held_texts), bounded_q)
    record("bounded prover's own q", bounded_q, bounded_q)
    with torch_threads(a.threads):
        t1 = time.perf_counter()
        trainer = LeafTrainer(weights, lora, train_prompts + held_prompts,
                              cache_file=a.cache_file or out / "frozen-layers.pt")
        result["seconds"]["load_and_cache"] = round(time.perf_counter() - t1, 1)
        trainer.reset(0)
        record("base model", trainer.score(held_prompts), bounded_q)
        # the cached frozen layers give the whole model's probabilities (to float rounding)
        some = held_prompts[:8]
        result["cache_check_max_abs_diff"] = max(
            abs(x - y) for x, y in zip(trainer.score(some), trainer.score(some, cached=False),
                                       strict=True))
        for seed in seeds:
            for arm in arms:
                bs = arm_settings(arm, a.table, a.shift, a.shuffle_seed)
                source = make_source(bs) if bs is not None else None
                qs = prover_beliefs(train_texts, source) if source is not None else None
                cases = [LeafCase(t, p, v, None if qs is None else qs[i])
                         for i, (t, p, v) in enumerate(zip(train_texts, train_prompts, verdicts,
                                                           strict=True))]
                rs = RewardTrainSettings(
                    steps=a.steps, batch_size=a.batch_size, learning_rate=a.learning_rate,
                    lora=lora, objective="brier" if arm == "proper" else "payoff",
                    epsilon=a.epsilon, threads=a.threads)
                name = f"{arm}@{seed}"
                path = out / f"{arm}-seed{seed}.jsonl"
                path.unlink(missing_ok=True)

                def on_log(e: dict[str, Any], path: Path = path, name: str = name) -> None:
                    with path.open("a", encoding="utf-8") as f:
                        f.write(json.dumps(e) + "\n")
                    if e["step"] % 10 == 0 or e["step"] == 1:
                        print(f"{name}: step {e['step']} objective {e['objective']:.4f} "
                              f"mean p {e['mean_p']:.3f} ({e['step_s']} s)", flush=True)

                t1 = time.perf_counter()
                log = trainer.train(cases, rs, seed=seed, on_log=on_log)
                result["seconds"][name] = round(time.perf_counter() - t1, 1)
                result["train_log"][name] = {
                    "first_10_mean_p": round(sum(e["mean_p"] for e in log[:10]) / 10, 4),
                    "last_10_mean_p": round(sum(e["mean_p"] for e in log[-10:]) / 10, 4),
                    "last_10_objective": round(sum(e["objective"] for e in log[-10:]) / 10, 4),
                }
                held_q = (prover_beliefs(held_texts, source) if source is not None
                          else bounded_q)
                record(name, trainer.score(held_prompts), held_q)
                for ref in ("base model", "constant base rate"):
                    result["differences"][f"{ref} - {name}"] = paired_difference(
                        rows_of[ref], rows_of[name], a.draws)
                result["settings"] = settings_record(rs)
                (out / "result.json").write_text(json.dumps(result, indent=1) + "\n",
                                                 encoding="utf-8")
    result["wall_s"] = round(time.perf_counter() - t0, 1)
    (out / "result.json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(markdown(result))
    for k, d in result["differences"].items():
        print(f"Brier {k}: {d['difference']:+.4f} [{d['low']:+.4f}, {d['high']:+.4f}]")
    print(f"wall {result['wall_s']} s; out {out}")


if __name__ == "__main__":
    main()
