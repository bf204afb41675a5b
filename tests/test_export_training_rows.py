"""Training rows are decisions a model made, and preference pairs compare like with like."""

from __future__ import annotations

import itertools
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from llmdebate.cli import main
from llmdebate.core.schemas import ModelCallRecord
from llmdebate.experiment.runner import run
from llmdebate.export import carrier_sums, decision_rows, export_run, run_info
from llmdebate.export.formats import preference
from llmdebate.export.rows import Row, refused
from llmdebate.records.rundir import load_transcripts, read_run_config

try:
    from tests.export_fixtures import pe_config, scripted
    from tests.fixtures.llm_fixtures import _claim_line, _decompose, responder
except ImportError:  # pytest run from inside tests/
    from export_fixtures import pe_config, scripted  # type: ignore[no-redef]
    from fixtures.llm_fixtures import _claim_line, _decompose, responder  # type: ignore[no-redef]

HERE = Path(__file__).resolve()
_turn = itertools.count()


def _decomposing(messages: list[dict[str, str]]) -> bool:
    system = messages[0]["content"] if messages[0]["role"] == "system" else ""
    return "break a claim" in system


def repeating(messages: list[dict[str, str]]) -> str:
    """Decompositions that repeat their claim: well-formed, but failing the repeat check."""
    if not _decomposing(messages):
        return responder(messages)
    claim = _claim_line(messages)
    return json.dumps({"subclaims": [claim, claim], "rule": "or"})


def every_other_garbage(messages: list[dict[str, str]]) -> str:
    """Every second decomposition does not parse."""
    if not _decomposing(messages):
        return responder(messages)
    return "{garbage" if next(_turn) % 2 else _decompose(_claim_line(messages), 3)


def always_garbage(messages: list[dict[str, str]]) -> str:
    return "{garbage" if _decomposing(messages) else responder(messages)


def prover(fn: str, **extra: Any) -> dict[str, Any]:
    # directions by eq. 13: the scripted model's first direction reply does not parse
    p: dict[str, Any] = {**scripted(), "decomposer": "model", "direction": "belief", **extra}
    p["options"]["responder"] = f"{HERE}:{fn}"
    return p


def rows_of(out: Path) -> list[Row]:
    info = run_info(out, read_run_config(out), 0.0)
    return [r for r, _ in decision_rows(load_transcripts(out), info)]


def jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def belief_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Directions by eq. 13 (rule rows) and an assigned answer per debate."""
    out = tmp_path_factory.mktemp("belief") / "run"
    run(pe_config(dataset={"limit": 1}, prover={"direction": "belief"}), out, progress=False)
    return out


def test_rule_and_assigned_rows_are_kept_for_audit_only(belief_run: Path, tmp_path: Path) -> None:
    rows = rows_of(belief_run)
    assert {"rule", "assigned"} <= {r.source for r in rows}
    export_run(belief_run, tmp_path / "pc.jsonl", role="prover")
    trained = jsonl(tmp_path / "pc.jsonl")
    assert trained and {r["source"] for r in trained} <= {"model", "candidate"}
    export_run(belief_run, tmp_path / "audit.jsonl", role="prover", fmt="audit")
    audit = jsonl(tmp_path / "audit.jsonl")
    assert len(audit) == sum(r.role == "prover" for r in rows)
    assert {"rule", "assigned"} <= {r["source"] for r in audit}
    assert main(["export", str(belief_run), "--role", "prover",
                 "--out", str(tmp_path / "all.jsonl"), "--include-audit"]) == 0
    assert len(jsonl(tmp_path / "all.jsonl")) == len(audit)
    # the carriers (rule directions and assigned answers among them) still sum exactly
    for t in load_transcripts(belief_run):
        assert carrier_sums(rows)[(t.id, "prover")] == (t.total, t.expected_total)


def test_a_kept_invalid_decomposition_that_was_played_is_trained(tmp_path: Path) -> None:
    out = tmp_path / "run"
    run(pe_config(dataset={"limit": 1},
                  prover=prover("repeating", keep_invalid=True, max_attempts=1)),
        out, progress=False)
    ts = load_transcripts(out)
    assert all(t.status == "complete" for t in ts)
    assert any(c.invalid for t in ts for c in t.calls if c.decision == "decompose")
    decompose = [r for r in rows_of(out) if r.act == "decompose"]
    assert decompose and all(r.source == "model" and r.reward is not None for r in decompose)
    export_run(out, tmp_path / "po.jsonl", role="prover", fmt="trl-prompt-only")
    assert any(r["act"] == "decompose" for r in jsonl(tmp_path / "po.jsonl"))


def test_best_of_n_keeps_the_playable_candidates_when_one_fails(tmp_path: Path) -> None:
    out = tmp_path / "run"
    run(pe_config(dataset={"limit": 1},
                  prover=prover("every_other_garbage", best_of=3, max_attempts=1)),
        out, progress=False)
    ts = load_transcripts(out)
    assert ts and all(t.status == "complete" for t in ts), [t.meta.get("error") for t in ts]
    notes = [c.notes["best_of"] for t in ts for c in t.calls if "best_of" in c.notes]
    failed = [n for n in notes if n.get("failed")]
    played = [n for n in notes if n["chosen"]]
    assert failed and all(n["expected_reward"] is None and not n["chosen"] for n in failed)
    # one played candidate per decomposed round
    assert len(played) == sum(rd.decomposition is not None for t in ts for rd in t.rounds)
    decompose = [r for r in rows_of(out) if r.act == "decompose"]
    assert {r.source for r in decompose} == {"candidate", "rejected"}
    assert sum(r.source == "rejected" for r in decompose) == len(failed)
    # every candidate index is its own: failed ones keep theirs
    for t in ts:
        for k in {c.round for c in t.calls if "best_of" in c.notes}:
            idx = sorted(c.notes["best_of"]["candidate"] for c in t.calls
                         if c.round == k and "best_of" in c.notes)
            assert idx == [0, 1, 2]


def test_best_of_n_fails_the_decision_only_when_every_candidate_fails(tmp_path: Path) -> None:
    out = tmp_path / "run"
    run(pe_config(dataset={"limit": 1},
                  prover=prover("always_garbage", best_of=2, max_attempts=1)),
        out, progress=False)
    ts = [t for t in load_transcripts(out) if any(c.decision == "decompose" for c in t.calls)]
    assert ts and all(t.status == "failed" for t in ts)


def call(role: str = "prover", decision: str = "decompose", rnd: int = 1,
         invalid: str | None = None, **notes: Any) -> ModelCallRecord:
    return ModelCallRecord.model_validate({
        "role": role, "model": "m", "decision": decision, "round": rnd, "completion": "x",
        "invalid": invalid, "notes": notes,
    })


def test_refused_replies_are_the_ones_asked_again() -> None:
    asked_again = [call(invalid="repeats"), call()]
    assert refused(asked_again, 0) and not refused(asked_again, 1)
    kept = [call(), call(invalid="repeats"), call(decision="direction")]
    assert not refused(kept, 1)  # the last attempt, played (keep_invalid)
    other_round = [call(invalid="x", rnd=2), call(rnd=1)]
    assert not refused(other_round, 0)
    failed = [call(invalid="x", best_of={"candidate": 2, "failed": True, "chosen": False,
                                        "expected_reward": None})]
    assert refused(failed, 0)


def row(**over: Any) -> Row:
    base = dict(
        prompt=[{"role": "user", "content": "Claim: 7 is prime."}],
        completion=[{"role": "assistant", "content": "a"}], reward=0.1, expected_reward=0.1,
        return_to_go=0.1, expected_return_to_go=0.1, credited=False, term="r_1",
        role="prover", speaker="prover", act="decompose", call_act="decompose",
        source="model", protocol="prover-estimator", round_k=1, index=None, debate_id="d",
        item_id="i", model="m", seed=0, config_digest="", judge_kind="oracle", gold=None,
        claim_truth=None, split="train", run_id="r", call=0, status="complete",
    )
    return Row(**{**base, **over})  # type: ignore[arg-type]


def worse(r: Row) -> Row:
    return replace(r, completion=[{"role": "assistant", "content": "b"}], reward=-0.2,
                   expected_reward=-0.2, return_to_go=-0.2, expected_return_to_go=-0.2)


def test_kto_labels_are_the_decisions_advantage_not_a_draws_luck() -> None:
    from llmdebate.export.formats import unpaired

    # a good decision whose draw was unlucky (sampled below expected) and a bad one that was
    # lucky: the advantage labels the good one good, the luck of the draw the other way
    good = row(reward=-0.5, expected_reward=0.3, return_to_go=-0.5, expected_return_to_go=0.3)
    bad = worse(row(reward=0.4, expected_reward=-0.6))
    bad = replace(bad, reward=0.4, expected_reward=-0.6, return_to_go=0.4,
                  expected_return_to_go=-0.6)
    other_kind = row(act="direction", expected_return_to_go=-5.0)
    got = unpaired([good, bad, other_kind], text=False)
    assert [r["label"] for r in got] == [True, False, False]
    assert got[0]["baseline"] == pytest.approx(-0.15)
    assert got[2]["baseline"] == -5.0  # its own kind: no advantage
    luck = unpaired([good, bad], text=False, baseline="expected")
    assert [r["label"] for r in luck] == [False, True]


def test_preference_pairs_only_within_one_protocol_round_decision_and_state() -> None:
    a = row()
    assert len(preference([a, worse(a)], text=False)) == 1
    for field, value in [("protocol", "naive-recursive"), ("round_k", 2), ("term", "r_2"),
                         ("act", "direction"), ("index", 1),
                         ("prompt", [{"role": "user", "content": "Claim: 9 is prime."}])]:
        other = worse(replace(a, **{field: value}))
        assert preference([a, other], text=False) == [], field
    for source in ("assigned", "rule", "rejected"):
        assert preference([replace(a, source=source), worse(replace(a, source=source))],
                          text=False) == [], source
    pair = preference([a, worse(a)], text=False)[0]
    assert (pair["chosen"], pair["rejected"], pair["term"]) == (
        a.completion, worse(a).completion, "r_1")
