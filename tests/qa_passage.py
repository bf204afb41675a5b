"""Shared by the hidden-passage tests: runs of every protocol on a QuALITY question with a
scripted debater that quotes (tests/fixtures/qa_fixtures.py), and the leak check."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from llmdebate.experiment.config import DatasetSettings, ExperimentConfig
from llmdebate.experiment.items import load_run_items
from llmdebate.experiment.runner import run
from llmdebate.models import Model, get_model
from llmdebate.qa.quotes import normalise

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "datasets" / "quality" / "sample.jsonl"
FIXTURE = str(REPO / "tests" / "fixtures" / "qa_fixtures.py")
SCRIPTED: dict[str, Any] = {
    "model": "scripted",
    "options": {"responder": f"{FIXTURE}:responder", "probabilities": f"{FIXTURE}:probabilities"},
}
EVERY = ["direct", "consultancy", "two-sided", "naive-recursive", "prover-estimator"]
WIDTH = 40
VERIFIED = re.compile(r"<v_quote>.*?</v_quote>", re.DOTALL)


def config(judge: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "name": "qa",
        "dataset": {"path": str(SAMPLE), "limit": 1},
        "protocols": EVERY,
        "rounds": 2,
        "debate": {"depth": 1, "width": 2, "early_stop": False},
        "prover": SCRIPTED,
        "estimator": SCRIPTED,
        "judge": {**SCRIPTED, **judge},
        **extra,
    }


def scripted() -> Model:
    from fixtures.qa_fixtures import probabilities, responder

    return get_model("scripted", responder=responder, probabilities=probabilities)


def run_scripted(tmp: Path, judge: dict[str, Any], **extra: Any) -> tuple[Path, dict[str, Model]]:
    """A run of ``config`` with one scripted model per role (so each keeps its requests)."""
    cfg = ExperimentConfig.model_validate(config(judge, **extra))
    models = {"prover": scripted(), "estimator": scripted(), "judge": scripted()}
    run_dir = tmp / "run"
    run(cfg, run_dir, models=models, progress=False)
    return run_dir, models


def passage() -> str:
    """The story of the sample's first question, as the loader gives it (HTML to text)."""
    items = load_run_items(DatasetSettings(path=str(SAMPLE), limit=1), 0)
    return str(items[0].context)


def windows(text: str) -> set[str]:
    norm = normalise(text)
    return {norm[i : i + WIDTH] for i in range(len(norm) - WIDTH + 1)}


def leaks(text: str, passage_windows: set[str]) -> list[str]:
    """The 40-character windows of the passage in ``text`` outside its verified quotes."""
    outside = normalise(VERIFIED.sub(" \x00 ", text))
    return [
        outside[i : i + WIDTH]
        for i in range(len(outside) - WIDTH + 1)
        if outside[i : i + WIDTH] in passage_windows
    ]


def request_text(messages: list[dict[str, str]]) -> str:
    return "\n\x00\n".join(m["content"] for m in messages)


def run_cli(tmp: Path, judge: dict[str, Any], **extra: Any) -> Path:
    """``llmdebate run`` of ``config(judge, **extra)`` (models built from the config)."""
    import yaml

    from llmdebate.cli import main

    path = tmp / "qa.yaml"
    path.write_text(yaml.safe_dump(config(judge, **extra)))
    run_dir = tmp / "cli-run"
    main(["run", "--config", str(path), "--run-dir", str(run_dir), "--quiet"])
    return run_dir
