"""The judges section of a report: how people did, from ``judged.jsonl`` alone.

Every number comes from :func:`llmdebate.scoring.judgment_scores` on the judged transcripts
(the scoring module decides what is correct and what a probability scores):

* accuracy, mean log score and mean Brier score per judge and per protocol, with percentile
  bootstrap intervals (resampling judgments);
* calibration: the probability a judge gave to the first option (speech protocols) or to the
  leaf claim (recursive protocols) against the truth, in equal-width bins;
* active seconds per judgment;
* agreement: over debates judged by two or more people, the share of judge pairs that chose
  the same answer (or verdict);
* human, LLM and oracle on the same leaves: where a leaf claim judged by people was also
  ruled on by a model judge in this run's ``transcripts.jsonl``, the accuracy of each against
  the leaf's gold truth (the oracle) and how often people and the model agreed.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict
from itertools import combinations
from typing import Any

import numpy as np

from llmdebate import scoring
from llmdebate.report.metrics import ASYMMETRIC, bootstrap_ci, calibration
from llmdebate.schemas import Transcript


def _judge(t: Transcript) -> str:
    return str((t.meta.get("judgment") or {}).get("judge", "?"))


def _answer(t: Transcript) -> Any:
    """What the judge decided: the leaf verdict (0/1) or the chosen answer's text."""
    if t.protocol in ASYMMETRIC:
        return t.rounds[-1].verdict.value if t.rounds and t.rounds[-1].verdict else None
    return str(t.meta.get("decision", "")).strip().lower()


def _p_true(t: Transcript) -> tuple[float, int] | None:
    """(the probability the judge gave, whether that proposition is true) for calibration."""
    s = scoring.judgment_scores(t)
    if s["p_correct"] is None or s["correct"] is None:
        return None
    if t.protocol in ASYMMETRIC:
        leaf = t.rounds[-1]
        assert leaf.verdict is not None and leaf.verdict.probability is not None
        return float(leaf.verdict.probability), int(leaf.claim.truth or 0)
    p_first = float((t.meta.get("judge") or {})["p_first"])
    truth = int(str(t.meta["options"][0]).strip().lower() == str(t.meta["gold"]).strip().lower())
    return p_first, truth


def _stats(ts: Sequence[Transcript], seed: int, n_boot: int) -> dict[str, Any]:
    scores = [scoring.judgment_scores(t) for t in ts]
    out: dict[str, Any] = {"judgments": len(ts)}
    for k, name in enumerate(("correct", "log_score", "brier")):
        vals = [float(s[name]) for s in scores if s[name] is not None]  # type: ignore[arg-type]
        ci = bootstrap_ci(vals, seed=seed + k, n_boot=n_boot)
        key = "accuracy" if name == "correct" else name
        out[key] = float(np.mean(vals)) if vals else None
        out[f"{key}_ci95"] = list(ci) if ci else None
        out[f"{key}_n"] = len(vals)
    secs = [
        float(t.meta["judgment"]["active_s"])
        for t in ts
        if (t.meta.get("judgment") or {}).get("active_s") is not None
    ]
    out["mean_active_s"] = float(np.mean(secs)) if secs else None
    out["median_active_s"] = float(np.median(secs)) if secs else None
    return out


def agreement(judged: Sequence[Transcript]) -> dict[str, Any]:
    """Pairwise agreement of judges on the same debate."""
    by: dict[str, list[Any]] = defaultdict(list)
    for t in judged:
        by[str(t.meta.get("debate_id", t.id))].append(_answer(t))
    pairs = agree = 0
    debates = 0
    for answers in by.values():
        if len(answers) < 2:
            continue
        debates += 1
        for a, b in combinations(answers, 2):
            pairs += 1
            agree += a == b
    return {"debates": debates, "pairs": pairs, "agreement": agree / pairs if pairs else None}


def human_llm_oracle(
    judged: Sequence[Transcript], others: Sequence[Transcript]
) -> dict[str, Any] | None:
    """People, a model judge and the gold truth on the same leaf claims (None: no overlap)."""
    model: dict[str, list[int]] = defaultdict(list)
    for t in others:
        if t.protocol not in ASYMMETRIC or t.status != "complete" or not t.rounds:
            continue
        leaf = t.rounds[-1]
        if (
            leaf.k == 0
            and leaf.verdict is not None
            and not leaf.verdict.judge.startswith(("human", "oracle"))
        ):
            model[leaf.claim.text].append(leaf.verdict.value)
    rows = []
    for t in judged:
        if t.protocol not in ASYMMETRIC or not t.rounds or t.rounds[-1].verdict is None:
            continue
        leaf = t.rounds[-1]
        if leaf.claim.text in model and leaf.claim.truth is not None:
            assert leaf.verdict is not None
            rows.append((leaf.verdict.value, model[leaf.claim.text][0], int(leaf.claim.truth)))
    if not rows:
        return None
    h, m, o = (np.array(x, dtype=float) for x in zip(*rows, strict=True))
    return {
        "leaves": len(rows),
        "human_accuracy": float(np.mean(h == o)),
        "llm_accuracy": float(np.mean(m == o)),
        "human_llm_agreement": float(np.mean(h == m)),
        "oracle_true_share": float(np.mean(o)),
    }


def section(
    judged: Sequence[Transcript],
    others: Sequence[Transcript] = (),
    *,
    seed: int = 0,
    n_boot: int = 2000,
    n_bins: int = 10,
) -> dict[str, Any]:
    """Every number of the judges section (JSON-ready; see the module doc)."""
    by_judge: dict[str, list[Transcript]] = defaultdict(list)
    by_protocol: dict[str, list[Transcript]] = defaultdict(list)
    for t in judged:
        by_judge[_judge(t)].append(t)
        by_protocol[t.protocol].append(t)
    points = [p for p in (_p_true(t) for t in judged) if p is not None]
    return {
        "judgments": len(judged),
        "bootstrap": {"resamples": n_boot, "level": 0.95, "unit": "judgment", "seed": seed},
        "per_judge": {
            j: _stats(ts, seed + 10 * i, n_boot)
            for i, (j, ts) in enumerate(sorted(by_judge.items()))
        },
        "per_protocol": {
            p: _stats(ts, seed + 1000 + 10 * i, n_boot)
            for i, (p, ts) in enumerate(sorted(by_protocol.items()))
        },
        "calibration": asdict(calibration(points, n_bins)),
        "agreement": agreement(judged),
        "human_llm_oracle": human_llm_oracle(judged, others),
    }
