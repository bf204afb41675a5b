"""Learning curves of debaters trained only by the protocol's reward (docs/training-dynamics.md).

Run: ``nice -n 10 .venv/bin/python benchmarks/learn_formal.py --out docs/learning``
(``--experiments a,b --seeds 0,1,2,3,4 --tiny`` to choose). Writes one PNG per experiment
and ``learning.json`` (every curve, the seeds, the seconds each run took; experiments not
rerun are kept), and prints the final values across seeds.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

from llmdebate.core import scoring
from llmdebate.formal.learning.curves import Point, joint_summary, soundness_threshold
from llmdebate.formal.learning.estimator import LearnedEstimator
from llmdebate.formal.learning.experiments import EXPERIMENTS, FULL, TINY, Arm, arms
from llmdebate.formal.learning.naive_train import NaiveRun, train_naive
from llmdebate.formal.learning.stackelberg import Run, train

ZOOM = "payoff near the bound"
MARGIN = "payoff above the threshold"
PANELS = {
    "pe": [
        ("payoff", "A's payoff / r^(d+1)"),
        (ZOOM, "A's payoff / r^(d+1), zoomed (linear)"),
        ("accuracy", "A's answer accuracy"),
        ("brier", "B's Brier score"),
        ("advantage", "B's distinguishability advantage"),
    ],
    "naive": [("payoff", "A's expected payoff (±1)"), ("win", "A's win probability")],
}


def columns(points: list[dict[str, float]]) -> dict[str, list[float]]:
    """A curve as one list per quantity (index 0: the pair at init)."""
    return {k: [pt[k] for pt in points] for k in points[0]}


def _row(p: Point, run: Run) -> dict[str, float]:
    r = scoring.reward_ratio(run.epsilon, run.rho)
    return {**asdict(p), "threshold": soundness_threshold(p, r, run.problem.depth)}


def _joints(run: Run, theta: np.ndarray) -> dict[str, dict[str, float]]:
    """The final B's round-1 joint on the first true and the first false instance."""
    est = LearnedEstimator(run.problem, run.problem.n)
    est.set_params(theta[None, :])
    truth = run.problem.top_truth()
    return {f"top {t}": joint_summary(est, int(np.flatnonzero(truth == t)[0]))
            for t in (1, 0) if np.any(truth == t)}


def run_arm(arm: Arm) -> dict[str, Any]:
    curves: list[dict[str, list[float]]] = []
    refined: list[dict[str, float]] = []
    params: list[dict[str, list[float]]] = []
    joints: list[dict[str, dict[str, float]]] = []
    seconds, seeds = [], []
    for run in arm.runs:
        if isinstance(run, NaiveRun):
            nc = train_naive(run)
            curves.append(columns([asdict(p) for p in nc.points]))
            params.append({"prover": nc.params.round(4).tolist()})
            took = nc.seconds
        else:
            c = train(run)
            curves.append(columns([_row(p, run) for p in c.points]))
            if c.refined is not None:
                refined.append(_row(c.refined, run))
            params.append({"prover": c.prover_params.round(4).tolist(),
                           "estimator": c.estimator_params.round(4).tolist()})
            if run.estimator == "learned":
                joints.append(_joints(run, c.estimator_params))
            took = c.seconds
        seconds.append(round(took, 2))
        seeds.append(run.seed)
        last = {k: v[-1] for k, v in curves[-1].items()}
        print(f"  {arm.label} seed {run.seed}: {took:.1f} s, last {last}"
              + (f", refined {refined[-1]}" if refined else ""), flush=True)
    kind = "naive" if isinstance(arm.runs[0], NaiveRun) else "pe"
    extra: dict[str, Any] = {}
    first = arm.runs[0]
    if isinstance(first, Run):
        r = scoring.reward_ratio(first.epsilon, first.rho)
        d = first.problem.depth
        extra = {"r": r, "depth": d, "epsilon": first.epsilon, "variant": first.variant,
                 "instances": first.problem.n, "prover": first.prover,
                 "completeness_bound": 1.0 - first.epsilon,
                 "accuracy_target": 1.0 - 4.0 * first.epsilon}
    else:
        extra = {"instances": first.problem.n, "leaves": first.problem.width ** first.problem.depth}
    return {"label": arm.label, "kind": kind, "seeds": seeds, "seconds": seconds,
            "curves": curves, "refined": refined, "params": params, "b_joint": joints,
            **extra}


