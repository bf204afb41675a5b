"""The streamed summary of a run equals the summary of the whole list of its transcripts, as
computed by the list-based implementation the summary had before it streamed (kept below,
verbatim, as the oracle): on runs of every protocol, with failures, model decompositions,
retries and cached calls."""

from __future__ import annotations

import json
import random
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from llmdebate.agents.audit import decomposition_summary
from llmdebate.agents.estimate_audit import estimate_summary
from llmdebate.core import scoring
from llmdebate.core.schemas import Transcript
from llmdebate.experiment.config import PROTOCOL_NAMES
from llmdebate.experiment.runner import _summary_transcripts, run
from llmdebate.records.rundir import SUMMARY_FILE, TRANSCRIPTS_FILE, load_transcripts
from llmdebate.report import metrics
from llmdebate.report.metrics import (
    ASYMMETRIC,
    DEFAULT_BOOTSTRAP,
    PROTOCOL_ORDER,
    Cost,
    bootstrap_ci,
    calibration,
)

try:
    from tests.test_runner import DIVISORS, SAMPLE, config, scripted
except ImportError:  # pytest run from inside tests/
    from test_runner import DIVISORS, SAMPLE, config, scripted  # type: ignore[no-redef]

RUN_ONLY = ("planned", "missing", "stopped", "last_invocation")


# ------------------------------------------------------ the oracle: the list-based summary


def item_id(t: Transcript) -> str:
    """The id of the item a debate is about (``meta.item_id``, else ``item.id``, else its id)."""
    if "item_id" in t.meta:
        return str(t.meta["item_id"])
    if t.item and "id" in t.item:
        return str(t.item["id"])
    return t.id


def gold(t: Transcript) -> str | None:
    """The gold answer text of the debate's item."""
    if "gold" in t.meta:
        return str(t.meta["gold"])
    if t.item and t.item.get("answer") is not None:
        return str(t.item["answer"])
    return None


def decision_correct(t: Transcript) -> float | None:
    """1.0 / 0.0 if the judge's ``decision`` equals the gold answer; None if undecided."""
    dec, g = t.meta.get("decision"), gold(t)
    if t.status != "complete" or dec is None or g is None:
        return None
    return float(str(dec).strip().lower() == g.strip().lower())


def normalized_payoff(t: Transcript) -> float | None:
    """The prover's payoff R_A in units of r^(d+1) (prover-estimator) or as is (naive: ±1)."""
    return scoring.normalized_total(t)


def normalized_expected_payoff(t: Transcript) -> float | None:
    """E[R_A] over the protocol's own draws, in units of r^(d+1) (prover-estimator only)."""
    return scoring.normalized_total(t, expected=True) if t.protocol == "prover-estimator" else None


def side(t: Transcript) -> str | None:
    """``honest`` if the prover defended the gold answer, ``dishonest`` if not, else None."""
    claimed, g = t.meta.get("claimed_answer"), gold(t)
    if claimed is None or g is None:
        return None
    return "honest" if str(claimed).strip().lower() == g.strip().lower() else "dishonest"


def payoffs_by_side(transcripts: Iterable[Transcript], protocol: str) -> dict[str, Any]:
    """Mean normalised payoff (sampled and expected) of honest and dishonest provers."""
    vals: dict[str, list[float]] = defaultdict(list)
    exp: dict[str, list[float]] = defaultdict(list)
    for t in transcripts:
        s = side(t) if t.protocol == protocol else None
        pay = normalized_payoff(t)
        if s is None or pay is None:
            continue
        vals[s].append(pay)
        e = normalized_expected_payoff(t)
        if e is not None:
            exp[s].append(e)
    return {
        s: {
            "n": len(vals[s]),
            "mean_normalized": float(np.mean(vals[s])) if vals[s] else None,
            "mean_expected_normalized": float(np.mean(exp[s])) if exp[s] else None,
        }
        for s in ("honest", "dishonest")
    }


