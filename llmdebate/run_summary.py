"""``summary.json`` of a run, computed from its transcripts (rewards are read, never recomputed).

Top answers: the prover defends the claim "the answer is X" (a = 1), so a debate's top answer
is correct iff the claim is true. Honest debates are those whose top answer is correct.
Calibration compares the estimator's probabilities with the gold truth where known: p_d at
the top claim, and b_i at subclaims whose truth the dataset knows (the b_i are conditional on
the drawn z_<i, so this is a rough measure).
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from llmdebate.schemas import Transcript
from llmdebate.scoring import reward_ratio


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def _calibration(pairs: list[tuple[float, int]]) -> dict[str, Any]:
    return {
        "n": len(pairs),
        "brier": _mean([(p - y) ** 2 for p, y in pairs]),
        "mean_abs_error": _mean([abs(p - y) for p, y in pairs]),
    }


def load_lines(path: Path) -> list[Transcript]:
    """Every complete line of a transcripts file (a torn last line is ignored)."""
    out: list[Transcript] = []
    if not path.exists():
        return out
    with path.open("rb") as fh:
        for raw in fh:
            if raw.endswith(b"\n") and raw.strip():
                out.append(Transcript.model_validate(json.loads(raw)))
    return out


def summarize(path: Path, config: Any = None) -> dict[str, Any]:
    ts = load_lines(Path(path))
    status = Counter(t.status for t in ts)
    top_pairs: list[tuple[float, int]] = []
    sub_pairs: list[tuple[float, int]] = []
    judge_hits: list[int] = []
    correct: list[int] = []
    payoff: dict[str, list[float]] = defaultdict(list)
    expected: dict[str, list[float]] = defaultdict(list)
    normalized: dict[str, list[float]] = defaultdict(list)
    tokens_in = tokens_out = n_calls = 0
    cost = 0.0
    by_role: dict[str, dict[str, float]] = defaultdict(
        lambda: {"calls": 0, "tokens_in": 0, "tokens_out": 0, "cost": 0.0}
    )
    walls: list[float] = []
    stopped_early = 0
    for t in ts:
        for c in t.calls:
            n_calls += 1
            tokens_in += c.tokens_in
            tokens_out += c.tokens_out
            cost += c.cost
            r = by_role[c.role or "?"]
            r["calls"] += 1
            r["tokens_in"] += c.tokens_in
            r["tokens_out"] += c.tokens_out
            r["cost"] += c.cost
        if isinstance(t.meta.get("wall_s"), int | float):
            walls.append(float(t.meta["wall_s"]))
        if t.status == "failed" or t.init is None:
            continue
        stopped_early += t.stopped_early
        truth = t.init.claim.truth
        if truth is not None:
            top_pairs.append((t.init.estimate.value, truth))
            ok = int(t.init.answer == truth)
            correct.append(ok)
            if t.status == "complete" and t.total is not None:
                side = "honest" if ok else "dishonest"
                payoff[side].append(t.total)
                if t.expected_total is not None:
                    expected[side].append(t.expected_total)
                r = reward_ratio(t.config.epsilon, t.config.rho)
                normalized[side].append(t.total / r ** (t.config.depth + 1))
        for rd in t.rounds:
            if rd.decomposition is not None:
                for sub, b in zip(rd.decomposition.subclaims, rd.b, strict=False):
                    if sub.truth is not None:
                        sub_pairs.append((b, sub.truth))
            if rd.verdict is not None and rd.claim.truth is not None:
                judge_hits.append(int(rd.verdict.value == rd.claim.truth))
    n = len(ts)
    return {
        "transcripts": n,
        "status": dict(status),
        "stopped_early": stopped_early,
        "top_answer_accuracy": _mean([float(c) for c in correct]),
        "top_answers_with_known_truth": len(correct),
        "payoff": {
            side: {
                "n": len(payoff[side]),
                "mean": _mean(payoff[side]),
                "mean_expected": _mean(expected[side]),
                "mean_normalized": _mean(normalized[side]),
            }
            for side in ("honest", "dishonest")
        },
        "calibration": {"top": _calibration(top_pairs), "subclaims": _calibration(sub_pairs)},
        "judge_accuracy": {"n": len(judge_hits), "accuracy": _mean([float(h) for h in judge_hits])},
        "usage": {
            "calls": n_calls,
            "calls_per_debate": n_calls / n if n else None,
            "tokens_in": tokens_in,
            "tokens_out": tokens_out,
            "cost": cost,
            "by_role": {k: dict(v) for k, v in sorted(by_role.items())},
        },
        "debate_wall_s": {"mean": _mean(walls), "max": max(walls) if walls else None},
        "failures": [{"id": t.id, "reason": t.failure} for t in ts if t.status == "failed"],
    }
