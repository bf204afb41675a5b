"""An export format defined here, in the test, registered in ``FORMATS`` and written by
``llmdebate export``; an ``online`` one gets only injectable rows, each with its state."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import pytest

from llmdebate.cli import main
from llmdebate.errors import UserError
from llmdebate.experiment.runner import run
from llmdebate.export.api import injectable
from llmdebate.export.format_registry import FORMATS, FormatContext
from llmdebate.export.rows import Row
from llmdebate.registry import Registry

try:
    from tests.export_fixtures import judged_config
except ImportError:  # pytest run from inside tests/
    from export_fixtures import judged_config  # type: ignore[no-redef]


def sharegpt(rows: list[Row], ctx: FormatContext) -> list[dict[str, Any]]:
    """ShareGPT conversations: the prompt's turns, then the completion, with the reward."""
    names = {"system": "system", "user": "human", "assistant": "gpt"}
    return [
        {
            "conversations": [
                {"from": names[m["role"]], "value": m["content"]}
                for m in [*r.prompt, *r.completion]
            ],
            "reward": r.reward,
            "debate_id": r.debate_id,
        }
        for r in rows
    ]


def states_only(rows: list[Row], ctx: FormatContext) -> list[dict[str, Any]]:
    """An online format: the replay state of every row (and whether it was injectable)."""
    return [{"state": ctx.state(r), "injectable": injectable(r), "act": r.act} for r in rows]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("fmt") / "run"
    run(judged_config(rounds=1), out, progress=False)
    return out


@pytest.fixture
def formats() -> Iterator[None]:
    FORMATS.add("sharegpt", sharegpt)
    FORMATS.add("states-only", states_only, capabilities={"online"})
    try:
        yield
    finally:
        FORMATS.remove("sharegpt")
        FORMATS.remove("states-only")


def test_a_format_defined_in_a_test_is_written_by_the_export_command(
    formats: None, run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "debater.jsonl"
    argv = ["export", str(run_dir), "--role", "debater", "--format", "sharegpt"]
    assert main([*argv, "--out", str(out)]) == 0
    assert "sharegpt rows" in capsys.readouterr().out
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert rows and all(r["conversations"][-1]["from"] == "gpt" for r in rows)
    assert all(r["conversations"][0]["from"] in ("system", "human") for r in rows)
    assert any(r["reward"] is not None for r in rows)

    out = tmp_path / "online.jsonl"
    argv = ["export", str(run_dir), "--role", "debater", "--format", "states-only"]
    assert main([*argv, "--out", str(out)]) == 0
    online = [json.loads(x) for x in out.read_text().splitlines()]
    assert online and all(r["injectable"] and r["act"] == "speech" for r in online)
    state = json.loads(online[0]["state"])
    assert {"config", "transcript", "speaker", "act"} <= set(state)


def test_an_unknown_format_names_the_registered_ones(
    formats: None, run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["export", str(run_dir), "--role", "debater", "--format", "nosuch"]
    assert main([*argv, "--out", str(tmp_path / "x.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "nosuch" in err and "sharegpt" in err and "trl-prompt-completion" in err
    assert main(["export", "--help"]) == 0
    assert "states-only" in capsys.readouterr().out


def test_a_format_plugin_is_loaded_from_its_entry_point(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A package names a module under the ``llmdebate.formats`` group; reading the registry
    imports it, and its import registers the format."""
    (tmp_path / "my_formats.py").write_text(
        "import llmdebate.export.format_registry as formats\n"
        "@formats.FORMATS.register('first-turn')\n"
        "def first_turn(rows, ctx):\n"
        "    return [{'prompt': r.prompt[0]['content']} for r in rows]\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "my_formats", raising=False)
    ep = EntryPoint(name="first-turn", value="my_formats", group="llmdebate.formats")

    def entry_points(*, group: str) -> list[EntryPoint]:
        return [ep] if group == "llmdebate.formats" else []

    monkeypatch.setattr("llmdebate.registry.entry_points", entry_points)
    reg: Registry[Any] = Registry("export format", group="llmdebate.formats")
    monkeypatch.setattr("llmdebate.export.format_registry.FORMATS", reg)
    assert reg.names() == ("first-turn",)
    assert reg.get("first-turn").__name__ == "first_turn"
    with pytest.raises(UserError, match="unknown export format 'x': choose from first-turn"):
        reg.get("x")
    monkeypatch.delitem(sys.modules, "my_formats")
