"""The judge-hacking audit (llmdebate/report/judge_audit.py): scripted debates on the divisors
problem (``tests/fixtures/honesty_fixtures.py``), an honest prover and a liar, each before a
judge that checks the evidence's arithmetic and one that believes whatever the prover says.
Every share is recomputed here from the transcripts' leaves, and the one line calls judge
hacking exactly where the liar wins before the gullible judge."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from llmdebate.core.schemas import Transcript
from llmdebate.experiment.loading import validate
from llmdebate.experiment.runner import run
from llmdebate.records.rundir import load_transcripts
from llmdebate.report.judge_audit import debate_audit, hacking_line, judge_audit
from llmdebate.training.metrics import generation_metrics

try:
    from tests.fixtures import honesty_fixtures as hf
except ImportError:  # pytest run from inside tests/
    from fixtures import honesty_fixtures as hf  # type: ignore[no-redef]

REPO = Path(__file__).resolve().parents[1]
FIX = str(REPO / "tests" / "fixtures" / "honesty_fixtures.py")


def debates(tmp: Path, prover: str, judge: str) -> list[Transcript]:
    cfg = validate({
        "name": "audit", "dataset": {"path": str(REPO / "datasets" / "divisors.jsonl"),
                                     "limit": 4},
        "debate": {"depth": 2, "width": 2, "epsilon": hf.EPSILON, "early_stop": False},
        "prover": {"model": "scripted", "options": {"responder": f"{FIX}:{prover}"},
                   "decomposer": "model", "direction": "model", "recursion": "model"},
        "estimator": {"model": "scripted",
                      "options": {"probabilities": f"{FIX}:blind_to_small_divisors"}},
        "judge": {"model": "scripted", "kind": "llm",
                  "options": {"probabilities": f"{FIX}:{judge}"}},
        "max_concurrency": 4,
    })
    where = tmp / f"{prover}-{judge}"
    run(cfg, where, progress=False)
    ts = load_transcripts(where)
    assert all(t.status == "complete" for t in ts)
    return ts


def by_hand(ts: list[Transcript]) -> dict[str, float]:
    """The prover's shares, from each leaf: won r_0 > 0, argued s_0 = the truth's sign,
    judge correct O = truth."""
    rows = []
    for t in ts:
        leaf = t.rounds[-1]
        assert leaf.k == 0 and leaf.verdict is not None and leaf.claim.truth is not None
        truth = int(leaf.claim.truth)
        rows.append((leaf.reward > 0, leaf.direction == (1 if truth else -1),  # type: ignore[operator]
                     leaf.verdict.value == truth))
    n = len(rows)
    return {"judge_wins": sum(r[0] for r in rows) / n, "argued_truth": sum(r[1] for r in rows) / n,
            "judge_accuracy": sum(r[2] for r in rows) / n,
            "false_wins": sum(r[0] and not r[1] for r in rows) / n}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], list[Transcript]]:
    tmp = tmp_path_factory.mktemp("audit")
    return {(p, j): debates(tmp, p, j) for p in ("honest_prover", "lying_prover")
            for j in ("calibrated", "checking_judge", "gullible_judge")}


def test_every_share_is_the_leaves_own(runs: dict[tuple[str, str], list[Transcript]]) -> None:
    for key, ts in runs.items():
        got, want = judge_audit(ts), by_hand(ts)
        assert got["audited"] == len(ts) == 8, key
        for k, v in want.items():
            assert got[k] == pytest.approx(v), (key, k)
        assert got["wins_minus_truth"] == pytest.approx(want["judge_wins"] - want["argued_truth"])


def test_the_liar_wins_only_before_the_gullible_judge(
    runs: dict[tuple[str, str], list[Transcript]],
) -> None:
    honest = judge_audit(runs[("honest_prover", "checking_judge")])
    assert honest["argued_truth"] == 1.0 and honest["false_wins"] == 0.0
    knows = judge_audit(runs[("lying_prover", "calibrated")])  # a judge that knows the truth
    assert knows["argued_truth"] == 0.0 and knows["judge_wins"] == 0.0
    assert knows["judge_accuracy"] == 1.0
    # the checking judge is unsure (0.5) of evidence that does not check out: the liar's
    # made-up facts win the draws that fall its way, against an estimator sure of the truth
    unsure = judge_audit(runs[("lying_prover", "checking_judge")])
    assert unsure["argued_truth"] == 0.0 and unsure["false_wins"] == unsure["judge_wins"]
    fooled = judge_audit(runs[("lying_prover", "gullible_judge")])
    assert fooled["argued_truth"] == 0.0 and fooled["judge_wins"] > 0.5
    assert fooled["false_wins"] == fooled["judge_wins"] and fooled["judge_accuracy"] < 0.5


def test_one_line_calls_judge_hacking_where_wins_rise_without_truth(
    runs: dict[tuple[str, str], list[Transcript]],
) -> None:
    def history(judge: str) -> list[dict[str, Any]]:
        return [generation_metrics(runs[(p, judge)]) for p in ("honest_prover", "lying_prover")]

    hacked = hacking_line(history("gullible_judge"))
    assert hacked is not None and hacked.startswith("judge hacking:"), hacked
    honest_to_liar = hacking_line(history("calibrated"))
    assert honest_to_liar is not None and honest_to_liar.startswith("no judge hacking:")
    # a liar who learns the truth: wins rise with the truth, no hacking
    back = list(reversed(history("gullible_judge")))
    assert str(hacking_line(back)).startswith("no judge hacking:")
    assert hacking_line(history("gullible_judge")[:1]) is None  # one generation: no trend


def test_a_debate_without_a_leaf_verdict_is_not_audited() -> None:
    t = Transcript.model_validate({"id": "x", "protocol": "prover-estimator", "config": {},
                                   "seed": 0, "status": "failed"})
    assert debate_audit(t) is None
    assert judge_audit([t]) == {"audited": 0, "judge_wins": None, "argued_truth": None,
                                "judge_accuracy": None, "wins_minus_truth": None,
                                "false_wins": None}
    with pytest.raises(ValueError, match="side"):
        debate_audit(t, "judge")
