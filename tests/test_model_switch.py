"""One flag switches a role's model: options written for the old model do not follow it."""

from __future__ import annotations

from pathlib import Path

import pytest

from llmdebate.cli import main
from llmdebate.errors import ConfigError
from llmdebate.experiment.loading import load

REPO = Path(__file__).resolve().parents[1]
MAIN = str(REPO / "configs" / "local-divisors.yaml")


def test_switching_models_drops_their_options_with_one_line() -> None:
    said: list[str] = []
    cfg = load(
        MAIN,
        {"prover.model": "openai/gpt-4o-mini", "estimator.model": "scripted"},
        said.append,
    )
    assert cfg.prover.options == {} and cfg.estimator.options == {}
    assert len(said) == 2
    assert said[0].startswith("--prover-model openai/gpt-4o-mini: starting from its backend")
    assert "dropped prover.options, written for local" in said[0]
    assert cfg.judge.model == "local"  # untouched roles keep everything


def test_options_given_with_the_new_model_are_kept() -> None:
    said: list[str] = []
    cfg = load(
        MAIN,
        {"prover.model": "openai/m", "prover.options": {"endpoint": "completions"}},
        said.append,
    )
    assert cfg.prover.options == {"endpoint": "completions"} and said == []


def test_same_model_keeps_its_options() -> None:
    said: list[str] = []
    cfg = load(MAIN, {"prover.model": "local"}, said.append)
    assert cfg.prover.options == {
        "adapter": "divisors-prover", "act_adapters": {"belief": "divisors-estimator"}
    } and said == []


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"adapter": 3}, r"^--prover-options: adapter: Input should be a valid string"),
        ({"endpoint": "chat"}, r"^--prover-options: endpoint: only openai/ models take endpoint"),
    ],
)
def test_option_errors_name_the_field(options: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load(MAIN, {"prover.options": options})


def test_cli_says_what_was_dropped_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["run", "--config", MAIN, "--prover-model", "scripted", "--estimator-model",
            "scripted", "--judge-kind", "oracle", "--limit", "1", "--debate-depth", "1",
            "--prover-decomposer", "formal",
            "--run-dir", str(tmp_path / "r"), "--quiet"]
    assert main(argv) in (0, 1)  # configured and run (scripted replies may not fit)
    err = capsys.readouterr().err
    assert err.count("starting from its backend's defaults") == 2, err
