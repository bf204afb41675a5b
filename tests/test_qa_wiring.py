"""QuALITY wired into runs: the loader chosen from the config, the best distractor as the
dishonest answer, the direct baselines, a prompt too long for the model's context failing its
debate, the optional quote penalty re-scored, and the report of configs/quality-debate.yaml
(accuracy per protocol and judge view of the passage, with intervals; verified-quote shares)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from qa_passage import FIXTURE, SAMPLE, config, run_cli, run_scripted

from llmdebate.cli import main
from llmdebate.experiment.config import DatasetSettings, ExperimentConfig
from llmdebate.experiment.items import cut_passage, is_quality, load_run_items
from llmdebate.experiment.jobs import make_jobs
from llmdebate.protocols.families import rescore
from llmdebate.protocols.registry import protocol_of
from llmdebate.records.rundir import load_transcripts

REPO = Path(__file__).resolve().parents[1]


def test_quality_is_read_with_its_loader_and_the_best_distractor_is_the_dishonest_answer() -> None:
    ds = DatasetSettings(path=str(SAMPLE))
    assert is_quality(ds) and not is_quality(DatasetSettings(path="datasets/divisors.jsonl"))
    assert not is_quality(DatasetSettings(path=str(SAMPLE), format="common"))
    items = load_run_items(ds, 0)
    assert len(items) == 5 and all(it.meta["distractor"] in (it.choices or []) for it in items)
    cfg = ExperimentConfig.model_validate(
        {"dataset": {"path": str(SAMPLE)}, "protocols": ["consultancy", "direct"]}
    )
    jobs = make_jobs(items, cfg)
    for j in jobs:
        assert j.spec.distractor == j.spec.item.meta["distractor"] != j.spec.gold
        if j.spec.variant == "dishonest":
            assert j.spec.answer == j.spec.item.meta["distractor"]
    assert {j.spec.variant for j in jobs if j.spec.protocol == "direct"} == {"blind", "expert"}
    # an item without a passage keeps the one direct debate
    plain = make_jobs(load_run_items(DatasetSettings(path="datasets/divisors.jsonl", limit=1), 0),
                      cfg.model_copy(update={"protocols": ["direct"]}))
    assert [j.spec.variant for j in plain] == ["direct"]


def test_passages_are_cut_at_a_paragraph_end_when_asked() -> None:
    text = "One two three.\n\nFour five six seven.\n\nEight nine ten eleven twelve."
    assert cut_passage(text, 40) == "One two three.\n\nFour five six seven."
    items = load_run_items(DatasetSettings(path=str(SAMPLE), limit=1, passage_chars=3000), 0)
    assert len(items[0].context or "") <= 3000 and items[0].meta["passage_cut"]["of"] > 20_000


def test_a_prompt_that_cannot_fit_the_context_fails_its_debate_with_the_reason(
    tmp_path: Path,
) -> None:
    scripted = config({})["prover"]
    run_dir = run_cli(
        tmp_path, {}, protocols=["consultancy", "direct"], rounds=1,
        prover={**scripted, "context_length": 2000},
    )
    ts = {t.id.split("/", 1)[0] + "/" + t.meta["variant"]: t for t in load_transcripts(run_dir)}
    for variant in ("honest", "dishonest"):
        t = ts[f"consultancy/{variant}"]
        assert t.status == "failed"
        assert "does not fit the model's context of 2000 tokens" in (t.failure or "")
        assert "RequestRejectedError" in (t.failure or "")
    assert ts["direct/blind"].status == ts["direct/expert"].status == "complete"


def test_the_quote_penalty_is_recorded_and_rescored(tmp_path: Path) -> None:
    run_dir, _ = run_scripted(
        tmp_path, {}, protocols=["two-sided", "prover-estimator"], rounds=1,
        prover={"model": "scripted", "quote_penalty": 0.5},
    )
    for t in load_transcripts(run_dir):
        rec = t.meta["quote_penalty"]
        assert rec["weight"] == 0.5
        roles = {"prover"} if t.rounds else {"debater A", "debater B"}
        assert rec["by_role"] == dict.fromkeys(roles, -0.5)  # one invented quote each
        assert rescore(protocol_of(t), t).mismatches == []
        t.meta["quote_penalty"]["by_role"] = dict.fromkeys(roles, 0.0)
        (bad,) = rescore(protocol_of(t), t).mismatches
        assert bad.where == "meta.quote_penalty.by_role"


def test_the_report_of_the_quality_config_splits_accuracy_by_passage_and_shows_quote_shares(
    tmp_path: Path,
) -> None:
    cfg = yaml.safe_load((REPO / "configs" / "quality-debate.yaml").read_text())
    scripted = config({})["prover"]
    for role in ("prover", "estimator", "judge"):
        cfg[role].update(scripted)
    cfg["dataset"]["path"] = str(SAMPLE)
    cfg["dataset"]["limit"] = 2
    path = tmp_path / "quality.yaml"
    path.write_text(yaml.safe_dump(cfg))
    run_dir = tmp_path / "run"
    argv = ["run", "--config", str(path), "--run-dir", str(run_dir), "--quiet"]
    assert main(argv) == 0
    assert main(["report", str(run_dir), "--quiet", "--bootstrap", "200"]) == 0
    m = json.loads((run_dir / "comparison.json").read_text())
    assert set(m["protocols"]) == {"direct", "consultancy", "two-sided", "prover-estimator"}
    direct = m["protocols"]["direct"]["by_passage"]
    assert set(direct) == {"hidden", "shown"}
    for proto, e in m["protocols"].items():
        for view, v in e["by_passage"].items():
            assert v["items"] == 2 and v["ci95"] is None, (proto, view)
            assert "too few" in v["interval_note"]
    rows = {r["label"]: r for r in m["rows"]}
    assert {"direct (blind)", "direct (expert)"} <= set(rows)
    assert m["protocols"]["direct"]["accuracy"] is None  # blind and expert never pooled
    shares = {(q["protocol"], q["side"]): q for q in m["quotes"]}
    assert {p for p, _ in shares} == {"consultancy", "two-sided", "prover-estimator"}
    # each speech: one verified and one unverified marked quote, and one copied run of the
    # passage (a verified quote, the judge being blind)
    assert all(
        q["share_verified"] == pytest.approx(2 / 3) and q["model"] for q in shares.values()
    ), shares
    md = (run_dir / "comparison.md").read_text()
    assert "| direct (blind) | judge accuracy |" in md and "share verified" in md
    page = (run_dir / "report.html").read_text()
    assert "Quotes from the passage" in page and "hidden" in page
    assert FIXTURE  # the scripted debater of the run


def test_the_judge_view_settings_are_flags(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--help"]) == 0
    out = capsys.readouterr().out
    for flag in ("--judge-passage", "--judge-direct-passage", "--prover-max-words",
                 "--prover-quote-words", "--dataset-distractor", "--prover-context-length"):
        assert flag in out
