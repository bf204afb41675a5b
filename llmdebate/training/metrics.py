"""What each generation of debates says about training (Section 6.2: A's expected payoff is
the read-out of whether training succeeded), and the plot of it over the iterations."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from llmdebate.core.schemas import Transcript
from llmdebate.protocols.registry import protocol_of
from llmdebate.report.judge_audit import judge_audit
from llmdebate.report.metrics import (
    calibration,
    calibration_points,
    normalized_expected_payoff,
    normalized_payoff,
)


def _mean(xs: list[float]) -> float | None:
    return float(np.mean(xs)) if xs else None


def _var(xs: list[float]) -> float | None:
    return float(np.var(xs)) if len(xs) > 1 else None


AUDIT_PREFIX = {"prover": "audit_", "estimator": "audit_estimator_"}
"""Where each side's judge-hacking audit (:mod:`llmdebate.report.judge_audit`) is kept in a
generation's metrics."""


def generation_metrics(transcripts: list[Transcript]) -> dict[str, Any]:
    """A's mean normalized payoff (sampled and expected), accuracy against gold (A's answer;
    B's p_d on the top claim), B's calibration (Brier, ECE over p_d), the variance across
    debates of A's sampled and expected normalized payoffs, and each side's judge-hacking
    audit (``audit_*`` for the prover, ``audit_estimator_*``: wins against the leaf judge,
    truthful arguments, the judge's accuracy, their gap)."""
    pe = [
        t for t in transcripts if t.status == "complete" and protocol_of(t).can.estimator_rewards
    ]
    sampled = [v for t in pe if (v := normalized_payoff(t)) is not None]
    expected = [v for t in pe if (v := normalized_expected_payoff(t)) is not None]
    answers = [
        float(t.init.answer == t.init.claim.truth)
        for t in pe
        if t.init is not None and t.init.claim.truth is not None
    ]
    cal = calibration(calibration_points(pe))
    audits = {f"{AUDIT_PREFIX[side]}{k}": v for side in AUDIT_PREFIX
              for k, v in judge_audit(pe, side).items()}
    return audits | {
        "debates": len(transcripts),
        "complete": len(pe),
        "failed": sum(t.status == "failed" for t in transcripts),
        "payoff": _mean(sampled),
        "expected_payoff": _mean(expected),
        "prover_accuracy": _mean(answers),
        "estimator_accuracy": cal.accuracy,
        "brier": cal.brier,
        "ece": cal.ece,
        "payoff_variance": _var(sampled),
        "expected_payoff_variance": _var(expected),
    }


PANELS = (
    ("A's normalized payoff", ("payoff", "expected_payoff")),
    ("accuracy against gold", ("prover_accuracy", "estimator_accuracy")),
    ("estimator calibration", ("brier", "ece")),
    ("variance of A's payoff", ("payoff_variance", "expected_payoff_variance")),
    ("judge-hacking audit (prover)", ("audit_judge_wins", "audit_argued_truth",
                                      "audit_judge_accuracy", "audit_wins_minus_truth")),
)


def plot_metrics(history: list[dict[str, Any]], out: Path) -> Path | None:
    """metrics.png: one panel per quantity over the generations (None without matplotlib)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, axes = plt.subplots(1, len(PANELS), figsize=(4 * len(PANELS), 3.2))
    labels = [h["label"] for h in history]
    xs = list(range(len(history)))
    for ax, (title, keys) in zip(axes, PANELS, strict=True):
        for key in keys:
            ys = [h.get(key) for h in history]
            ax.plot(xs, [np.nan if y is None else y for y in ys], marker="o", label=key)
        ax.set_title(title, fontsize=9)
        ax.set_xticks(xs, labels, rotation=45, fontsize=7)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out, dpi=90)
    plt.close(fig)
    return out
