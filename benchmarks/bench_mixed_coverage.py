"""Coverage of the mixed-effects row interval, old and new, on the same simulated studies.

Each dataset is a crossed judge × item study with a known row effect β (the design of
``tests/test_mixed_coverage.py``: every judge judges every item once; ``within``: the row
alternates so that every judge and item has both rows; ``between``: each judge judges in one
row only, so the row is confounded with half the judges). Per dataset:

* ``old``: statsmodels' ``BinomialBayesMixedGLM.fit_vb`` posterior mean ± 1.96 posterior sd
  (the interval the report gave before; statsmodels from the ``dev`` extra);
* ``new``: :func:`llmdebate.report.inference.mixed_logit` (Laplace maximum likelihood, Wald
  interval; Student's t with judges − rows degrees of freedom where each judge saw one row).

Prints, per design, each method's coverage of β with its binomial standard error, the mean
estimate, the spread of the estimates across datasets, the mean stated sd (or se), and the
CPU seconds per fit.

    .venv/bin/python benchmarks/bench_mixed_coverage.py --datasets 1000
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from llmdebate.report.inference import mixed_logit

INTERCEPT, BETA, SD_JUDGE, SD_ITEM = 0.3, 0.8, 0.5, 1.0


def simulate(
    rng: np.random.Generator, judges: int, items: int, design: str
) -> tuple[np.ndarray, list[str], list[str], list[str]]:
    j = np.repeat(np.arange(judges), items)
    i = np.tile(np.arange(items), judges)
    row = (j + i) % 2 if design == "within" else j % 2
    eta = (INTERCEPT + BETA * row + rng.normal(0.0, SD_JUDGE, judges)[j]
           + rng.normal(0.0, SD_ITEM, items)[i])
    y = (rng.random(len(eta)) < 1.0 / (1.0 + np.exp(-eta))).astype(float)
    return y, [("a", "b")[r] for r in row], [f"j{k}" for k in j], [f"i{k}" for k in i]


def old_interval(
    y: np.ndarray, rows: list[str], judges: list[str], items: list[str]
) -> tuple[float, float]:
    """(posterior mean, posterior sd) of the row effect from fit_vb, as the report had it."""
    import pandas as pd
    from statsmodels.genmod.bayes_mixed_glm import BinomialBayesMixedGLM

    frame = pd.DataFrame({"y": y, "row": pd.Categorical(rows, categories=["a", "b"]),
                          "judge": judges, "item": items})
    model = BinomialBayesMixedGLM.from_formula(
        "y ~ row", {"judge": "0 + C(judge)", "item": "0 + C(item)"}, frame)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = model.fit_vb(rng=0)
    return float(fit.fe_mean[1]), float(fit.fe_sd[1])


def run(design: str, datasets: int, judges: int, items: int, seed: int, old: bool) -> None:
    rng = np.random.default_rng(seed)
    got: dict[str, list[tuple[float, float, float]]] = {"old": [], "new": []}
    cpu = {"old": 0.0, "new": 0.0}
    for _ in range(datasets):
        data = simulate(rng, judges, items, design)
        if old:
            t = time.process_time()
            m, sd = old_interval(*data)
            got["old"].append((m, sd, 1.959963984540054))
            cpu["old"] += time.process_time() - t
        t = time.process_time()
        fit = mixed_logit(*data)
        cpu["new"] += time.process_time() - t
        assert fit is not None
        (e,) = fit["effects"]
        got["new"].append((e["log_odds"], e["se"], (e["ci95"][1] - e["log_odds"]) / e["se"]))
    print(f"design {design}: {judges} judges x {items} items, beta {BETA}, judge sd "
          f"{SD_JUDGE}, item sd {SD_ITEM}, {datasets} datasets, seed {seed}")
    for name, rows in got.items():
        if not rows:
            continue
        est = np.array([m for m, _, _ in rows])
        sd = np.array([s for _, s, _ in rows])
        q = np.array([q for _, _, q in rows])
        cover = float(np.mean(np.abs(est - BETA) <= q * sd))
        se = (cover * (1 - cover) / datasets) ** 0.5
        print(f"  {name}: coverage {cover:.3f} (± {se:.3f}), mean estimate {est.mean():.3f}, "
              f"spread {est.std():.3f}, mean stated sd {sd.mean():.3f}, quantile {q.mean():.3f}, "
              f"{cpu[name] / datasets * 1000:.0f} ms CPU per fit")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", type=int, default=1000)
    ap.add_argument("--judges", type=int, default=8)
    ap.add_argument("--items", type=int, default=30)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--designs", default="within,between")
    ap.add_argument("--new-only", action="store_true", help="skip the old interval")
    args = ap.parse_args()
    for design in args.designs.split(","):
        run(design, args.datasets, args.judges, args.items, args.seed, not args.new_only)


if __name__ == "__main__":
    main()
