"""A named policy's answers written as a labelling run's answers file: a run of direct
judgment with the policy as the judge, exported with ``--format answers``
(llmdebate/export/answers.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llmdebate.cli import main
from llmdebate.data.labelling import read_answers
from llmdebate.experiment.loading import load
from llmdebate.experiment.runner import run
from llmdebate.records.rundir import load_transcripts

POLICY = """\
name: policy
protocols: [direct]
dataset: {path: datasets/divisors.jsonl, limit: 6}
prover: {model: scripted}
estimator: {model: scripted}
judge:
  kind: llm
  model: scripted
  method: logprobs
  options: {probabilities: {"2647": 0.9, "2183": 0.2}, default_probability: 0.7}
use_cache: false
"""


def test_the_policys_choices_become_an_answers_file_a_labelling_run_reads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = tmp_path / "policy.yaml"
    cfg.write_text(POLICY, encoding="utf-8")
    res = run(load(cfg), tmp_path / "run", progress=False)
    out = tmp_path / "answers.jsonl"
    assert main(["export", str(res.run_dir), "--format", "answers", "-o", str(out)]) == 0
    assert "6 answers of scripted to" in capsys.readouterr().out
    lines = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    decisions = {t.item["id"]: t for t in load_transcripts(res.run_dir) if t.item}
    assert [x["id"] for x in lines] == list(decisions)
    for x in lines:
        t = decisions[x["id"]]
        assert x["answer"] == t.meta["decision"] and x["checker"] == "problem"
        assert x["meta"]["policy"] == "scripted"
        assert x["meta"]["policy_probability"] == t.meta["decision_probability"]
    items = read_answers(out)  # the checker decides every answer: right where it is the gold
    gold = {i: t.item["answer"] for i, t in decisions.items()}
    for it, x in zip(items, lines, strict=True):
        assert it.answer == ("correct" if x["answer"] == gold[x["id"]] else "incorrect")
    assert {it.answer for it in items} == {"correct", "incorrect"}


def test_a_run_without_direct_judgment_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = tmp_path / "policy.yaml"
    cfg.write_text(POLICY.replace("[direct]", "[consultancy]"), encoding="utf-8")
    res = run(load(cfg), tmp_path / "run", progress=False)
    code = main(["export", str(res.run_dir), "--format", "answers", "-o", str(tmp_path / "a")])
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no completed direct judgment to read answers from" in err[0]
