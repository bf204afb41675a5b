"""A protocol defined here, in the test, goes through everything a built-in one does: a run
(``llmdebate run``), the report, re-scoring, an export, a fork that replays it bit for bit, and
a human-judge study (``llmdebate assign``, a person's verdict, the judged transcript scored).

The protocol, "judge with notes", is a judge-only baseline with a speech act of its own: a
note-taker (the prover's model, arguing for nothing) writes notes on the question, then the
judge chooses between the two answers with the notes as background. It touches no module of
the package: it subclasses :class:`ChoiceProtocol` and registers itself in ``PROTOCOLS``.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import pytest
import yaml
from judging_study import SCRIPTED, assign, write_judges
from sqlalchemy import select

from llmdebate.agents.factory import SEAT_ROLES, Team
from llmdebate.agents.settings import EstimatorSettings, JudgeSettings, ProverSettings
from llmdebate.cli import main
from llmdebate.commands.score import score_file
from llmdebate.core import scoring
from llmdebate.core.schemas import Evidence, Transcript, Turn
from llmdebate.errors import ConfigError, ProtocolViolation
from llmdebate.experiment.loading import validate
from llmdebate.judging.complete import Submission, submit, waiting_by_id
from llmdebate.judging.db import Assignment, connect
from llmdebate.judging.view import build_view
from llmdebate.prompts import Prompts
from llmdebate.protocols.common import decided, judge_choice, options_text
from llmdebate.protocols.families import ChoiceProtocol, RecursiveProtocol, SpeechProtocol
from llmdebate.protocols.interface import Additions, Capabilities, Protocol, Ruling
from llmdebate.protocols.prover_estimator import ProverEstimator
from llmdebate.protocols.registry import PROTOCOLS, register
from llmdebate.protocols.spec import DebateSpec, Log, ProtocolSettings
from llmdebate.records.rundir import JUDGED_FILE, load_transcripts, read_run_config
from llmdebate.registry import Registry
from llmdebate.rl import fork, team_for
from llmdebate.tournament.roster import roster_seats, static_seats

REPO = Path(__file__).resolve().parents[1]
NAME = "judge-with-notes"
NOTES_ROLE = "note-taker"


def _background(context: str | None, notes: str) -> str:
    return (f"{context}\n\n" if context else "") + f"Notes on the question:\n{notes}"


class JudgeWithNotes(ChoiceProtocol):
    """Judge with notes: neutral notes on the question, then the judge's choice."""

    title = "Judging with notes"
    rank = 0
    judge_act = "direct_judge"

    async def run(
        self, spec: DebateSpec, team: Team, settings: ProtocolSettings, log: Log
    ) -> Transcript:
        model = team.models["prover"]
        ask = [{
            "role": "user",
            "content": f"Write neutral notes on this question, arguing for no answer.\n"
            f"Question: {spec.item.question}\nPossible answers:\n{options_text(spec.shown)}",
        }]
        notes = await model.generate(
            ask, team.speech_config(), role=NOTES_ROLE, act="notes", log=log
        )
        turns = [Turn(role=NOTES_ROLE, round=1, text=notes.text)]
        decision = await judge_choice(
            team, self.judge_act, spec.shown, log, question=spec.item.question,
            context=_background(spec.item.context, notes.text),
        )
        return decided(
            spec, settings, agents={NOTES_ROLE: model.name, "judge": team.judge_name()},
            turns=turns, log=log, decision=decision, judge_round=2, options=spec.shown,
        )

    def judge_prompt(self, t: Transcript) -> tuple[str, dict[str, Any]]:
        """What a model judge of a waiting debate is asked: the notes as background."""
        item = t.item or {}
        notes = next(x.text for x in t.turns if x.role == NOTES_ROLE)
        return self.judge_act, {
            "question": item.get("question", ""),
            "context": _background(item.get("context"), notes),
        }


@pytest.fixture
def plugin() -> Iterator[None]:
    assert NAME not in PROTOCOLS
    register(NAME)(JudgeWithNotes)
    try:
        yield
    finally:
        PROTOCOLS.remove(NAME)
    assert NAME not in PROTOCOLS


def _config(tmp_path: Path, judge: dict[str, Any], name: str) -> Path:
    data = {
        "name": name,
        "dataset": {"path": str(REPO / "datasets" / "divisors.jsonl"), "limit": 4},
        "protocols": [NAME, "direct"],
        "prover": SCRIPTED,
        "estimator": SCRIPTED,
        "judge": judge,
    }
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _run(tmp_path: Path, judge: dict[str, Any], name: str) -> Path:
    run_dir = tmp_path / name
    argv = ["run", "--config", str(_config(tmp_path, judge, name)), "--run-dir", str(run_dir)]
    assert main([*argv, "--quiet"]) == 0
    return run_dir


