"""The frozen weights of a seat model in a chosen precision, and its output projection as the
decoder and the policy gradient use it.

Decoding a reply on a CPU is bound by reading the weights: every decoding step reads every
decoder layer's projections and the output projection (on Gemma 3 270M the 262,144 × 640
output projection alone is 671 MB in float32, the decoder layers about 400 MB). Halving the
bytes of the frozen weights halves that traffic:

* ``float32``: the weights as loaded (the reference);
* ``bfloat16``: every frozen linear projection of the decoder layers (the LoRA adapters'
  ``base_layer`` included) and the output projection kept in bfloat16, their inputs cast to
  bfloat16 and their outputs back to float32; norms, embeddings, attention arithmetic and the
  adapters stay in float32. On processors with AMX or AVX-512 BF16 the products run in
  bfloat16 at about twice float32's speed in decoding and many times it in prompt processing;
* ``int8``: as ``bfloat16``, and the output projection's decoding product in int8 (PyTorch's
  dynamically quantised linear layer, weights quantised per output row), about a quarter of
  float32's bytes. The policy gradient's log-probabilities use the bfloat16 projection.

On the CPU the decoder reads oneDNN's reordered copies of the frozen projections and of the
output projection (:class:`Packed`, made once, in the weights' own dtype): for the few rows of
a decoding step, PyTorch's plain product re-packs the whole weight matrix at every call, and
a 262,144-row projection then costs about three times its read (benchmarks/README.md). The
products are the same up to the order of their sums (a difference of about 1e-4 in a logit in
float32); the policy gradient uses the weights as they are.

The effect on the log-probabilities is measured, not assumed:
``benchmarks/bench_text_decode.py`` reports the largest difference from float32's on the same
replies (benchmarks/README.md).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from typing import Any, Literal

Precision = Literal["float32", "bfloat16", "int8"]
PRECISIONS: tuple[Precision, ...] = ("float32", "bfloat16", "int8")


def base_of(model: Any) -> Any:
    """The causal language model under a PEFT wrapper (or the model itself)."""
    return model.get_base_model() if hasattr(model, "get_base_model") else model


def decoder_of(model: Any) -> Any:
    """The decoder stack (embeddings, layers, final norm) of a causal language model: what
    runs before its output projection."""
    base = base_of(model)
    inner = getattr(base, "model", None)
    if inner is None or not hasattr(inner, "layers"):
        raise ValueError(f"{type(base).__name__}: no decoder at .model with .layers")
    return inner


@functools.cache
def _low_linear(torch: Any, dtype: Any) -> Any:
    class LowPrecisionLinear(torch.nn.Module):  # type: ignore[misc]
        """A frozen linear projection whose weights are kept in ``dtype``."""

        def __init__(self, lin: Any) -> None:
            super().__init__()
            self.in_features, self.out_features = lin.in_features, lin.out_features
            self.weight = torch.nn.Parameter(lin.weight.detach().to(dtype),
                                             requires_grad=False)
            self.bias = (None if lin.bias is None else
                         torch.nn.Parameter(lin.bias.detach().to(dtype), requires_grad=False))

        def forward(self, x: Any) -> Any:
            out = torch.nn.functional.linear(x.to(self.weight.dtype), self.weight, self.bias)
            return out.to(x.dtype)

    return LowPrecisionLinear


def lower_frozen(model: Any, precision: Precision) -> int:
    """Keep the frozen linear projections of ``model``'s decoder layers in ``precision``'s
    dtype (in place); the number of projections changed. ``float32``: none."""
    if precision == "float32":
        return 0
    import torch

    cls = _low_linear(torch, torch.bfloat16)
    layers = decoder_of(model).layers
    changed = 0
    for layer in layers:
        for name, module in list(layer.named_modules()):
            if "lora_" in name:  # the adapters stay in float32, trained or not
                continue
            parent, _, attr = name.rpartition(".")
            owner = layer.get_submodule(parent) if parent else layer
            if hasattr(module, "base_layer") and isinstance(module.base_layer, torch.nn.Linear):
                module.base_layer = cls(module.base_layer)
                changed += 1
            elif type(module) is torch.nn.Linear and not hasattr(owner, "base_layer"):
                setattr(owner, attr, cls(module))
                changed += 1
    return changed


class Head:
    """The output projection of ``model`` (its tied or own ``lm_head``) in ``precision``:
    :meth:`logits` for decoding (no gradient) and :attr:`weight` for the policy gradient.
    Gemma 2's final soft-capping, where the model has one, is applied as the model does."""

    def __init__(self, model: Any, precision: Precision, packed: bool = True) -> None:
        import torch

        base = base_of(model)
        self.model = model
        w = base.get_output_embeddings().weight.detach()
        self.precision = precision
        self.vocab = int(w.shape[0])
        cap = getattr(base.config, "final_logit_softcapping", None)
        self.softcap: float | None = float(cap) if cap else None
        self.weight = w if precision == "float32" else w.to(torch.bfloat16)
        self._int8: Any = None
        if precision == "int8":
            self._int8 = _quantised(torch, w)
        self.packed = Packed(torch) if packed else None

    def raw(self, h: Any, rows: Any = None, *, decoding: bool = True) -> Any:
        """Float32 logits of hidden states ``h`` (n × hidden) over the whole vocabulary, or
        over the token ids ``rows`` (then ``h`` is one hidden state), before soft-capping;
        ``decoding=False``: never the int8 product (the policy gradient's)."""
        if rows is not None:
            return (self.weight[rows] @ h.to(self.weight.dtype)).float()
        if decoding and self._int8 is not None:
            return self._int8(h.float()).float()
        if self.packed is not None and not h.requires_grad:
            got = self.packed.linear(self.weight, None, h.to(self.weight.dtype))
            if got is not None:
                return got.float()
        return (h.to(self.weight.dtype) @ self.weight.T).float()

    @contextlib.contextmanager
    def decoding(self) -> Iterator[None]:
        """The block's forward passes of the model's frozen projections through
        :class:`Packed` copies (none without packing)."""
        if self.packed is None:
            yield
            return
        with self.packed.frozen_projections(self.model):
            yield

    def cap(self, z: Any) -> Any:
        if self.softcap is None:
            return z
        return self.softcap * (z / self.softcap).tanh()

    def logits(self, h: Any, rows: Any = None) -> Any:
        return self.cap(self.raw(h, rows))


