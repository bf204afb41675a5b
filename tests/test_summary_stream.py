"""The streamed summary of a run equals the summary of the whole list of its transcripts, as
computed by the list-based implementation the summary had before it streamed (kept below
as the oracle; the comparison metrics are recomputed independently in
tests/test_metrics_recomputed.py): on runs of every protocol, with failures, model decompositions,
retries and cached calls."""

from __future__ import annotations

import json
import random
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from llmdebate.agents.audit import decomposition_summary
from llmdebate.agents.belief_audit import belief_summary
from llmdebate.agents.estimate_audit import estimate_summary
from llmdebate.core.schemas import Transcript
from llmdebate.experiment.config import PROTOCOL_NAMES
from llmdebate.experiment.runner import _summary_transcripts, run
from llmdebate.records.rundir import SUMMARY_FILE, TRANSCRIPTS_FILE, load_transcripts
from llmdebate.report import metrics
from llmdebate.report.decided import DecidedTally
from llmdebate.report.metrics import (
    DEFAULT_BOOTSTRAP,
)

try:
    from tests.test_runner import DIVISORS, SAMPLE, config, scripted
except ImportError:  # pytest run from inside tests/
    from test_runner import DIVISORS, SAMPLE, config, scripted  # type: ignore[no-redef]

RUN_ONLY = (
    "planned", "missing", "stopped", "last_invocation", "structured_outputs", "settings"
)


# ------------------------------------------------------ the oracle: the list-based summary


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
        "leaf_claim_accuracy": {
            "figure": "leaf-claim accuracy",
            "unit": "leaf claim (a recursive debate's last round with a verdict and a truth)",
            "n": len(judge_hits),
            "accuracy": _mean(judge_hits),
        },
        "decompositions": decomposition_summary(transcripts),
        "estimates": estimate_summary(transcripts),
        "beliefs": belief_summary(transcripts),
        "decided": _decided(transcripts),
        # the comparison metrics have their own independent oracle
        # (tests/test_metrics_recomputed.py); here: the list of transcripts at once
        "metrics": metrics.compute(list(transcripts), seed=seed, n_boot=n_boot, n_bins=n_bins),
    }


def _decided(transcripts: Sequence[Transcript]) -> dict[str, Any]:
    """What decided the debates, folded over the whole list (its figures are checked by hand
    in tests/test_decided.py)."""
    tally = DecidedTally()
    for t in transcripts:
        r = metrics.record_of(t)
        tally.add(t, r.side, r.item_id, r.pairing)
    return tally.summary()


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
        assert metrics.compute(iter(ts), seed=trial, n_boot=50) == metrics.compute(
            ts, seed=trial, n_boot=50
        )


def test_the_tally_keeps_records_not_transcripts(run_dirs: list[Path]) -> None:
    ts = load_transcripts(run_dirs[1])
    tally = metrics.tally(iter(ts))
    assert len(tally.records) == len(ts)
    assert all(isinstance(r, metrics.DebateRecord) for r in tally.records)
    assert not any(isinstance(v, Transcript) for v in vars(tally).values())
