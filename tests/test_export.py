"""Export: one row per decision, credit from the scoring module, the sum check, the CLI."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llmdebate.cli import main
from llmdebate.core.schemas import Transcript
from llmdebate.experiment.runner import run
from llmdebate.export import carrier_sums, decision_rows, export_run, run_info
from llmdebate.records.rundir import TRANSCRIPTS_FILE, load_transcripts, read_run_config

try:
    from tests.export_fixtures import judged_config, pe_config
except ImportError:  # pytest run from inside tests/
    from export_fixtures import judged_config, pe_config  # type: ignore[no-redef]


def rows_of(run_dir: Path, **kw: Any) -> list[Any]:
    info = run_info(run_dir, read_run_config(run_dir), 0.5)
    return [r for r, _ in decision_rows(load_transcripts(run_dir), info, **kw)]


def assert_sums_exact(run_dir: Path) -> int:
    """Per debate: the carriers' rewards equal R_A (prover) and -R_A (estimator), exactly."""
    sums = carrier_sums(rows_of(run_dir))
    checked = 0
    for t in load_transcripts(run_dir):
        if t.status != "complete" or t.protocol != "prover-estimator":
            continue
        assert t.total is not None and t.expected_total is not None
        for speaker, sign in (("prover", 1.0), ("estimator", -1.0)):
            got = sums[(t.id, speaker)]
            assert got == (sign * t.total, sign * t.expected_total), (t.id, speaker)
            checked += 1
    return checked


@pytest.fixture(scope="module")
def pe_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("pe") / "run"
    run(pe_config(), out, progress=False)
    return out


@pytest.fixture(scope="module")
def belief_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("belief") / "run"
    cfg = pe_config(
        prover={"direction": "belief", "recursion": "belief"},
        estimator={"independent": True},
        debate={"depth": 2, "width": 2, "variant": "figure2"},
    )
    run(cfg, out, progress=False)
    return out


def test_every_decision_has_a_row_with_its_round_and_credit(pe_run: Path) -> None:
    rows = rows_of(pe_run)
    acts = Counter((r.role, r.act) for r in rows)
    assert {("prover", "answer"), ("prover", "direction"), ("prover", "recurse"),
            ("prover", "evidence"), ("estimator", "estimate")} <= set(acts)
    t = load_transcripts(pe_run)[0]
    mine = [r for r in rows if r.debate_id == t.id]
    # every b_i the estimator was asked (the whole table) is a row, credited -r_k of its round
    asked = [c for c in t.calls if c.role == "estimator" and c.decision == "estimate"]
    b_rows = [r for r in mine if r.role == "estimator" and r.call_act == "conditional"]
    assert len({r.call for r in b_rows}) == len([c for c in asked if c.round is not None])
    by_k = {rd.k: rd for rd in t.rounds}
    for r in b_rows:
        if not r.credited:
            assert r.reward == -by_k[r.round_k].reward
            assert r.expected_reward == -by_k[r.round_k].expected_reward
    # the recursion choice of round k gets the later rounds; its return to go is the same
    for r in (r for r in mine if r.act == "recurse"):
        later = [rd.reward for rd in t.rounds if rd.k < r.round_k]
        assert r.reward == pytest.approx(sum(later), abs=1e-15)
        assert r.return_to_go == r.reward
    # return to go from the answer is the prover's whole payoff
    answer = next(r for r in mine if r.act == "answer" and r.credited)
    assert answer.return_to_go == pytest.approx(t.total, abs=1e-15)
    assert answer.source == "assigned" and answer.completion[0]["content"]
    assert {r.split for r in rows} <= {"train", "test"}
    items = {r.item_id for r in rows}
    assert all(len({r.split for r in rows if r.item_id == i}) == 1 for i in items)


def test_rewards_sum_to_the_transcripts_totals_exactly(pe_run: Path, belief_run: Path) -> None:
    assert assert_sums_exact(pe_run) == 12
    assert assert_sums_exact(belief_run) > 0
    # belief mode: directions by eq. 13 are rule rows that carry r_k
    rows = rows_of(belief_run)
    assert any(r.act == "direction" and r.source == "rule" and r.credited for r in rows)
    assert any(r.act == "recurse" and r.call_act == "belief" for r in rows)


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    depth=st.integers(0, 2),
    width=st.integers(1, 3),
    epsilon=st.sampled_from([0.05, 0.2, 0.45]),
    rho=st.sampled_from([0.1, 0.5, 0.9]),
    variant=st.sampled_from(["figure2", "marginal", "independent", "commit", "commit-marginal"]),
    expected=st.booleans(),
    seed=st.integers(0, 10_000),
)
def test_sum_check_holds_for_any_protocol_parameters(
    tmp_path_factory: pytest.TempPathFactory, depth: int, width: int, epsilon: float,
    rho: float, variant: str, expected: bool, seed: int,
) -> None:
    out = tmp_path_factory.mktemp("h") / "run"
    cfg = pe_config(
        seed=seed,
        dataset={"limit": 1},
        debate={"depth": depth, "width": width, "epsilon": epsilon, "rho": rho,
                "variant": variant, "expected_rewards": expected},
    )
    run(cfg, out, progress=False)
    assert assert_sums_exact(out) == 4


