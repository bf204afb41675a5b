"""Speech protocols as data: a topology in a config, run end to end and judged blind.

``configs/proposer-critic.yaml`` (the config docs/extending.md shows) is a protocol written
only as YAML and one template: it runs, reports and re-scores from the command line. A
topology with private and turn-only slots never shows them to a judge, while the speakers
who may read them do. Bad topology input is one line naming file:line:column and field.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from llmdebate.agents.factory import SEAT_ROLES, Team
from llmdebate.cli import cli, main
from llmdebate.core.schemas import Transcript
from llmdebate.data import Item
from llmdebate.errors import ConfigError
from llmdebate.experiment.config import ExperimentConfig
from llmdebate.experiment.debate import run_one
from llmdebate.experiment.jobs import make_jobs
from llmdebate.experiment.loading import read_yaml, validate
from llmdebate.experiment.runtime import protocol_settings
from llmdebate.judging.view import build_view
from llmdebate.models import Model, ScriptedBackend
from llmdebate.prompts import Prompts
from llmdebate.protocols.families import ChoiceProtocol, SpeechProtocol
from llmdebate.protocols.registry import PROTOCOLS, protocol_of

REPO = Path(__file__).resolve().parents[1]
CONFIG = REPO / "configs" / "proposer-critic.yaml"
ITEM = Item(id="q1", question="Is water wet?", choices=["yes", "no"], answer="yes")


@pytest.fixture(autouse=True)
def _unregister() -> Iterator[None]:
    """The topologies a test registers are dropped after it, and the seats they declared
    (the registry and the seats are global)."""
    before, seats = set(PROTOCOLS.names()), dict(SEAT_ROLES)
    yield
    for name in set(PROTOCOLS.names()) - before:
        PROTOCOLS.remove(name)
    SEAT_ROLES.clear()
    SEAT_ROLES.update(seats)


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def test_a_topology_written_only_in_a_config_runs_reports_and_scores(tmp_path: Path) -> None:
    runner = CliRunner()
    run_dir = tmp_path / "pc"
    res = runner.invoke(cli, ["run", "--config", str(CONFIG), "--run-dir", str(run_dir)])
    assert res.exit_code == 0, res.output
    ts = _lines(run_dir / "transcripts.jsonl")
    assert len(ts) == 4 and {t["status"] for t in ts} == {"complete"}
    assert {t["meta"]["variant"] for t in ts} == {"honest", "dishonest"}
    first = ts[0]
    assert [(x["role"], x["round"], x["text"]) for x in first["turns"]] == [
        ("proposer", 1, "P1"), ("critic", 1, "C1"), ("proposer", 2, "P2"),
        ("critic", 2, "C2"), ("judge", 3, f"The judge chose: {first['meta']['decision']}"),
    ]
    assert first["meta"]["slots"] == ["argument", "critique"]
    assert first["meta"]["topology"]["name"] == "proposer-critic"
    calls = first["calls"]
    assert [(c["role"], c["act"]) for c in calls] == [
        ("proposer", "argue round 1"), ("critic", "argue round 1"),
        ("proposer", "argue round 2"), ("critic", "argue round 2"),
        ("judge", "consultancy_judge"),
    ]
    critic_asked = calls[1]["messages"][-1]["content"]
    assert "P1" in critic_asked and "weakest step" in critic_asked  # its own template
    judge_asked = calls[-1]["messages"][-1]["content"]
    assert all(s in judge_asked for s in ("P1", "C1", "P2", "C2"))  # every slot is public

    res = runner.invoke(cli, ["report", str(run_dir)])
    assert res.exit_code == 0, res.output
    assert "proposer-critic" in (run_dir / "report.html").read_text()

    PROTOCOLS.remove("proposer-critic")  # a re-scoring reads the topology its records hold
    res = runner.invoke(cli, ["score", str(run_dir / "transcripts.jsonl")])
    assert res.exit_code == 0, res.output
    assert "4 scored, 0 mismatches" in res.output


BLIND = {
    "title": "Blind judge",
    "seats": {"proposer": "prover", "critic": "estimator"},
    "turns": [
        {"speaker": "proposer", "slot": "plan", "act": "consultancy_consultant",
         "visible": "private", "position": "none"},
        {"speaker": "proposer", "slot": "argument", "act": "consultancy_consultant"},
        {"speaker": "critic", "slot": "hint", "act": "consultancy_consultant",
         "visible": "turn", "position": "none"},
        {"speaker": "proposer", "slot": "rebuttal", "act": "consultancy_consultant"},
    ],
}
SLOTS = ("PLAN", "ARGUMENT", "HINT", "REBUTTAL")


def _speaker(requests: list[tuple[str, str]]) -> Any:
    """A responder writing each step's slot name and round (``PLAN-1``, ...), in order."""
    counter = {"n": 0}

    def reply(messages: list[dict[str, str]]) -> str:
        i = counter["n"]
        counter["n"] += 1
        slot = f"{SLOTS[i % 4]}-{i // 4 + 1}"
        requests.append((slot, "\n".join(m["content"] for m in messages)))
        return slot

    return reply


