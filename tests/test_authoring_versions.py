"""The authoring API is versioned, and what an extension written against an earlier version
names either still works, with a warning naming its replacement, or is refused in one line
naming it: a moved module, a protocol attribute of authoring API 1 (``seat_roles``), a
member the package no longer reads. A plugin written against the current API loads with no
warning at all."""

from __future__ import annotations

import importlib
import importlib.util
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

import llmdebate.authoring
from llmdebate.agents.factory import SEAT_ROLES
from llmdebate.experiment.loading import validate
from llmdebate.experiment.runner import run
from llmdebate.protocols.registry import PROTOCOLS
from llmdebate.records.rundir import load_transcripts
from llmdebate.retired import MOVED_MODULES

REPO = Path(__file__).resolve().parents[1]

PREVIOUS_RELEASE = '''
from collections.abc import Mapping
from typing import ClassVar

from llmdebate.protocols.common import decided, judge_choice, judge_variables, view_of
from llmdebate.protocols.families import ChoiceProtocol
from llmdebate.protocols.registry import register
from llmdebate.protocols.speeches import deliver, speech_prompt
from llmdebate.core.schemas import Turn


@register("old-critic")
class OldCritic(ChoiceProtocol):
    title = "Critiqued consultancy, as written for the previous release"
    seats = ("consultant", "critic")
    seat_roles: ClassVar[Mapping[str, str]] = {"critic": "estimator"}
    roles: ClassVar[Mapping[str, str]] = {"critic": "critic"}
    assigned = True
    judge_act = "consultancy_judge"
    SPEECHES

    async def run(self, spec, team, settings, log):
        position = spec.answer or spec.gold
        view = view_of(spec, team)
        turns = []
        for rnd in range(1, settings.rounds + 1):
            ask = speech_prompt(team, spec, view, "consultancy_consultant",
                                options=spec.shown, position=position, rnd=rnd,
                                rounds=settings.rounds, seen=turns)
            turns.append(await deliver(team, spec, view, ask, role="consultant",
                                       position=position, rnd=rnd, seen=turns,
                                       options=spec.shown, judge_act=self.judge_act,
                                       log=log))
            out = await team.model_for("critic").generate(
                ask, team.speech_config(), role="critic", act=f"argue round {rnd}", log=log)
            turns.append(Turn(role="critic", round=rnd, text=out.text))
        decision = await judge_choice(team, self.judge_act, spec.shown, log,
                                      **judge_variables(spec.item.question, view, turns))
        return decided(spec, settings, agents={"judge": team.judge_name()}, turns=turns,
                       log=log, decision=decision, judge_round=settings.rounds + 1,
                       options=spec.shown, rounds=settings.rounds)
'''

CURRENT = '''
from llmdebate.authoring.protocol import (
    Additions, Capabilities, Speech, SpeechProtocol, Turn, decided, judge_choice,
    judge_variables, register, view_of,
)


@register("new-critic")
class NewCritic(SpeechProtocol):
    title = "Critiqued consultancy, current API"
    seats = ("consultant", "critic2")
    adds = Additions(seats={"critic2": "estimator"}, roles={"critic2": "critic"},
                     models=frozenset())
    can = Capabilities(assigned=True)
    judge_act = "consultancy_judge"

    async def run(self, spec, team, settings, log):
        position = spec.answer or spec.gold
        view = view_of(spec, team)
        turns = []
        for rnd in range(1, settings.rounds + 1):
            turns.append(await Speech(
                team, spec, view, role="consultant", rnd=rnd, rounds=settings.rounds,
                position=position, seen=list(turns), options=spec.shown,
                judge_act=self.judge_act, log=log,
            ).say("consultancy_consultant"))
        decision = await judge_choice(team, self.judge_act, spec.shown, log,
                                      **judge_variables(spec.item.question, view, turns))
        return decided(spec, settings, agents={"judge": team.judge_name()}, turns=turns,
                       log=log, decision=decision, judge_round=settings.rounds + 1,
                       options=spec.shown, rounds=settings.rounds)
'''


@pytest.fixture(autouse=True)
def _unregister() -> Iterator[None]:
    before, seats = set(PROTOCOLS.names()), dict(SEAT_ROLES)
    yield
    for name in set(PROTOCOLS.names()) - before:
        PROTOCOLS.remove(name)
    SEAT_ROLES.clear()
    SEAT_ROLES.update(seats)


def plugin(tmp_path: Path, name: str, source: str) -> ModuleType:
    """Import ``source`` as module ``name``, as an entry point would."""
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        sys.modules.pop(name, None)
    return module


def test_the_authoring_api_has_a_version() -> None:
    version = llmdebate.authoring.API_VERSION
    assert isinstance(version, tuple) and version >= (2, 0)