def test_judged_protocols_credit_the_judges_probability(tmp_path: Path) -> None:
    out = tmp_path / "run"
    run(judged_config(), out, progress=False)
    ts = {t.id: t for t in load_transcripts(out)}
    rows = rows_of(out)
    speeches = [r for r in rows if r.role == "debater"]
    assert speeches and all(r.act == "speech" for r in speeches)
    for r in speeches:
        t = ts[r.debate_id]
        options = t.meta.get("options") or t.meta.get("order") or t.meta["shown"]
        position = next(tn.position for tn in t.turns if tn.role == r.speaker)
        p = t.meta["judge"]["p_first"]
        assert r.expected_reward == pytest.approx(p if position == options[0] else 1 - p)
        assert r.reward == float(t.meta["decision"] == position)
    naive = [r for r in rows if r.protocol == "naive-recursive" and r.reward is not None]
    assert naive
    for r in naive:
        total = ts[r.debate_id].total
        assert r.reward == (total if r.speaker == "prover" else -total)
    sums = carrier_sums(rows)
    for t in ts.values():
        if t.protocol == "naive-recursive" and t.status == "complete":
            assert t.total is not None
            assert sums[(t.id, "prover")] == (t.total, t.total)
            if (t.id, "challenger") in sums:
                assert sums[(t.id, "challenger")] == (-t.total, -t.total)
    judge = [r for r in rows if r.role == "judge"]
    assert judge and all(r.reward is None and r.act == "verdict" for r in judge)


def test_pending_debates_are_left_out_unless_asked_for(tmp_path: Path) -> None:
    out = tmp_path / "run"
    run(pe_config(judge={"kind": "deferred"}), out, progress=False)
    ts = load_transcripts(out)
    pending = {t.id for t in ts if t.status == "awaiting_verdict"}
    assert pending
    assert not {r.debate_id for r in rows_of(out)} & pending
    with_pending = rows_of(out, include_pending=True)
    assert {r.debate_id for r in with_pending} >= pending
    assert all(r.reward is None for r in with_pending if r.debate_id in pending)


def test_export_cli_writes_rows_and_names_bad_input(pe_run: Path, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "rows.jsonl"
    assert main(["export", str(pe_run), "--role", "estimator", "--out", str(out)]) == 0
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert lines and {x["role"] for x in lines} == {"estimator"}
    assert lines[0]["prompt"][0]["role"] in ("system", "user")
    assert main(["export", str(tmp_path), "--role", "prover", "--out", str(out)]) == 2
    assert "not a run directory" in capsys.readouterr().err
    # an oracle judge made no model call: nothing to export for the judge
    assert main(["export", str(pe_run), "--role", "judge", "--out", str(out)]) == 2
    assert "no trl-prompt-completion rows for the judge" in capsys.readouterr().err
    assert main(["export", str(pe_run), "--role", "prover", "--out", str(out),
                 "--baseline", "often", "--format", "trl-unpaired"]) == 2


def test_a_transcript_that_does_not_rescore_is_refused(pe_run: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "config.yaml").write_text((pe_run / "config.yaml").read_text())
    t = load_transcripts(pe_run)[0]
    data = t.model_dump(mode="json")
    data["total"] = 123.0
    (bad / TRANSCRIPTS_FILE).write_text(json.dumps(data) + "\n")
    Transcript.model_validate(data)
    with pytest.raises(Exception, match="does not re-score"):
        export_run(bad, tmp_path / "x.jsonl", role="prover")
    data = t.model_dump(mode="json")
    for c in data["calls"]:
        c["tag"] = None
    (bad / TRANSCRIPTS_FILE).write_text(json.dumps(data) + "\n")
    with pytest.raises(Exception, match="not marked with their decision"):
        export_run(bad, tmp_path / "x.jsonl", role="prover")


def test_an_empty_preference_export_names_the_option_that_makes_its_rows(
    pe_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "pref.jsonl"
    code = main(["export", str(pe_run), "--role", "prover", "--format", "trl-preference",
                 "--out", str(out)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert "no trl-preference rows for the prover" in err
    assert "--prover-best-of N" in err and not out.exists()
    assert main(["export", str(pe_run), "--role", "judge", "--format", "trl-preference",
                 "--out", str(out)]) == 2
    assert "no decision of the judge was made by a model" in capsys.readouterr().err
