"""Labelling runs: answers checked into items, each protocol's label, the label metrics.

The metrics are recomputed here by hand on small examples; McNemar's p-value against scipy's
binomial test; a labelling run on the fake OpenAI server with a judge of known accuracy gives
the hand-computed F1, J and MCC.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.stats import binomtest

from llmdebate.data.labelling import CORRECT, INCORRECT, read_answers
from llmdebate.errors import DatasetError
from llmdebate.experiment.config import ExperimentConfig
from llmdebate.experiment.items import load_run_items
from llmdebate.experiment.runner import run
from llmdebate.records.transcripts import iter_transcripts
from llmdebate.report.build import build_report
from llmdebate.report.label_metrics import (
    Confusion,
    abstention,
    accuracy,
    confusion,
    macro_f1,
    mcc,
    mcnemar_exact,
    metric_intervals,
    on_correct,
    on_incorrect,
    youden_j,
)
from llmdebate.report.labels import label_data

try:
    from tests.fixtures.fake_server import FakeServer
except ImportError:  # pytest run from inside tests/
    from fixtures.fake_server import FakeServer  # type: ignore[no-redef]

REPO = Path(__file__).resolve().parents[1]


# ----------------------------------------------------------------------- the metrics by hand


def test_every_metric_on_a_hand_example() -> None:
    truth = [1, 1, 1, 1, 0, 0, 0, 0, 1, 0]
    labels = [1, 1, 1, 0, 0, 0, 1, None, 1, 0]
    c = confusion(truth, labels)
    assert c == Confusion(tp=4, fn=1, fp=1, tn=3, abstained=1)
    assert accuracy(c) == pytest.approx(7 / 9)
    assert on_correct(c) == pytest.approx(4 / 5)
    assert on_incorrect(c) == pytest.approx(3 / 4)
    assert youden_j(c) == pytest.approx(0.55)
    assert macro_f1(c) == pytest.approx((8 / 10 + 6 / 8) / 2)
    assert mcc(c) == pytest.approx((4 * 3 - 1 * 1) / math.sqrt(5 * 5 * 4 * 4))
    assert abstention(c) == pytest.approx(0.1)


def test_the_conventions_where_a_metric_has_no_denominator() -> None:
    everyone_correct = confusion([1, 1, 1], [1, 1, 0])
    assert youden_j(everyone_correct) is None and on_incorrect(everyone_correct) is None
    assert mcc(everyone_correct) == 0.0  # a factor of the denominator is 0
    assert macro_f1(everyone_correct) == pytest.approx((4 / 5 + 0.0) / 2)
    nothing = confusion([1, 0], [None, None])
    assert accuracy(nothing) is None and mcc(nothing) is None and abstention(nothing) == 1.0


@settings(deadline=None, max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, 1), st.sampled_from([0, 1, None]),
                          st.sampled_from([0, 1, None])), min_size=1, max_size=40))
def test_mcnemar_is_scipys_exact_binomial_test(rows: list[tuple[int, Any, Any]]) -> None:
    truth = [r[0] for r in rows]
    first, second = [r[1] for r in rows], [r[2] for r in rows]
    m = mcnemar_exact(truth, first, second)
    b = sum(x == y and z != y for y, x, z in rows)
    c = sum(z == y and x != y for y, x, z in rows)
    assert (m.b, m.c) == (b, c)
    expected = 1.0 if b + c == 0 else binomtest(b, b + c, 0.5).pvalue
    assert m.p == pytest.approx(expected, rel=1e-9)


def test_no_interval_under_ten_questions_and_answers_resample_with_their_question() -> None:
    truth = [1, 0] * 9
    labels: list[int | None] = [1, 1] * 9
    nine = metric_intervals(truth, labels, [i // 2 for i in range(18)], seed=0, n_boot=50)
    assert all(iv.ci is None and "too few" in str(iv.note) for iv in nine.values())
    # every question has one right and one wrong label: accuracy is 1/2 in every resample
    ten = metric_intervals([1, 0] * 10, [1, 1] * 10, [i // 2 for i in range(20)], seed=0,
                           n_boot=50)
    assert ten["accuracy"].ci is None and "no spread" in str(ten["accuracy"].note)
    alone = metric_intervals([1, 0] * 10, [1, 1] * 10, list(range(20)), seed=0, n_boot=200)
    assert alone["accuracy"].ci is not None and alone["accuracy"].ci[0] < 0.5


# ----------------------------------------------------------------------- answers and checkers


def write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_checkers_decide_each_answer(tmp_path: Path) -> None:
    divisors = json.loads((REPO / "datasets/divisors.jsonl").read_text().splitlines()[0])
    rows = [
        {"id": "n1", "question": "How much?", "answer": "$18.00", "checker": "numeric",
         "reference": "18"},
        {"id": "n2", "question": "How much?", "answer": 17, "checker": "numeric",
         "reference": "18", "question_id": "n1"},
        {"id": "e1", "question": "Capital?", "answer": " Paris", "checker": "exact",
         "reference": "paris"},
        {"id": "p1", "question": divisors["question"], "answer": "no", "checker": "problem",
         "choices": ["yes", "no"], "meta": divisors["meta"]},
    ]
    items = read_answers(write(tmp_path / "a.jsonl", rows))
    assert [it.answer for it in items] == [CORRECT, INCORRECT, CORRECT, INCORRECT]
    assert items[1].meta["labelling"]["question_id"] == "n1"
    # the formal problem's own statements are the claims debated: their truth stays computable
    assert items[3].meta["claims"] == {CORRECT: divisors["meta"]["claims"]["no"],
                                       INCORRECT: divisors["meta"]["claims"]["yes"]}
    assert "Proposed answer: no" in items[3].question


@pytest.mark.parametrize(("row", "message"), [
    ({"id": "x", "question": "q", "answer": "1", "checker": "nope"}, r"a\.jsonl:2: checker"),
    ({"id": "x", "question": "q", "answer": "1", "checker": "numeric"},
     r"a\.jsonl:2: checker numeric: checker 'numeric' needs a reference"),
    ({"id": "x", "question": "q", "answer": "1", "checker": "exact", "reference": "1",
      "extra": 1}, r"a\.jsonl:2: .*extra"),
])
def test_a_bad_answers_line_is_one_error_naming_file_and_line(
    tmp_path: Path, row: dict[str, Any], message: str
) -> None:
    ok = {"id": "a", "question": "q", "answer": "1", "checker": "exact", "reference": "1"}
    with pytest.raises(DatasetError, match=message):
        read_answers(write(tmp_path / "a.jsonl", [ok, row]))


def test_the_bundled_answers_are_read_as_a_labelling_run() -> None:
    cfg = ExperimentConfig.model_validate({"dataset": {"path": "datasets/answers/gsm8k.jsonl",
                                                       "limit": 3}})
    items = load_run_items(cfg.dataset, 0)
    assert len(items) == 3 and all(set(it.choices or []) == {CORRECT, INCORRECT} for it in items)


# ----------------------------------------------------------------------- a run on a real server

N = 12
DIRECT_WRONG = {"c0", "c1", "i0"}  # the judge's mistakes in direct judgment
CONSULTED_WRONG = {"c0", "i0", "i1", "i2", "i3"}  # and after hearing the consultant


def answers(tmp_path: Path) -> Path:
    rows = [{"id": f"{kind}{i}", "question": f"What is {i} + {i}? ({kind})",
             "answer": str(2 * i if kind == "c" else 2 * i + 1), "checker": "numeric",
             "reference": str(2 * i)} for kind in "ci" for i in range(N // 2)]
    return write(tmp_path / "answers.jsonl", rows)


def judge_of_known_accuracy(body: dict[str, Any]) -> str:
    """A judge right on every answer but its listed mistakes; a consultant's speech else."""
    text = "\n".join(str(m.get("content")) for m in body["messages"])
    if "probability" not in text:
        return "The proposed answer is right: add the two numbers."
    qid = re.search(r"What is \d+ \+ \d+\? \((\w)\)", text)
    num = re.search(r"What is (\d+) \+", text)
    assert qid and num
    item = f"{qid.group(1)}{num.group(1)}"
    wrong = CONSULTED_WRONG if "consultant" in text else DIRECT_WRONG
    believes_correct = (qid.group(1) == "c") != (item in wrong)
    first = re.search(r"\(A\) (correct|incorrect)", text)
    assert first
    agrees = (first.group(1) == CORRECT) == believes_correct
    return json.dumps({"probability": 0.9 if agrees else 0.1})