def _quantised(torch: Any, w: Any) -> Any:
    """A dynamically quantised int8 linear layer (per-row weight scales) holding ``w``."""
    import warnings

    lin = torch.nn.Linear(w.shape[1], w.shape[0], bias=False)
    lin.weight.data = w.float().clone()
    with warnings.catch_warnings():  # torch.ao's notices of its own future move
        warnings.simplefilter("ignore")
        from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

        q = quantize_dynamic(torch.nn.Sequential(lin),  # type: ignore[no-untyped-call]
                             {torch.nn.Linear: per_channel_dynamic_qconfig}, dtype=torch.qint8)
    return q


class Packed:
    """oneDNN's reordered copies of frozen weights for products without gradient on the CPU
    (module docstring), each made on first use and again if its weight changes in place;
    :meth:`linear` returns None where the copy cannot be made (another device or dtype, or a
    PyTorch without oneDNN), and the caller computes the plain product."""

    HINT = 8
    """The rows of a decoding step the copies are laid out for (any number of rows works)."""

    def __init__(self, torch: Any) -> None:
        self.torch = torch
        self.copies: dict[int, tuple[int, Any]] = {}
        self.ok = bool(torch.backends.mkldnn.is_available()) and hasattr(
            torch.ops.mkldnn, "_reorder_linear_weight")

    def _copy(self, w: Any) -> Any:
        if not self.ok or w.device.type != "cpu" or w.dtype not in (
                self.torch.float32, self.torch.bfloat16) or w.dim() != 2:
            return None
        key = id(w)
        got = self.copies.get(key)
        if got is not None and got[0] == w._version:
            return got[1]
        with self.torch.no_grad():
            copy = self.torch.ops.mkldnn._reorder_linear_weight(w.detach(), self.HINT)
        self.copies[key] = (w._version, copy)
        return copy

    def linear(self, w: Any, bias: Any, x: Any) -> Any:
        """x @ w.T (+ bias) through ``w``'s copy, x of ``w``'s dtype (None: no copy)."""
        copy = self._copy(w)
        if copy is None or x.dtype != w.dtype or x.device.type != "cpu":
            return None
        flat = x.reshape(-1, x.shape[-1])
        if not flat.is_contiguous():
            flat = flat.contiguous()
        y = self.torch.ops.mkldnn._linear_pointwise(flat, copy, bias, "none", [], "")
        return y.reshape(*x.shape[:-1], y.shape[-1])

    def _forward(self, module: Any) -> Any:
        plain = type(module).forward

        def forward(x: Any, *args: Any, **kwargs: Any) -> Any:
            if not (args or kwargs or self.torch.is_grad_enabled()):
                w = module.weight
                y = self.linear(w, module.bias, x.to(w.dtype))
                if y is not None:
                    return y.to(x.dtype)
            return plain(module, x, *args, **kwargs)

        return forward

    @contextlib.contextmanager
    def frozen_projections(self, model: Any) -> Iterator[None]:
        """Within the block, every frozen projection of ``model``'s decoder layers (the
        adapters' base layers included, the adapters themselves not) runs through its copy
        where no gradient is taken."""
        torch = self.torch
        low = _low_linear(torch, torch.bfloat16)
        swapped = []
        for layer in decoder_of(model).layers:
            for name, module in layer.named_modules():
                if "lora_" in name or not isinstance(module, (torch.nn.Linear, low)):
                    continue
                if getattr(module.weight, "requires_grad", False):
                    continue
                module.forward = self._forward(module)
                swapped.append(module)
        try:
            yield
        finally:
            for module in swapped:
                del module.forward
