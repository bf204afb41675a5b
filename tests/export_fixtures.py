"""Scripted runs shared by the export, RL and training tests (written once per module)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from llmdebate.experiment.config import ExperimentConfig
from llmdebate.experiment.loading import validate

REPO = Path(__file__).resolve().parents[1]
DIVISORS = REPO / "datasets" / "divisors.jsonl"
SAMPLE = REPO / "datasets" / "samples" / "arc_challenge.jsonl"
FIXTURE = str(REPO / "tests" / "fixtures" / "llm_fixtures.py")


def scripted(**extra: Any) -> dict[str, Any]:
    opts = {"responder": f"{FIXTURE}:responder", "probabilities": f"{FIXTURE}:probabilities"}
    return {"model": "scripted", "options": {**opts, **extra}}


def pe_config(**over: Any) -> ExperimentConfig:
    """Prover-estimator debates on the divisors problems, every role scripted."""
    data: dict[str, Any] = {
        "name": "t",
        "dataset": {"path": str(DIVISORS), "limit": 3},
        "debate": {"depth": 2, "width": 3},
        "prover": {**scripted(), "decomposer": "formal", "direction": "model",
                   "recursion": "model"},
        "estimator": scripted(),
        "judge": {"kind": "oracle"},
        "max_concurrency": 4,
    }
    for key, value in over.items():
        data[key] = {**data[key], **value} if isinstance(value, dict) else value
    return validate(data)


def judged_config(**over: Any) -> ExperimentConfig:
    """The speech protocols and naive debate on a bundled QA sample, scripted."""
    data: dict[str, Any] = {
        "name": "s",
        "dataset": {"path": str(SAMPLE), "limit": 2},
        "protocols": ["two-sided", "consultancy", "naive-recursive", "direct"],
        "debate": {"depth": 1, "width": 2},
        "prover": {**scripted(), "decomposer": "model"},
        "estimator": scripted(),
        "judge": {**scripted(), "kind": "llm"},
        "max_concurrency": 4,
    }
    data.update(over)
    return validate(data)