def _series(curve: dict[str, list[float]], key: str) -> list[float]:
    if key == MARGIN:
        return list(np.subtract(curve["payoff"], curve["threshold"]))
    return curve["payoff" if key == ZOOM else key]


def _decorate(ax: Any, key: str, name: str, first: dict[str, Any]) -> None:
    """Scales and reference lines of one panel."""
    if name == "c":  # the arms with B's top number held run ten times longer
        ax.set_xscale("symlog", linthresh=100)
    if key == ZOOM:
        ax.set_ylim(-1.0, 3.0)
    if key == "payoff" and first["kind"] == "pe":
        ax.set_yscale("symlog", linthresh=1.0)
    if key in ("payoff", ZOOM) and first["kind"] == "pe" and name != "d":
        ax.axhline(first["completeness_bound"], color="k", ls="--", lw=0.8,
                   label="1 − ε (completeness bound)" if key == "payoff" else None)
    if key == "accuracy" and name == "a":
        ax.axhline(first["accuracy_target"], color="k", ls=":", lw=0.8, label="1 − 4ε")
    if key == MARGIN:
        ax.axhline(0.0, color="k", ls="--", lw=0.8)
    if key in ("brier", "advantage", MARGIN):
        ax.set_yscale("symlog", linthresh=1e-3)


