"""Steps of ``llmdebate train`` and ``llmdebate attack``: steps done of the total with a rate,
plain lines on standard error when it is not a terminal, a bar on a terminal, nothing with
``--quiet``."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
import yaml

from llmdebate.cli import main
from llmdebate.experiment.progress import Steps

try:
    from tests.test_train_grpo import tiny_model
except ImportError:  # pytest run from inside tests/
    from test_train_grpo import tiny_model  # type: ignore[no-redef]

DIVISORS = Path(__file__).resolve().parent.parent / "datasets" / "divisors.jsonl"


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_plain_lines_carry_done_total_and_rate_and_are_spaced() -> None:
    out = io.StringIO()
    steps = Steps("attack", 4, True, unit="instance", stream=out)
    steps.update(1)
    steps.update(2)  # within the spacing of the first line: nothing new
    steps.update(4, note="done")  # the last step is always said
    steps.close()  # nothing moved since: not said twice
    lines = out.getvalue().splitlines()
    assert len(lines) == 2, lines
    assert re.fullmatch(r"attack: instance 1/4, [\d.]+ instances/s, \d+ s", lines[0])
    assert re.fullmatch(r"attack: instance 4/4, [\d.]+ instances/s, \d+ s, done", lines[1])
    assert "\r" not in out.getvalue()


def test_a_terminal_gets_a_bar_and_quiet_gets_nothing() -> None:
    tty = Terminal()
    steps = Steps("expert", 3, True, stream=tty)
    steps.update(2, note="loss 0.5000")
    steps.close()
    assert "\r" in tty.getvalue() and "2/3" in tty.getvalue() and "loss 0.5000" in tty.getvalue()
    for stream in (Terminal(), io.StringIO()):
        silent = Steps("expert", 3, False, stream=stream)
        silent.update(3)
        silent.close()
        assert stream.getvalue() == ""


ATTACK = ["attack", "--budget", "16", "--population", "4", "--instances", "4"]


def test_attack_shows_its_instances_off_a_terminal_and_not_with_quiet(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(ATTACK) == 0
    captured = capsys.readouterr()
    shown = [x for x in captured.err.splitlines() if x.startswith("attack: ")]
    assert shown and re.fullmatch(r"attack: instance (\d+)/\1, [\d.]+ instances/s, \d+ s",
                                  shown[-1]), captured.err
    assert "\r" not in captured.err
    assert captured.out.splitlines()[-1].endswith(str(tmp_path / "attack.json"))
    assert main([*ATTACK, "--quiet"]) == 0
    assert capsys.readouterr().err == ""
    assert main(["attack", "--target", "soundness", "--problem", "interval", "--width", "2",
                 "--instances", "4", "--estimator", "omniscient", "--out", "s.json"]) == 0
    err = capsys.readouterr().err
    assert re.search(r"^attack: round 1/1, [\d.]+ rounds/s", err, re.M), err


def test_train_shows_its_steps_off_a_terminal_and_not_with_quiet(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = tiny_model(tmp_path / "tiny")
    experiment = {
        "name": "e", "dataset": {"path": str(DIVISORS), "limit": 1},
        "debate": {"depth": 2, "width": 2},
        "prover": {"model": f"hf/{model}"}, "estimator": {"model": f"hf/{model}"},
        "judge": {"kind": "oracle"},
    }
    cfg = {"name": "x", "experiment": experiment, "iterations": 0, "evaluate_last": False,
           "expert": {"train_claims": 4, "held_out_numbers_count": 1, "batch_size": 2,
                      "held_out_loss_claims": 1, "eval_every": 1, "evaluate": False,
                      "evaluate_before": False, "threads": 1}}
    path = tmp_path / "train.yaml"
    path.write_text(yaml.safe_dump(cfg))
    capsys.readouterr()
    assert main(["train", "--config", str(path), "--out-dir", str(tmp_path / "out")]) == 0
    err = capsys.readouterr().err
    lines = [x for x in err.splitlines() if x.startswith("expert: step ")]
    assert [x.split(",")[0] for x in lines] == ["expert: step 1/2", "expert: step 2/2"], err
    assert re.fullmatch(r"expert: step 2/2, [\d.]+ steps/s, \d+ s, loss [\d.]+, "
                        r"held-out loss [\d.]+", lines[-1])
    assert "\r" not in err and "Warning" not in err
    # no deprecated call of ours (the cache's keyword, a scalar of a tensor needing its
    # gradient, an adapter's embeddings looked up online) reaches the run's warnings.log
    assert not (tmp_path / "out" / "warnings.log").exists()
    assert main(["train", "--config", str(path), "--out-dir", str(tmp_path / "q"),
                 "--quiet"]) == 0
    assert "expert: step" not in capsys.readouterr().err


def test_the_cache_is_handed_over_under_the_name_the_model_takes() -> None:
    import inspect

    from transformers import LlamaForCausalLM

    from llmdebate.models.prefill import cache_key, with_cache

    assert cache_key() in inspect.signature(LlamaForCausalLM.forward).parameters
    assert with_cache(None) == {cache_key(): None, "use_cache": True}