ASKS = ['{"action": "ask", "question": "Why QUESTION?", "p_first": 0.6}',
        '{"action": "decide", "p_first": 0.4}']


def _blind_run(
    judge_kind: str = "llm", interactive: bool = False
) -> tuple[Transcript, list[tuple[str, str]], list[str]]:
    cfg = ExperimentConfig.model_validate({
        "protocols": ["blind"],
        "topologies": {"blind": {**BLIND, "can": ["asks_questions"]}},
        "rounds": 2,
        "prover": {"model": "scripted", "scratchpad": False, "assignment": "honest"},
        "judge": {"model": "scripted", "kind": judge_kind, "interactive": interactive},
    })
    speakers: list[tuple[str, str]] = []
    judge = ScriptedBackend(ASKS if interactive else None, name="s-judge",
                            default_probability=0.6)
    debater = Model(ScriptedBackend(responder=_speaker(speakers), name="s-debater"))
    models = {"prover": debater, "estimator": debater, "judge": Model(judge)}
    team = Team(models, Prompts(), cfg.prover, cfg.estimator, cfg.judge)
    (job,) = make_jobs([ITEM], cfg)
    t, failed = asyncio.run(run_one(job, team, protocol_settings(cfg)))
    assert not failed and t.status != "failed", t.failure
    judged = ["\n".join(m["content"] for m in r) for r in judge.requests]
    return t, speakers, judged


def test_a_judge_never_reads_a_private_or_turn_only_slot() -> None:
    t, speakers, judged = _blind_run()
    assert [x.text for x in t.turns if x.role != "judge"] == [
        f"{s}-{r}" for r in (1, 2) for s in SLOTS
    ]
    assert judged and all(
        re.search(r"ARGUMENT-1.*REBUTTAL-1.*ARGUMENT-2.*REBUTTAL-2", j, re.S) for j in judged
    )
    for j in judged:  # what reaches the judge's prompts
        assert not re.search(r"PLAN-\d|HINT-\d", j), j
    asked = dict(speakers)
    assert "PLAN-1" in asked["PLAN-2"] and "PLAN-1" in asked["REBUTTAL-1"]  # its author reads it
    assert "PLAN-1" not in asked["HINT-1"] and "PLAN-2" not in asked["HINT-2"]  # no one else
    assert "HINT-1" in asked["REBUTTAL-1"] and "HINT-2" in asked["REBUTTAL-2"]  # the turn's rest
    assert "HINT-1" not in asked["PLAN-2"] and "HINT-1" not in asked["REBUTTAL-2"]  # not later


def test_an_interactive_judge_asks_reading_only_the_public_slots() -> None:
    t, speakers, judged = _blind_run(interactive=True)
    assert [x.role for x in t.turns].count("judge") == 2  # its question, then its verdict
    assert t.meta["decision_probability"] == pytest.approx(0.6)  # p_first 0.4 of the decide
    assert len(judged) == 2 and "ARGUMENT-1" in judged[0] and "QUESTION" in judged[1]
    for j in judged:
        assert not re.search(r"PLAN-\d|HINT-\d", j), j
    asked = dict(speakers)
    assert "Why QUESTION?" in asked["PLAN-2"] and "PLAN-1" in asked["PLAN-2"]


def test_a_waiting_debate_shows_a_person_and_a_model_judge_only_the_public_slots() -> None:
    t, _, judged = _blind_run("human")
    assert t.status == "awaiting_verdict" and not judged
    act, variables = protocol_of(t).judge_prompt(t)  # type: ignore[attr-defined]
    assert act == "consultancy_judge"
    assert "ARGUMENT-2" in variables["transcript"] and "REBUTTAL-2" in variables["transcript"]
    assert not re.search(r"PLAN-\d|HINT-\d", variables["transcript"])
    shown = json.dumps(build_view(t, seed=3))  # what a person's page or terminal shows
    assert "ARGUMENT-1" in shown and "REBUTTAL-2" in shown
    assert not re.search(r"PLAN-\d|HINT-\d", shown), shown


