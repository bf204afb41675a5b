"""Self-play in which the prover writes its own decompositions
(llmdebate/training/text_self_play.py): the rewards of a scripted case recomputed by hand from
Figure 2's formulas, the honest prover ahead of the dishonest one, TRL's group advantages, a
few policy-gradient steps on a tiny random model (built here, no download) that raise the
log-probability of the better decomposition, and the benchmark's time budget."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llmdebate.core.rules import CondProbs, compile_rule, probability_true
from llmdebate.core.schemas import CombinationRule
from llmdebate.prompts import Prompts
from llmdebate.training import text_game as game
from llmdebate.training.claims import IntervalClaim, exact_reply
from llmdebate.training.decompose_eval import grade
from llmdebate.training.text_self_play import (
    TextCase,
    TextPlaySettings,
    exact_split,
    flat,
    oracle_verdicts,
    parsed,
    truth,
)
from llmdebate.training.text_self_play_figures import _audit_row, prover_return

try:
    from tests.test_train_grpo import tiny_model
except ImportError:  # pytest run from inside tests/
    from test_train_grpo import tiny_model  # type: ignore[no-redef]

R = 0.025
CLAIM = IntervalClaim(n=91, lo=2, hi=10, none=False, width=2)  # true: 7 divides 91
INEXACT = json.dumps({"subclaims": ["91 has a divisor d with 2 <= d < 4.",
                                    "91 has a divisor d with 4 <= d < 8."],
                      "rule": {"kind": "or", "k": None, "expr": None}})


def test_the_scripted_splits_are_what_they_say() -> None:
    assert grade(CLAIM, exact_reply(CLAIM))["exact_split"] is True
    g = grade(CLAIM, INEXACT)
    assert g["valid"] and not g["exact_split"]
    assert grade(CLAIM, "not a decomposition")["valid"] is False


def test_rewards_of_an_exact_split_by_hand() -> None:
    split = exact_split(Prompts(), CLAIM)  # [2, 6) or [6, 10): false, true
    assert oracle_verdicts(None, split) == [0, 1]  # type: ignore[arg-type]
    # A: q(x) = 0.8, answer 1, s_1 = +1 against p_1 = 0.6; B: b_1 = 0.3, b_2|0 = 0.9,
    # b_2|1 = 0.5; A's beliefs on the subclaims 0.1, 0.6
    total, t = prover_return(R, 0.8, 0.6, split, [0.3, 0.9, 0.5], [0.1, 0.6], [0, 1], 0.0)
    assert t is not None
    r_init = R**2 * 0.6
    m = 1 - (1 - 0.3) * (1 - 0.9)  # or: P(z_1 = 1 or z_2 = 1)
    r_1 = R * (m - 0.6)
    # z_1 = 0 (0.7): b = (0.3, 0.9), gaps 0.2, 0.3 -> j = 2, s_0 = -1 (0.6 < 0.9), O = 1
    # z_1 = 1 (0.3): b = (0.3, 0.5), gaps 0.2, 0.1 -> j = 1, s_0 = -1 (0.1 < 0.3), O = 0
    r_0 = 0.7 * -(1 - 0.9) + 0.3 * -(0 - 0.3)
    assert t["m"] == pytest.approx(0.93, abs=1e-12)
    assert t["r_1"] == pytest.approx(r_1, abs=1e-12)
    assert t["r_0"] == pytest.approx(r_0, abs=1e-12)
    assert total == pytest.approx(r_init + r_1 + r_0, abs=1e-12)
    assert total == pytest.approx(0.028625, abs=1e-12)
    assert [j for _, j, _ in t["leaf"]] == [1, 0]
    # the judge-hacking audit's row: the most probable path (z_1 = 0, 0.7), its leaf y_2 (true)
    # argued down (s_0 = −1), O = 1 right, r_0 = −0.1: lost, not the truth, judge correct
    assert _audit_row(t, split, [0.1, 0.6], [0, 1], 0.0) == (False, False, True)


def test_the_step_as_a_claim_by_hand() -> None:
    """docs/protocol.md, "The step as a claim": E[M'] = b_σ·E[M_D] + (1 − b_σ)·p_1, and the
    recursion may choose σ, judged by whether the split is exact."""
    split = exact_split(Prompts(), CLAIM, step=True)
    assert split.step is not None and CLAIM.text in split.step
    assert all(y in split.step for y in split.subclaims)
    assert flat([split])[-1] == split.step_prompt and len(flat([split])) == 4
    assert split.prover_prompts[-1] == split.step_prompt
    assert oracle_verdicts(None, split) == [0, 1, 1]  # type: ignore[arg-type]
    # B: b_1 = 0.3, b_2|0 = 0.9, b_2|1 = 0.5, b_σ = 0.4; A: beliefs 0.1, 0.6 and 0.95 on σ
    total, t = prover_return(R, 0.8, 0.6, split, [0.3, 0.9, 0.5, 0.4], [0.1, 0.6, 0.95],
                             [0, 1, 1], 0.0)
    assert t is not None
    m = 1 - (1 - 0.3) * (1 - 0.9)
    m_used = 0.4 * m + 0.6 * 0.6
    # both prefixes: gaps 0.2, 0.3 (0.1), 0.55 -> j = σ, s_0 = +1, O_σ = 1: 1 − 0.4
    assert t["m"] == pytest.approx(m, abs=1e-12)
    assert t["m_used"] == pytest.approx(m_used, abs=1e-12)
    assert t["r_1"] == pytest.approx(R * (m_used - 0.6), abs=1e-12)
    assert t["r_1"] == pytest.approx(R * 0.4 * (m - 0.6), abs=1e-12)
    assert t["r_0"] == pytest.approx(0.6, abs=1e-12)
    assert [j for _, j, _ in t["leaf"]] == [2, 2]
    assert total == pytest.approx(R**2 * 0.6 + R * 0.4 * (m - 0.6) + 0.6, abs=1e-12)
    g, inexact = parsed(Prompts(), CLAIM, INEXACT, step=True)
    assert inexact is not None and not g["exact_split"]
    assert oracle_verdicts(None, inexact) == [0, 1, 0]  # type: ignore[arg-type]
    # against an inexact split, believing its step pays A only where B believes it
    _, t2 = prover_return(R, 0.8, 0.6, inexact, [0.3, 0.9, 0.5, 0.4], [0.1, 0.6, 0.05],
                          [0, 1, 0], 0.0)
    assert t2 is not None and t2["r_0"] == pytest.approx(0.4, abs=1e-12)  # −(0 − 0.4)
    # the audit's rows: σ argued up where it holds, and down where it does not; both won
    assert _audit_row(t, split, [0.1, 0.6, 0.95], [0, 1, 1], 0.0) == (True, True, True)
    assert _audit_row(t2, inexact, [0.1, 0.6, 0.05], [0, 1, 0], 0.0) == (True, True, True)


def test_rewards_of_an_inexact_split_and_an_invalid_one_by_hand() -> None:
    g, split = parsed(Prompts(), CLAIM, INEXACT)
    assert split is not None and not g["exact_split"]
    assert oracle_verdicts(None, split) == [0, 1]  # type: ignore[arg-type]
    total, t = prover_return(R, 0.8, 0.6, split, [0.2, 0.4, 0.5], [0.5, 0.9], [0, 1], 0.0)
    assert t is not None
    r_1 = R * ((1 - 0.8 * 0.6) - 0.6)  # negative: B's split is below its p_1
    r_0 = 0.8 * (1 - 0.4) + 0.2 * (1 - 0.5)  # j = 2 on both prefixes, s_0 = +1, O = 1
    assert total == pytest.approx(R**2 * 0.6 + r_1 + r_0, abs=1e-12)
    assert total == pytest.approx(0.578375, abs=1e-12)
    # B's payoff is -R_A (what the estimator's step ascends; the figures' estimator_payoff)
    invalid, none = prover_return(R, 0.8, 0.6, None, [], [], None, 0.0)
    assert none is None
    assert invalid == pytest.approx(R**2 * 0.6 - 1.5 * (R**2 + R + 1), abs=1e-12)
    # the decompose act's frame: (return - baseline) / r
    assert game.decision_frame(R, 0.5)(0.578375) == pytest.approx((0.578375 - 0.5) / R)


levels2 = st.tuples(st.floats(0, 1), st.floats(0, 1), st.floats(0, 1))


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(levels2, st.sampled_from(["and", "or", "majority"]))
def test_expected_m_is_the_project_s_exact_expectation(b: tuple[float, float, float],
                                                       kind: str) -> None:
    rule = compile_rule(CombinationRule(kind=kind), 2)
    levels = [[b[0]], [b[1], b[2]]]
    want = probability_true(rule, CondProbs.from_levels(levels))
    assert game.expected_m([int(v) for v in rule.table], levels) == pytest.approx(want,
                                                                                  abs=1e-12)
    assert sum(w for w, _ in game.paths(levels)) == pytest.approx(1.0)


def _honest_and_liar(p1: float, b: list[float], claim: IntervalClaim) -> tuple[float, float]:
    split = exact_split(Prompts(), claim)
    g = oracle_verdicts(None, split)  # type: ignore[arg-type]
    assert g is not None
    x = truth(claim.text)
    assert x is not None
    honest, _ = prover_return(R, x, p1, split, b, [float(v) for v in g], g, 0.0)
    liar, _ = prover_return(R, 1 - x, p1, split, b, [1.0 - v for v in g], g, 0.0)
    return honest, liar


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.floats(0, 1), levels2, st.booleans())
def test_the_honest_prover_beats_the_dishonest_one(p1: float, b: tuple[float, float, float],
                                                   none: bool) -> None:
    """Before the oracle judge the honest prover's leaf payoff is |g - b_j| >= 0 and the
    liar's -|g - b_j'| <= 0; above the leaf the two differ by at most r^2 + 2r. So wherever
    B is off the truth by more than that on every subclaim, honesty wins."""
    claim = IntervalClaim(n=91, lo=2, hi=10, none=none, width=2)
    split = exact_split(Prompts(), claim)
    g = oracle_verdicts(None, split)  # type: ignore[arg-type]
    assert g is not None
    honest, liar = _honest_and_liar(p1, list(b), claim)
    _, th = prover_return(R, 0.5, p1, split, list(b), [float(v) for v in g], g, 0.0)
    _, tl = prover_return(R, 0.5, p1, split, list(b), [1.0 - v for v in g], g, 0.0)
    assert th is not None and tl is not None
    assert th["r_0"] >= 0 >= tl["r_0"]
    off = min(abs(v - t) for v, t in zip((b[0], b[1], b[2]), (g[0], g[1], g[1]), strict=True))
    if off > R**2 + 2 * R:
        assert honest > liar


def test_bs_objective_ascends_its_payoff_through_p1_the_bs_and_b_j() -> None:
    """B's objective is -R_A with A's played directions; a small step along its gradient in
    (p_1, b) raises it, and its gradient in b_j is A's leaf direction times P(prefix)."""
    torch = pytest.importorskip("torch")
    split = exact_split(Prompts(), CLAIM)

    def payoff(x: Any) -> Any:
        levels = [[x[1]], [x[2], x[3]]]
        t = game.split_terms(R, 0.8, x[0], split.table, levels, [0.1, 0.6], [0, 1])
        return -(game.init_term(R, 0.8, x[0]) + t["r_1"] + t["r_0"])

    x = torch.tensor([0.6, 0.3, 0.9, 0.5], dtype=torch.float64, requires_grad=True)
    before = payoff(x)
    before.backward()
    assert x.grad is not None
    # the leaf: -w·s_0·(O - b_j): d/db_j = w·s_0 with s_0 = -1 on both prefixes
    # and r_1's: -r·s_1·dE[M]/db_(2|0) = -r·(1 - b_1)
    assert x.grad[2].item() == pytest.approx(-0.7 - R * 0.7, abs=1e-12)
    with torch.no_grad():
        after = payoff(x + 1e-3 * x.grad)
    assert after.item() > before.item()
    assert before.item() == pytest.approx(-0.028625, abs=1e-12)


def test_group_advantages_are_trls() -> None:
    got = game.group_advantages([1.0, 2.0, 3.0, 4.0])
    std = math.sqrt(((1.5**2) * 2 + (0.5**2) * 2) / 3)
    assert got == pytest.approx([(x - 2.5) / (std + 1e-4) for x in (1, 2, 3, 4)])
    assert game.group_advantages([0.3, 0.3]) == [0.0, 0.0]
    # the frame is one positive affine map per decision: the same advantages (to the 1e-4)
    frame = game.decision_frame(R, 0.1)
    raw = [0.578375, 0.028625, game.invalid_return(R)]
    framed = game.group_advantages([frame(v) for v in raw])
    assert framed[0] > framed[1] > framed[2]
    assert framed == pytest.approx(game.group_advantages(raw), abs=1e-3)


EVERY = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def _decomposer(tmp_path: Path, case_prompts: list[str]) -> Any:
    from llmdebate.models.grammar_cache import GrammarCache
    from llmdebate.training.config import LoraSettings
    from llmdebate.training.debate_reward import LeafTrainer
    from llmdebate.training.self_play import TwoSeats
    from llmdebate.training.text_self_play_steps import Decomposer

    model = tiny_model(tmp_path / "tiny")
    lora = LoraSettings(r=8, alpha=32, target_modules=EVERY, layers=[1])
    seats = TwoSeats(LeafTrainer(model, lora, case_prompts), lora)
    return Decomposer(seats, GrammarCache(None), "cpu", 16, Prompts())


def test_a_few_steps_raise_the_better_decompositions_log_probability(tmp_path: Path) -> None:
    from llmdebate.training.estimate_eval import estimate_prompt
    from llmdebate.training.self_play import ESTIMATOR, PROVER
    from llmdebate.training.sft import torch_threads
    from llmdebate.training.text_sample import Completion
    from llmdebate.training.text_self_play_steps import prover_step

    prompts = Prompts()
    case = TextCase(CLAIM, estimate_prompt(prompts, CLAIM.text), "Split: 91 in [2, 10).",
                    1, 91, exact_split(prompts, CLAIM), 0)
    with torch_threads(1):
        # the prompts the frozen layers' outputs are kept for: their shared beginning is the
        # estimator prompt's, which every subclaim's prompt also starts with
        d = _decomposer(tmp_path, [case.prompt, *flat([case.exact]),
                                   *case.exact.prover_prompts])
        seats, torch = d.seats, d.seats.torch
        seats.reset(PROVER, 0)
        seats.reset(ESTIMATOR, 1)
        tok = seats.trainer.tok
        eos = int(tok.eos_token_id)

        def comp(text: str) -> Completion:
            return Completion([*tok(text, add_special_tokens=False)["input_ids"], eos],
                              text, [], 0.0)

        group = [comp(INEXACT), comp('{"subclaims": []}')]  # valid, and invalid

        class Scripted(type(d)):  # type: ignore[misc]
            def groups(self, cases: Any, n: int, temperature: float,
                       generator: Any) -> list[list[Completion]]:
                return [group for _ in cases]

        sd = Scripted(d.seats, d.grammar, d.device, d.max_tokens, d.prompts)
        s = TextPlaySettings(group=2, batch_size=1)
        opt = torch.optim.AdamW(seats.params(PROVER), lr=0.02, weight_decay=0.0)
        with torch.no_grad():
            before = sd.logprobs(case, group).tolist()
        b_before = [p.detach().clone() for p in seats.params(ESTIMATOR)]
        for _ in range(3):
            stats, plays = prover_step(sd, opt, [case], s, 0.02, oracle_verdicts,
                                       torch.Generator().manual_seed(0))
        with torch.no_grad():
            after = sd.logprobs(case, group).tolist()
        assert [p.split is not None for p in plays] == [True, False]
        assert plays[0].value > plays[1].value == pytest.approx(game.invalid_return(R))
        assert stats["valid"] == 0.5
        assert all(torch.equal(a, b) for a, b in zip(b_before, seats.params(ESTIMATOR),
                                                     strict=True))  # B untouched by A
        # B's steps on the same plays move B's adapter, not A's
        from llmdebate.training.text_self_play_steps import estimator_step

        a_before = [p.detach().clone() for p in seats.params(PROVER)]
        opt_b = torch.optim.AdamW(seats.params(ESTIMATOR), lr=0.002, weight_decay=0.0)
        b_before = [p.detach().clone() for p in seats.params(ESTIMATOR)]
        got = [estimator_step(seats, opt_b, plays, s, 0.002) for _ in range(2)]
        assert not all(torch.equal(a, b) for a, b in zip(b_before, seats.params(ESTIMATOR),
                                                         strict=True))
        assert all(g["estimator_grad_norm"] > 0 for g in got)  # B's adapter learns
        assert all(torch.equal(a, b) for a, b in zip(a_before, seats.params(PROVER),
                                                     strict=True))
    assert after[0] - before[0] > 0.5, (before, after)
    assert after[0] - after[1] > before[0] - before[1]


def test_the_time_budget_stops_after_a_round_and_writes_the_result(tmp_path: Path) -> None:
    repo = Path(__file__).resolve().parents[1]
    model = tiny_model(tmp_path / "tiny")
    out = tmp_path / "out"
    res = subprocess.run(
        [sys.executable, str(repo / "benchmarks" / "bench_text_self_play.py"), "--model",
         f"hf/{model}", "--train-numbers", "2", "--held-out", "1", "--steps", "2",
         "--group", "2", "--batch", "1", "--estimator-steps", "1", "--round-every", "1",
         "--max-tokens", "8", "--seeds", "0,1", "--draws", "20", "--time-budget", "0.001",
         "--grammar-dir", str(tmp_path / "grammars"), "--out", str(out)],
        env={**os.environ, "PYTHONPATH": str(repo)}, capture_output=True, text=True,
        timeout=600, check=False)
    assert res.returncode == 0, res.stderr[-3000:]
    got = json.loads((out / "result.json").read_text())
    assert list(got["rounds"]) == ["self-play@0"]  # the first run's round 0, then stopped
    assert [h["prover_steps"] for h in got["rounds"]["self-play@0"]] == [0]
    assert got["stopped"].startswith("time budget")
    first = got["rounds"]["self-play@0"][0]
    assert first["prover_payoff"]["value"] == pytest.approx(-first["estimator_payoff"]["value"])
    assert first["valid"] == 0.0  # 8 tokens close no decomposition
    lines = (out / "self-play-seed0.jsonl").read_text().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["round"] == 0
    assert "| self-play | 0 | 0 (0, 0) |" in res.stdout
