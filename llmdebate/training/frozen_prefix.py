"""The frozen layers' keys, values and output over a prompt beginning, kept from one decoding
call to the next.

Every A step decodes prompts that begin with the same instructions (the decomposition prompt's
first 370-odd tokens); the layers below the lowest adapted one never change, so their keys and
values over those tokens, and the hidden states they hand to the adapted layers, are the same
at every step. :class:`FrozenPrefix` keeps them for the last beginning decoded; the next call
replays the part it shares with that beginning through stand-ins for the frozen layers (each
writes its kept keys and values into the cache; the last returns the kept states) and runs the
adapted layers, whose adapter has changed, over it as usual.

A replayed position equals a computed one up to the order of the float sums: the kept values
come from a pass over a beginning of another length (``tests/test_text_decode.py`` holds the
decoder's replies and log-probabilities to the plain pass's).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

MIN_REPLAY = 16
"""A shared part shorter than this is computed, not replayed."""


class FrozenPrefix:
    """The frozen layers' keys and values and the states entering layer ``floor`` over the
    last beginning kept (module docstring)."""

    def __init__(self) -> None:
        self.tokens: list[int] = []
        self.keys: list[Any] = []
        self.values: list[Any] = []
        self.states: Any = None

    def match(self, tokens: Sequence[int], floor: int) -> int:
        """How many first tokens of ``tokens`` can be replayed (0: none)."""
        if not self.tokens or len(self.keys) != floor:
            return 0
        n = 0
        for a, b in zip(self.tokens, tokens, strict=False):
            if a != b:
                break
            n += 1
        return n if n >= MIN_REPLAY else 0

    def keep(self, tokens: Sequence[int], cache: Any, states: Any, floor: int) -> None:
        """Keep the first ``floor`` layers of ``cache`` (one row, ``tokens`` long, every
        position still held) and ``states``; nothing where a layer no longer holds them all."""
        layers = getattr(cache, "layers", None)
        if not layers or floor <= 0 or states is None:
            return
        n = len(tokens)
        got = [(layer.keys, layer.values) for layer in layers[:floor]]
        if any(k is None or k.shape[0] != 1 or k.shape[-2] != n for k, _ in got):
            return
        self.tokens = list(tokens)
        self.keys = [k.detach().clone() for k, _ in got]
        self.values = [v.detach().clone() for _, v in got]
        self.states = states.detach().clone()

    @contextlib.contextmanager
    def replaying(self, layers: Any, n: int) -> Iterator[None]:
        """Within the block, the first ``len(self.keys)`` decoder layers of ``layers`` replay
        their first ``n`` kept positions (the block's one forward pass must cover exactly
        those positions)."""
        import torch

        floor = len(self.keys)
        saved = [layers[i] for i in range(floor)]
        prefix = self

        class Replay(torch.nn.Module):
            def __init__(self, i: int) -> None:
                super().__init__()
                self.i = i

            def forward(self, hidden_states: Any, *args: Any, **kwargs: Any) -> Any:
                cache: Any = kwargs.get("cache", kwargs.get("past_key_values"))
                cache.update(prefix.keys[self.i][..., :n, :], prefix.values[self.i][..., :n, :],
                             self.i)
                if self.i == floor - 1:
                    return prefix.states[None, :n].to(hidden_states.dtype)
                return hidden_states

        try:
            for i in range(floor):
                layers[i] = Replay(i)
            yield
        finally:
            for i, layer in enumerate(saved):
                layers[i] = layer
