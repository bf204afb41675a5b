"""The rewards a trainer sees: one scale per debate, invalid replies below every valid one."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llmdebate.core import scoring
from llmdebate.rl.rewards import reward_options

unit_float = st.floats(0.0, 1.0, allow_nan=False)


@st.composite
def decisions(draw: st.DrawFn) -> tuple[str, float, float, int]:
    """(term, a valid reward of a decision credited with it, r, depth): every reward term of
    every protocol, with the player's sign, from the scoring module's own functions."""
    eps = draw(st.floats(1e-3, 1.0))
    rho = draw(st.floats(0.0, 0.99))
    r = scoring.reward_ratio(eps, rho)
    depth = draw(st.integers(0, 6))
    sign = draw(st.sampled_from([1.0, -1.0]))  # the prover's, or the estimator's
    kind = draw(st.sampled_from(["r_k", "r_init", "after_k", "naive", "judged"]))
    if kind == "r_k":
        k = draw(st.integers(0, depth))
        s = draw(st.sampled_from([-1, 0, 1]))
        value = scoring.round_reward(r, k, s, draw(unit_float), draw(unit_float))
        return f"r_{k}", sign * value, r, depth
    if kind == "r_init":
        answer = draw(st.integers(0, 1))
        if draw(st.booleans()):
            value = scoring.init_reward(r, depth, draw(st.integers(0, 1)), answer)
        else:
            value = scoring.expected_init_reward(r, depth, draw(unit_float), answer)
        return "r_init", sign * float(value), r, depth
    if kind == "after_k":  # a recursion choice of round k: r_(k-1) + ... + r_0
        k = draw(st.integers(1, max(1, depth)))
        parts = [
            scoring.round_reward(r, j, draw(st.sampled_from([-1, 0, 1])), draw(unit_float),
                                 draw(unit_float))
            for j in range(k - 1, -1, -1)
        ]
        return f"after_{k}", sign * float(scoring.total(parts)), r, depth
    if kind == "naive":
        value = scoring.naive_payoff(draw(st.integers(0, 1)), draw(st.integers(0, 1)))
        return "payoff", sign * float(value), r, depth
    sampled, expected = scoring.judged_reward(draw(unit_float), draw(st.booleans()),
                                              draw(st.booleans()))
    return "payoff", draw(st.sampled_from([sampled, expected])), r, depth


options = st.builds(
    scoring.RewardOptions,
    normalize=st.booleans(),
    margin=st.floats(1e-6, 10.0),
    invalid_reward=st.none() | st.floats(-100.0, -1.0, exclude_max=True),
    max_reply_chars=st.integers(1, 10**6),
)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(decisions(), options)
def test_an_invalid_reply_is_below_every_valid_reply_of_the_same_decision(
    decision: tuple[str, float, float, int], opts: scoring.RewardOptions
) -> None:
    term, value, r, depth = decision
    scheme = scoring.DISCOUNTED if term.startswith(("r_", "after_")) else scoring.JUDGED
    scale = scoring.reward_scale(scheme, r, depth)
    valid = scoring.training_reward(value, scale, opts)
    invalid = scoring.invalid_training_reward(scale, opts)
    assert invalid < valid
    if opts.normalize:  # one scale per debate: [-1, 1] whatever the decision's round
        assert -1.0 - 1e-9 <= valid <= 1.0 + 1e-9
        assert invalid < -1.0


def test_one_scale_per_debate_keeps_the_rounds_weights() -> None:
    r = 0.1
    bound = scoring.payoff_bound(r, 2)
    assert bound == pytest.approx(1e-3 + 1e-2 + 1e-1 + 1.0)
    assert scoring.reward_scale(scoring.DISCOUNTED, r, 2) == bound
    assert scoring.reward_scale(scoring.PLUS_MINUS_ONE, r, 2) == 1.0
    assert scoring.reward_scale(scoring.JUDGED, r, 2) == 1.0
    opts = scoring.RewardOptions()
    # a round-2 reward stays r times a round-1 reward of the same size: the growth is kept
    r2 = scoring.training_reward(scoring.round_reward(r, 2, 1, 1.0, 0.5), bound, opts)
    r1 = scoring.training_reward(scoring.round_reward(r, 1, 1, 1.0, 0.5), bound, opts)
    assert r2 == pytest.approx(r * r1)
    with pytest.raises(ValueError, match="no reward scale"):
        scoring.reward_scale("", r, 2)


def test_a_decisions_return_is_its_first_term_and_every_later_one() -> None:
    names = ["r_init", "r_2", "r_1", "r_0"]
    values = {"r_init": 1e-3, "r_2": -1e-2, "r_1": 0.05, "r_0": -0.5}
    assert scoring.decision_return(names, values, "r_init") == pytest.approx(-0.459)
    assert scoring.decision_return(names, values, "r_1") == pytest.approx(-0.45)
    assert scoring.decision_return(names, values, "r_3") == 0.0


def test_reward_options_are_validated() -> None:
    assert scoring.RewardOptions().invalid == -1.5
    assert scoring.RewardOptions(margin=0.25).invalid == -1.25
    assert scoring.RewardOptions(invalid_reward=-3.0).invalid == -3.0
    with pytest.raises(ValueError, match=r"invalid_reward: must be below -1\.0"):
        scoring.RewardOptions(invalid_reward=-1.0)
    with pytest.raises(ValueError, match="margin"):
        scoring.RewardOptions(margin=0.0)
    with pytest.raises(ValueError, match="max_reply_chars"):
        scoring.RewardOptions(max_reply_chars=0)


def test_replies_have_a_floor_for_empty_and_oversized_ones() -> None:
    opts = scoring.RewardOptions(max_reply_chars=10)
    assert scoring.reply_ok("a reason", opts)
    assert not scoring.reply_ok("   \n", opts)
    assert not scoring.reply_ok("x" * 11, opts)
    assert scoring.reply_ok("x" * 10, opts)


def test_reward_options_from_keywords_and_the_environment() -> None:
    env = {"LLMDEBATE_RL_INVALID_REWARD": "-2", "LLMDEBATE_RL_NORMALIZE": "0",
           "LLMDEBATE_RL_SAMPLED": "1", "LLMDEBATE_RL_MAX_REPLY_CHARS": "100",
           "LLMDEBATE_RL_LOGPROBS_AS": "verbalised", "LLMDEBATE_RL_SWAP": '{"judge": "oracle"}'}
    got = reward_options({"margin": 0.1, "reward_router_address": "http://127.0.0.1:1"}, env)
    assert got == {"invalid_reward": -2.0, "normalize": False, "expected": False,
                   "max_reply_chars": 100, "logprobs_as": "verbalised",
                   "swap": {"judge": "oracle"}, "margin": 0.1}
    # a keyword wins over the environment
    assert reward_options({"invalid_reward": -5}, env)["invalid_reward"] == -5.0
    assert reward_options({}, {}) == {}
    with pytest.raises(ValueError, match="LLMDEBATE_RL_NORMALIZE: 1 or 0"):
        reward_options({}, {"LLMDEBATE_RL_NORMALIZE": "maybe"})
    with pytest.raises(ValueError, match="LLMDEBATE_RL_INVALID_MARGIN"):
        reward_options({}, {"LLMDEBATE_RL_INVALID_MARGIN": "wide"})
