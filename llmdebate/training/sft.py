"""Supervised fine-tuning of a LoRA adapter on (prompt, completion) pairs, loss on the
completion only, in shuffled batches drawn from a recorded seed.

The logits are computed only where a completion token is predicted (``logits_to_keep`` with
the positions, the rows left-padded so that every completion ends in the last column): the
embedded Gemma has a 262k-token vocabulary, and its logits over a 400-token decompose prompt
cost more than the rest of the step (measured: 27 s against 10 s per batch of 4 on 2 shared
CPU cores); with right padding, estimator prompts of 55 and 150 tokens in one batch still
had the logits of every position between them computed (32 s against 12 s per batch of 16).
The prompt is tokenized as the local backend tokenizes it, the completion on its own (as a
constrained reply's tokens follow the prompt's).
"""

from __future__ import annotations

import contextlib
import json
import math
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llmdebate.models.prefill import cache_of, with_cache
from llmdebate.training.config import LoraSettings
from llmdebate.training.update import _need, peft_lora

Pair = tuple[str, str]


@dataclass
class SFTSettings:
    lora: LoraSettings
    learning_rate: float = 3e-4
    batch_size: int = 4
    epochs: int = 1
    warmup_steps: int = 5
    max_steps: int | None = None
    eval_every: int = 10
    threads: int | None = None
    device: str = "cpu"
    shared_prefix: bool = True
    init_adapter: Path | None = None
    step_offset: int = 0


@dataclass
class SFTResult:
    adapter: Path
    steps: int
    seconds: float
    log: list[dict[str, Any]] = field(default_factory=list)


@contextlib.contextmanager
def torch_threads(n: int | None) -> Iterator[None]:
    """torch's intra-op threads set to ``n`` for the block (None: unchanged), then restored."""
    torch = _need("torch")
    before = torch.get_num_threads()
    if n is not None:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


class Encoded:
    """A tokenized pair: prompt ids (as the backend encodes the prompt) + completion ids."""

    def __init__(self, tokenizer: Any, pair: Pair) -> None:
        self.prompt = list(tokenizer(pair[0], add_special_tokens=True)["input_ids"])
        self.completion = list(tokenizer(pair[1], add_special_tokens=False)["input_ids"])


def common_prefix(rows: list[Encoded]) -> list[int]:
    """The prompt tokens every row starts with, less one (each row keeps a token of its own)."""
    first = rows[0].prompt
    n = min(len(r.prompt) for r in rows) - 1
    for r in rows[1:]:
        n = next((i for i in range(n) if r.prompt[i] != first[i]), n)
    return first[:n]


def batch_loss(
    model: Any, batch: list[Encoded], pad_id: int, device: str, prefix: list[int] | None = None
) -> tuple[Any, Any]:
    """Mean cross-entropy over the completion tokens of ``batch`` (left-padded) and the share
    of completion tokens the model predicts exactly (argmax).

    ``prefix``: prompt tokens every row starts with (the decompose prompt's instructions and
    examples). Their keys and values are computed once per batch, by the current weights but
    without gradient, and the rows' own tokens run on top of them: the same forward pass
    (the loss is the full pass's), at a fifth of the cost for the decompose prompt, with the
    gradient through the rows' own tokens only."""
    torch = _need("torch")
    skip = len(prefix) if prefix else 0
    rows = [(e.prompt[skip:], e.completion) for e in batch]
    # left-padded: every completion ends in the last column, so the logits are computed for
    # the longest completion's positions only (not from the shortest prompt's end on)
    width = max(len(p) + len(c) for p, c in rows)
    pads = [width - len(p) - len(c) for p, c in rows]
    ids = torch.full((len(batch), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(batch), skip + width), dtype=torch.long)
    mask[:, :skip] = 1
    positions = torch.full((len(batch), width), skip, dtype=torch.long)
    for i, ((p, c), pad) in enumerate(zip(rows, pads, strict=True)):
        ids[i, pad:] = torch.tensor(p + c)
        mask[i, skip + pad :] = 1
        positions[i, pad:] = torch.arange(skip, skip + width - pad)
    longest = max(len(c) for _, c in rows)
    keep = torch.arange(width - 1 - longest, width - 1)
    labels = torch.full((len(batch), longest), -100, dtype=torch.long)
    for i, (_, c) in enumerate(rows):
        labels[i, longest - len(c) :] = torch.tensor(c)
    extra: dict[str, Any] = {"position_ids": positions.to(device)}
    if skip:
        with torch.no_grad():
            cache = cache_of(model(input_ids=torch.tensor([prefix], device=device),
                                   use_cache=True))
        cache.batch_repeat_interleave(len(batch))
        extra.update(with_cache(cache))
    out = model(input_ids=ids.to(device), attention_mask=mask.to(device),
                logits_to_keep=keep.to(device), **extra)
    logits = out.logits.float()
    labels = labels.to(device)
    loss = torch.nn.functional.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), ignore_index=-100
    )
    scored = labels != -100
    accuracy = ((logits.argmax(-1) == labels) & scored).sum() / scored.sum()
    return loss, accuracy