def test_a_labelling_run_on_the_fake_server_gives_the_hand_computed_metrics(
    tmp_path: Path,
) -> None:
    with FakeServer() as server:
        server.responder = judge_of_known_accuracy
        model = {"model": "openai/fake", "base_url": server.url,
                 "options": {"timeout": 5.0, "retry_base_delay": 0.01}}
        cfg = ExperimentConfig.model_validate({
            "name": "labels", "protocols": ["direct", "consultancy"],
            "dataset": {"path": str(answers(tmp_path))},
            "prover": {**model, "max_tokens": 32, "assignment": "paired"},
            "judge": {**model, "kind": "llm", "method": "verbalised"},
            "use_cache": False, "report": {"bootstrap": 200},
        })
        res = run(cfg, tmp_path / "run", progress=False)
    assert res.exit_code == 0, res.summary
    ts = list(iter_transcripts(tmp_path / "run" / "transcripts.jsonl"))
    data = label_data(ts, seed=0, n_boot=200)
    rows = {r["labeller"]: r for r in data["rows"]}
    assert data["answers"] == N and data["correct"] == N // 2
    # direct: wrong on two correct answers and one incorrect one
    direct = rows["direct"]
    assert direct["confusion"] == {"tp": 4, "fn": 2, "fp": 1, "tn": 5, "abstained": 0}
    m = {k: v["value"] for k, v in direct["metrics"].items()}
    assert m["macro_f1"] == pytest.approx((8 / 11 + 10 / 13) / 2)
    assert m["youden_j"] == pytest.approx(4 / 6 + 5 / 6 - 1)
    assert m["mcc"] == pytest.approx((4 * 5 - 1 * 2) / math.sqrt(5 * 6 * 6 * 7))
    assert direct["calls_per_label"] == 1.0
    # consultancy: the consultant defends every answer; the judge is then wrong on five
    consulted = rows["consultancy"]
    assert consulted["confusion"] == {"tp": 5, "fn": 1, "fp": 4, "tn": 2, "abstained": 0}
    assert consulted["metrics"]["mcc"]["value"] == pytest.approx(
        (5 * 2 - 4 * 1) / math.sqrt(9 * 6 * 6 * 3))
    assert consulted["calls_per_label"] == 2.0  # the speech and the judge
    assert direct["metrics"]["mcc"]["ci"] is not None  # 12 questions: an interval
    (test,) = data["mcnemar"]
    assert (test["b"], test["c"]) == (3, 1)
    assert test["p"] == pytest.approx(binomtest(1, 4, 0.5).pvalue)
    build_report(tmp_path / "run")
    md = (tmp_path / "run" / "comparison.md").read_text()
    assert "## Labels" in md and "| direct | 12 |" in md
    assert (tmp_path / "run" / "plots" / "labels_mcc.png").is_file()


