"""Advantages a trainer can use: a decision near the top of a deep debate still gets GRPO
advantages of order one (docs/training.md, "Reward scale").

A decision's completions differ by its own term, r^level (B's first estimate p_d: r^(d+1)
and r^d), while its return to go also holds every later term, up to 1 in size. On the
debate's one scale the two answer words of p_d differ by 3.7e-7 at d = 4 (TRL's
(r - mean) / (std + 1e-4) gives 0.002) and, beside a leaf term of 1, by less than float32's
resolution at d >= 4. Relative to the decision (the default), each reward is (return - the
recorded reply's return) / r^level, computed in float64 before any trainer rounds it: the
same positive affine map for every completion of the decision, so the ranking is the game's.

The debates are the honesty fixtures' (``tests/fixtures/honesty_fixtures.py``: the scripted
honest prover, the calibrated estimator, a checking judge) on divisor claims wide enough for
a depth-6 debate of width 2 (n > 64^2).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llmdebate.core import scoring
from llmdebate.data.generate import divisor_item, prime_top
from llmdebate.experiment.runner import run
from llmdebate.export import build, decision_rows, run_info
from llmdebate.records.rundir import load_transcripts, read_run_config
from llmdebate.rl import DebateReward

try:
    from tests.test_reward_honesty import estimate_pair, honesty_config
except ImportError:  # pytest run from inside tests/
    from test_reward_honesty import estimate_pair, honesty_config  # type: ignore[no-redef]

NUMBERS = (10007, 10403)
"""A prime and a semiprime (101 x 103) whose top intervals [2, 101) and [2, 102) split into
64 parts: a depth-6 debate of width 2."""

Record = dict[str, Any]


def trl_advantages(rewards: list[float]) -> np.ndarray:
    """TRL's GRPO advantages of one group, as GRPOTrainer computes them: the rewards as a
    float32 tensor, (r - mean) / (std + 1e-4) with its own (Bessel-corrected) std."""
    torch = pytest.importorskip("torch")
    utils = pytest.importorskip("trl.trainer.utils")
    r = torch.tensor(rewards, dtype=torch.float32)
    adv = (r - r.mean()) / (utils.nanstd(r) + 1e-4)
    return np.asarray(adv.tolist())


def first_estimates(tmp: Path, depth: int, estimator: str) -> list[Record]:
    """The trl-prompt-only rows of B's first estimate p_d (its r_init row) of a run at
    ``depth`` with the honest prover and ``estimator`` for the rest of B."""
    data = tmp / "wide.jsonl"
    data.write_text("".join(json.dumps(divisor_item(n, f"wide-{i}", *prime_top(n))) + "\n"
                            for i, n in enumerate(NUMBERS)), encoding="utf-8")
    cfg = honesty_config(estimator)
    cfg = cfg.model_copy(update={
        "dataset": cfg.dataset.model_copy(update={"path": str(data)}),
        "debate": cfg.debate.model_copy(update={"depth": depth}),
    })
    where = tmp / f"run-{estimator}-{depth}"
    run(cfg, where, progress=False)
    ts = load_transcripts(where)
    assert all(t.status == "complete" for t in ts)
    config = read_run_config(where)
    rows = build(decision_rows(ts, run_info(where, config, 0.0)), "trl-prompt-only", config)
    pd = [r for r in rows if r["speaker"] == "estimator" and r["index"] is None
          and r["term"] == "r_init"]
    assert len(pd) == 2 * len(NUMBERS)  # each item debated twice (true and false answer)
    return pd


def scored(reward: DebateReward, rec: Record) -> list[float]:
    """The rewards of the calibrated answer word and the other one, in that order."""
    return reward([rec["prompt"]] * 2, list(estimate_pair(rec)), state=[rec["state"]] * 2)


@pytest.mark.parametrize("depth", [4, 6])
def test_first_estimates_get_distinct_float32_rewards_and_advantages_of_order_one(
    tmp_path: Path, depth: int
) -> None:
    relative, game = DebateReward(), DebateReward(normalize=False)
    r = scoring.reward_ratio(0.2, 0.5)
    for rec in first_estimates(tmp_path, depth, "calibrated"):
        assert rec["decision_unit"] == pytest.approx(r ** (depth + 1), rel=1e-12)
        got = scored(relative, rec)
        f32 = np.float32(got)
        assert f32[0] != f32[1], (depth, got)
        adv = trl_advantages(got)
        assert np.all(np.abs(adv) >= 0.5), (depth, got, adv)
        # the game's ranking: the calibrated word first, as in the game's own units
        raw = scored(game, rec)
        assert raw[0] > raw[1] and got[0] > got[1] and adv[0] > 0
        # on the debate's one scale the same decision's advantages vanish below 1e-4
        flat = trl_advantages(scored(DebateReward(relative=False), rec))
        assert np.all(np.abs(flat) < 0.05), (depth, flat)


@pytest.mark.parametrize("depth", [4, 6])
def test_centring_keeps_the_difference_beside_a_leaf_term_of_one(
    tmp_path: Path, depth: int
) -> None:
    """With B wrong on the claims starting at 2, the honest prover exposes it at the leaf:
    B's return from p_d holds r_0 = -1 beside the two words' difference of r^(d+1). Divided
    by r^(d+1) without centring, they sit near -1/r^(d+1) (-1.024e8 at d = 4, -1.6e11 at
    d = 6), where float32's spacing is 8 and 16384; centred on the recorded reply first,
    they stay distinct with advantages of order one. (Here the
    consistent lie wins: p_d = False agrees with B's own wrong parts; docs/training.md, "The
    signal teaches honesty".)"""
    relative, game = DebateReward(), DebateReward(normalize=False)
    r = scoring.reward_ratio(0.2, 0.5)
    lost, distinct = 0, 0
    for rec in first_estimates(tmp_path, depth, "blind_to_small_divisors"):
        raw = scored(game, rec)
        if raw[0] == raw[1]:
            continue
        distinct += 1
        assert min(abs(v) for v in raw) > 0.5  # the leaf term is in the return
        divided = np.float32(np.array(raw) / r ** (depth + 1))
        lost += int(divided[0] == divided[1])  # below float32's resolution
        got = scored(relative, rec)
        assert np.float32(got[0]) != np.float32(got[1])
        assert (got[0] > got[1]) == (raw[0] > raw[1])
        assert np.all(np.abs(trl_advantages(got)) >= 0.5)
    assert distinct >= 2
    # divided alone: the prime's words (1 unit apart) are lost at d = 4, every pair at d = 6
    assert lost == distinct if depth == 6 else lost >= 1


# ---------------------------------------------------------------- the map itself, exactly

levels = st.sampled_from(["r_init", "r_6", "r_3", "r_1", "r_0", "after_4", "after_1"])


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.floats(0.01, 0.49), st.floats(0.0, 0.95), st.integers(6, 6), levels,
       st.lists(st.floats(-1.0, 1.0), min_size=2, max_size=8), st.floats(-1.0, 1.0),
       st.floats(0.01, 3.0))
