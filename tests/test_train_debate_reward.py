"""The embedded estimator trained on the debate reward alone: the leaf judge's verdict is the
only label, the estimator's leaf payoff (−r_0 against A's best-response direction, from
llmdebate.core.scoring) the only objective; a few LoRA steps on a tiny random model (built
here, no download) raise that payoff on the cases it was trained on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llmdebate.core import scoring
from llmdebate.core.schemas import Verdict
from llmdebate.prompts import Prompts
from llmdebate.training.claims import draw_claims
from llmdebate.training.config import LoraSettings
from llmdebate.training.debate_reward import (
    RewardTrainSettings,
    base_rate_rows,
    cluster_bootstrap,
    estimator_leaf_payoff,
    judge_verdicts,
    leaf_cases,
    leaf_probabilities,
    mean_leaf_payoff,
    number_of,
    shuffled,
    train_on_leaf_payoff,
)
from llmdebate.training.estimate_eval import estimate_cases

try:
    from tests.test_train_grpo import tiny_model
except ImportError:  # pytest run from inside tests/
    from test_train_grpo import tiny_model  # type: ignore[no-redef]

EVERY = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.floats(0.0, 1.0), st.sampled_from([0, 1]), st.floats(0.0, 1.0))
def test_the_leaf_payoff_is_the_games_and_peaks_at_the_verdict(p: float, o: int,
                                                               q: float) -> None:
    s = 1.0 if o > p else -1.0  # A's best response to p
    assert estimator_leaf_payoff(p, o) == pytest.approx(-scoring.leaf_reward(1.0, s, o, p))
    assert estimator_leaf_payoff(p, o) == pytest.approx(-abs(o - p))
    # no probability earns more than the verdict itself
    assert estimator_leaf_payoff(q, o) <= estimator_leaf_payoff(float(o), o) == 0.0


def test_the_gradient_pushes_p_towards_the_verdict() -> None:
    torch = pytest.importorskip("torch")
    p = torch.tensor([0.3, 0.3, 0.8], requires_grad=True)
    estimator_leaf_payoff(p, torch.tensor([1.0, 0.0, 1.0])).sum().backward()
    assert p.grad is not None and p.grad.tolist() == [1.0, -1.0, 1.0]


def test_the_leaf_judge_is_the_only_label() -> None:
    claims = draw_claims(4, 3, (100, 3000), [2], debate_like=True)
    cases = estimate_cases(Prompts(), claims, seed=0)
    # the oracle judge's verdict is each claim's truth
    assert judge_verdicts(cases) == [c.truth for c in cases]

    class Contrary:
        async def verdict(self, claim: Any, evidence: Any, ctx: Any) -> Verdict:
            return Verdict(value=0)

    judged = leaf_cases(cases, judge_verdicts(cases, Contrary()))
    assert {c.verdict for c in judged} == {0}
    # the control: the same verdicts, dealt out at random among the same prompts
    truth = leaf_cases(cases, [c.truth for c in cases])
    control = shuffled(truth, 1)
    assert [c.prompt for c in control] == [c.prompt for c in truth]
    assert sorted(c.verdict for c in control) == sorted(c.verdict for c in truth)
    assert [c.verdict for c in control] != [c.verdict for c in truth]
    assert shuffled(truth, 1) == control


def test_the_bootstrap_compares_brier_scores_on_the_same_cases() -> None:
    text = "{} has a divisor d with 2 <= d < 9."
    rows = [{"claim": text.format(n), "truth": t, "p": p}
            for n, t, p in [(101, 1, 0.9), (101, 0, 0.2), (103, 1, 0.8), (107, 0, 0.1)]]
    base = base_rate_rows(rows)
    assert {r["p"] for r in base} == {0.5}
    got = cluster_bootstrap(base, rows, key=number_of, draws=200)
    assert got["clusters"] == 3 and got["cases"] == 4
    assert got["difference"] == pytest.approx(0.25 - (0.01 + 0.04 + 0.04 + 0.01) / 4)
    assert 0.0 < got["low"] <= got["difference"] <= got["high"]
    with pytest.raises(ValueError, match="not the same cases"):
        cluster_bootstrap(rows, rows[::-1], key=number_of)


def test_a_few_steps_raise_the_leaf_payoff(tmp_path: Path) -> None:
    model = tiny_model(tmp_path / "tiny")
    claims = draw_claims(2, 5, (100, 3000), [2], debate_like=True)
    cases = estimate_cases(Prompts(), claims, seed=0)
    judged = leaf_cases(cases, judge_verdicts(cases))
    assert len(judged) == 12 and 0 < sum(c.verdict for c in judged) < 12
    before = leaf_probabilities(model, None, judged, threads=1)
    s = RewardTrainSettings(steps=8, batch_size=4, learning_rate=0.05, warmup_steps=0,
                            threads=1, lora=LoraSettings(r=8, alpha=32, target_modules=EVERY))
    log = train_on_leaf_payoff(model, judged, s, tmp_path / "adapter", seed=0)
    assert [e["step"] for e in log] == list(range(1, 9))
    after = leaf_probabilities(model, tmp_path / "adapter", judged, threads=1)
    # the payoff the reward ascends, measured on the cases it was trained on, rose: the tiny
    # model cannot tell the cases apart, so its probabilities moved together towards the
    # majority verdict (the payoff is linear in p on each side of the verdict)
    gain = mean_leaf_payoff(after, judged) - mean_leaf_payoff(before, judged)
    assert gain > 0.005, (before, after)
    majority = 1.0 if 2 * sum(c.verdict for c in judged) > len(judged) else -1.0
    assert majority * (sum(after) - sum(before)) / len(judged) > 0.03


def test_against_a_bounded_prover_b_moves_towards_its_belief_not_against_shuffled_ones(
        tmp_path: Path) -> None:
    """The acceptance test of the bounded prover (docs/training.md, "The estimator against
    a bounded prover"): a handful of steps on a tiny model move B's p towards a bounded
    prover's belief (up where the prover's table says 0.9, down where it says 0.1, on the
    same claims and verdicts: the belief, not the verdict, sets the direction), and not when
    the same beliefs are shuffled across the claims (half 0.9, half 0.1: no push on average).
    """
    from llmdebate.beliefs import BeliefTable, TableBeliefs
    from llmdebate.data.problems import divisor_statement
    from llmdebate.training.debate_reward import LeafCase, LeafTrainer, prover_beliefs
    from llmdebate.training.estimate_eval import estimate_prompt
    from llmdebate.training.sft import torch_threads

    model = tiny_model(tmp_path / "tiny")
    texts = [divisor_statement(n, 2, 3, True) for n in range(100, 116)]  # one cell: no|1-2
    verdicts = judge_verdicts([type("C", (), {"claim": t})() for t in texts])  # type: ignore
    assert sum(verdicts) == 8  # odd n: half true
    prompts = [estimate_prompt(Prompts(), t) for t in texts]

    def table(*cells: tuple[str, int]) -> BeliefTable:
        return BeliefTable("divisors-polarity-width", {c: (t, 18) for c, t in cells}, {})

    high = TableBeliefs(table(("no|1-2", 17)))  # q = 0.9
    low = TableBeliefs(table(("no|1-2", 1)))  # q = 0.1
    both = table(("no|1-2", 17), ("a|1-2", 1))
    seed = next(s for s in range(100)  # a shuffle dealing out 0.9 and 0.1 evenly
                if sum(TableBeliefs(both, shuffle_seed=s).belief(t) > 0.5 for t in texts) == 8)
    shuffled = TableBeliefs(both, shuffle_seed=seed)
    # plain SGD on the whole set: a step proportional to the mean push (Adam's normalised
    # step moves by about its learning rate even where the mean push is nearly zero: with
    # AdamW at 0.05 the two balanced shuffles below moved p by -0.018 and -0.056)
    s = RewardTrainSettings(steps=6, batch_size=16, learning_rate=2.0, warmup_steps=0,
                            optimizer="sgd")
    moved: dict[str, float] = {}
    with torch_threads(1):
        trainer = LeafTrainer(model, LoraSettings(r=8, alpha=32, target_modules=EVERY,
                                                  layers=[1]), prompts)
        trainer.reset(0)
        before = sum(trainer.score(prompts)) / len(texts)
        for name, source in (("high", high), ("low", low), ("shuffled", shuffled)):
            qs = prover_beliefs(texts, source)
            cases = [LeafCase(t, p, v, q) for t, p, v, q in zip(texts, prompts, verdicts, qs,
                                                                 strict=True)]
            trainer.train(cases, s, seed=0)
            moved[name] = sum(trainer.score(prompts)) / len(texts) - before
    assert 0.3 < before < 0.7
    assert moved["high"] > 0.05 and moved["low"] < -0.05, moved
    assert abs(moved["shuffled"]) < 0.1 * min(moved["high"], -moved["low"]), moved
