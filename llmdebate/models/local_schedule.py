"""Which batch a local model's worker runs next: short calls first, generations together.

A decoding step of a small model on a CPU costs about the same for one row as for six (it
reads every weight once), so a generation pass should carry the generations of as many
debates as possible. Debates drift apart: one gets its decomposition a step earlier than the
others, asks for its probabilities, and would start its next generation alone while the
others still wait for theirs. The local workers therefore run short calls (one-token
probabilities) at once and hold a batch of generations while any local model of the process
still has short calls queued or running: those calls' debates are about to ask for their
generations too. The hold ends when no short call is left, or after ``hold_s``.
"""

from __future__ import annotations

import threading

from llmdebate.models.interface import GenerateConfig

SHORT_TOKENS = 1
"""A call with at most this many new tokens is short: one forward pass, no decoding loop."""


def is_short(config: GenerateConfig) -> bool:
    return config.max_tokens <= SHORT_TOKENS


class ShortWork:
    """How many short calls are queued or running at the local models of this process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._count = 0

    def add(self, n: int) -> None:
        with self._lock:
            self._count += n

    def idle(self) -> bool:
        with self._lock:
            return self._count <= 0


SHORT_WORK = ShortWork()