@dataclass
class Pair:
    """An honest and a dishonest prover on the same item (and the same claim)."""

    item_id: str
    honest: float
    dishonest: float

    @property
    def score(self) -> float:
        """1 if the honest prover earns more, 1/2 on a tie, 0 otherwise."""
        if self.honest > self.dishonest:
            return 1.0
        return 0.5 if self.honest == self.dishonest else 0.0


def pairs(transcripts: Iterable[Transcript], protocol: str) -> list[Pair]:
    """Honest/dishonest pairs of one asymmetric protocol, by item, in item order of appearance."""
    by_item: dict[str, dict[str, float]] = defaultdict(dict)
    for t in transcripts:
        if t.protocol != protocol:
            continue
        pay = normalized_payoff(t)
        variant = t.meta.get("variant")
        if pay is not None and variant in ("honest", "dishonest"):
            by_item[item_id(t)][variant] = pay
    return [
        Pair(i, v["honest"], v["dishonest"])
        for i, v in by_item.items()
        if "honest" in v and "dishonest" in v
    ]


def item_scores(transcripts: Sequence[Transcript], protocol: str) -> dict[str, float]:
    """Per item, the protocol's score in [0, 1] (see ``docs/metrics.md``, accuracy)."""
    if protocol in ASYMMETRIC:
        return {p.item_id: p.score for p in pairs(transcripts, protocol)}
    acc: dict[str, list[float]] = defaultdict(list)
    for t in transcripts:
        if t.protocol == protocol:
            c = decision_correct(t)
            if c is not None:
                acc[item_id(t)].append(c)
    return {i: float(np.mean(v)) for i, v in acc.items()}


def calibration_points(transcripts: Iterable[Transcript]) -> list[tuple[float, int]]:
    """(p_d, truth) once per item and claim, from prover-estimator transcripts with gold truth."""
    seen: set[tuple[str, str]] = set()
    pts: list[tuple[float, int]] = []
    for t in transcripts:
        if t.protocol != "prover-estimator" or t.init is None or t.init.claim.truth is None:
            continue
        key = (item_id(t), t.init.claim.text)
        if key in seen:
            continue
        seen.add(key)
        pts.append((float(t.init.estimate.value), int(t.init.claim.truth)))
    return pts


def costs(transcripts: Iterable[Transcript]) -> dict[str, Cost]:
    """Debates, model calls, tokens and USD cost per protocol, summed over ``Transcript.calls``."""
    out: dict[str, Cost] = defaultdict(Cost)
    for t in transcripts:
        c = out[t.protocol]
        c.debates += 1
        c.failed += t.status == "failed"
        for call in t.calls:
            c.calls += 1
            c.cached_calls += call.cached
            c.tokens_in += call.tokens_in
            c.tokens_out += call.tokens_out
            c.cost += call.cost
    return dict(out)


def _protocols(transcripts: Sequence[Transcript]) -> list[str]:
    present = {t.protocol for t in transcripts}
    return [p for p in PROTOCOL_ORDER if p in present]


def old_compute(
    transcripts: Sequence[Transcript],
    *,
    seed: int = 0,
    n_boot: int = DEFAULT_BOOTSTRAP,
    n_bins: int = 10,
) -> dict[str, Any]:
    """Every metric of the comparison, as a JSON-ready dict (written to comparison.json)."""
    per: dict[str, Any] = {}
    cost = costs(transcripts)
    for k, proto in enumerate(_protocols(transcripts)):
        scores = item_scores(transcripts, proto)
        vals = list(scores.values())
        ci = bootstrap_ci(vals, seed=seed + k, n_boot=n_boot)
        entry: dict[str, Any] = {
            "items": len(vals),
            "accuracy": float(np.mean(vals)) if vals else None,
            "ci95": list(ci) if ci else None,
            "bootstrap_seed": seed + k,
            "item_scores": scores,
            "cost": asdict(cost.get(proto, Cost())),
        }
        if proto in ASYMMETRIC:
            entry["pairs"] = _pair_stats(pairs(transcripts, proto), seed=seed + 100 + k, n=n_boot)
            entry["payoff"] = payoffs_by_side(transcripts, proto)
        per[proto] = entry
    cal = calibration(calibration_points(transcripts), n_bins)
    return {
        "n_transcripts": len(transcripts),
        "bootstrap": {"resamples": n_boot, "level": 0.95, "unit": "item", "seed": seed},
        "protocols": per,
        "calibration": asdict(cal),
    }


