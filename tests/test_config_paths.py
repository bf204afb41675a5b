"""Paths in a config are read against the config file's folder (a run's recorded config
against the run folder), and everything a topology's templates need is checked when the
config is read: a run that cannot start says why in one line and leaves nothing behind.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from llmdebate.agents.factory import SEAT_ROLES
from llmdebate.cli import main
from llmdebate.errors import ConfigError
from llmdebate.experiment.loading import load, validate
from llmdebate.experiment.runner import run
from llmdebate.prompts import PromptError, Prompts
from llmdebate.protocols.registry import PROTOCOLS
from llmdebate.records.rundir import read_run_config

REPO = Path(__file__).resolve().parents[1]
STANCE = """{% block user -%}
Question: {{ question }}
{{ options }}
Say privately whether you agree that "{{ assigned }}" is right.
{%- endblock %}
"""


def topology(stance_act: str = "pc_stance") -> dict[str, Any]:
    return {
        "seats": {"proposer": "prover", "critic": "estimator"},
        "turns": [
            {"speaker": "critic", "slot": "stance", "act": stance_act, "visible": "private",
             "position": "none"},
            {"speaker": "proposer", "slot": "argument", "act": "consultancy_consultant"},
            {"speaker": "critic", "slot": "critique", "act": stance_act, "position": "none"},
        ],
    }


def write_config(folder: Path, **over: Any) -> Path:
    """A config in ``folder`` whose prompts folder and dataset sit beside it, named
    relatively."""
    (folder / "tpl").mkdir(parents=True, exist_ok=True)
    (folder / "tpl" / "pc_stance.j2").write_text(STANCE)
    lines = (REPO / "datasets" / "divisors.jsonl").read_text().splitlines()[:1]
    (folder / "items.jsonl").write_text("\n".join(lines) + "\n")
    data: dict[str, Any] = {
        "name": "pc",
        "protocols": ["pc"],
        "topologies": {"pc": topology()},
        "prompts_dir": "tpl",
        "dataset": {"path": "items.jsonl"},
        "rounds": 1,
        "prover": {"scratchpad": False},
        "seats": {
            "proposer": {"model": "scripted", "options": {"replies": ["P"] * 8}},
            "critic": {"model": "scripted", "options": {"replies": ["C"] * 8}},
        },
        "judge": {"model": "scripted", "options": {"default_probability": 0.7}},
        **over,
    }
    path = folder / "pc.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.fixture(autouse=True)
def _unregister() -> Iterator[None]:
    before, seats = set(PROTOCOLS.names()), dict(SEAT_ROLES)
    yield
    for name in set(PROTOCOLS.names()) - before:
        PROTOCOLS.remove(name)
    SEAT_ROLES.clear()
    SEAT_ROLES.update(seats)


def test_a_config_reads_its_paths_against_its_own_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Run from another folder, then forked from a third: the prompts folder and dataset
    named beside the config are found both times."""
    config = write_config(tmp_path / "study")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    run_dir = tmp_path / "runs" / "pc"
    assert main(["run", "--config", str(config), "--run-dir", str(run_dir)]) == 0
    ts = [json.loads(x) for x in (run_dir / "transcripts.jsonl").read_text().splitlines()]
    assert ts and {t["status"] for t in ts} == {"complete"}
    asked = ts[0]["calls"][0]["messages"][-1]["content"]
    assert "Say privately whether you agree" in asked  # the template beside the config
    third = tmp_path / "third"
    third.mkdir()
    monkeypatch.chdir(third)
    capsys.readouterr()
    assert main(["fork", str(run_dir), "--at", "2"]) == 0, capsys.readouterr().err
    assert (run_dir / "forks.jsonl").read_text().count("\n") == len(ts)


def test_a_recorded_relative_path_is_read_against_the_run_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    shutil.copytree(REPO / "configs" / "proposer-critic", run_dir / "my-prompts")
    (run_dir / "config.yaml").write_text(yaml.safe_dump({"prompts_dir": "my-prompts"}))
    monkeypatch.chdir(tmp_path)
    assert read_run_config(run_dir)["prompts_dir"] == str((run_dir / "my-prompts").resolve())


def test_a_missing_template_names_every_folder_it_was_looked_for_in(tmp_path: Path) -> None:
    with pytest.raises(PromptError) as e:
        Prompts(tmp_path).render("pc_critc")
    message = str(e.value)
    assert "pc_critc.j2 not found" in message and "\n" not in message
    assert str(tmp_path) in message and str(Prompts().default_folder) in message


def test_a_missing_prompts_folder_is_refused_naming_where_it_was_looked_for(
    tmp_path: Path,
) -> None:
    config = write_config(tmp_path, prompts_dir="no-such-folder")
    with pytest.raises(ConfigError) as e:
        load(config)
    message = str(e.value)
    assert message.startswith(f"{config}:") and "prompts_dir" in message
    assert str(tmp_path / "no-such-folder") in message and "\n" not in message


def test_a_misspelt_template_in_a_topology_is_one_line_exit_2_and_nothing_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path, topologies={"pc": topology("pc_critc")})
    run_dir = tmp_path / "runs" / "pc"
    assert main(["run", "--config", str(config), "--run-dir", str(run_dir)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err, err
    assert f"{config}:" in err and "topologies.pc.turns.0.act" in err
    assert "pc_critc.j2 not found (looked in" in err and str(tmp_path / "tpl") in err
    assert not run_dir.exists()


def test_a_template_reading_a_variable_it_is_not_given_is_refused_when_read(
    tmp_path: Path,
) -> None:
    config = write_config(tmp_path)
    (tmp_path / "tpl" / "pc_stance.j2").write_text(STANCE.replace("{{ assigned }}",
                                                                  "{{ asigned }}"))
    with pytest.raises(ConfigError, match=r"topologies\.pc\.turns\.0\.act: template "
                       r"pc_stance\.j2 reads asigned, which it is not given") as e:
        load(config)
    assert "\n" not in str(e.value)


def test_a_judge_template_is_checked_too_and_a_run_from_code_writes_nothing(
    tmp_path: Path,
) -> None:
    """A config built in code is checked by the run before it writes anything."""
    data = yaml.safe_load(write_config(tmp_path).read_text())
    data["topologies"]["pc"]["judge"] = "consultancy_juge"
    data["prompts_dir"] = str(tmp_path / "tpl")
    data["dataset"]["path"] = str(tmp_path / "items.jsonl")
    run_dir = tmp_path / "run"
    with pytest.raises(ConfigError, match=r"topologies\.pc\.judge: prompt template "
                       r"consultancy_juge\.j2: consultancy_juge\.j2 not found"):
        run(validate(data), run_dir, progress=False)
    assert not run_dir.exists()


def test_every_shipped_topology_and_the_proposer_critic_config_pass_the_check() -> None:
    config = load(REPO / "configs" / "proposer-critic.yaml")
    assert Path(str(config.prompts_dir)).is_absolute()
    load(None, {"protocols": ["two-sided", "consultancy", "direct"]})
