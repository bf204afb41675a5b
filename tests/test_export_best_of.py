"""Best of n: candidates scored by their exact expected reward; the best is played; the
others become preference pairs."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from llmdebate.agents.parsing import parse_decomposition
from llmdebate.core import scoring
from llmdebate.experiment.runner import run
from llmdebate.export import carrier_sums, decision_rows, export_run, run_info
from llmdebate.records.rundir import load_transcripts, read_run_config

try:
    from tests.export_fixtures import pe_config, scripted
    from tests.fixtures.llm_fixtures import _claim_line, _decompose, responder
except ImportError:  # pytest run from inside tests/
    from export_fixtures import pe_config, scripted  # type: ignore[no-redef]
    from fixtures.llm_fixtures import _claim_line, _decompose, responder  # type: ignore[no-redef]

HERE = Path(__file__).resolve()
_turn = itertools.count()


def cycling(messages: list[dict[str, str]]) -> str:
    """Decompositions of three shapes in turn: in halves, in thirds, and the claim twice."""
    system = messages[0]["content"] if messages[0]["role"] == "system" else ""
    if "break a claim" not in system:
        return responder(messages)
    claim = _claim_line(messages)
    shape = next(_turn) % 3
    if shape == 2:
        return json.dumps({"subclaims": [claim, claim], "rule": "or"})
    return _decompose(claim, 2 + shape)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bo") / "run"
    prover: dict[str, Any] = {**scripted(), "decomposer": "model", "best_of": 3}
    prover["options"]["responder"] = f"{HERE}:cycling"
    run(pe_config(prover=prover, dataset={"limit": 2}), out, progress=False)
    return out


def test_the_best_candidate_is_played_and_scored_exactly(run_dir: Path) -> None:
    ts = load_transcripts(run_dir)
    assert all(t.status == "complete" for t in ts)
    rounds = 0
    for t in ts:
        for rd in t.rounds:
            if rd.k == 0:
                continue
            cands = [c for c in t.calls if c.round == rd.k and "best_of" in c.notes]
            assert [c.notes["best_of"]["candidate"] for c in cands] == [0, 1, 2]
            chosen = [c for c in cands if c.notes["best_of"]["chosen"]]
            assert len(chosen) == 1
            best = chosen[0].notes["best_of"]["expected_reward"]
            assert best == max(c.notes["best_of"]["expected_reward"] for c in cands)
            played = parse_decomposition(chosen[0].completion or "", rd.claim, t.config.width)
            assert rd.decomposition is not None
            assert [s.text for s in played.subclaims] == [
                s.text for s in rd.decomposition.subclaims
            ]
            assert played.rule == rd.decomposition.rule
            assert best == rd.expected_reward  # the same number the engine recorded
            assert any(c.decision == "scoring" and c.round == rd.k for c in t.calls)
            rounds += 1
    assert rounds > 0


def test_candidates_become_preference_pairs_and_sums_stay_exact(run_dir: Path,
                                                               tmp_path: Path) -> None:
    out = tmp_path / "pairs.jsonl"
    export_run(run_dir, out, role="prover", fmt="trl-preference")
    pairs = [json.loads(x) for x in out.read_text().splitlines()]
    dec_pairs = [p for p in pairs if p["act"] == "decompose"]
    assert dec_pairs and all(p["reward_gap"] > 0 for p in dec_pairs)
    info = run_info(run_dir, read_run_config(run_dir), 0.0)
    rows = [r for r, _ in decision_rows(load_transcripts(run_dir), info)]
    decompose = [r for r in rows if r.act == "decompose"]
    assert {r.source for r in decompose} <= {"candidate", "rejected"}
    assert any(r.source == "candidate" for r in decompose)
    # a reply refused by the checks (and asked again) was never played: it earns no credit
    assert all(r.reward is None for r in decompose if r.source == "rejected")
    sums = carrier_sums(rows)
    for t in load_transcripts(run_dir):
        assert sums[(t.id, "prover")] == (t.total, t.expected_total)


_dir_turn = itertools.count()


def cycling_directions(messages: list[dict[str, str]]) -> str:
    """Directions in turn: higher, lower, right (every other prompt as the fixture answers)."""
    if "higher, lower" in messages[-1]["content"]:
        return ("higher", "lower", "right")[next(_dir_turn) % 3]
    return responder(messages)


def test_best_of_n_directions_are_scored_for_the_rounds_decomposition(
    tmp_path: Path,
) -> None:
    out = tmp_path / "run"
    prover: dict[str, Any] = {**scripted(), "decomposer": "formal", "direction": "model",
                              "best_of": 3, "best_of_acts": ["direction"]}
    prover["options"]["responder"] = f"{HERE}:cycling_directions"
    run(pe_config(prover=prover, dataset={"limit": 2}), out, progress=False)
    ts = load_transcripts(out)
    rounds = 0
    for t in ts:
        assert t.status == "complete", t.meta.get("error")
        for rd in t.rounds:
            cands = [c for c in t.calls if c.round == rd.k and c.decision == "direction"
                     and "best_of" in c.notes]
            if rd.k == 0 or rd.decomposition is None:
                assert not cands
                continue
            assert [c.notes["best_of"]["candidate"] for c in cands] == [0, 1, 2]
            scores = [c.notes["best_of"]["expected_reward"] for c in cands]
            chosen = next(c for c in cands if c.notes["best_of"]["chosen"])
            assert chosen.notes["best_of"]["expected_reward"] == max(scores)
            assert max(scores) == rd.expected_reward  # exactly what the engine recorded
            assert rd.direction == (1 if rd.expected_m > rd.p else -1)
            rounds += 1
        assert not scoring.score_transcript(t).mismatches
    assert rounds > 0
    pairs = export_run(out, tmp_path / "p.jsonl", role="prover", fmt="trl-preference")
    got = [json.loads(x) for x in (tmp_path / "p.jsonl").read_text().splitlines()]
    assert pairs.rows == len(got) and any(p["act"] == "direction" for p in got)
    info = run_info(out, read_run_config(out), 0.0)
    sums = carrier_sums([r for r, _ in decision_rows(ts, info)])
    for t in ts:
        assert sums[(t.id, "prover")] == (t.total, t.expected_total)