def test_the_decisions_frame_never_changes_its_ranking(
    eps: float, rho: float, depth: int, term: str, returns: list[float], base: float,
    margin: float,
) -> None:
    """Every completion of one decision, valid or invalid, goes through one positive affine
    map (value - baseline) / r^level: monotone in IEEE arithmetic, so no two completions swap,
    and an invalid reply stays below every valid one."""
    r = scoring.reward_ratio(eps, rho)
    scale = scoring.reward_scale(scoring.DISCOUNTED, r, depth)
    frame = scoring.RewardFrame(base * scale, scoring.decision_unit(r, term, depth))
    opts = scoring.RewardOptions(margin=margin)
    values = [v * scale for v in returns]
    got = [scoring.training_reward(v, scale, opts, frame) for v in values]
    for a, ga in zip(values, got, strict=True):
        for b, gb in zip(values, got, strict=True):
            assert (a < b) <= (ga <= gb)
    invalid = scoring.invalid_training_reward(scale, opts, frame)
    assert invalid < min(got)
    assert invalid < frame(-scale)  # below the lowest valid return of the debate
    # off: the debate's one scale, and the game's units
    flat = scoring.RewardOptions(relative=False, margin=margin)
    assert scoring.training_reward(values[0], scale, flat, frame) == values[0] / scale
    assert scoring.invalid_training_reward(scale, flat, frame) == -1.0 - margin
    raw = scoring.RewardOptions(normalize=False, margin=margin)
    assert scoring.training_reward(values[0], scale, raw, frame) == values[0]


def test_a_decisions_level_is_its_first_term() -> None:
    assert scoring.decision_level("r_init", 4) == 5
    assert scoring.decision_level("r_3", 4) == 3
    assert scoring.decision_level("after_3", 4) == 2  # the recursion of round 3 decides r_2..
    assert scoring.decision_level("after_1", 4) == 0
    r = scoring.reward_ratio(0.2, 0.5)
    assert scoring.decision_unit(r, "r_init", 2) == r**3
    with pytest.raises(ValueError, match="no level"):
        scoring.decision_level("payoff", 2)