def _plain(t: Transcript) -> dict[str, Any]:
    d = t.model_dump(mode="json")
    for c in d["calls"]:
        c.pop("latency_s")
        c.pop("cached")
    return d


def test_an_unregistered_protocol_is_refused_with_the_choices(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["run", "--config", str(_config(tmp_path, {**SCRIPTED, "kind": "llm"}, "no"))]
    assert main([*argv, "--run-dir", str(tmp_path / "no"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"unknown protocol '{NAME}': choose from prover-estimator" in err


def test_run_help_lists_the_protocols_registered_when_it_is_shown(
    capsys: pytest.CaptureFixture[str],
) -> None:
    def protocols_help() -> str:
        assert main(["run", "--help"]) == 0
        out = " ".join(capsys.readouterr().out.split()).replace("- ", "-")  # unwrapped
        return out.split("--protocols LIST ", 1)[1].split(" --", 1)[0]

    assert NAME not in protocols_help()
    register(NAME)(JudgeWithNotes)  # after the command was built
    try:
        shown = protocols_help()
    finally:
        PROTOCOLS.remove(NAME)
    assert f"One of: {', '.join(PROTOCOLS.names())}, {NAME}." in shown


def test_a_protocol_defined_in_a_test_runs_reports_scores_exports_and_forks(
    plugin: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = _run(tmp_path, {**SCRIPTED, "kind": "llm"}, "notes")
    ts = load_transcripts(run_dir)
    mine = [t for t in ts if t.protocol == NAME]
    assert len(mine) == 4 and all(t.status == "complete" for t in mine)
    for t in mine:
        assert t.id == f"{NAME}/{t.meta['item_id']}/{NAME}"  # one variant, named after it
        assert [c.act for c in t.calls] == ["notes", "direct_judge"]
        assert t.turns[0].role == NOTES_ROLE and t.turns[-1].role == "judge"
        assert t.meta["decision"] in t.meta["options"]

    # report: the protocol has its own accuracy beside the built-in one, in rank order
    capsys.readouterr()
    assert main(["report", str(run_dir)]) == 0
    comparison = json.loads((run_dir / "comparison.json").read_text())
    per = comparison["protocols"]
    assert list(per) == ["direct", NAME]  # rank 0 both: by name
    assert per[NAME]["items"] == 4 and 0.0 <= per[NAME]["accuracy"] <= 1.0
    page = (run_dir / "report.html").read_text()
    assert NAME in page and NOTES_ROLE in page

    # re-scoring: every judgment's scores as recorded
    assert main(["score", str(run_dir / "transcripts.jsonl")]) == 0
    assert "0 mismatches" in capsys.readouterr().out

    # export: the judge's decisions of both protocols, tagged with their protocol
    out = tmp_path / "judge.jsonl"
    argv = ["export", str(run_dir), "--role", "judge", "--format", "trl-prompt-completion"]
    assert main([*argv, "--out", str(out)]) == 0
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert {r["protocol"] for r in rows} == {NAME, "direct"}
    assert all("Notes on the question" in r["prompt"][-1]["content"]
               for r in rows if r["protocol"] == NAME)

    # fork: the same agents replay the debate bit for bit
    team = team_for(read_run_config(run_dir))
    for t in mine:
        again = asyncio.run(fork(t, team, 0))
        assert _plain(again) == _plain(t)


class PlainLeafProverEstimator(ProverEstimator):
    """Prover-estimator debate whose leaf evidence is always left out: a plugin declaring
    ``estimator`` that runs otherwise than the built-in protocol."""

    async def run(
        self, spec: DebateSpec, team: Team, settings: ProtocolSettings, log: Log
    ) -> Transcript:
        t = await super().run(spec, _NoEvidence(team), settings, log)
        t.meta["leaf_evidence"] = "none"
        return t


class _NoEvidence(Team):
    def __init__(self, team: Team) -> None:
        super().__init__(team.models, team.prompts, team.prover, team.estimator, team.judge)
        self.base = team

    def make_prover(self) -> Any:
        return _WithoutEvidence(self.base.make_prover())

    def make_estimator(self) -> Any:
        return self.base.make_estimator()


class _WithoutEvidence:
    def __init__(self, live: Any) -> None:
        self.live = live

    def __getattr__(self, name: str) -> Any:
        return getattr(self.live, name)

    async def evidence(self, claim: Any, ctx: Any) -> Evidence:
        return Evidence(text="(no evidence)")


def test_a_plugin_declaring_estimator_is_forked_through_its_own_run(tmp_path: Path) -> None:
    name = "plain-leaf"
    register(name)(PlainLeafProverEstimator)
    try:
        data = {
            "name": name,
            "dataset": {"path": str(REPO / "datasets" / "divisors.jsonl"), "limit": 2},
            "protocols": [name],
            "debate": {"depth": 1, "width": 2},
            "prover": SCRIPTED,
            "estimator": SCRIPTED,
            "judge": {"kind": "oracle"},
        }
        path = tmp_path / "plain.yaml"
        path.write_text(yaml.safe_dump(data))
        run_dir = tmp_path / name
        assert main(["run", "--config", str(path), "--run-dir", str(run_dir), "--quiet"]) == 0
        ts = [t for t in load_transcripts(run_dir) if t.status == "complete"]
        leaves = [rd.evidence for t in ts for rd in t.rounds if rd.k == 0]
        assert leaves and all(e is not None and e.text == "(no evidence)" for e in leaves)
        team = team_for(read_run_config(run_dir))
        for t in ts:
            for at in range(t.config.depth + 1):
                assert _plain(asyncio.run(fork(t, team, at))) == _plain(t), (t.id, at)
    finally:
        PROTOCOLS.remove(name)


def test_a_protocol_defined_in_a_test_waits_for_a_person_and_is_judged(
    plugin: None, tmp_path: Path
) -> None:
    run_dir = _run(tmp_path, {"kind": "human"}, "study")
    waiting = waiting_by_id(run_dir)
    mine = [t for t in waiting.values() if t.protocol == NAME]
    assert len(mine) == 4 and all(t.status == "awaiting_verdict" for t in mine)

    links = assign(run_dir, write_judges(tmp_path / "judges.yaml", ["ann", "ben"]), 1)
    assert {"ann", "ben"} <= set(links)
    sessions = connect(run_dir)
    with sessions() as s:
        rows = [a for a in s.scalars(select(Assignment)) if a.protocol == NAME]
    assert rows
    for n, a in enumerate(rows):
        view = build_view(waiting[a.debate_id], a.order_seed, a.context, show_protocol=True)
        assert view["kind"] == "choice" and view["protocol"] == "Judging with notes"
        assert view["turns"][0]["text"]  # the notes, as the one speaker's turn
        submit(sessions, run_dir, waiting, a.judge_id, a.id,
               Submission(p_shown_first=0.3 + 0.1 * n, explanation=f"reason {n}"))
    judged = [t for t in load_transcripts(run_dir, judged=True) if t.protocol == NAME]
    assert len(judged) == len(rows)
    for t in judged:
        assert t.status == "complete" and t.meta["judgment"]["scores"]["correct"] is not None
        assert t.meta["judgment"]["scores"] == scoring.judgment_scores(t)
    res = score_file(run_dir / JUDGED_FILE)
    assert res.ok and res.mismatches == []


def test_a_protocol_plugin_is_loaded_from_its_entry_point(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A package names a module under the ``llmdebate.protocols`` group; reading the
    registry imports it, and its import registers the protocol, whose family base class
    gives it its typed attributes."""
    (tmp_path / "my_protocol.py").write_text(
        "from llmdebate.protocols.families import ChoiceProtocol\n"
        "from llmdebate.protocols.registry import register\n"
        "@register('my-judge')\n"
        "class MyJudge(ChoiceProtocol):\n"
        "    judge_act = 'direct_judge'\n"
        "    async def run(self, spec, team, settings, log):\n"
        "        raise NotImplementedError\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "my_protocol", raising=False)
    ep = EntryPoint(name="my-judge", value="my_protocol", group="llmdebate.protocols")

    def entry_points(*, group: str) -> list[EntryPoint]:
        return [ep] if group == "llmdebate.protocols" else []

    monkeypatch.setattr("llmdebate.registry.entry_points", entry_points)
    reg: Registry[Any] = Registry("protocol", group="llmdebate.protocols")
    monkeypatch.setattr("llmdebate.protocols.registry.PROTOCOLS", reg)
    assert reg.names() == ("my-judge",)
    got = reg.get("my-judge")
    assert isinstance(got, ChoiceProtocol) and got.can.judge_deferrable
    assert not isinstance(got, RecursiveProtocol | SpeechProtocol)
    assert reg.get("my-judge").variants("paired", 0) == ("my-judge",)
    monkeypatch.delitem(sys.modules, "my_protocol")


def test_a_protocol_must_subclass_a_family() -> None:
    """A class of neither family is refused at registration, in one line."""

    class Bare(Protocol):
        async def run(
            self, spec: DebateSpec, team: Team, settings: ProtocolSettings, log: Log
        ) -> Transcript:
            raise ProtocolViolation("a bare protocol runs nothing")

        def complete(self, t: Transcript, ruling: Ruling, **kw: Any) -> Transcript:  # type: ignore[override]
            raise ProtocolViolation("a bare protocol completes nothing")

    with pytest.raises(TypeError, match="subclass a family"):
        register("bare")(Bare)
    assert "bare" not in PROTOCOLS


class Forgetful(JudgeWithNotes, SpeechProtocol):
    """A speech protocol that declares a fork reads back ``meta.notes_model`` but never
    records it."""

    fork_records = ("notes_model",)


def test_a_debate_missing_a_declared_fork_record_is_refused(tmp_path: Path) -> None:
    """The run of a protocol whose transcript lacks a key of its ``fork_records`` fails,
    naming the key (a fork could not run it again)."""
    register(NAME)(Forgetful)
    try:
        run_dir = tmp_path / "forgetful"
        argv = ["run", "--config", str(_config(tmp_path, {**SCRIPTED, "kind": "llm"}, "f")),
                "--run-dir", str(run_dir), "--quiet"]
        main(argv)
        mine = [t for t in load_transcripts(run_dir) if t.protocol == NAME]
        assert mine and all(t.status == "failed" for t in mine)
        assert all("does not record meta notes_model" in str(t.failure) for t in mine)
    finally:
        PROTOCOLS.remove(NAME)


class Mute(JudgeWithNotes, SpeechProtocol):
    """A speech protocol whose judge cannot ask (it declares no ``asks_questions``)."""


def test_an_interactive_judge_is_refused_for_a_speech_protocol_that_cannot_ask() -> None:
    register(NAME)(Mute)
    try:
        with pytest.raises(ConfigError, match=f"judge.interactive: {NAME} lack the capability "
                           "asks_questions") as err:
            validate({"protocols": ["consultancy", NAME], "judge": {"interactive": True}})
        assert len(str(err.value).splitlines()) == 1
    finally:
        PROTOCOLS.remove(NAME)
    validate({"protocols": ["consultancy", "direct"], "judge": {"interactive": True}})


def test_a_capability_its_family_cannot_have_is_refused_naming_it() -> None:
    class Asking(JudgeWithNotes):
        can = Capabilities(asks_questions=True)

    class Rewarded(JudgeWithNotes):
        can = Capabilities(estimator_rewards=True)

    with pytest.raises(TypeError, match="capability asks_questions needs a protocol whose "
                       "seats speak"):
        register(NAME)(Asking)
    with pytest.raises(TypeError, match="capability estimator_rewards needs a recursive"):
        register(NAME)(Rewarded)
    assert NAME not in PROTOCOLS


def test_a_seat_without_a_model_is_one_line() -> None:
    team = Team({}, Prompts(), ProverSettings(), EstimatorSettings(), JudgeSettings())
    with pytest.raises(ConfigError, match=r"seat 'critic' has no model: give it one \(seats: "
                       r"\{critic: \{model: \.\.\.\}\}\)"):
        team.model_for("critic")


class WithCritic(JudgeWithNotes):
    """A consultant and a critic of its own (played as the estimator by default)."""

    seats = ("consultant", "critic")
    adds = Additions(seats={"critic": "estimator"})


def test_a_new_seat_is_filled_from_the_config_and_a_roster_fills_only_debaters() -> None:
    register(NAME)(WithCritic)
    try:
        assert SEAT_ROLES["critic"] == "estimator" and roster_seats(NAME) == ("consultant",)
        cfg = validate({"protocols": [NAME], "seats": {"critic": {"model": "scripted"}}})
        assert static_seats(cfg.seats) == {"critic": "seat/critic"}
        assert "seat/critic" in cfg.role_settings()
        with pytest.raises(ConfigError, match=r"seats\.critics.*no such seat"):
            validate({"protocols": [NAME], "seats": {"critics": {"model": "scripted"}}})
    finally:
        PROTOCOLS.remove(NAME)