# ----------------------------------------------------------------------- the one-step judge


def direct_prompt(
    n: int, hi: int, proposed: str, first: str, shown: str = ""
) -> list[dict[str, str]]:
    question = (f"Is {n} a prime number, that is, does {n} have no divisor d with 2 <= d < {hi}?"
                f"\n\nProposed answer: {proposed}\n\nIs the proposed answer correct?")
    return [{"role": "user", "content": f"Question: {question}\n\n{shown}\n\n"
             f'Is answer (A), "{first}", the correct answer to the question?'}]


def test_the_one_step_judge_checks_a_leaf_whole_and_a_named_step() -> None:
    from llmdebate.judging.one_step import BUDGET, CAUGHT, UNSURE, one_step_judge

    def leaf(text: str) -> float:
        return one_step_judge([{"role": "user", "content": f"Claim: {text}\n\nEvidence: -"}])

    assert BUDGET == 2
    assert leaf("91 has a divisor d with 7 <= d < 9.") == 1.0  # 7 divides 91: checked whole
    assert leaf("91 has no divisor d with 8 <= d < 10.") == 1.0
    assert leaf("91 has no divisor d with 2 <= d < 10.") in (0.0, UNSURE)  # too large: unsure
    # 91 = 7 * 13 is not prime: "yes" is wrong; a debater naming 7 settles it
    named = direct_prompt(91, 10, "yes", "correct", "debater: 7 divides 91.")
    assert one_step_judge(named) == 0.0
    lie = direct_prompt(97, 10, "no", "correct", "debater: 3 divides 97.")
    assert one_step_judge(lie) == pytest.approx(1.0 - CAUGHT)  # caught: "no" is likely wrong
    alone = direct_prompt(97, 10, "yes", "incorrect")
    assert one_step_judge(alone) == pytest.approx(1.0 - UNSURE)  # its own two checks found none


def test_the_truthful_speaker_names_the_divisor_or_a_checkable_lie() -> None:
    from llmdebate.judging.one_step import truthful_speaker

    def speech(n: int, proposed: str, position: str) -> str:
        system = f'You are a consultant. Convince a judge that the answer "{position}" is correct'
        return truthful_speaker([{"role": "system", "content": system},
                                 *direct_prompt(n, 10, proposed, position)])

    assert speech(91, "no", "correct") == "7 divides 91, so 91 has a divisor in the range."
    assert speech(97, "no", "correct").startswith("2 divides 97")  # a lie the judge can check
    assert speech(97, "yes", "correct").startswith("No number d")