def plot(name: str, results: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = PANELS[results[0]["kind"]]
    if name == "d":
        keys = [*keys[:2], (MARGIN, "A's payoff − soundness threshold (< 0: below)"), *keys[2:]]
    fig, axes = plt.subplots(1, len(keys), figsize=(4.2 * len(keys), 4.2))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ci, res in enumerate(results):
        a_learns = res["kind"] == "naive" or res["prover"].startswith(("learned", "observed"))
        for si, curve in enumerate(res["curves"]):
            for ax, (key, title) in zip(axes, keys, strict=True):
                ys = _series(curve, key)
                ax.plot(range(len(ys)), ys, color=colors[ci % len(colors)], alpha=0.7, lw=1.2,
                        label=res["label"] if si == 0 else None)
                ax.set_title(title, fontsize=10)
                ax.set_xlabel("A's updates" if a_learns else "B's outer steps", fontsize=9)
    for ax, (key, _) in zip(axes, keys, strict=True):
        _decorate(ax, key, name, results[0])
    legend: dict[str, Any] = {}
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            legend.setdefault(lab, h)
    labels = list(legend)
    fig.legend(list(legend.values()), labels, loc="lower center", ncol=min(3, len(labels)),
               fontsize=8)
    fig.suptitle(f"experiment ({name}): {len(results[0]['seeds'])} training seeds per arm",
                 fontsize=10)
    rows = (len(labels) + 2) // 3
    fig.tight_layout(rect=(0.0, 0.06 * rows + 0.02, 1.0, 1.0))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def compact(obj: Any) -> Any:
    """Every float to 6 significant digits (the curves are read, not recomputed, from it)."""
    if isinstance(obj, float):
        return float(f"{obj:.6g}")
    if isinstance(obj, dict):
        return {k: compact(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [compact(v) for v in obj]
    return obj


def replot(out: Path) -> int:
    path = out / "learning.json"
    if not path.exists():
        print(f"--replot: {path} does not exist (run the experiments first)", file=sys.stderr)
        return 2
    for name, ex in json.loads(path.read_text())["experiments"].items():
        draw(name, ex["arms"], out)
    return 0


def draw(name: str, results: list[dict[str, Any]], out: Path) -> None:
    """One figure per kind of arm: learning-NAME.png, and learning-NAME-naive.png for the
    naive-debate arms of an experiment that has both kinds."""
    pe = [r for r in results if r["kind"] == "pe"]
    naive = [r for r in results if r["kind"] == "naive"]
    if pe:
        plot(name, pe, out / f"learning-{name}.png")
    if naive:
        plot(name, naive, out / (f"learning-{name}-naive.png" if pe else f"learning-{name}.png"))


REACHED_ACCURACY = 0.95  # the honest equilibrium, read off the last point of a curve:
REACHED_BRIER = 0.01  # A answers right and B is calibrated (naive: A answers right and wins)


def reached(curve: dict[str, list[float]], kind: str) -> bool:
    """Whether a run ended at (near) the honest equilibrium (:data:`REACHED_ACCURACY`)."""
    if curve["accuracy"][-1] < REACHED_ACCURACY:
        return False
    if kind == "naive":
        return curve["win"][-1] >= REACHED_ACCURACY
    return curve["brier"][-1] <= REACHED_BRIER


def _span(xs: list[float]) -> str:
    lo, hi = min(xs), max(xs)
    return f"{lo:.3g}" if f"{lo:.3g}" == f"{hi:.3g}" else f"{lo:.3g} to {hi:.3g}"


def table(summary: dict[str, Any], names: list[str]) -> str:
    """One Markdown row per arm of the experiments ``names``: the last point of every seed."""
    head = ("| arm | seeds | s per run | reached | A's accuracy | A's payoff | B's Brier / "
            "A's win | after B refined |\n|---|---|---|---|---|---|---|---|")
    rows = [head]
    for name in names:
        for arm in summary["experiments"][name]["arms"]:
            curves, kind = arm["curves"], arm["kind"]
            last = {k: [c[k][-1] for c in curves] for k in curves[0]}
            hits = sum(reached(c, kind) for c in curves)
            second = last["win"] if kind == "naive" else last["brier"]
            ref = [x["payoff"] for x in arm.get("refined") or []]
            rows.append(
                f"| ({name}) {arm['label']} | {','.join(map(str, arm['seeds']))} | "
                f"{_span(arm['seconds'])} | {hits} of {len(curves)} | {_span(last['accuracy'])}"
                f" | {_span(last['payoff'])} | {_span(second)} | {_span(ref) if ref else '—'} |"
            )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("docs/learning"))
    ap.add_argument("--experiments", default=",".join(EXPERIMENTS))
    ap.add_argument("--seeds", default="0,1,2,3,4")
    ap.add_argument("--tiny", action="store_true", help="the tests' sizes (seconds)")
    ap.add_argument("--replot", action="store_true", help="redraw the PNGs from learning.json")
    ap.add_argument("--table", action="store_true",
                    help="print the last points of --experiments from learning.json as Markdown")
    args = ap.parse_args(argv)
    if args.replot:
        return replot(args.out)
    if args.table:
        got = json.loads((args.out / "learning.json").read_text())
        print(table(got, [x for x in args.experiments.split(",") if x in got["experiments"]]))
        return 0
    names = [x for x in args.experiments.split(",") if x]
    bad = [x for x in names if x not in EXPERIMENTS]
    if bad:
        print(f"--experiments: unknown experiment {bad[0]!r} (one of {', '.join(EXPERIMENTS)})",
              file=sys.stderr)
        return 2
    try:
        seeds = [int(x) for x in args.seeds.split(",") if x]
    except ValueError:
        print(f"--seeds: expected comma-separated integers (got {args.seeds!r})", file=sys.stderr)
        return 2
    size = TINY if args.tiny else FULL
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "learning.json"
    summary: dict[str, Any] = {"experiments": {}}
    if path.exists():  # keep the experiments not rerun
        summary = json.loads(path.read_text())
    summary.update({"seeds": seeds, "size": asdict(size)})
    for name in names:
        start = time.perf_counter()
        print(f"experiment ({name})", flush=True)
        results = [run_arm(arm) for arm in arms(name, size, seeds)]
        draw(name, results, args.out)
        summary["experiments"][name] = {"seconds": round(time.perf_counter() - start, 1),
                                        "arms": results}
        for res in results:
            last = {k: np.array([c[k][-1] for c in res["curves"]]) for k in res["curves"][0]}
            best = np.array([min(c["payoff"]) for c in res["curves"]])
            cells = ", ".join(f"{k} {v.mean():.4g} [{v.min():.4g}, {v.max():.4g}]"
                              for k, v in last.items())
            print(f"  {res['label']}: final {cells}; lowest payoff seen "
                  f"{best.min():.4g}", flush=True)
            if res.get("refined"):
                ref = np.array([x["payoff"] for x in res["refined"]])
                print(f"    after B alone went on: payoff {ref.mean():.4g} "
                      f"[{ref.min():.4g}, {ref.max():.4g}]", flush=True)
        path.write_text(json.dumps(compact(summary), separators=(",", ":")) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