def step_logger(
    path: Path, label: str, *, progress: bool
) -> Callable[[dict[str, Any]], None]:
    """An ``on_log`` for :func:`train_adapter`: each entry appended to ``path`` (JSONL, the
    file started afresh), and the training steps shown on standard error as steps done of
    the total with their rate and loss (:class:`~llmdebate.experiment.progress.Steps`: a bar
    on a terminal, a line per step elsewhere, nothing without ``progress``)."""
    from llmdebate.experiment.progress import Steps

    path.unlink(missing_ok=True)
    shown: list[Steps] = []  # one per round of training, closed at its last step

    def on_log(entry: dict[str, Any]) -> None:
        with path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")
        if "loss" not in entry:
            return
        total = entry.get("steps_total", entry["step"])
        if not shown or shown[-1].done >= shown[-1].total:
            shown.append(Steps(label, total, progress, initial=entry["step"] - 1,
                               elapsed=entry.get("step_s", 0.0), every_s=0.0))
        held = entry.get("held_out_loss")
        note = f"loss {entry['loss']:.4f}" + (
            f", held-out loss {held:.4f}" if held is not None else "")
        shown[-1].update(entry["step"], total=total, note=note)
        if entry["step"] >= total:
            shown[-1].close()

    return on_log


def train_adapter(
    model_dir: Path,
    train: list[Pair],
    held_out: list[Pair],
    settings: SFTSettings,
    out: Path,
    *,
    seed: int,
    on_log: Callable[[dict[str, Any]], None] | None = None,
) -> SFTResult:
    """Train a LoRA adapter on ``train`` and save it (peft's format, float16) in ``out``.

    Batches are drawn without replacement from a ``random.Random(seed)`` shuffle of every
    epoch; every ``eval_every`` steps (and before the first) the loss on ``held_out`` is
    logged beside the training loss."""
    torch, transformers, peft = _need("torch"), _need("transformers"), _need("peft")
    t0 = time.perf_counter()
    with torch_threads(settings.threads):
        torch.manual_seed(seed)
        tok, model = _trainable_model(transformers, peft, torch, model_dir, settings)
        pad_id = tok.pad_token_id if tok.pad_token_id is not None else 0
        rows = [Encoded(tok, p) for p in train]
        evals = [Encoded(tok, p) for p in held_out]
        prefix = common_prefix(rows + evals) if settings.shared_prefix else None
        per_epoch = math.ceil(len(rows) / settings.batch_size)
        total = per_epoch * settings.epochs
        if settings.max_steps is not None:
            total = min(total, settings.max_steps)
        params = [p for p in model.parameters() if p.requires_grad]
        opt = torch.optim.AdamW(params, lr=settings.learning_rate, weight_decay=0.0)

        def held_out_loss() -> dict[str, float]:
            return _held_out_loss(torch, model, evals, settings, pad_id, prefix)

        log: list[dict[str, Any]] = []

        def record(entry: dict[str, Any]) -> None:
            entry["elapsed_s"] = round(time.perf_counter() - t0, 2)
            entry["step"] += settings.step_offset
            log.append(entry)
            if on_log is not None:
                on_log(entry)

        rng = random.Random(seed)
        if evals and not settings.step_offset:
            record({"step": 0, **held_out_loss()})
        model.train()
        step = 0
        for epoch in range(settings.epochs):
            order = list(range(len(rows)))
            rng.shuffle(order)
            for start in range(0, len(order), settings.batch_size):
                if step >= total:
                    break
                t = time.perf_counter()
                batch = [rows[i] for i in order[start : start + settings.batch_size]]
                loss, acc, norm = _train_step(
                    torch, model, opt, params, batch, _learning_rate(settings, step, total),
                    pad_id, settings.device, prefix,
                )
                step += 1
                entry: dict[str, Any] = {
                    "step": step, "epoch": epoch, "loss": loss.detach().item(),
                    "accuracy": float(acc), "grad_norm": float(norm),
                    "lr": _learning_rate(settings, step - 1, total),
                    "step_s": round(time.perf_counter() - t, 2),
                    "steps_total": settings.step_offset + total,
                }
                if evals and (step % settings.eval_every == 0 or step == total):
                    entry.update(held_out_loss())
                record(entry)
        save_adapter(model, out)
    return SFTResult(out, step, time.perf_counter() - t0, log)


