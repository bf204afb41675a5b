"""One copy of a local model's weights with LoRA adapters switched per call.

Every local backend on the same model folder (the roles of a run: a prover with its adapter,
an estimator with another, a judge on the base model) uses one :class:`SharedWeights`: the
weights are loaded once, and each adapter is kept beside them unmerged, as its two low-rank
matrices per target layer. A forward hook on each target layer adds ``scale * B(A(x))`` of
the adapter that is *active on the calling thread* (:meth:`SharedWeights.active`), or nothing
when none is: the local workers (one thread per backend) run their passes at the same time,
each with its own adapter, and no switch is seen by another thread. A batch runs under one
adapter (the workers group their requests by adapter), so every row gets its own.

This is peft's unmerged LoRA forward (``result + lora_B(lora_A(dropout(x))) * scaling``, with
no dropout at inference); it differs from the merged weights ``W + scale * B A`` the backends
loaded before only by float rounding (the sums are taken in another order). Adapters of
another form than a plain LoRA on linear layers (DoRA, biases, extra trained modules, ...) are
not shared: :func:`plain_lora` says why, and the backend loads a merged copy for them.
"""

from __future__ import annotations

import contextlib
import json
import math
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from llmdebate.errors import require

PREFIX = "base_model.model."
"""The prefix of every tensor name in an adapter file written by peft's ``save_pretrained``."""

_UNSUPPORTED = {
    "use_dora": "DoRA",
    "fan_in_fan_out": "fan_in_fan_out",
    "modules_to_save": "modules_to_save",
    "lora_bias": "lora_bias",
    "target_parameters": "target_parameters",
    "trainable_token_indices": "trainable_token_indices",
    "layer_replication": "layer_replication",
    "alpha_pattern": "alpha_pattern",
    "alora_invocation_tokens": "aLoRA",
}


def plain_lora(config: dict[str, Any]) -> str | None:
    """None if the adapter config is a plain LoRA this module applies, else why not."""
    if config.get("peft_type", "LORA") != "LORA":
        return f"peft_type {config.get('peft_type')}"
    for key, what in _UNSUPPORTED.items():
        if config.get(key):
            return what
    if config.get("bias", "none") != "none":
        return f"bias {config.get('bias')}"
    return None


class SharedWeights:
    """A model and tokenizer loaded once, with adapters added beside them by name."""

    def __init__(self, model: Any, tokenizer: Any, device: str) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.device = device
        self._local = threading.local()
        self._lock = threading.Lock()
        self._users: dict[str, int] = {}
        """Adapter name -> how many backends use it (it is dropped at 0)."""
        self._layers: dict[str, dict[str, tuple[Any, Any, float]]] = {}
        """Target layer path -> adapter name -> (A, B, scale)."""
        self._hooks: dict[str, Any] = {}

    @property
    def adapters(self) -> list[str]:
        """The names of the adapters held now."""
        return sorted(self._users)

    def current(self) -> str | None:
        """The adapter active on the calling thread (None: the base model)."""
        return getattr(self._local, "name", None)

    @contextlib.contextmanager
    def active(self, name: str | None) -> Iterator[None]:
        """Forward passes on this thread run with adapter ``name`` (None: the base model)."""
        if name is not None and name not in self._users:
            raise KeyError(f"adapter {name!r} is not loaded (loaded: {self.adapters})")
        before = self.current()
        self._local.name = name
        try:
            yield
        finally:
            self._local.name = before

    def add(self, name: str, folder: Path) -> str | None:
        """Hold the adapter in ``folder`` under ``name`` (once; later calls count a user).
        Returns None, or why the adapter cannot be shared (then nothing is added)."""
        with self._lock:
            if name in self._users:
                self._users[name] += 1
                return None
            config = json.loads((folder / "adapter_config.json").read_text())
            why = plain_lora(config)
            if why is not None:
                return why
            pairs, why = self._read(folder, config)
            if why is not None:
                return why
            for path, entry in pairs.items():
                self._layers.setdefault(path, {})[name] = entry
                if path not in self._hooks:
                    layer = self.model.get_submodule(path)
                    self._hooks[path] = layer.register_forward_hook(self._hook(path))
            self._users[name] = 1
            return None

    def drop(self, name: str) -> None:
        """One user fewer of adapter ``name``; at none its matrices (and idle hooks) go."""
        with self._lock:
            left = self._users.get(name, 0) - 1
            if left > 0:
                self._users[name] = left
                return
            self._users.pop(name, None)
            for path in list(self._layers):
                self._layers[path].pop(name, None)
                if not self._layers[path]:
                    del self._layers[path]
                    self._hooks.pop(path).remove()

    def _read(
        self, folder: Path, config: dict[str, Any]
    ) -> tuple[dict[str, tuple[Any, Any, float]], str | None]:
        """(layer path -> (A, B, scale)) of the adapter's files, or why they do not fit."""
        torch: Any = require("torch", "local")
        files = sorted(folder.glob("adapter_model.safetensors"))
        if files:
            from safetensors.torch import load_file

            tensors = load_file(str(files[0]))
        elif (folder / "adapter_model.bin").is_file():
            tensors = torch.load(str(folder / "adapter_model.bin"), map_location="cpu")
        else:
            return {}, "no adapter_model.safetensors or adapter_model.bin"
        alpha = float(config.get("lora_alpha", 8))
        rslora = bool(config.get("use_rslora"))
        pairs: dict[str, tuple[Any, Any, float]] = {}
        for key, a in tensors.items():
            if not key.endswith(".lora_A.weight"):
                if ".lora_" not in key:
                    return {}, f"a tensor other than LoRA's: {key}"
                continue
            path = key[: -len(".lora_A.weight")].removeprefix(PREFIX)
            b = tensors.get(key.replace(".lora_A.", ".lora_B."))
            try:
                layer = self.model.get_submodule(path)
            except AttributeError:
                return {}, f"no layer {path} in the model"
            if b is None or not isinstance(layer, torch.nn.Linear):
                return {}, f"{path} is not a LoRA pair on a linear layer"
            rank = int(a.shape[0])
            scale = alpha / math.sqrt(rank) if rslora else alpha / rank
            dtype = layer.weight.dtype
            pairs[path] = (a.to(self.device, dtype), b.to(self.device, dtype), scale)
        if not pairs:
            return {}, "no LoRA matrices"
        return pairs, None

    def _hook(self, path: str) -> Any:
        layers, local = self._layers, self._local
        torch: Any = require("torch", "local")
        F = torch.nn.functional

        def add_adapter(module: Any, args: tuple[Any, ...], result: Any) -> Any:
            name = getattr(local, "name", None)
            if name is None:
                return None
            entry = layers.get(path, {}).get(name)
            if entry is None:
                return None
            a, b, scale = entry
            return result + F.linear(F.linear(args[0], a), b) * scale

        return add_adapter
