"""A fork replays every recorded turn of every seat, in step order, for any topology.

Each built-in topology (two-sided debate, consultancy, the direct judge) and a topology in
which seats speak more than once a round (a critic that picks its stance privately, then a
proposer and the critic speaking twice each: ``stance, P1, C1, P2, C2``) is run, then forked
at every step of every round: with the same agents the fork is the recorded debate bit for
bit; with live agents that write other text, the turns before the fork point are the
recorded ones, in order, and every later one is the live agents'.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from llmdebate.agents.factory import SEAT_ROLES
from llmdebate.cli import cli
from llmdebate.core.schemas import Transcript
from llmdebate.errors import UserError
from llmdebate.experiment.loading import validate
from llmdebate.experiment.runner import run
from llmdebate.models import Model, ScriptedBackend
from llmdebate.protocols.registry import PROTOCOLS
from llmdebate.records.rundir import load_transcripts, read_run_config
from llmdebate.rl import fork, team_for
from llmdebate.rl.replay import Injection

REPO = Path(__file__).resolve().parents[1]
STEPS = (  # (speaker, slot, visible, position): seats speak twice a round
    ("critic", "stance", "private", "none"),
    ("proposer", "argument", "public", "assigned"),
    ("critic", "critique", "public", "none"),
    ("proposer", "rebuttal", "public", "assigned"),
    ("critic", "reply", "public", "none"),
)
REPEATED = {
    "title": "Proposer and critic, twice a round",
    "seats": {"proposer": "prover", "critic": "estimator"},
    "turns": [
        {"speaker": s, "slot": slot, "act": "consultancy_consultant", "visible": v,
         "position": p}
        for s, slot, v, p in STEPS
    ],
}
CRITIC_FIRST = {  # the second seat declared speaks first
    "seats": {"proposer": "prover", "critic": "estimator"},
    "turns": [
        {"speaker": "critic", "slot": "doubt", "act": "consultancy_consultant",
         "position": "none"},
        {"speaker": "proposer", "slot": "argument", "act": "consultancy_consultant"},
    ],
}
PROTOCOL_NAMES = ["two-sided", "consultancy", "direct", "repeated", "critic-first"]


def plain(t: Transcript) -> dict[str, Any]:
    d = t.model_dump(mode="json")
    for c in d["calls"]:
        c.pop("latency_s")
        c.pop("cached")
    return d


def writer(prefix: str) -> Any:
    """Replies that depend only on the prompt (so a replay asks and gets the same)."""
    def reply(messages: list[dict[str, str]]) -> str:
        text = "\n".join(m["content"] for m in messages)
        return f"{prefix}-{hashlib.sha256(text.encode()).hexdigest()[:10]}"

    return reply


def models(prefix: str) -> dict[str, Model]:
    return {
        "prover": Model(ScriptedBackend(responder=writer(prefix + "p"), name="s-prover")),
        "estimator": Model(ScriptedBackend(responder=writer(prefix + "e"), name="s-est")),
        "judge": Model(ScriptedBackend(name="s-judge", default_probability=0.7)),
    }


def config() -> dict[str, Any]:
    return {
        "name": "fork-steps",
        "protocols": PROTOCOL_NAMES,
        "topologies": {"repeated": REPEATED, "critic-first": CRITIC_FIRST},
        "dataset": {"path": str(REPO / "datasets" / "divisors.jsonl"), "limit": 1},
        "rounds": 2,
        "prover": {"model": "scripted", "scratchpad": False,
                   "options": {"replies": ["CLI"] * 20}},  # a fork from the command line
        "estimator": {"model": "scripted", "options": {"replies": ["CLI"] * 20}},
        "judge": {"model": "scripted", "kind": "llm"},
        "max_concurrency": 1,
    }


@pytest.fixture(autouse=True, scope="module")
def _unregister() -> Iterator[None]:
    before, seats = set(PROTOCOLS.names()), dict(SEAT_ROLES)
    yield
    for name in set(PROTOCOLS.names()) - before:
        PROTOCOLS.remove(name)
    SEAT_ROLES.clear()
    SEAT_ROLES.update(seats)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("forks") / "run"
    run(validate(config()), out, models=models("R"), progress=False)
    ts = load_transcripts(out)
    assert ts and all(t.status == "complete" for t in ts), [t.failure for t in ts]
    return out


def speeches(t: Transcript) -> list[tuple[str, int, str]]:
    return [(x.role, x.round, x.text) for x in t.turns if x.role != "judge"]


def points(t: Transcript) -> Iterator[tuple[int, int | None, int]]:
    """(round, step from 1 or None: the whole round, how many recorded speeches precede the
    fork point) for every step of every round, and the judge alone (round rounds + 1)."""
    said = speeches(t)
    rounds = int(t.meta["rounds"])
    for at in range(1, rounds + 2):
        before = len([s for s in said if s[1] < at])
        yield at, None, before
        for step in range(1, len([s for s in said if s[1] == at]) + 1):
            yield at, step, before + step - 1


def test_the_recorded_turns_are_distinct_and_in_step_order(run_dir: Path) -> None:
    """What the forks are compared with: every speech's text differs from every other, and a
    seat speaks twice a round where its topology says so."""
    ts = {t.protocol: t for t in load_transcripts(run_dir)}
    assert set(ts) == set(PROTOCOL_NAMES)
    for t in ts.values():
        texts = [s[2] for s in speeches(t)]
        assert len(set(texts)) == len(texts), t.protocol
    rep = ts["repeated"]
    assert [(s[0], s[1]) for s in speeches(rep)] == [
        (speaker, r) for r in (1, 2) for speaker, *_ in STEPS
    ]


def test_a_fork_with_the_same_agents_is_the_recorded_debate_at_every_step(
    run_dir: Path,
) -> None:
    team = team_for(read_run_config(run_dir), models=models("R"))
    forked = 0
    for t in load_transcripts(run_dir):
        if t.protocol == "direct":
            assert plain(asyncio.run(fork(t, team, 0))) == plain(t)
            continue
        for at, step, _ in points(t):
            new = asyncio.run(fork(t, team, at, step=step))
            assert plain(new) == plain(t), (t.protocol, at, step)
            forked += 1
    assert forked == 2 * (7 + 5 + 13 + 7)  # two debates a protocol, every point


def test_a_fork_replays_the_recorded_prefix_and_lets_live_agents_speak_after_it(
    run_dir: Path,
) -> None:
    team = team_for(read_run_config(run_dir), models=models("L"))
    for t in load_transcripts(run_dir):
        if t.protocol == "direct":
            continue
        said = speeches(t)
        for at, step, before in points(t):
            new = speeches(asyncio.run(fork(t, team, at, step=step)))
            assert new[:before] == said[:before], (t.protocol, at, step)
            assert [(r, n) for r, n, _ in new[before:]] == [
                (r, n) for r, n, _ in said[before:]
            ], (t.protocol, at, step)
            live = [text for _, _, text in new[before:]]
            assert all(text.startswith("L") for text in live), (t.protocol, at, step, live)


def test_a_fork_from_a_speaker_starts_at_its_first_step_of_the_round(run_dir: Path) -> None:
    team = team_for(read_run_config(run_dir), models=models("L"))
    by = {t.protocol: t for t in load_transcripts(run_dir)}
    t = by["repeated"]
    said = speeches(t)
    proposer = speeches(asyncio.run(fork(t, team, 2, speaker="proposer")))
    assert proposer[:6] == said[:6] and proposer[6][2].startswith("L")
    critic = speeches(asyncio.run(fork(t, team, 2, speaker="critic")))
    assert critic[:5] == said[:5] and critic[5][2].startswith("L")
    first = by["critic-first"]  # the step order, not the order the seats are declared in
    got = speeches(asyncio.run(fork(first, team, 1, speaker="proposer")))
    assert got[0] == speeches(first)[0] and got[1][2].startswith("L")


def test_an_injected_speech_is_the_seats_first_live_one_of_the_round(run_dir: Path) -> None:
    t = next(t for t in load_transcripts(run_dir) if t.protocol == "repeated")
    team = team_for(read_run_config(run_dir), models=models("R"))
    inj = Injection(speaker="critic", act="speech", round=1, completion="I doubt it.")
    new = speeches(asyncio.run(fork(t, team, 1, step=3, inject=inj)))
    assert new[:2] == speeches(t)[:2]
    assert new[2] == ("critic", 1, "I doubt it.") and new[4][2] != "I doubt it."


def test_a_step_outside_the_round_is_one_line(run_dir: Path) -> None:
    t = next(t for t in load_transcripts(run_dir) if t.protocol == "repeated")
    team = team_for(read_run_config(run_dir), models=models("R"))
    with pytest.raises(UserError, match=r"fork step of round 1 .* must be in 1\.\.5") as e:
        asyncio.run(fork(t, team, 1, step=6))
    assert "\n" not in str(e.value)


def test_fork_step_from_the_command_line(run_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "forks.jsonl"
    res = CliRunner().invoke(cli, [
        "fork", str(run_dir), "--at", "1", "--step", "4", "--protocol", "repeated",
        "--out", str(out),
    ])
    assert res.exit_code == 0, res.output
    recorded = {t.id: t for t in load_transcripts(run_dir)}
    lines = out.read_text().splitlines()
    assert len(lines) == 2
    for line in lines:
        new = Transcript.model_validate_json(line)
        assert speeches(new)[:3] == speeches(recorded[new.id])[:3]
        assert [x[2] for x in speeches(new)[3:]] == ["CLI"] * 7