def _load(tmp_path: Path, text: str) -> ExperimentConfig:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    return validate(read_yaml(path), file=path)


GOOD = """\
protocols: [pc]
topologies:
  pc:
    seats: {proposer: prover}
    turns:
      - speaker: proposer
        act: consultancy_consultant
"""


@pytest.mark.parametrize(
    ("old", "new", "where"),
    [
        ("        act: consultancy", "        visibl: public\n        act: consultancy",
         r"bad\.yaml:7:9: topologies\.pc\.turns\.0\.visibl: unknown field"),
        ("act: consultancy_consultant", "act: consultancy_consultant\n        visible: all",
         r"bad\.yaml:8:9: topologies\.pc\.turns\.0\.visible: must be one of 'public', "
         r"'private' or 'turn' \(got 'all'\)"),
        ("speaker: proposer", "speaker: critic",
         r"bad\.yaml:6:9: topologies\.pc\.turns\.0\.speaker: 'critic' is not a seat "
         r"\(seats: proposer\)"),
        ("{proposer: prover}", "{proposer: judge}",
         r"bad\.yaml:4:13: topologies\.pc\.seats\.proposer: must be one of "
         r"'prover' or 'estimator' \(got 'judge'\)"),
    ],
)
def test_bad_topology_input_is_one_line_naming_file_line_column_and_field(
    tmp_path: Path, old: str, new: str, where: str
) -> None:
    assert _load(tmp_path, GOOD).topologies["pc"].turns[0].speaker == "proposer"
    with pytest.raises(ConfigError, match=where) as exc:
        _load(tmp_path, GOOD.replace(old, new))
    assert "\n" not in str(exc.value)


@pytest.mark.parametrize("name", ["consultancy", "direct"])
def test_a_topology_cannot_take_a_registered_protocol_name(tmp_path: Path, name: str) -> None:
    with pytest.raises(ConfigError, match=rf"bad\.yaml:3:3: topologies\.{name}: a protocol of "
                       r"that name is registered already \(a built-in or a plugin's\)"):
        _load(tmp_path, GOOD.replace("[pc]", f"[{name}]").replace("  pc:", f"  {name}:"))


