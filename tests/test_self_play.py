"""Self-play of both seats at the leaf (llmdebate/training/self_play.py): the payoffs are the
game's (core/scoring.py), the figures recompute by hand, and a few LoRA steps on a tiny
random model (built here, no download) move each seat the way its payoff says: B's p towards
A's belief; A's P(higher) up against a credulous judge and not against one that knows the
truth, where the audit's line calls judge hacking only against the credulous judge."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llmdebate.core import scoring
from llmdebate.data.problems import claim_truth, divisor_statement
from llmdebate.prompts import Prompts
from llmdebate.report.judge_audit import hacking_line, judge_audit, leaf_audit
from llmdebate.training.config import LoraSettings
from llmdebate.training.estimate_eval import estimate_prompt
from llmdebate.training.self_play import (
    ESTIMATOR,
    PROVER,
    SeatCase,
    SelfPlaySettings,
    TwoSeats,
    estimator_step,
    interval,
    mixed_direction,
    play,
    prover_expected_payoff,
    prover_step,
    round_figures,
)

try:
    from tests.test_train_grpo import tiny_model
except ImportError:  # pytest run from inside tests/
    from test_train_grpo import tiny_model  # type: ignore[no-redef]

EVERY = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.floats(0.0, 1.0), st.floats(0.0, 1.0), st.sampled_from([0, 1]),
       st.floats(0.01, 1.0))
def test_the_provers_expected_payoff_is_the_mixture_of_its_two_plays(
        q: float, p: float, o: int, tau: float) -> None:
    pi = 1 / (1 + math.exp(-(q - p) / tau))
    by_hand = pi * scoring.leaf_reward(1.0, 1, o, p) + (1 - pi) * scoring.leaf_reward(1.0, -1, o, p)
    assert prover_expected_payoff(q, p, o, tau) == pytest.approx(by_hand, abs=1e-12)
    assert -1 <= mixed_direction(q, p, tau) <= 1


def test_the_provers_gradient_follows_the_verdict_and_bs_follows_as_belief() -> None:
    torch = pytest.importorskip("torch")
    from llmdebate.training.debate_reward import estimator_leaf_payoff

    q = torch.tensor([0.5, 0.5], requires_grad=True)
    p = torch.tensor([0.5, 0.5])
    prover_expected_payoff(q, p, torch.tensor([1.0, 0.0]), 0.1).sum().backward()
    assert q.grad is not None and q.grad[0] > 0 > q.grad[1]  # up where O = 1, down where 0
    pb = torch.tensor([0.3, 0.7], requires_grad=True)
    estimator_leaf_payoff(pb, torch.tensor([0.0, 0.0]), torch.tensor([0.6, 0.2])).sum().backward()
    assert pb.grad is not None and pb.grad.tolist() == [1.0, -1.0]  # towards A's q, not O


def _case(n: int, truth: int, verdict: int, prompt: str = "") -> SeatCase:
    return SeatCase(f"claim {n}", prompt, verdict, truth, n)


def test_round_figures_by_hand() -> None:
    cases = [_case(101, 1, 1), _case(101, 0, 0), _case(103, 0, 1), _case(107, 1, 1)]
    q = [0.9, 0.2, 0.8, 0.4]
    p = [0.5, 0.5, 0.5, 0.5]
    f = round_figures(cases, q, p, draws=200)
    # A plays +1, -1, +1, -1: payoffs 0.5, 0.5, 0.5, -0.5
    assert f["prover_payoff"]["value"] == pytest.approx(0.25)
    assert f["estimator_payoff"]["value"] == pytest.approx(-0.25)
    # honest minus dishonest: 2·h·(O − p): 1, 1, -1, 1
    assert f["honest_minus_dishonest"]["value"] == pytest.approx(0.5)
    assert f["argued_truth"]["value"] == pytest.approx(0.5)  # claims 1 and 2
    assert f["higher"] == 0.5
    assert f["accuracy_judge"] == 0.75
    assert f["accuracy_prover"] == 0.5 and f["accuracy_estimator"] == 0.0
    assert f["brier_prover"]["value"] == pytest.approx((0.01 + 0.04 + 0.64 + 0.36) / 4)
    assert f["brier_estimator"]["value"] == pytest.approx(0.25)
    assert f["mean_abs_p_q"] == pytest.approx((0.4 + 0.3 + 0.3 + 0.1) / 4)
    # the audit: won on 1, 2, 3; argued the truth on 1, 2; won arguing a falsehood on 3
    assert f["audit_judge_wins"] == 0.75 and f["audit_argued_truth"] == 0.5
    assert f["audit_false_wins"] == 0.25 and f["audit_judge_accuracy"] == 0.75
    lo, hi = f["prover_payoff"]["low"], f["prover_payoff"]["high"]
    assert lo <= 0.25 <= hi
    assert interval([1.0, 3.0, 2.0], [1, 1, 2], 100) == {"value": 2.0, "low": 2.0, "high": 2.0}


def test_leaf_audit_is_the_transcripts_definition() -> None:
    # the prover argued higher (s = +1) on a false claim and a credulous judge said True
    assert leaf_audit("prover", 1, 0.4, 0.6, 1, 0) == (True, False, False)
    assert leaf_audit("estimator", 1, 0.4, 0.6, 1, 0) == (False, False, False)
    assert leaf_audit("prover", 0, 0.0, 0.6, 1, 1) == (False, False, True)
    assert judge_audit([])["audited"] == 0


def _seats(tmp_path: Path, prompts: list[str]) -> TwoSeats:
    from llmdebate.training.debate_reward import LeafTrainer

    model = tiny_model(tmp_path / "tiny")
    lora = LoraSettings(r=8, alpha=32, target_modules=EVERY, layers=[1])
    return TwoSeats(LeafTrainer(model, lora, prompts), lora)


def _false_claims() -> list[SeatCase]:
    """16 claims, each false: an odd number has no divisor in [2, 3)."""
    out = []
    for n in range(101, 133, 2):
        text = divisor_statement(n, 2, 3, False)
        assert claim_truth(text, {"problem": "divisors"}) == 0
        out.append(SeatCase(text, estimate_prompt(Prompts(), text), 0, 0, n))
    return out


def test_b_moves_towards_as_belief(tmp_path: Path) -> None:
    from llmdebate.training.sft import torch_threads

    cases = [SeatCase(c.claim, c.prompt, 1, 0, c.number) for c in _false_claims()]
    prompts = [c.prompt for c in cases]
    s = SelfPlaySettings(batch_size=16)
    with torch_threads(1):
        seats = _seats(tmp_path, prompts)
        seats.reset(PROVER, 0)
        seats.reset(ESTIMATOR, 1)
        torch = seats.torch
        base = seats.score(ESTIMATOR, prompts)
        assert seats.score(PROVER, prompts) == pytest.approx(base, abs=1e-6)  # both the base
        opt_a = torch.optim.AdamW(seats.params(PROVER), lr=0.05, weight_decay=0.0)
        opt_b = torch.optim.AdamW(seats.params(ESTIMATOR), lr=0.05, weight_decay=0.0)
        for _ in range(4):  # A against a judge that says True: its belief rises
            prover_step(seats, opt_a, cases, s, 0.05, lambda x: seats.fixed(ESTIMATOR, x))
        q = seats.score(PROVER, prompts)
        assert seats.score(ESTIMATOR, prompts) == pytest.approx(base)  # B untouched by A's step
        gap = sum(a - b for a, b in zip(q, base, strict=True)) / len(q)
        assert gap > 0.05, (q, base)
        # B against A's played direction, with verdicts of 0 (the claims' truth): p follows
        # A's belief up, not the verdict down (B's gradient in p is A's direction)
        truthful = [SeatCase(c.claim, c.prompt, 0, 0, c.number) for c in cases]
        for _ in range(4):
            estimator_step(seats, opt_b, truthful, s, 0.05)
        p = seats.score(ESTIMATOR, prompts)
        assert seats.score(PROVER, prompts) == pytest.approx(q)  # A untouched by B's step
    after = sum(abs(a - b) for a, b in zip(q, p, strict=True)) / len(q)
    assert sum(p) / len(p) > sum(base) / len(base) + 0.5 * gap, (p, base)
    assert after < 0.5 * gap, (after, gap)


def test_against_a_credulous_judge_a_hacks_against_one_that_knows_the_truth_it_does_not(
        tmp_path: Path) -> None:
    from llmdebate.training.sft import torch_threads

    false = _false_claims()
    prompts = [c.prompt for c in false]
    s = SelfPlaySettings(prover_steps=6, batch_size=16, learning_rate=0.05, warmup_steps=0,
                         round_every=3, train_estimator=False, draws=50)
    lines: dict[str, Any] = {}
    higher: dict[str, float] = {}
    with torch_threads(1):
        seats = _seats(tmp_path, prompts)
        seats.reset(ESTIMATOR, 1)
        base = dict(zip(prompts, seats.score(ESTIMATOR, prompts), strict=True))
        for judge, verdict in (("credulous", 1), ("truthful", 0)):
            cases = [SeatCase(c.claim, c.prompt, verdict, c.truth, c.number) for c in false]
            history = play(seats, cases, cases, s, seed=0, base=base)
            assert [h["prover_steps"] for h in history] == [0, 3, 6]
            assert history[0]["higher"] == 0.0  # q = p: A argues nothing at the start
            assert history[-1]["mean_p"] == pytest.approx(history[0]["mean_p"])  # B frozen
            higher[judge] = history[-1]["higher"]
            lines[judge] = hacking_line(history)
    assert higher["credulous"] > 0.9 and higher["truthful"] < 0.1, higher
    assert lines["credulous"].startswith("judge hacking:"), lines
    assert lines["truthful"].startswith("no judge hacking found:"), lines


def test_the_benchmark_runs_and_its_figures_recompute(tmp_path: Path) -> None:
    """benchmarks/bench_self_play.py end to end on the tiny model, two numbers a side; the
    first round's Brier of p and the audit's wins recomputed from the written rows."""
    import json
    import os
    import subprocess
    import sys

    repo = Path(__file__).resolve().parents[1]
    model = tiny_model(tmp_path / "tiny")
    res = subprocess.run(
        [sys.executable, str(repo / "benchmarks" / "bench_self_play.py"), "--model",
         f"hf/{model}", "--train-numbers", "2", "--held-out-numbers", "2", "--steps", "2",
         "--round-every", "1", "--estimator-steps", "1", "--top-layers", "1", "--seeds", "0",
         "--draws", "20", "--out", str(tmp_path / "out")],
        env={**os.environ, "PYTHONPATH": str(repo)}, capture_output=True, text=True,
        timeout=300, check=False)
    assert res.returncode == 0, res.stderr[-3000:]
    got = json.loads((tmp_path / "out" / "result.json").read_text())
    assert set(got["rounds"]) == {f"{a}@0" for a in ("self-play", "control-shuffled",
                                                    "hacking-credulous", "hacking-truthful")}
    assert got["exact_split_rate"].startswith("not measured")
    for name, hist in got["rounds"].items():
        assert [h["prover_steps"] for h in hist] == [0, 1, 2]
        assert got["lines"][name].split(":")[0] in (
            "judge hacking", "no judge hacking found",
            "no judge hacking found (too few units for an interval)",
            "judge hacking not decided (the control is flagged too)")
        for h in hist:  # zero-sum, and the audit's wins are the rounds' positive payoffs
            assert h["prover_payoff"]["value"] == pytest.approx(-h["estimator_payoff"]["value"])
    # round 0: both seats the base model, so q = p and A argues nothing
    first = got["rounds"]["self-play@0"][0]
    assert first["brier_prover"] == first["brier_estimator"] and first["higher"] == 0
    assert first["audit_judge_wins"] == 0 and first["mean_abs_p_q"] == 0
    assert first["brier_estimator"]["value"] == pytest.approx(got["base_model_held_out_brier"],
                                                              abs=1e-4)
    credulous = got["rounds"]["hacking-credulous@0"][0]
    assert credulous["accuracy_judge"] == pytest.approx(got["held_out"]["true_share"], abs=1e-4)
    assert "| self-play | 0 | 0 (0, 0) |" in res.stdout
