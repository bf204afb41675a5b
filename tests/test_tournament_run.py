"""Tournaments through ``llmdebate run`` and ``llmdebate report``: a model per seat, a roster
and its schedule, ratings, the prover × estimator grid, reports over several runs."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from llmdebate.cli import main
from llmdebate.errors import ConfigError
from llmdebate.experiment.loading import validate
from llmdebate.experiment.runner import run
from llmdebate.records.rundir import load_transcripts

try:
    from tests.fixtures import llm_fixtures, tournament_players
    from tests.fixtures.enforcing import is_probe
    from tests.fixtures.fake_server import FakeServer
except ImportError:  # pytest run from inside tests/
    sys.path.insert(0, str(Path(__file__).parent))
    from fixtures import llm_fixtures, tournament_players  # type: ignore[no-redef]
    from fixtures.enforcing import is_probe  # type: ignore[no-redef]
    from fixtures.fake_server import FakeServer  # type: ignore[no-redef]

REPO = Path(__file__).resolve().parents[1]
DIVISORS = REPO / "datasets" / "divisors.jsonl"
PLAYERS = ("strong", "random", "concede")


def tournament_config(tmp_path: Path, items: int = 10, **over: Any) -> Path:
    data: dict[str, Any] = {
        "name": "tour",
        "protocols": ["two-sided", "consultancy"],
        "dataset": {"path": str(DIVISORS), "limit": items},
        "prover": {"model": "scripted"},
        "estimator": {"model": "scripted"},
        "judge": tournament_players.judge_settings(),
        "tournament": {
            "roster": {n: tournament_players.player(n) for n in PLAYERS},
            "self_play": True,
        },
        "report": {"bootstrap": 200},
    }
    data.update(over)
    path = tmp_path / f"{data['name']}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_three_debaters_are_rated_in_order_over_two_protocols(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = tmp_path / "tour"
    cfg = tournament_config(tmp_path)
    assert main(["run", "--config", str(cfg), "--run-dir", str(run_dir), "--quiet"]) == 0
    ts = load_transcripts(run_dir)
    # two-sided: 9 pairings (with self-play) per item; consultancy: 3 models x 2 sides
    assert len(ts) == 10 * 9 + 10 * 6 == len({t.id for t in ts})
    two = [t for t in ts if t.protocol == "two-sided"]
    for t in two:
        seats = t.meta["seats"]
        assert {s["side"] for s in seats.values()} == {"correct", "incorrect"}
        a, b = seats["debater A"]["name"], seats["debater B"]["name"]
        assert t.id.endswith(f"/{a}~{b}") and t.agents["debater A"] == "scripted"
        argued = {x.role: x.position for x in t.turns}
        gold = t.meta["gold"]
        for seat, rec in seats.items():
            assert (argued[seat] == gold) == (rec["side"] == "correct")
    # each model speaks first once in the two debates of a pair on an item
    first = [t.meta["seats"]["debater A"]["name"] for t in two if "strong~random" in t.id
             or "random~strong" in t.id]
    assert sorted(first) == ["random"] * 10 + ["strong"] * 10
    assert main(["score", str(run_dir / "transcripts.jsonl")]) == 0
    assert "0 mismatches" in capsys.readouterr().out
    assert main(["report", str(run_dir), "--quiet"]) == 0
    m = json.loads((run_dir / "comparison.json").read_text())
    ratings = m["tournament"]["ratings"]
    assert set(ratings) == {"two-sided", "consultancy"}
    for proto, table in ratings.items():
        overall = {r["model"]: r for r in table["ratings"] if r["side"] == "overall"}
        s, r, c = (overall[n] for n in PLAYERS)
        assert s["value"] > r["value"] > c["value"], proto
        # a player that won or lost every one of its matches has no interval (the prior
        # alone holds its rating): its point stands for both ends
        for x in (s, r, c):
            assert (x["ci95"] is None) == (x["interval_note"] is not None), (proto, x)
        lo = {k: (x["ci95"] or [x["value"]] * 2)[0] for k, x in zip("src", (s, r, c), strict=True)}
        hi = {k: (x["ci95"] or [x["value"]] * 2)[1] for k, x in zip("src", (s, r, c), strict=True)}
        assert lo["s"] > hi["r"] and lo["r"] > hi["c"], proto
    acc = {p["model"]: p["accuracy"] for p in m["tournament"]["accuracy_vs_rating"]
           if p["protocol"] == "two-sided"}
    assert acc["strong"] == 1.0 and acc["concede"] == 0.5  # self-play: facts decide; ties
    png = run_dir / "plots" / "accuracy_vs_rating.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page = (run_dir / "report.html").read_text()
    assert "Debater tournament" in page and "judge accuracy against debater rating" in page
    assert "## Debater tournament" in (run_dir / "comparison.md").read_text()


def test_one_model_in_one_seat_is_recorded_and_reported_without_a_tournament(
    tmp_path: Path,
) -> None:
    cfg = validate({
        "name": "seat",
        "protocols": ["two-sided"],
        "dataset": {"path": str(DIVISORS), "limit": 2},
        "prover": tournament_players.player("strong"),
        "estimator": {"model": "scripted"},
        "judge": tournament_players.judge_settings(),
        "seats": {"debater_b": tournament_players.player("concede")},
    })
    res = run(cfg, tmp_path / "r", progress=False)
    assert res.exit_code == 0
    ts = load_transcripts(tmp_path / "r")
    assert len(ts) == 4  # ids as without seats
    assert {t.id.rsplit("/", 1)[-1] for t in ts} == {"order-0", "order-1"}
    for t in ts:
        b = next(x for x in t.turns if x.role == "debater B")
        assert b.text.startswith("CONCEDE") and t.meta["seats"]["debater B"]["model"] == "scripted"
        assert t.meta["decision"] == next(x for x in t.turns if x.role == "debater A").position


@pytest.mark.parametrize(
    ("over", "message"),
    [
        ({"seats": {"debater_c": {"model": "scripted"}}},
         "c.yaml:7:3: seats.debater_c: no such seat in two-sided, consultancy (seats: "
         "consultant, debater_a, debater_b)"),
        ({"tournament": {"roster": {"a b": {"model": "scripted"}, "c": {"model": "scripted"}}}},
         "tournament.roster: roster name 'a b'"),
        ({"tournament": {"roster": {"a": {"model": "scripted"}}}},
         "tournament.roster: a roster needs at least two models"),
        ({"tournament": {"roster": {"a": {"model": "scripted"}, "b": {"model": "scripted"}},
                         "provers": ["z"]}},
         "tournament.provers: 'z' is not in the roster (a, b)"),
        ({"seats": {"consultant": {"model": "scripted"}},
          "tournament": {"roster": {"a": {"model": "scripted"}, "b": {"model": "scripted"}}}},
         "tournament.roster: the roster fills seat consultant, which seats also gives"),
    ],
)
def test_bad_seats_and_rosters_are_one_line_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], over: dict[str, Any], message: str
) -> None:
    data: dict[str, Any] = {
        "protocols": ["two-sided", "consultancy"],
        "judge": {"method": "verbalised"},
        **over,
    }
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    assert main(["run", "--config", str(path), "--run-dir", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err
    assert not (tmp_path / "r").exists()


def _grid_responder(body: dict[str, Any]) -> str:
    """Provers play the formal acts; estimator e-sharp states the true probabilities, e-flat
    0.5 (verbalised)."""
    messages = body["messages"]
    text = messages[-1]["content"]
    if "probability" in text.lower() and body["model"] in ("e-sharp", "e-flat"):
        p = llm_fixtures.probabilities(messages) if body["model"] == "e-sharp" else 0.5
        return f"{p:.2f}"
    return llm_fixtures.responder(messages)


def test_prover_estimator_grid_on_the_fake_server(tmp_path: Path) -> None:
    with FakeServer() as server:
        server.responder = _grid_responder

        def model(name: str) -> dict[str, Any]:
            return {"model": f"openai/{name}", "base_url": server.url,
                    "options": {"retry_base_delay": 0.01}}

        cfg = validate({
            "name": "grid",
            "protocols": ["prover-estimator"],
            "dataset": {"path": str(DIVISORS), "limit": 3},
            "debate": {"depth": 1, "width": 2},
            "prover": {"model": "scripted", "decomposer": "formal"},
            "estimator": {"model": "scripted", "method": "verbalised"},
            "judge": {"kind": "oracle"},
            "use_cache": False,
            "tournament": {
                "roster": {n: model(n) for n in ("p-one", "p-two", "e-sharp", "e-flat")},
                "provers": ["p-one", "p-two"],
                "estimators": ["e-sharp", "e-flat"],
            },
        })
        res = run(cfg, tmp_path / "g", progress=False)
        served = {b["model"] for b in server.bodies}
    assert res.exit_code == 0, res.summary
    assert served == {"p-one", "p-two", "e-sharp", "e-flat"}
    ts = load_transcripts(tmp_path / "g")
    assert len(ts) == 3 * 2 * 4  # items x honest/dishonest x prover x estimator
    for t in ts:
        seats = t.meta["seats"]
        assert t.id.endswith(f"/{seats['prover']['name']}~{seats['estimator']['name']}")
        assert seats["prover"]["side"] == ("correct" if t.meta["variant"] == "honest"
                                           else "incorrect")
        calls = {c.role: c.model for c in t.calls}
        assert calls["estimator"] == seats["estimator"]["model"]
    assert main(["report", str(tmp_path / "g"), "--quiet"]) == 0
    m = json.loads((tmp_path / "g" / "comparison.json").read_text())
    cells = m["tournament"]["prover_estimator_grid"]
    assert {(c["prover"], c["estimator"]) for c in cells} == {
        (p, e) for p in ("p-one", "p-two") for e in ("e-sharp", "e-flat")
    }
    assert all(c["n_honest"] == 3 and c["leaf_claim_accuracy"] == 1.0 for c in cells)
    assert all(c["n_pairs"] == 3 and c["honest_beats_dishonest"] is not None for c in cells)
    pay = {(c["prover"], c["estimator"]): c["honest_payoff"] for c in cells}
    for p in ("p-one", "p-two"):  # a sharp estimator agrees with the honest prover at once
        assert pay[(p, "e-flat")] > pay[(p, "e-sharp")] > 0
    assert (tmp_path / "g" / "plots" / "prover_estimator_grid.png").is_file()
    assert m["tournament"]["accuracy_vs_rating"] == [] and m["tournament"]["matches"] == 0


def test_report_over_two_runs_and_a_refusal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = tournament_config(tmp_path, items=3, name="a")
    b = tournament_config(tmp_path, items=3, name="b", seed=1)
    c = tournament_config(tmp_path, items=4, name="c")
    for cfg, name in ((a, "a"), (b, "b"), (c, "c")):
        assert main(["run", "--config", str(cfg), "--run-dir", str(tmp_path / name),
                     "--quiet"]) == 0
    capsys.readouterr()
    assert main(["report", str(tmp_path / "a"), str(tmp_path / "b"), "--quiet"]) == 0
    merged = tmp_path / "a+b"
    m = json.loads((merged / "comparison.json").read_text())
    assert m["run"]["debates"] == 2 * (3 * 9 + 3 * 6)
    overall = [r for r in m["tournament"]["ratings"]["two-sided"]["ratings"]
               if r["side"] == "overall"]
    assert {r["model"]: r["matches"] for r in overall}["strong"] == 2 * 3 * 4
    assert main(["report", str(tmp_path / "a"), str(tmp_path / "c"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("cannot merge runs a and c: items differ: 1 only in c (divisors-003)")
    assert "\n" not in err and not (tmp_path / "a+c").exists()


def test_swiss_rounds_are_drawn_from_finished_debates_and_a_resume_draws_the_same(
    tmp_path: Path,
) -> None:
    roster = {n: tournament_players.player(n) for n in PLAYERS}
    roster["echo"] = tournament_players.player("strong")
    cfg = validate({
        "name": "swiss",
        "protocols": ["two-sided"],
        "dataset": {"path": str(DIVISORS), "limit": 6},
        "prover": {"model": "scripted"},
        "estimator": {"model": "scripted"},
        "judge": tournament_players.judge_settings(),
        "tournament": {"roster": roster, "schedule": "swiss", "swiss_rounds": 3},
    })
    full = run(cfg, tmp_path / "full", progress=False)
    assert full.exit_code == 0 and full.summary["planned"] == 3 * 2 * 2  # rounds x pairs x 2
    assert full.ran == 12 and full.skipped == 0
    lines = (tmp_path / "full" / "transcripts.jsonl").read_text().splitlines()
    ids = [json.loads(x)["id"] for x in lines]
    pairs = [frozenset(i.rsplit("/", 1)[-1].split("~")) for i in ids]
    rounds = [set(pairs[k:k + 4]) for k in (0, 4, 8)]
    assert all(len(r) == 2 for r in rounds)  # two pairs a round, each on one item twice
    assert rounds[0] != rounds[1]  # the second round pairs by the first round's ratings
    # a run stopped after its first round resumes into the same rounds
    part = tmp_path / "part"
    part.mkdir()
    (part / "transcripts.jsonl").write_text("\n".join(lines[:4]) + "\n")
    (part / "config.yaml").write_text((tmp_path / "full" / "config.yaml").read_text())
    resumed = run(cfg, part, progress=False)
    assert resumed.ran == 8 and resumed.skipped == 4
    again = [json.loads(x)["id"] for x in (part / "transcripts.jsonl").read_text().splitlines()]
    assert sorted(again) == sorted(ids)


def test_open_consultancy_the_consultant_picks_its_side_and_is_rated_apart(
    tmp_path: Path,
) -> None:
    cfg = validate({
        "name": "open",
        "protocols": ["consultancy"],
        "dataset": {"path": str(DIVISORS), "limit": 6},
        "prover": {"model": "scripted", "assignment": "choose"},
        "estimator": {"model": "scripted"},
        "judge": tournament_players.judge_settings(),
        "tournament": {"roster": {n: tournament_players.player(n) for n in PLAYERS}},
    })
    assert run(cfg, tmp_path / "o", progress=False).exit_code == 0
    ts = load_transcripts(tmp_path / "o")
    assert len(ts) == 6 * 3
    for t in ts:
        assert t.meta["variant"] == "chosen" and t.meta["assigned"] is None
        who = t.meta["seats"]["consultant"]
        assert who["side"] == {"strong": "correct", "concede": "incorrect"}.get(
            who["name"], who["side"]
        )
        assert t.calls[0].act == "answer"
    from llmdebate.tournament.seat_records import matches_of

    matches = matches_of(ts)
    assert {m.protocol for m in matches} == {"consultancy (chosen)"}
    assert main(["report", str(tmp_path / "o"), "--quiet"]) == 0
    m = json.loads((tmp_path / "o" / "comparison.json").read_text())
    assert set(m["tournament"]["ratings"]) == {"consultancy (chosen)"}


def _interactive_responder(body: dict[str, Any]) -> str:
    if is_probe(body):  # whether the server applies response_format: it does not
        return "{}"
    messages = body["messages"]
    name = str(body["model"])
    if name == "judge":
        return tournament_players.judge_turn(messages)
    play = {"strong": tournament_players.strong, "concede": tournament_players.concede}
    return play[name](messages)


def test_an_interactive_model_judge_asks_once_and_stops_early_on_the_fake_server(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeServer() as server:
        server.responder = _interactive_responder

        def model(name: str) -> dict[str, Any]:
            return {"model": f"openai/{name}", "base_url": server.url}

        cfg = validate({
            "name": "ask",
            "protocols": ["two-sided", "consultancy"],
            "dataset": {"path": str(DIVISORS), "limit": 2},
            "rounds": 4,
            "prover": model("strong"),
            "estimator": {"model": "scripted"},
            "seats": {"debater_b": model("concede")},
            "judge": {**model("judge"), "kind": "llm", "method": "verbalised",
                      "interactive": True, "turn_cost": 0.05, "log_base": 2},
            "use_cache": False,
        })
        res = run(cfg, tmp_path / "a", progress=False)
        judge_bodies = [b for b in server.bodies if b["model"] == "judge" and not is_probe(b)]
        assert sum(map(is_probe, server.bodies)) == 1  # the judge's endpoint, probed once
    assert res.exit_code == 0, res.summary
    ts = load_transcripts(tmp_path / "a")
    assert len(ts) == 2 * 2 + 2 * 2
    for t in ts:
        rec = t.meta["judge_turns"]
        assert [x["action"] for x in rec["turns"]] == ["ask", "decide"]
        assert rec["asked"] == 1 and rec["max_rounds"] == 4
        speakers = [x.role for x in t.turns]
        assert max(x.round for x in t.turns if x.role != "judge") == 2  # stopped after round 2
        question = next(x for x in t.turns if x.text.startswith("Question:"))
        assert question.round == 1 and question.position is None
        assert speakers.count("judge") == 2  # the question and the verdict
        assert t.meta["judge"]["method"] == "judge-turn" and t.meta["judge_round"] == 3
        p = rec["turns"][-1]["p_first"]
        p_correct = p if t.meta["options"][0] == t.meta["gold"] else 1 - p
        import math

        assert rec["score"] == pytest.approx(math.log2(p_correct) - 0.05)
    # the round-2 speeches read the judge's question
    assert any("judge (after round 1):\nQuestion: Which divisor" in m["content"]
               for b in server.bodies if b["model"] == "strong" for m in b["messages"])
    assert len(judge_bodies) == 2 * len(ts)
    assert main(["score", str(tmp_path / "a" / "transcripts.jsonl")]) == 0
    assert "0 mismatches" in capsys.readouterr().out
    assert main(["report", str(tmp_path / "a"), "--quiet"]) == 0
    sec = json.loads((tmp_path / "a" / "comparison.json").read_text())["asking_judge"]
    assert set(sec) == {"two-sided", "consultancy"}
    assert all(s["rounds_heard"] == 2.0 and s["questions"] == 1.0 for s in sec.values())
    assert "A judge who asks and stops" in (tmp_path / "a" / "report.html").read_text()
    # a tampered score is caught
    lines = (tmp_path / "a" / "transcripts.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    first["meta"]["judge_turns"]["score"] = 0.0
    (tmp_path / "bad.jsonl").write_text(json.dumps(first) + "\n")
    with pytest.raises(SystemExit) as stop:
        main(["score", str(tmp_path / "bad.jsonl")])
    assert stop.value.code == 1
    assert "interactive judge score" in capsys.readouterr().out


def test_an_interactive_judge_must_be_a_model_on_a_speech_protocol() -> None:
    with pytest.raises(ConfigError, match=r"judge\.interactive needs judge\.kind llm"):
        validate(
            {"protocols": ["consultancy"], "judge": {"kind": "oracle-or-llm", "interactive": True}}
        )
    with pytest.raises(ConfigError, match="needs a protocol with the capability asks_questions"):
        validate({"protocols": ["prover-estimator"], "judge": {"interactive": True}})


def test_a_roster_runs_the_same_in_worker_processes(tmp_path: Path) -> None:
    from llmdebate.experiment.executors import ExecutorOptions
    from llmdebate.experiment.worker import worker_config

    rel = Path(tournament_players.__file__).relative_to(REPO)
    data = yaml.safe_load(tournament_config(tmp_path, items=2).read_text())
    for name, entry in data["tournament"]["roster"].items():
        entry["options"]["responder"] = f"{rel}:{name}"
        entry["options"]["requests_per_minute"] = 600
    cfg = validate(data)
    shared = worker_config(cfg, 2)
    for name, entry in shared.tournament.roster.items():  # paths absolute, limits shared
        assert entry.options["responder"] == f"{REPO / rel}:{name}"
        assert entry.options["requests_per_minute"] == 300
    local = run(cfg, tmp_path / "local", progress=False)
    procs = run(cfg, tmp_path / "procs", progress=False,
                executor=ExecutorOptions("processes", workers=2))
    assert local.exit_code == procs.exit_code == 0

    def outcomes(d: Path) -> dict[str, Any]:
        return {t.id: (t.meta["decision"], t.meta["seats"]) for t in load_transcripts(d)}

    assert outcomes(tmp_path / "local") == outcomes(tmp_path / "procs")
