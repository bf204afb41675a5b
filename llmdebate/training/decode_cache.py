"""Key and value caches for batched decoding that write each step's keys and values in place.

Transformers' ``DynamicCache`` concatenates every layer's cached keys and values with the new
ones at every decoding step: a copy of the whole cache per step, about as many bytes as the
attention itself reads (benchmarks/README.md). :func:`preallocate` replaces the layers of a
fresh ``DynamicCache`` by layers that keep their keys and values in a buffer sized for the
whole reply (``capacity`` positions, grown by doubling if a call needs more) and return views
of it, holding the same positions as the layers they replace:

* a full-attention layer returns every position so far;
* a sliding-window layer returns the last ``sliding_window − 1`` positions before the call and
  the call's own, and keeps the last ``sliding_window − 1`` (as ``DynamicSlidingWindowLayer``
  does, whose masks it reports); the buffer keeps the positions that have left the window,
  unread.

Selecting or repeating batch rows copies the buffer (once per reply that ends, not per step).
Where transformers has no such layers (an older release) or the cache holds other layer types,
:func:`preallocate` changes nothing and says so.
"""

from __future__ import annotations

import functools
from typing import Any


def preallocate(cache: Any, capacity: int) -> bool:
    """Replace the layers of the empty ``DynamicCache`` ``cache`` by in-place layers with room
    for ``capacity`` positions; False (and nothing changed) where its layers are not
    transformers' dynamic and sliding-window layers."""
    layers = getattr(cache, "layers", None)
    if not layers:
        return False
    try:
        from transformers.cache_utils import DynamicLayer, DynamicSlidingWindowLayer
    except ImportError:  # an older transformers: a cache without layer objects
        return False
    full, sliding = _classes(DynamicLayer, DynamicSlidingWindowLayer)
    new: list[Any] = []
    for layer in layers:
        if type(layer) is DynamicLayer:
            new.append(full(capacity))
        elif type(layer) is DynamicSlidingWindowLayer and not layer.record_past:
            new.append(sliding(capacity, layer.sliding_window))
        else:
            return False
    layers[:] = new
    return True


class _Buffer:
    """Keys and values of ``rows`` × heads × ``capacity`` × head size; ``n`` positions held."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.kb: Any = None
        self.vb: Any = None
        self.n = 0

    def write(self, k: Any, v: Any) -> None:
        """Append the positions of ``k`` and ``v`` (rows × heads × positions × size)."""
        import torch

        need = self.n + k.shape[-2]
        if self.kb is None or need > self.kb.shape[-2]:
            room = max(need, self.capacity if self.kb is None else 2 * self.kb.shape[-2])
            kb = k.new_empty((*k.shape[:2], room, k.shape[-1]))
            vb = v.new_empty((*v.shape[:2], room, v.shape[-1]))
            if self.kb is not None:
                kb[:, :, : self.n].copy_(self.kb[:, :, : self.n])
                vb[:, :, : self.n].copy_(self.vb[:, :, : self.n])
            self.kb, self.vb = kb, vb
        with torch.no_grad():
            self.kb[:, :, self.n : need].copy_(k)
            self.vb[:, :, self.n : need].copy_(v)
        self.n = need

    def span(self, start: int, end: int) -> tuple[Any, Any]:
        return self.kb[:, :, start:end], self.vb[:, :, start:end]

    def rows(self, pick: Any) -> None:
        """Keep the batch rows ``pick`` (a callable on a tensor: an index or a repeat)."""
        if self.kb is not None:
            self.kb, self.vb = pick(self.kb), pick(self.vb)


@functools.cache
def _classes(dynamic: Any, sliding_window: Any) -> tuple[Any, Any]:
    """The in-place subclasses of transformers' two dynamic layer types."""

    class InPlaceLayer(dynamic):  # type: ignore[misc]
        """A full-attention layer over a :class:`_Buffer` (module docstring)."""

        def __init__(self, capacity: int) -> None:
            super().__init__()
            self.buffer = _Buffer(capacity)

        def update(self, key_states: Any, value_states: Any, *args: Any,
                   **kwargs: Any) -> tuple[Any, Any]:
            if not self.is_initialized:
                self.lazy_initialization(key_states, value_states)
            self.buffer.write(key_states, value_states)
            self.keys, self.values = self.buffer.span(0, self.buffer.n)
            return self.keys, self.values

        def _rows(self, pick: Any) -> None:
            self.buffer.rows(pick)
            if self.buffer.n:
                self.keys, self.values = self.buffer.span(0, self.buffer.n)

        def batch_repeat_interleave(self, repeats: int) -> None:
            self._rows(lambda t: t.repeat_interleave(repeats, dim=0))

        def batch_select_indices(self, indices: Any) -> None:
            self._rows(lambda t: t[indices, ...])

    class InPlaceSlidingLayer(sliding_window):  # type: ignore[misc]
        """A sliding-window layer over a :class:`_Buffer` (module docstring)."""

        def __init__(self, capacity: int, window: int) -> None:
            super().__init__(sliding_window=window)
            self.buffer = _Buffer(capacity)

        def update(self, key_states: Any, value_states: Any, *args: Any,
                   **kwargs: Any) -> tuple[Any, Any]:
            if not self.is_initialized:
                self.lazy_initialization(key_states, value_states)
            before = self.buffer.n
            self.buffer.write(key_states, value_states)
            self.cumulative_length += key_states.shape[-2]
            end, keep = self.buffer.n, self.sliding_window - 1
            self.keys, self.values = self.buffer.span(max(0, end - keep), end)
            return self.buffer.span(max(0, before - keep), end)

        def _rows(self, pick: Any) -> None:
            self.buffer.rows(pick)
            if self.buffer.n:
                end = self.buffer.n
                self.keys, self.values = self.buffer.span(max(0, end - self.sliding_window + 1),
                                                          end)

        def batch_repeat_interleave(self, repeats: int) -> None:
            self._rows(lambda t: t.repeat_interleave(repeats, dim=0))

        def batch_select_indices(self, indices: Any) -> None:
            self._rows(lambda t: t[indices, ...])

    return InPlaceLayer, InPlaceSlidingLayer
