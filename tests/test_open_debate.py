"""Open debate: two-sided debate with ``prover.assignment: choose``. Debater A's model picks
the answer it defends (decision ``answer``), B defends the other; one debate per item (variant
``chosen``), re-scored, forked bit for bit and rated apart as ``two-sided (chosen)``."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from llmdebate.cli import main
from llmdebate.core.schemas import Transcript
from llmdebate.errors import ConfigError
from llmdebate.experiment.loading import validate
from llmdebate.experiment.runner import run
from llmdebate.export import decision_rows, run_info
from llmdebate.protocols.families import ChoiceProtocol
from llmdebate.protocols.registry import PROTOCOLS, register
from llmdebate.records.rundir import load_transcripts, read_run_config
from llmdebate.rl import fork, team_for
from llmdebate.tournament.seat_records import matches_of

try:
    from tests.fixtures import tournament_players
except ImportError:  # pytest run from inside tests/
    sys.path.insert(0, str(Path(__file__).parent))
    from fixtures import tournament_players  # type: ignore[no-redef]

REPO = Path(__file__).resolve().parents[1]
DIVISORS = REPO / "datasets" / "divisors.jsonl"
PLAYERS = ("strong", "random", "concede")
ITEMS = 6


def plain(t: Transcript) -> dict[str, Any]:
    d = t.model_dump(mode="json")
    for c in d["calls"]:
        c.pop("latency_s")
        c.pop("cached")
    return d


def open_config(**over: Any) -> dict[str, Any]:
    return {
        "name": "open-debate",
        "protocols": ["two-sided"],
        "dataset": {"path": str(DIVISORS), "limit": ITEMS},
        "rounds": 2,
        "prover": {"model": "scripted", "assignment": "choose"},
        "estimator": {"model": "scripted"},
        "judge": tournament_players.judge_settings(),
        **over,
    }


@pytest.fixture(scope="module")
def open_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("open") / "run"
    cfg = validate(open_config(
        prover={**tournament_players.player("random"), "assignment": "choose"}
    ))
    assert run(cfg, out, progress=False).exit_code == 0
    return out


def test_debater_a_picks_its_answer_and_b_defends_the_other(open_run: Path) -> None:
    ts = load_transcripts(open_run)
    assert sorted(t.id.split("/")[2] for t in ts) == ["chosen"] * ITEMS  # one per item
    assert len({t.id.split("/")[1] for t in ts}) == ITEMS
    picked = set()
    for t in ts:
        assert t.status == "complete" and t.meta["variant"] == "chosen"
        first = t.calls[0]
        assert (first.act, first.role, first.decision) == ("answer", "prover", "answer")
        options = t.meta["options"]
        pick = options[int(str(first.completion).strip()) - 1]
        a = {x.position for x in t.turns if x.role == "debater A"}
        b = {x.position for x in t.turns if x.role == "debater B"}
        other = next(o for o in options if o != pick)
        assert (a, b) == ({pick}, {other}), t.id
        assert t.meta["order"] == [pick, other]
        seats = t.meta["seats"]
        gold = t.meta["gold"]
        assert seats["debater A"]["side"] == ("correct" if pick == gold else "incorrect")
        assert seats["debater B"]["side"] == ("correct" if other == gold else "incorrect")
        picked.add(pick == gold)
    assert picked == {True, False}  # the random debater picked both sides over the items


def test_open_debate_rescoring_finds_no_mismatch(
    open_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["score", str(open_run / "transcripts.jsonl")]) == 0
    out = capsys.readouterr().out
    assert "0 mismatch" in out, out


def test_open_debate_exports_the_pick_and_credits_each_debater_on_its_side(
    open_run: Path,
) -> None:
    ts = {t.id: t for t in load_transcripts(open_run)}
    rows = decision_rows(list(ts.values()), run_info(open_run, read_run_config(open_run), 0.0))
    for t in ts.values():
        mine = [r for r, _ in rows if r.debate_id == t.id]
        assert [r.act for r in mine if r.speaker == "prover"] == ["answer"]
        won = {x.role: x.position == t.meta["decision"] for x in t.turns if x.role != "judge"}
        for r in mine:
            if r.act == "speech":
                assert r.reward == (1.0 if won[r.speaker] else 0.0), (t.id, r.speaker)
        assert {r.speaker for r in mine if r.act == "speech"} == {"debater A", "debater B"}


def test_a_fork_of_an_open_debate_replays_it_bit_for_bit(open_run: Path) -> None:
    team = team_for(read_run_config(open_run))
    for t in load_transcripts(open_run)[:2]:
        for at in (1, 2, 3):
            for speaker in (None, "debater A", "debater B"):
                new = asyncio.run(fork(t, team, at, speaker=speaker))
                assert plain(new) == plain(t), (t.id, at, speaker)
    # a prover model that could not pick: the recorded pick (and speeches) are replayed
    mute = team_for(read_run_config(open_run), swap={"prover": "scripted"})
    t = load_transcripts(open_run)[0]
    new = asyncio.run(fork(t, mute, 3))
    assert new.turns == t.turns and plain(new)["calls"][0] == plain(t)["calls"][0]


def test_open_debate_with_a_roster_is_rated_apart(tmp_path: Path) -> None:
    cfg = validate(open_config(
        tournament={"roster": {n: tournament_players.player(n) for n in PLAYERS}},
        report={"bootstrap": 50},
    ))
    assert run(cfg, tmp_path / "o", progress=False).exit_code == 0
    ts = load_transcripts(tmp_path / "o")
    assert len(ts) == ITEMS * len(PLAYERS) * (len(PLAYERS) - 1)  # every ordered pair, A picks
    for t in ts:
        assert t.meta["variant"] == "chosen" and t.calls[0].act == "answer"
        a = t.meta["seats"]["debater A"]
        assert a["side"] == {"strong": "correct", "concede": "incorrect"}.get(a["name"], a["side"])
    assert {m.protocol for m in matches_of(ts)} == {"two-sided (chosen)"}
    assert main(["report", str(tmp_path / "o"), "--quiet"]) == 0
    m = json.loads((tmp_path / "o" / "comparison.json").read_text())
    assert set(m["tournament"]["ratings"]) == {"two-sided (chosen)"}


class Seated(ChoiceProtocol):
    """A protocol with a debater seat that does not declare open roles."""

    seats = ("debater A",)

    async def run(self, spec: Any, team: Any, settings: Any, log: Any) -> Transcript:
        raise AssertionError("the config refuses this protocol before any debate runs")


def test_choose_is_refused_for_a_protocol_without_open_roles() -> None:
    register("seated-fixed")(Seated)
    try:
        with pytest.raises(ConfigError, match=r"seated-fixed do not let a debater pick its "
                           r"answer \(open_roles is False\)"):
            validate({"protocols": ["two-sided", "seated-fixed"],
                      "prover": {"assignment": "choose"}, "judge": {"method": "verbalised"}})
    finally:
        PROTOCOLS.remove("seated-fixed")
    validate({"protocols": ["two-sided", "consultancy"], "prover": {"assignment": "choose"},
              "judge": {"method": "verbalised"}})
    with pytest.raises(ConfigError, match="schedule round-robin"):
        validate(open_config(tournament={
            "roster": {n: tournament_players.player(n) for n in PLAYERS}, "schedule": "swiss",
        }))