@pytest.mark.parametrize("name", ["llmdebate.protocols.base", "llmdebate.schemas"])
def test_a_moved_module_names_its_replacement_in_one_line(name: str) -> None:
    with pytest.raises(ModuleNotFoundError) as e:
        importlib.import_module(name)
    message = str(e.value)
    assert "\n" not in message and f"import {MOVED_MODULES[name].split()[0]}" in message


def test_every_moved_module_is_gone_and_its_replacement_is_there() -> None:
    for old, new in MOVED_MODULES.items():
        assert importlib.util.find_spec(new.split()[0]) is not None, new
        parent = old.rpartition(".")[0]
        folder = Path(importlib.import_module(parent).__file__ or "").parent
        assert not (folder / f"{old.rpartition('.')[2]}.py").exists(), old


def test_a_plugin_of_the_previous_release_that_sets_seat_roles_loads_with_warnings(
    tmp_path: Path,
) -> None:
    """``seat_roles``, ``roles`` and ``assigned`` are read as ``adds.seats``, ``adds.roles``
    and ``can.assigned``, each warned of with its replacement; the protocol runs."""
    with pytest.warns(DeprecationWarning) as caught:
        plugin(tmp_path, "old_critic", PREVIOUS_RELEASE.replace("    SPEECHES\n", ""))
    said = [str(w.message) for w in caught]
    assert any("seat_roles is authoring API 1; declare adds = Additions(seats=...)" in m
               for m in said), said
    assert any("assigned is authoring API 1; declare can = Capabilities(assigned=...)" in m
               for m in said), said
    p = PROTOCOLS.get("old-critic")
    assert SEAT_ROLES["critic"] == "estimator" and dict(p.adds.roles) == {"critic": "critic"}
    assert p.can.assigned
    config = validate({
        "protocols": ["old-critic"], "rounds": 1,
        "dataset": {"path": str(REPO / "datasets" / "divisors.jsonl"), "limit": 1},
        "prover": {"model": "scripted", "scratchpad": False,
                   "options": {"replies": ["S1", "S2"]}},
        "estimator": {"model": "scripted", "options": {"replies": ["Q1", "Q2"]}},
        "judge": {"model": "scripted"},
    })
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        run(config, tmp_path / "run", progress=False)
    ts = load_transcripts(tmp_path / "run")
    assert [t.status for t in ts] == ["complete", "complete"]
    assert {x.role for x in ts[0].turns} == {"consultant", "critic", "judge"}


def test_a_member_no_longer_read_is_refused_in_one_line_naming_the_replacement(
    tmp_path: Path,
) -> None:
    with pytest.raises(TypeError) as e:
        plugin(tmp_path, "old_critic", PREVIOUS_RELEASE.replace("SPEECHES", "speeches = True"))
    message = str(e.value)
    assert message == ("protocol old-critic: speeches is no longer read (authoring API 2): "
                       "subclass SpeechProtocol")
    with pytest.raises(TypeError, match=r"player_of is no longer read .*adds = Additions\("):
        plugin(tmp_path, "old_critic", PREVIOUS_RELEASE.replace(
            "SPEECHES", "def player_of(self, role):\n        return role"))
    assert "old-critic" not in PROTOCOLS


def test_a_plugin_of_the_previous_release_is_refused_through_its_entry_point_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Loaded as a plugin, the refusal is the registry's one line naming the plugin."""
    from llmdebate.errors import UserError
    from llmdebate.registry import Registry

    (tmp_path / "old_base.py").write_text("from llmdebate.protocols.base import DebateSpec\n")
    monkeypatch.syspath_prepend(str(tmp_path))

    class EntryPoint:
        name, value = "old", "old_base"

        def load(self) -> ModuleType:
            return importlib.import_module(self.value)

    monkeypatch.setattr("llmdebate.registry.entry_points", lambda group: [EntryPoint()])
    registry: Registry[object] = Registry("protocol", group="llmdebate.protocols")
    with pytest.raises(UserError) as e:
        registry.names()
    message = str(e.value)
    assert "\n" not in message and "plugin 'old' (old_base)" in message
    assert "import llmdebate.authoring.protocol" in message


def test_a_plugin_of_the_current_api_loads_with_no_warning(tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plugin(tmp_path, "new_critic", CURRENT)
    p = PROTOCOLS.get("new-critic")
    assert SEAT_ROLES["critic2"] == "estimator" and p.can.assigned


def test_authoring_api_1_speech_functions_import_with_a_warning_naming_speech() -> None:
    with pytest.warns(DeprecationWarning, match=r"deliver is authoring API 1; use "
                      r"Speech\(team, spec, view, \.\.\.\)\.deliver\(messages\)"):
        from llmdebate.authoring.protocol import deliver
    assert callable(deliver)
    with pytest.raises(AttributeError):
        llmdebate.authoring.protocol.no_such_name  # noqa: B018
