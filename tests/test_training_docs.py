"""The plain-TRL GRPO example of docs/training.md ("Online RL") runs as written: on a tiny
random model built here (``model_dir`` answers with its folder) and the rows the doc's export
command writes from a scripted run, one GRPO step, with the completions stopped at the end
of the act (the model's stop ids hold the tokens with a line break)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from llmdebate.cli import main
from llmdebate.experiment.runner import run

try:
    from tests.export_fixtures import pe_config
    from tests.test_train_grpo import tiny_model
except ImportError:  # pytest run from inside tests/
    from export_fixtures import pe_config  # type: ignore[no-redef]
    from test_train_grpo import tiny_model  # type: ignore[no-redef]

DOC = Path(__file__).resolve().parents[1] / "docs" / "training.md"
MARK = "<!-- example: plain-trl-grpo"


def example() -> str:
    """The Python block after the example's marker."""
    text = DOC.read_text(encoding="utf-8")
    found = re.search(re.escape(MARK) + r".*?-->\s*```python\n(.*?)```", text, re.DOTALL)
    assert found, f"{DOC}: no python block after {MARK!r}"
    return found.group(1)


def test_the_plain_trl_example_stops_at_the_end_of_the_act_and_trains(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("trl")
    import llmdebate.training.update as update

    run(pe_config(dataset={"limit": 1}), tmp_path / "runs" / "rl", progress=False)
    monkeypatch.chdir(tmp_path)
    # the doc's export command, as written
    code = main(["export", "runs/rl", "--role", "estimator", "--format", "trl-prompt-only",
                 "--text", "-o", "rows.jsonl"])
    assert code == 0 and (tmp_path / "rows.jsonl").exists()
    rows = [json.loads(x) for x in (tmp_path / "rows.jsonl").read_text().splitlines()]
    assert rows and all(r["act"] == "estimate" for r in rows)
    model = tiny_model(tmp_path / "tiny")
    monkeypatch.setattr(update, "model_dir", lambda *a, **k: model)
    scope: dict[str, object] = {}
    exec(compile(example(), str(DOC), "exec"), scope)  # the doc's own example
    trainer = scope["trainer"]
    tokenizer = scope["tokenizer"]
    assert trainer.state.global_step == 1  # type: ignore[attr-defined]
    stops = scope["model"].generation_config.eos_token_id  # type: ignore[attr-defined]
    assert tokenizer.eos_token_id in stops  # type: ignore[attr-defined]
    assert any("\n" in tokenizer.decode([i]) for i in stops)  # type: ignore[attr-defined]
    assert scope["args"].max_completion_length == 8  # type: ignore[attr-defined]