def _trainable_model(
    transformers: Any, peft: Any, torch: Any, model_dir: Path, settings: SFTSettings
) -> tuple[Any, Any]:
    """The tokenizer of ``model_dir`` and its model (float32, on the settings' device) with a
    trainable LoRA adapter: a fresh one, or ``init_adapter`` to go on from."""
    tok = transformers.AutoTokenizer.from_pretrained(str(model_dir))
    base = transformers.AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32)
    if settings.init_adapter is not None:  # a further round: go on from its adapter
        model = peft.PeftModel.from_pretrained(base, str(settings.init_adapter),
                                               is_trainable=True).to(settings.device)
    else:
        model = peft.get_peft_model(base, peft_lora(settings.lora)).to(settings.device)
    # the adapter names its base by the weights' folder, not this machine's path
    model.peft_config["default"].base_model_name_or_path = model_dir.name
    return tok, model


def _learning_rate(settings: SFTSettings, step: int, total: int) -> float:
    """The learning rate of step ``step`` (from 0) of ``total``: a linear warm-up over
    ``warmup_steps``, then a linear decay to 0."""
    warm = min(1.0, (step + 1) / max(1, settings.warmup_steps))
    return settings.learning_rate * warm * max(0.0, 1 - step / total)


def _held_out_loss(
    torch: Any,
    model: Any,
    evals: list[Encoded],
    settings: SFTSettings,
    pad_id: int,
    prefix: list[int] | None,
) -> dict[str, float]:
    """The mean loss and accuracy over the batches of ``evals`` (the model in eval mode, no
    gradients; back in training mode afterwards)."""
    model.eval()
    with torch.no_grad():
        parts = [batch_loss(model, evals[i : i + settings.batch_size], pad_id,
                            settings.device, prefix)
                 for i in range(0, len(evals), settings.batch_size)]
    model.train()
    return {"held_out_loss": float(sum(float(p[0]) for p in parts) / len(parts)),
            "held_out_accuracy": float(sum(float(p[1]) for p in parts) / len(parts))}


def _train_step(
    torch: Any,
    model: Any,
    opt: Any,
    params: list[Any],
    batch: list[Encoded],
    lr: float,
    pad_id: int,
    device: str,
    prefix: list[int] | None,
) -> tuple[Any, Any, Any]:
    """One optimiser step on ``batch`` at learning rate ``lr``, the gradient clipped to norm 1;
    the batch's loss, accuracy and gradient norm (before clipping)."""
    for g in opt.param_groups:
        g["lr"] = lr
    loss, acc = batch_loss(model, batch, pad_id, device, prefix)
    opt.zero_grad()
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(params, 1.0)
    opt.step()
    return loss, acc, norm


def save_adapter(model: Any, out: Path) -> None:
    """peft's adapter files, the weights in float16 (half the size; peft loads them into the
    float32 model)."""
    torch, peft = _need("torch"), _need("peft")
    from safetensors.torch import save_file

    out.mkdir(parents=True, exist_ok=True)
    model.peft_config["default"].save_pretrained(str(out))
    # the embeddings are never trained here: no look-up of the base model's vocabulary
    state = peft.get_peft_model_state_dict(model, save_embedding_layers=False)
    save_file({k: v.detach().to("cpu", torch.float16).contiguous() for k, v in state.items()},
              str(out / "adapter_model.safetensors"), metadata={"format": "pt"})