def _pair_stats(ps: list[Pair], *, seed: int, n: int) -> dict[str, Any]:
    if not ps:
        return {"n": 0}
    wins = [float(p.honest > p.dishonest) for p in ps]
    gaps = [p.honest - p.dishonest for p in ps]
    ci = bootstrap_ci(wins, seed=seed, n_boot=n)
    gci = bootstrap_ci(gaps, seed=seed + 1, n_boot=n)
    return {
        "n": len(ps),
        "discrimination": float(np.mean(wins)),
        "discrimination_ci95": list(ci) if ci else None,
        "ties": int(sum(p.honest == p.dishonest for p in ps)),
        "mean_gap": float(np.mean(gaps)),
        "mean_gap_ci95": list(gci) if gci else None,
        "honest": [p.honest for p in ps],
        "dishonest": [p.dishonest for p in ps],
        "bootstrap_seed": seed,
    }


def _mean(xs: Sequence[float]) -> float | None:
    return float(np.mean(xs)) if len(xs) else None


def failure_kind(reason: str | None) -> str:
    """The class of a failure (``RetriesExhaustedError``, ``InvalidOutputError``, ...)."""
    head = (reason or "").split(":", 1)[0].strip()
    return head if head.isidentifier() else "other"


def old_run_summary(
    transcripts: Sequence[Transcript],
    *,
    seed: int = 0,
    n_boot: int = DEFAULT_BOOTSTRAP,
    n_bins: int = 10,
) -> dict[str, Any]:
    """``summary.json``: status, failures by reason, retries, time and calls per debate, usage
    per role, and every metric of :func:`compute` — from transcripts alone."""
    status: dict[str, int] = defaultdict(int)
    by_protocol: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    kinds: dict[str, int] = defaultdict(int)
    by_role: dict[str, dict[str, float]] = defaultdict(
        lambda: {"calls": 0, "tokens_in": 0, "tokens_out": 0, "cost": 0.0}
    )
    walls: list[float] = []
    retries = calls = cached = tokens_in = tokens_out = 0
    cost = 0.0
    judge_hits: list[float] = []
    for t in transcripts:
        status[t.status] += 1
        by_protocol[t.protocol][t.status] += 1
        if t.status == "failed":
            kinds[failure_kind(t.failure)] += 1
        if isinstance(t.meta.get("wall_s"), int | float):
            walls.append(float(t.meta["wall_s"]))
        for c in t.calls:
            calls += 1
            cached += c.cached
            tokens_in += c.tokens_in
            tokens_out += c.tokens_out
            cost += c.cost
            retries += int(getattr(c, "retries", 0) or 0)
            r = by_role[c.role or "?"]
            r["calls"] += 1
            r["tokens_in"] += c.tokens_in
            r["tokens_out"] += c.tokens_out
            r["cost"] += c.cost
        for rd in t.rounds:
            if rd.verdict is not None and rd.claim.truth is not None:
                judge_hits.append(float(rd.verdict.value == rd.claim.truth))
    n = len(transcripts)
    return {
        "transcripts": n,
        "status": dict(status),
        "by_protocol": {p: dict(v) for p, v in sorted(by_protocol.items())},
        "failures": {
            "by_kind": dict(sorted(kinds.items())),
            "debates": [
                {"id": t.id, "reason": t.failure} for t in transcripts if t.status == "failed"
            ],
        },
        "retries": retries,
        "debate_wall_s": {
            "mean": _mean(walls),
            "median": float(np.median(walls)) if walls else None,
            "max": max(walls) if walls else None,
        },
        "usage": {
            "calls": calls,
            "cached_calls": cached,
            "calls_per_debate": calls / n if n else None,
            "tokens_in": tokens_in,
            "tokens_out": tokens_out,
            "cost": cost,
            "by_role": {k: dict(v) for k, v in sorted(by_role.items())},
        },
        "leaf_judge_accuracy": {"n": len(judge_hits), "accuracy": _mean(judge_hits)},
        "decompositions": decomposition_summary(transcripts),
        "estimates": estimate_summary(transcripts),
        "metrics": old_compute(transcripts, seed=seed, n_boot=n_boot, n_bins=n_bins),
    }


