"""Online RL with debates: reward functions for TRL, verl and OpenRLHF, and fork and replay."""

from llmdebate.rl.replay import Injection, fork, spec_of, team_for
from llmdebate.rl.rewards import AsyncDebateReward, DebateReward, compute_score, reward_func

__all__ = [
    "AsyncDebateReward",
    "DebateReward",
    "Injection",
    "compute_score",
    "fork",
    "reward_func",
    "spec_of",
    "team_for",
]
