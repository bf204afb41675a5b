"""Self-play of both seats in which the prover writes its own decompositions, on the embedded
language model (llmdebate/training/text_self_play.py).

    python benchmarks/bench_text_self_play.py --steps 2 --seeds 0 --arms self-play

Both seats are the base model (``--model local``: Gemma 3 270M, no adapter) with a fresh LoRA
adapter each in its top layers. One case is a debate of depth 1, width 2 on an interval claim
x: A's answer and direction from its belief q_A(x), B's p_1, A's decomposition of x sampled
from A's adapter under the decomposition schema (xgrammar, as the local backend constrains
it), B's conditional b's on A's subclaims, E[M_D] exactly, A's recursion to
argmax |b_i − q_A(y_i)| and the leaf judge's verdict O on y_j (the oracle: the claim's exact
truth). Every reward is core/scoring.py's, in expectation over B's draws. Algorithm 1's
order: one A step (``--group`` decompositions for each of ``--batch`` claims: a policy
gradient with TRL's group advantage of the return to go r_1 + r_0 in the decompose act's
frame, and A's beliefs on their mixed-direction expected payoff), then ``--estimator-steps``
B steps on −R_A. The arms:

* ``self-play``: both seats learn, the oracle leaf judge;
* ``control-shuffled``: the same, the leaf judge's verdicts on the training claims those of
  another claim's exact split (a seeded permutation of the training claims);
* ``frozen-estimator``: A learns against the base model as B;
* ``from-adapter``: self-play with the shipped decomposing adapter
  (``llmdebate/adapters/divisors-prover``) merged into the base weights of both seats first
  (does learning keep its exact splits, or drift to inexact ones that pay more?);
* ``step-claim``: self-play with each split's step as a claim (docs/protocol.md, "The step as
  a claim"): B gives it a probability, E[r_1] uses E[M'], the recursion may choose it.

``--decoder batched`` (the default) decodes every claim's group in one batch
(llmdebate/training/text_decode.py); ``one-row`` is the reference decoder. ``--precision``
keeps the frozen weights in float32 (the default), bfloat16 or int8
(llmdebate/training/precision.py).

Claims: as the leaf benchmarks draw them (training numbers seed 1, held-out numbers seed 2,
apart from each other, from the bounded table's numbers and from the debate dataset's; the
top claim [2, top) and a half of it per number, either polarity). Every round (``--round-every``
A steps): :func:`llmdebate.training.text_self_play_figures.round_figures` on the held-out
claims, 95 % intervals over their numbers.

Writes ``--out`` (default a temporary folder): ``result.json`` (rewritten after every round),
``<arm>-seed<s>.jsonl`` (one line per round); prints Markdown tables. ``--time-budget``:
stops after the round in which it runs out, results written.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
import time
from pathlib import Path
from typing import Any

from llmdebate.beliefs import load_table
from llmdebate.models.grammar_cache import GrammarCache
from llmdebate.prompts import Prompts
from llmdebate.report.judge_audit import hacking_line
from llmdebate.training.bounded import estimation_claims, table_numbers
from llmdebate.training.claims import IntervalClaim, check_apart
from llmdebate.training.config import LoraSettings
from llmdebate.training.debate_reward import LeafTrainer
from llmdebate.training.decompose_eval import decompose_prompt
from llmdebate.training.estimate_eval import estimate_prompt
from llmdebate.training.precision import PRECISIONS, Head
from llmdebate.training.self_play import TwoSeats
from llmdebate.training.sft import torch_threads
from llmdebate.training.text_self_play import (
    TextCase,
    TextPlaySettings,
    exact_split,
    flat,
    oracle_verdicts,
    shuffled_verdicts,
    truth,
)
from llmdebate.training.text_self_play_figures import round_figures
from llmdebate.training.text_self_play_steps import Decomposer, play
from llmdebate.training.update import model_dir

PROJECTIONS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
ARMS = ("self-play", "control-shuffled", "frozen-estimator", "from-adapter", "step-claim")
ADAPTER = Path(__file__).resolve().parents[1] / "llmdebate" / "adapters" / "divisors-prover"
EXPECTED = {
    "self-play": "A's greedy splits stay valid (the grammar) and almost never exact (the base "
                 "model's greedy exact-split rate is 0/40, and exactness is paid only through "
                 "B's consistency in r_1, weighted by r = 0.025 beside a leaf term up to 1): "
                 "the exact-split rate stays near 0; honest minus dishonest > 0 in every "
                 "round (by construction before the oracle judge: the honest prover's leaf "
                 "payoff is |g - b_j| >= 0, the liar's <= 0); at few A steps no figure moves "
                 "beyond its round-0 interval; with many steps, as at the leaf, the Brier of "
                 "p_1, of b_j and of q_A fall below round 0's and B's consistency improves",
    "control-shuffled": "no gain: the Brier of p_1, b_j and q_A not below round 0's beyond "
                        "the intervals; the exact-split rate as in self-play (near 0); "
                        "honest minus dishonest > 0 (the figures use the oracle judge)",
    "frozen-estimator": "B fixed at the base model: p_1, the b's, B's consistency and "
                        "Brier of p_1 equal round 0's in every round (to float rounding); "
                        "A's payoff against it rises with A's steps where A learns anything "
                        "(the leaf term dominates); the exact-split rate near 0",
    "from-adapter": "round 0: A's greedy splits mostly exact (the adapter's held-out exact "
                    "rate); nothing in the reward pays exactness beyond r = 0.025 times B's "
                    "consistency, so if A learns at all its exact-split rate falls and its "
                    "payoff on inexact splits exceeds what the exact ones earn; a rate that "
                    "stays at round 0's says the reward does not reach the split in this "
                    "many steps",
    "step-claim": "as self-play, and B learns to give inexact steps a low probability "
                  "(b_step on A's own inexact splits falls below its exact ones'); A's "
                  "payoff from inexact splits then falls below self-play's, and its "
                  "exact-split rate is no lower than self-play's",
}


def _args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--model", default="local", help="local, or hf/<model folder>")
    ap.add_argument("--device", default="cpu", help="cpu or cuda")
    ap.add_argument("--table", default="divisors-polarity-width",
                    help="the bounded table whose numbers the claims keep apart from")
    ap.add_argument("--train-numbers", type=int, default=30)
    ap.add_argument("--held-out", type=int, default=4,
                    help="held-out numbers (two claims each)")
    ap.add_argument("--steps", type=int, default=4, help="A's steps per run")
    ap.add_argument("--group", type=int, default=4, help="decompositions per claim")
    ap.add_argument("--batch", type=int, default=2, help="claims per A step")
    ap.add_argument("--estimator-steps", type=int, default=2, help="B's steps per A step")
    ap.add_argument("--round-every", type=int, default=2, help="A steps per round")
    ap.add_argument("--learning-rate", type=float, default=1e-3)
    ap.add_argument("--temperature", type=float, default=0.1,
                    help="tau of A's mixed directions sigma((q_A - p) / tau)")
    ap.add_argument("--max-tokens", type=int, default=380,
                    help="a decomposition's token budget")
    ap.add_argument("--top-layers", type=int, default=2)
    ap.add_argument("--rank", type=int, default=4)
    ap.add_argument("--shuffle-seed", type=int, default=7)
    ap.add_argument("--arms", default="self-play,control-shuffled,frozen-estimator",
                    help=f"comma-separated, of {', '.join(ARMS)} (from-adapter and "
                         "step-claim each run alone)")
    ap.add_argument("--seeds", default="0,1")
    ap.add_argument("--threads", type=int, default=1, help="torch threads on the CPU")
    ap.add_argument("--draws", type=int, default=1000, help="bootstrap draws")
    ap.add_argument("--time-budget", type=float, default=None,
                    help="seconds: stop after the round in which they run out")
    ap.add_argument("--grammar-dir", type=Path,
                    default=Path.home() / ".cache" / "llmdebate" / "grammars")
    ap.add_argument("--cache-file", type=Path, default=None,
                    help="keep the frozen layers' outputs here (default: in --out)")
    ap.add_argument("--decoder", default="batched", choices=["batched", "one-row"])
    ap.add_argument("--precision", default="float32", choices=list(PRECISIONS))
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args()
    for name in ("train_numbers", "held_out", "steps", "group", "batch", "round_every",
                 "max_tokens", "top_layers", "rank", "draws"):
        if getattr(a, name) < 1:
            ap.error(f"--{name.replace('_', '-')}: must be >= 1 (got {getattr(a, name)})")
    if a.group < 2:
        ap.error(f"--group: must be >= 2 for a group advantage (got {a.group})")
    for arm in a.arms.split(","):
        if arm and arm not in ARMS:
            ap.error(f"--arms: unknown arm {arm!r}: choose from {', '.join(ARMS)}")
    chosen = [x for x in a.arms.split(",") if x]
    for alone in ("step-claim", "from-adapter"):
        if alone in chosen and chosen != [alone]:
            ap.error(f"--arms: {alone} runs alone (got {a.arms!r})")
    if a.device not in ("cpu", "cuda") and not a.device.startswith("cuda:"):
        ap.error(f"--device: cpu or cuda (got {a.device!r})")
    return a


def cases(claims: list[IntervalClaim], prompts: Prompts, shuffle_seed: int | None,
          step: bool = False) -> list[TextCase]:
    """The claims as cases; with ``shuffle_seed`` each reads another case's verdicts;
    ``step``: the exact splits with their step as a claim."""
    order = list(range(len(claims)))
    if shuffle_seed is not None:
        random.Random(shuffle_seed).shuffle(order)
    return [TextCase(c, estimate_prompt(prompts, c.text), decompose_prompt(prompts, c),
                     int(truth(c.text) or 0), c.n, exact_split(prompts, c, step), order[i])
            for i, c in enumerate(claims)]


def merged_weights(weights: Path, out: Path) -> Path:
    """The base weights with the shipped decomposing adapter merged in, saved in ``out``
    (once: kept there for later runs)."""
    folder = out / "merged-divisors-prover"
    if (folder / "config.json").exists():
        return folder
    import peft
    import torch
    import transformers

    base = transformers.AutoModelForCausalLM.from_pretrained(str(weights), dtype=torch.float32)
    merged = peft.PeftModel.from_pretrained(base, str(ADAPTER)).merge_and_unload()
    merged.save_pretrained(str(folder))
    transformers.AutoTokenizer.from_pretrained(str(weights)).save_pretrained(str(folder))
    return folder


def _ci(f: dict[str, Any] | None, digits: int = 3) -> str:
    if f is None:
        return "–"
    return f"{f['value']:.{digits}f} [{f['low']:.{digits}f}, {f['high']:.{digits}f}]"


def _f(x: float | None, digits: int = 3) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def markdown(result: dict[str, Any]) -> str:
    lines = ["| arm | seed | round (A, B steps) | A payoff R_A [95 %] | B payoff | honest − "
             "dishonest [95 %] | exact − own split | greedy: valid, exact, rule right, judged "
             "| sampled: exact, rule right | R_A on inexact greedy splits (n) | sampled "
             "inexact return | leaf accuracy b_j, q_A, judge | recursion to B's worst | "
             "Brier p_1 [95 %] | Brier b_j | Brier q_A(x) | consistency: exact, own | b_step "
             "own | s |", "|" + "---|" * 19]
    for name, hist in result["rounds"].items():
        arm, _, seed = name.partition("@")
        for h in hist:
            lines.append(
                f"| {arm} | {seed} | {h['round']} ({h['prover_steps']}, {h['estimator_steps']})"
                f" | {_ci(h['prover_payoff'])} | {h['estimator_payoff']['value']:.3f} | "
                f"{_ci(h['honest_minus_dishonest'])} | {_ci(h['exact_minus_own'])} | "
                f"{h['valid']:.2f}, {h['exact_split']:.2f}, {h['rule_right']:.2f}, "
                f"{h['judged']:.2f} | {_f(h.get('train_exact_split'), 2)}, "
                f"{_f(h.get('train_rule_right'), 2)} | {_f(h.get('inexact_payoff'))} "
                f"({h.get('inexact_judged', 0)}) | {_f(h.get('train_inexact_return'))} | "
                f"{_f(h['leaf_accuracy_estimator'], 2)}, "
                f"{_f(h['leaf_accuracy_prover'], 2)}, {_f(h['leaf_accuracy_judge'], 2)} | "
                f"{_f(h.get('recursion_to_worst'), 2)} | "
                f"{_ci(h['brier_p1'], 4)} | {_f(h['brier_leaf_b'], 4)} | "
                f"{_ci(h['brier_q'], 4)} | {h['consistency']:.3f}, "
                f"{_f(h.get('consistency_own'))} | {_f(h.get('b_step_own'))} | "
                f"{h['seconds']} |")
    return "\n".join(lines)


def _split(a: argparse.Namespace) -> tuple[list[IntervalClaim], list[IntervalClaim]]:
    apart = table_numbers(load_table(a.table))
    held = estimation_claims(a.held_out, 2, exclude=apart)
    train = estimation_claims(a.train_numbers, 1, exclude=apart | {c.n for c in held})
    check_apart(train, held, set())
    return train, held


def _lora(weights: Path, a: argparse.Namespace) -> LoraSettings:
    cfg = json.loads((weights / "config.json").read_text())
    n = int(cfg.get("num_hidden_layers") or cfg["text_config"]["num_hidden_layers"])
    return LoraSettings(r=a.rank, alpha=2 * a.rank, target_modules=PROJECTIONS,
                        layers=list(range(max(0, n - a.top_layers), n)))


def main() -> None:
    a = _args()
    t0 = time.perf_counter()
    out = a.out or Path(tempfile.mkdtemp(prefix="bench-text-self-play-"))
    out.mkdir(parents=True, exist_ok=True)
    arms = [x for x in a.arms.split(",") if x]
    seeds = [int(x) for x in a.seeds.split(",") if x]
    prompts = Prompts()
    train_claims, held_claims = _split(a)
    step = arms == ["step-claim"]
    train, held = (cases(train_claims, prompts, None, step),
                   cases(held_claims, prompts, None, step))
    shuffled = cases(train_claims, prompts, a.shuffle_seed)
    weights = model_dir(a.model)
    lora = _lora(weights, a)
    if arms == ["from-adapter"]:
        weights = merged_weights(weights, out)
    result: dict[str, Any] = {
        "model": a.model, "device": a.device, "start": "base model (no adapter) in both seats",
        "arms": arms, "seeds": seeds, "expected": {k: EXPECTED[k] for k in arms},
        "train": {"numbers": len({c.n for c in train_claims}), "claims": len(train)},
        "held_out": {"numbers": len({c.n for c in held_claims}), "claims": len(held),
                     "true_share": sum(c.truth for c in held) / len(held)},
        "args": {k: str(v) for k, v in vars(a).items()}, "rounds": {}, "seconds": {},
        "stopped": None, "load_1min": [round(os.getloadavg()[0], 2)],
    }

    def write() -> None:
        result["wall_s"] = round(time.perf_counter() - t0, 1)
        (out / "result.json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")

    def over() -> bool:
        return a.time_budget is not None and time.perf_counter() - t0 > a.time_budget

    cached = [c.prompt for c in train + held] + flat([c.exact for c in held]) + [
        y for c in held for y in c.exact.prover_prompts]
    with torch_threads(a.threads if a.device == "cpu" else None):
        t1 = time.perf_counter()
        trainer = LeafTrainer(weights, lora, cached, device=a.device,
                              cache_file=a.cache_file or out / "frozen-layers.pt",
                              precision=a.precision)
        d = Decomposer(TwoSeats(trainer, lora), GrammarCache(a.grammar_dir), a.device,
                       a.max_tokens, prompts, a.decoder, Head(trainer.model, a.precision),
                       step)
        result["seconds"]["load_and_cache"] = round(time.perf_counter() - t1, 1)
        for seed in seeds:
            for arm in arms:
                if over() and result["rounds"]:  # the first run gets at least round 0
                    result["stopped"] = result["stopped"] or f"time budget before {arm}@{seed}"
                    continue
                _run(a, d, arm, seed, train, shuffled, held, lora, result, out, write, over)
    write()
    print(markdown(result))
    print(f"wall {result['wall_s']} s; out {out}")


def _run(a: argparse.Namespace, d: Decomposer, arm: str, seed: int, train: list[TextCase],
         shuffled: list[TextCase], held: list[TextCase], lora: LoraSettings,
         result: dict[str, Any], out: Path, write: Any, over: Any) -> None:
    s = TextPlaySettings(
        prover_steps=a.steps, estimator_steps=a.estimator_steps, batch_size=a.batch,
        group=a.group, learning_rate=a.learning_rate, temperature=a.temperature,
        max_tokens=a.max_tokens, round_every=a.round_every,
        train_estimator=arm != "frozen-estimator", lora=lora, draws=a.draws,
        step_claim=arm == "step-claim")
    name = f"{arm}@{seed}"
    path = out / f"{arm}-seed{seed}.jsonl"
    path.unlink(missing_ok=True)
    result["rounds"][name] = []
    result["settings"] = {k: v for k, v in vars(s).items() if k != "lora"}

    def on_log(e: dict[str, Any]) -> None:
        with path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(e) + "\n")
        result["rounds"][name].append(e)
        write()
        print(f"{name} round {e['round']} ({e['prover_steps']} A steps, {e['seconds']} s): "
              f"R_A {e['prover_payoff']['value']:.4f} honest-dishonest "
              f"{e['honest_minus_dishonest']['value']:.4f} valid {e['valid']:.2f} exact "
              f"{e['exact_split']:.2f} Brier p1 {e['brier_p1']['value']:.4f} q "
              f"{e['brier_q']['value']:.4f} consistency {e['consistency']:.3f}", flush=True)

    t1 = time.perf_counter()
    tr = shuffled if arm == "control-shuffled" else train
    verdicts = shuffled_verdicts(shuffled) if arm == "control-shuffled" else oracle_verdicts
    play(d, tr, held, s, seed=seed, verdicts=verdicts,
         figures=lambda: round_figures(d, held, s), on_log=on_log, stop=over)
    result["seconds"][name] = round(time.perf_counter() - t1, 1)
    result.setdefault("lines", {})[name] = hacking_line(result["rounds"][name])
    print(f"{name}: {result['lines'][name]}", flush=True)
    if over():
        result["stopped"] = result["stopped"] or f"time budget during {name}"
    result["load_1min"].append(round(os.getloadavg()[0], 2))
    write()


if __name__ == "__main__":
    main()