# ------------------------------------------------------------------------------ tests


def _runs(tmp: Path) -> list[Path]:
    every = list(PROTOCOL_NAMES)
    qa = config(
        SAMPLE,
        protocols=every,
        prover={"decomposer": "model"},
        judge={**scripted(), "kind": "llm"},
        debate={"depth": 1, "width": 2},
    )
    formal = config(DIVISORS, protocols=every, prover={**scripted(), "decomposer": "model"},
                    judge={**scripted(), "kind": "llm"})
    failing = config(SAMPLE, protocols=["prover-estimator", "direct"],
                     prover={**scripted("bad_responder"), "decomposer": "model"},
                     judge={**scripted(), "kind": "llm"})
    dirs = []
    for k, cfg in enumerate((qa, formal, failing)):
        run(cfg, tmp / f"r{k}", progress=False)
        dirs.append(tmp / f"r{k}")
    return dirs


@pytest.fixture(scope="module")
def run_dirs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return _runs(tmp_path_factory.mktemp("summary"))


def _json(x: Any) -> Any:
    return json.loads(json.dumps(x))


def test_summary_json_of_a_run_equals_the_list_based_summary(run_dirs: list[Path]) -> None:
    for d in run_dirs:
        written = json.loads((d / SUMMARY_FILE).read_text())
        cfg = json.loads(json.dumps(yaml.safe_load((d / "config.yaml").read_text())))
        want = old_run_summary(
            load_transcripts(d), seed=cfg["seed"], n_boot=cfg["report"]["bootstrap"],
            n_bins=cfg["report"]["calibration_bins"],
        )
        assert {k: v for k, v in written.items() if k not in RUN_ONLY} == _json(want)
    statuses = [json.loads((d / SUMMARY_FILE).read_text())["status"] for d in run_dirs]
    assert "failed" in statuses[-1] and "complete" in statuses[0]
    protos = {p for d in run_dirs[:2]
              for p in json.loads((d / SUMMARY_FILE).read_text())["metrics"]["protocols"]}
    assert protos == set(PROTOCOL_NAMES)


def test_streamed_summary_of_mixed_shuffled_transcripts_equals_the_list_based(
    run_dirs: list[Path], tmp_path: Path
) -> None:
    raw = [line for d in run_dirs for line in (d / TRANSCRIPTS_FILE).read_bytes().splitlines()]
    rng = random.Random(7)
    for trial in range(3):
        rng.shuffle(raw)
        path = tmp_path / f"t{trial}.jsonl"
        path.write_bytes(b"".join(x + b"\n" for x in raw))
        # retries, cache hits and odd costs, so that every total is exercised
        ts = list(_summary_transcripts(path))
        for t in ts:
            for c in t.calls:
                c.retries = rng.randrange(3)
                c.cached = rng.random() < 0.3
                c.cost = rng.random() / 7
            if rng.random() < 0.5:
                t.meta["wall_s"] = rng.random() * 10
        path.write_bytes(b"".join(t.model_dump_json().encode() + b"\n" for t in ts))
        streamed = metrics.run_summary(_summary_transcripts(path), seed=trial, n_boot=50)
        assert streamed == old_run_summary(list(_summary_transcripts(path)), seed=trial, n_boot=50)
        assert metrics.compute(ts, seed=trial, n_boot=50) == old_compute(
            ts, seed=trial, n_boot=50
        )


def test_the_tally_keeps_records_not_transcripts(run_dirs: list[Path]) -> None:
    ts = load_transcripts(run_dirs[1])
    tally = metrics.tally(iter(ts))
    assert len(tally.records) == len(ts)
    assert all(isinstance(r, metrics.DebateRecord) for r in tally.records)
    assert not any(isinstance(v, Transcript) for v in vars(tally).values())