def test_bad_topology_input_exits_2_from_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(CONFIG.read_text().replace("position: none", "position: nowhere"))
    assert main(["run", "--config", str(path), "--run-dir", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert re.fullmatch(r"error: \S*bad\.yaml:12:56: topologies\.proposer-critic\.turns\.1\."
                        r"position: must be one of 'assigned', 'other' or 'none' "
                        r"\(got 'nowhere'\)\n", err), err
    assert not (tmp_path / "r").exists()


def test_the_docs_show_the_config_and_template_this_file_runs() -> None:
    page = (REPO / "docs" / "extending.md").read_text()
    section = page.split("### A speech protocol as data", 1)[1].split("\n### ", 1)[0]
    blocks = re.findall(r"```(yaml|jinja)\n(.*?)```", section, re.S)
    shipped = REPO / "llmdebate" / "protocols"
    assert [text for tag, text in blocks if tag == "yaml"] == [
        (shipped / "two_sided.yaml").read_text(), (shipped / "direct.yaml").read_text(),
        CONFIG.read_text(),
    ]
    assert [text for tag, text in blocks if tag == "jinja"] == [
        (REPO / "configs" / "proposer-critic" / "critic.j2").read_text()
    ]
    assert "llmdebate run --config configs/proposer-critic.yaml" in section
    assert "llmdebate export runs/proposer-critic --role critic" in section


GOLDEN = REPO / "tests" / "fixtures" / "consultancy_golden"


def _without_masses(x: Any) -> Any:
    """``x`` with every ``notes.masses`` of a call record removed."""
    if isinstance(x, dict):
        return {k: ({n: w for n, w in v.items() if n != "masses"} if k == "notes"
                    and isinstance(v, dict) else _without_masses(v)) for k, v in x.items()}
    if isinstance(x, list):
        return [_without_masses(v) for v in x]
    return x


@pytest.mark.parametrize("case", ["rules", "chosen", "interactive"])
def test_consultancy_shipped_as_a_topology_writes_the_transcripts_its_class_wrote(
    tmp_path: Path, case: str
) -> None:
    """``<case>.jsonl`` was written by consultancy's own class (a word limit with re-asks and
    a scratchpad; the consultant picking its side; an interactive judge asking). The answer
    masses a probability call records (``notes.masses``) came later than the class: they are
    left out of the comparison, and everything else is compared line for line."""
    run_dir = tmp_path / case
    assert main(["run", "--config", str(GOLDEN / f"{case}.yaml"), "--run-dir", str(run_dir)]) == 0
    timings = re.compile(r'"(wall_s|latency_s)":\s*[0-9.e+-]+')
    written = timings.sub(r'"\1":0', (run_dir / "transcripts.jsonl").read_text())
    golden = (GOLDEN / f"{case}.jsonl").read_text()
    assert [_without_masses(json.loads(x)) for x in written.splitlines()] == [
        json.loads(x) for x in golden.splitlines()
    ]
    assert type(PROTOCOLS.get("consultancy")).__name__ == "Topology[consultancy]"


def test_worker_processes_run_a_config_topology_as_this_process_does(tmp_path: Path) -> None:
    """A worker gets the config unvalidated: it registers the topologies itself."""
    timings = re.compile(r'"(wall_s|latency_s)":\s*[0-9.e+-]+')
    written = []
    for executor in ("local", "processes"):
        run_dir = tmp_path / executor
        args = ["run", "--config", str(CONFIG), "--run-dir", str(run_dir), "--executor", executor]
        assert main(args + (["--workers", "1"] if executor == "processes" else [])) == 0
        written.append(timings.sub("", (run_dir / "transcripts.jsonl").read_text()))
    assert written[0] == written[1] and written[0].count('"status":"complete"') == 4


PROGRAM = "import sys; from llmdebate.cli import main; sys.exit(main(sys.argv[1:]))"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``llmdebate ARGS`` in a fresh interpreter (no topology registered but what it reads)."""
    return subprocess.run([sys.executable, "-c", PROGRAM, *args], cwd=REPO,
                          capture_output=True, text=True, timeout=300)


def test_a_fresh_process_exports_a_config_topologys_seats_from_its_transcripts(
    tmp_path: Path,
) -> None:
    """``export --role critic`` without the config: the transcripts record the topology, and
    reading them registers it with its seats' roles; the proposer, who argues for an answer,
    is credited with the judge's probability of it, the critic, who argues for none, with
    nothing."""
    run_dir = tmp_path / "pc"
    assert _cli("run", "--config", str(CONFIG), "--run-dir", str(run_dir)).returncode == 0
    ts = _lines(run_dir / "transcripts.jsonl")
    rows = {}
    for seat in ("critic", "proposer"):
        out = tmp_path / f"{seat}.jsonl"
        res = _cli("export", str(run_dir), "--role", seat, "--out", str(out))
        assert res.returncode == 0, res.stderr
        rows[seat] = _lines(out)
        assert len(rows[seat]) == 8 and {r["role"] for r in rows[seat]} == {seat}
    assert [r["completion"][0]["content"] for r in rows["critic"]][:2] == ["C1", "C2"]
    assert {r["reward"] for r in rows["critic"]} == {None}
    for t in ts:  # the judge's probability of the proposer's answer, recomputed here
        p_first = t["meta"]["judge"]["p_first"]
        position = t["turns"][0]["position"]
        p = p_first if position == t["meta"]["options"][0] else 1 - p_first
        mine = [r for r in rows["proposer"] if r["debate_id"] == t["id"]]
        assert len(mine) == 2 and all(r["expected_reward"] == pytest.approx(p) for r in mine)
        assert all(r["reward"] == float(t["meta"]["decision"] == position) for r in mine)
    res = _cli("export", str(run_dir), "--role", "critik", "--out", str(tmp_path / "x.jsonl"))
    assert res.returncode == 2
    assert res.stderr.strip().endswith("--role 'critik': choose from prover, estimator, judge, "
                                       "debater, proposer, critic"), res.stderr


PAIRED = {
    "seats": {"first": "prover", "second": "prover"},
    "can": ["pairs"],
    "follows_mode": True,
    "turns": [
        {"speaker": "first", "act": "two_sided_debater"},
        {"speaker": "second", "act": "two_sided_debater", "position": "other"},
    ],
}


@pytest.mark.parametrize("mode", ["sequential", "simultaneous"])
def test_a_config_topology_that_pairs_and_follows_the_mode(mode: str) -> None:
    """Both orders of an item, the second seat defending the other answer; in simultaneous
    mode a round's second speech is written without the first's of that round."""
    cfg = ExperimentConfig.model_validate({
        "protocols": ["paired"], "topologies": {"paired": PAIRED}, "rounds": 2, "mode": mode,
        "prover": {"model": "scripted", "scratchpad": False},
        "judge": {"model": "scripted"},
    })
    asked: list[str] = []
    counter = iter(range(100))

    def reply(messages: list[dict[str, str]]) -> str:
        asked.append("\n".join(m["content"] for m in messages))
        return f"SPEECH-{next(counter)}"

    debater = Model(ScriptedBackend(responder=reply, name="s-debater"))
    team = Team({"prover": debater, "judge": Model(ScriptedBackend(name="s-judge"))},
                Prompts(), cfg.prover, cfg.estimator, cfg.judge)
    jobs = make_jobs([ITEM], cfg)
    assert [j.spec.variant for j in jobs] == ["order-0", "order-1"]
    for job in jobs:
        asked.clear()
        t, failed = asyncio.run(run_one(job, team, protocol_settings(cfg)))
        assert not failed, t.failure
        options = t.meta["options"]
        assert t.meta["order"] == options and t.meta["mode"] == mode
        swapped = job.spec.variant == "order-1"
        assert options == list(job.spec.shown[::-1] if swapped else job.spec.shown)
        assert [x.position for x in t.turns[:4]] == [options[0], options[1]] * 2
        first = t.turns[0].text
        assert f'argue that the answer is "{options[1]}"; your opponent argues that it is ' \
               f'"{options[0]}"' in asked[1]  # opponent_position: the answer it does not argue
        assert (first in asked[1]) == (mode == "sequential")
        assert first in asked[3]  # the next round reads it either way
        assert type(PROTOCOLS.get("paired")).fork_records == ("rounds", "mode")


def test_a_config_topology_with_no_turns_is_the_direct_judge(tmp_path: Path) -> None:
    """The judge alone, written in a config: the direct judge's debates (blind and expert on
    an item with a passage), decisions and calls, its topology recorded."""
    golden = REPO / "tests" / "fixtures" / "speech_golden"
    config = yaml.safe_load((golden / "direct_passage.yaml").read_text())
    config["protocols"] = ["alone"]
    config["topologies"] = {"alone": {"judge": "direct_judge", "views": True}}
    path = tmp_path / "alone.yaml"
    path.write_text(yaml.safe_dump(config))
    assert main(["run", "--config", str(path), "--run-dir", str(tmp_path / "r")]) == 0
    timings = re.compile(r'"(wall_s|latency_s)":\s*[0-9.e+-]+')
    written = timings.sub(r'"\1":0', (tmp_path / "r" / "transcripts.jsonl").read_text())
    mine = [json.loads(x) for x in written.splitlines()]
    theirs = _lines(golden / "direct_passage.jsonl")
    assert [t["id"] for t in mine] == [t["id"].replace("direct/", "alone/").replace(
        "/direct", "/alone") for t in theirs]
    assert isinstance(PROTOCOLS.get("alone"), ChoiceProtocol)
    assert not isinstance(PROTOCOLS.get("alone"), SpeechProtocol)
    for a, b in zip(mine, theirs, strict=True):
        assert a["meta"].pop("topology")["views"] and a["meta"].pop("slots") == []
        assert {k: v for k, v in a["meta"].items() if k != "variant"} == \
            {k: v for k, v in b["meta"].items() if k != "variant"}
        assert a["turns"] == b["turns"]
        assert [c["messages"] for c in a["calls"]] == [c["messages"] for c in b["calls"]]


@pytest.mark.parametrize(
    ("spec", "where"),
    [
        ({"views": True}, r"topologies\.pc\.views: only the judge alone \(no turns\) has views"),
        ({"turns": []}, r"topologies\.pc\.seats: a topology with no turns is the judge alone: "
                        "no seat speaks"),
        ({"turns": [], "seats": {}, "can": ["asks_questions"]},
         r"topologies\.pc\.can: a topology with no turns is the judge alone"),
        ({"can": ["pairs"]}, r"topologies\.pc\.can: pairs needs two seats, the first "
         r"defending the assigned answer and the second the other \(seats: 1\)"),
    ],
)
def test_what_only_the_judge_alone_or_a_speech_topology_has(
    spec: dict[str, Any], where: str
) -> None:
    pc = {"seats": {"proposer": "prover"},
          "turns": [{"speaker": "proposer", "act": "consultancy_consultant"}]}
    with pytest.raises(ConfigError, match=where):
        validate({"protocols": ["pc"], "topologies": {"pc": {**pc, **spec}}})
