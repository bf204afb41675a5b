"""A run's progress: the model calls and tokens move while debates run (not only when one
ends), a plain line when standard error is not a terminal, a bar on a terminal, nothing with
``--quiet``."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import pytest

from llmdebate.experiment import progress as progress_module
from llmdebate.experiment.loading import validate
from llmdebate.experiment.progress import Progress
from llmdebate.experiment.runner import run
from llmdebate.models.interface import Usage

REPO = Path(__file__).resolve().parents[1]
FIXTURE = str(REPO / "tests" / "fixtures" / "llm_fixtures.py")


class Counted:
    def __init__(self) -> None:
        self.usage = Usage()


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class Done:
    def __init__(self, status: str = "complete", calls: int = 3) -> None:
        self.status, self.calls = status, calls


def test_plain_lines_carry_calls_tokens_and_rate_and_are_spaced() -> None:
    model, out = Counted(), io.StringIO()
    bar = Progress(4, 1, True, [model, model], stream=out)
    model.usage.calls, model.usage.tokens_in, model.usage.tokens_out = 12, 1000, 234
    bar.tick(force=True)
    bar(Done("failed"))  # within PLAIN_EVERY_S of the last line: nothing new
    bar.tick()
    (line,) = out.getvalue().splitlines()
    assert re.fullmatch(r"debates 1/4, 12 model calls, 1,234 tokens, [\d.]+ calls/s, \d+ s", line)
    bar.close()  # the last line, as it ended
    assert out.getvalue().splitlines()[-1].startswith("debates 2/4 (1 failed), 12 model calls")
    assert "\r" not in out.getvalue()


def test_a_terminal_gets_one_bar_and_quiet_gets_nothing() -> None:
    model, tty = Counted(), Terminal()
    bar = Progress(2, 0, True, [model], stream=tty)
    model.usage.calls, model.usage.tokens_out = 5, 4200
    bar.tick()
    bar.close()
    assert "calls=5" in tty.getvalue() and "tokens=4.2k" in tty.getvalue()
    assert "calls/s=" in tty.getvalue()
    quiet = Terminal()
    silent = Progress(2, 0, False, [model], stream=quiet)
    silent(Done())
    silent.tick(force=True)
    silent.close()
    assert quiet.getvalue() == ""


def test_the_calls_move_before_any_debate_finishes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(progress_module, "PLAIN_EVERY_S", 0.0)
    monkeypatch.setattr(progress_module, "TICK_S", 0.02)
    slow: dict[str, Any] = {"model": "scripted", "options": {
        "responder": f"{FIXTURE}:responder", "probabilities": f"{FIXTURE}:probabilities",
        "delay_s": 0.03}}
    cfg = validate({
        "name": "p", "dataset": {"path": str(REPO / "datasets" / "divisors.jsonl"), "limit": 2},
        "debate": {"depth": 2, "width": 2}, "prover": {**slow, "decomposer": "formal"},
        "estimator": slow, "judge": {"kind": "oracle"}, "max_concurrency": 4,
    })
    res = run(cfg, tmp_path / "r", progress=True)
    assert res.exit_code == 0
    lines = [x for x in capsys.readouterr().err.splitlines() if x.startswith("debates ")]
    early = [x for x in lines if x.startswith("debates 0/4") and "model calls" in x]
    assert early and not early[0].startswith("debates 0/4, 0 model calls"), lines
    assert lines[-1].startswith("debates 4/4, ")
