"""A batch whose callers have all gone stops between two layers of a forward pass (a long
prompt's first pass takes tens of seconds on a loaded machine; Ctrl-C does not wait for it),
and only the pass of the thread that set the stop."""

from __future__ import annotations

import threading
from typing import Any

import pytest
import torch

from llmdebate.models.hf_backend import EveryoneGone, stops_between_layers


class Decoder(torch.nn.Module):
    def __init__(self, n: int) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Linear(4, 4) for _ in range(n))
        self.ran: list[int] = []

    def forward(self, x: Any) -> Any:
        for i, layer in enumerate(self.layers):
            x = layer(x)
            self.ran.append(i)
        return x


class CausalLM(torch.nn.Module):
    """transformers' shape: the layers under ``get_decoder().layers``."""

    def __init__(self, n: int = 6) -> None:
        super().__init__()
        self.model = Decoder(n)

    def get_decoder(self) -> Decoder:
        return self.model

    def forward(self, x: Any) -> Any:
        return self.model(x)


def test_a_pass_stops_before_the_layer_after_everyone_has_gone() -> None:
    m = CausalLM(6)
    asked = 0

    def stop() -> bool:
        nonlocal asked
        asked += 1
        return asked > 3  # the callers leave while the third layer runs

    with stops_between_layers(m, stop), pytest.raises(EveryoneGone):
        m(torch.zeros(1, 4))
    assert m.model.ran == [0, 1, 2]
    m.model.ran.clear()
    m(torch.zeros(1, 4))  # the hooks are gone with the block
    assert m.model.ran == list(range(6))


def test_no_stop_and_other_threads_run_every_layer() -> None:
    m = CausalLM(4)
    with stops_between_layers(m, None):
        m(torch.zeros(1, 4))
    assert m.model.ran == list(range(4))
    m.model.ran.clear()
    with stops_between_layers(m, lambda: True):
        other = threading.Thread(target=m, args=(torch.zeros(1, 4),))
        other.start()
        other.join()
        assert m.model.ran == list(range(4))  # another thread's pass through the weights
        with pytest.raises(EveryoneGone):
            m(torch.zeros(1, 4))
    assert m.model.ran == list(range(4))


def test_a_model_without_decoder_layers_stops_before_its_pass() -> None:
    m = Decoder(3)
    with stops_between_layers(m, lambda: True), pytest.raises(EveryoneGone):
        m(torch.zeros(1, 4))
    assert m.ran == []
