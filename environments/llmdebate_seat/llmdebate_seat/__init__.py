"""The ``llmdebate-seat`` verifiers environment: one decision of a debate, scored by the
protocol's decision reward (llmdebate/rl/verifiers_env.py)."""

from llmdebate.rl.verifiers_env import DebateSeatHarness, DebateSeatTaskset

__all__ = ["DebateSeatHarness", "DebateSeatTaskset"]
