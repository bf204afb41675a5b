"""``fork --swap SEAT=MODEL`` with a model's options (a YAML mapping, as a config spells a
model), and ``export --role`` given a seat rather than a player."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from llmdebate.agents.settings import ModelSettings
from llmdebate.cli import main
from llmdebate.commands.fork import swaps
from llmdebate.errors import UserError
from llmdebate.export.api import decision_rows
from llmdebate.export.rows import RunInfo

REPO = Path(__file__).resolve().parents[1]
CONFIG = REPO / "configs" / "proposer-critic.yaml"
REPLIES = [f"X{i}" for i in range(1, 9)]
SWAP = "critic={model: scripted, options: {replies: [" + ", ".join(REPLIES) + "]}}"


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def test_a_swap_is_a_model_string_or_a_model_with_its_options() -> None:
    got = swaps(("critic=parrot/critic-2", SWAP, " judge = oracle "))
    assert got["critic"] == ModelSettings(model="scripted", options={"replies": REPLIES})
    assert got["judge"] == "oracle"
    assert swaps(("critic=parrot/critic-2",)) == {"critic": "parrot/critic-2"}


@pytest.mark.parametrize(
    ("pair", "message"),
    [
        ("critic", "--swap 'critic': write ROLE=MODEL"),
        ("critic={model: scripted", "--swap critic: not a YAML mapping"),
        ("critic={model: scripted, optons: {}}", "--swap critic: optons: Extra inputs"),
        ("critic={model: nowhere/x}", "--swap critic: model:"),
        ("critic={model: scripted, options: [C1]}", "--swap critic: options: Input should"),
    ],
)
def test_a_swap_that_is_no_model_is_one_line_naming_it(pair: str, message: str) -> None:
    with pytest.raises(UserError) as err:
        swaps((pair,))
    assert str(err.value).startswith(message), str(err.value)
    assert "\n" not in str(err.value)


def test_a_seat_swapped_to_a_scripted_model_speaks_its_replies(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir, out = tmp_path / "pc", tmp_path / "forks.jsonl"
    assert main(["run", "--config", str(CONFIG), "--run-dir", str(run_dir), "--quiet"]) == 0
    fork = ["fork", str(run_dir), "--at", "2", "--speaker", "critic", "--out", str(out)]
    assert main([*fork, "--swap", SWAP]) == 0
    originals = {t["id"]: t for t in _lines(run_dir / "transcripts.jsonl")}
    said = []
    for t in _lines(out):
        before = [(x["role"], x["text"]) for x in originals[t["id"]]["turns"]][:3]
        assert [(x["role"], x["text"]) for x in t["turns"]][:3] == before
        said += [x["text"] for x in t["turns"] if x["role"] == "critic" and x["round"] == 2]
    assert said == REPLIES[: len(said)] and len(said) == len(originals)
    capsys.readouterr()
    # a model string alone: a scripted model with no replies, every fork fails
    with pytest.raises(SystemExit) as stop:
        main([*fork, "--swap", "critic=scripted"])
    assert stop.value.code == 1
    assert "no scripted reply left" in capsys.readouterr().err


def test_export_given_a_seat_names_the_player_it_is_exported_as() -> None:
    with pytest.raises(UserError) as err:
        decision_rows([], RunInfo(), role="consultant")
    assert str(err.value).startswith(
        "--role 'consultant': a seat, exported as the player 'debater' (--role debater); "
        "choose from prover, estimator, judge, debater"
    ), str(err.value)
    with pytest.raises(UserError, match=r"^--role 'consultnt': choose from prover"):
        decision_rows([], RunInfo(), role="consultnt")
