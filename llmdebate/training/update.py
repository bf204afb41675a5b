"""One update of one role: a few steps of a TRL trainer on its rows, saved as a checkpoint
that the local backend loads back (``hf/<checkpoint dir>``) for the next debates.

LoRA adapters are merged into the saved weights, so a checkpoint is an ordinary model folder
(config, safetensors, tokenizer): the next iteration's debates load it like any model, and
the next update starts from it with fresh adapters.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import random
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llmdebate.errors import MissingExtraError, UserError
from llmdebate.training.config import LoraSettings, UpdateSettings
from llmdebate.training.generation import (
    GroupRewards,
    completion_cap,
    stop_token_ids,
    trained_acts,
    verbalised,
)


def _need(module: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtraError(module.split(".")[0], "train") from exc


def model_dir(model: str, cache_dir: str | None = None) -> Path:
    """The folder of a model string's weights (``local``: the dequantised embedded model)."""
    if model.startswith("hf/") and not model.endswith(".gguf"):
        path = Path(model[3:]).expanduser()
        if not (path / "config.json").exists():
            raise UserError(f"{model}: no model folder (config.json) at {path}")
        return path
    if model == "local" or (model.startswith("hf/") and model.endswith(".gguf")):
        from llmdebate.models.get_model import create_backend

        backend: Any = create_backend(model, cache_dir=Path(cache_dir) if cache_dir else None)
        if not (backend.weights_dir / "config.json").exists():
            backend.load()
        return Path(backend.weights_dir)
    raise UserError(
        f"{model}: training needs local weights (local or hf/<model folder>), not a hosted model"
    )


def draw_rows(rows: list[dict[str, Any]], n: int, seed: int) -> list[dict[str, Any]]:
    """``n`` rows drawn across decisions: grouped by (act, round), each group shuffled by
    ``random.Random(seed)``, then taken in turn from the groups (in a shuffled order), so a
    small update sees every kind of decision rather than the first rows of one debate."""
    rng = random.Random(seed)
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((str(r.get("act")), str(r.get("round_k"))), []).append(r)
    queues = [groups[k] for k in sorted(groups)]
    for q in queues:
        rng.shuffle(q)
    rng.shuffle(queues)
    out: list[dict[str, Any]] = []
    while len(out) < n and any(queues):
        for q in queues:
            if q and len(out) < n:
                out.append(q.pop())
    return out


def merged_adapter(start: Path, adapter: str, out: Path) -> Path:
    """``start``'s weights with a LoRA adapter (the local backend's ``adapter`` option) merged
    in, saved once in ``out``: the first update of a role that played with an adapter starts
    from the model it played with."""
    if (out / "config.json").exists():
        return out
    from llmdebate.models.hf_backend import adapter_path

    torch, transformers, peft = _need("torch"), _need("transformers"), _need("peft")
    model = transformers.AutoModelForCausalLM.from_pretrained(str(start), dtype=torch.float32)
    merged = peft.PeftModel.from_pretrained(model, str(adapter_path(adapter))).merge_and_unload()
    merged.save_pretrained(str(out))
    transformers.AutoTokenizer.from_pretrained(str(start)).save_pretrained(str(out))
    return out


@dataclass
class UpdateResult:
    role: str
    checkpoint: Path
    rows: int
    steps: int = 0
    loss: float | None = None
    seconds: float = 0.0
    skipped: str | None = None
    log: list[dict[str, Any]] = field(default_factory=list)
    data_seed: int | None = None


def _device(device: str) -> str:
    if device != "auto":
        return device
    torch = _need("torch")
    return "cuda" if torch.cuda.is_available() else "cpu"


def _lora(settings: UpdateSettings) -> Any:
    if settings.lora is None:
        return None
    return peft_lora(settings.lora)


def peft_lora(lo: LoraSettings) -> Any:
    """peft's ``LoraConfig`` of ``lo``."""
    peft = _need("peft")
    return peft.LoraConfig(
        task_type="CAUSAL_LM",
        r=lo.r,
        lora_alpha=lo.alpha,
        lora_dropout=lo.dropout,
        target_modules=list(lo.target_modules),
        layers_to_transform=list(lo.layers) if lo.layers is not None else None,
    )


@contextlib.contextmanager
def cheap_tokenizer_hash(tokenizer: Any) -> Iterator[None]:
    """While TRL prepares a dataset, let ``datasets`` fingerprint the tokenizer by its name and
    size instead of pickling it whole (seconds per map call for a 262k-token vocabulary; the
    rows live in memory, so the fingerprint caches nothing)."""
    try:
        from datasets.utils import _dill
    except ImportError:  # pragma: no cover - another datasets layout: hash as usual
        yield
        return
    kind = type(tokenizer)
    before = _dill.Pickler.dispatch.get(kind)
    tag = f"{kind.__name__}:{getattr(tokenizer, 'name_or_path', '')}:{len(tokenizer)}"

    def save(pickler: Any, obj: Any) -> None:
        pickler.save_reduce(str, (tag,), obj=obj)

    _dill.Pickler.dispatch[kind] = save
    try:
        yield
    finally:
        if before is None:
            _dill.Pickler.dispatch.pop(kind, None)
        else:
            _dill.Pickler.dispatch[kind] = before


def update_role(
    role: str,
    start: Path,
    records: list[dict[str, Any]],
    out: Path,
    settings: UpdateSettings,
    *,
    device: str = "auto",
    seed: int = 0,
    reward: Any = None,
) -> UpdateResult:
    """Train ``start`` on ``records`` (trl-unpaired rows; trl-prompt-only rows for grpo) and
    save the result in ``out``."""
    t0 = time.perf_counter()
    rows = _training_rows(records, settings, seed)
    if len(rows) < 2:
        return UpdateResult(role, start, len(rows), skipped=f"{len(rows)} rows to train on")
    torch = _need("torch")
    transformers = _need("transformers")
    trl = _need("trl")
    datasets = _need("datasets")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    dev = _device(device)
    torch.manual_seed(seed)
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(start))
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = transformers.AutoModelForCausalLM.from_pretrained(str(start), dtype=torch.float32)
    eos = model.generation_config.eos_token_id
    keep = {"kto": ["prompt", "completion", "label"], "sft": ["prompt", "completion"],
            "grpo": ["prompt", "state"]}[settings.method]
    if settings.method == "grpo" and settings.logprobs_as == "verbalised":
        # the completion states the probability the reward reads, not a True/False word
        rows = [{**r, "prompt": verbalised(r["prompt"])} for r in rows]
    data = datasets.Dataset.from_list([{k: r[k] for k in keep} for r in rows])
    common = _trainer_args(role, settings, dev, seed)
    with cheap_tokenizer_hash(tokenizer):
        args, trainer, groups = _trainer(trl, model, tokenizer, data, settings, common, reward)
    trainer.train()
    history = [dict(h) for h in trainer.state.log_history]
    if settings.method == "grpo" and groups is not None:
        history.append(groups.summary())
    losses = [h["loss"] for h in history if "loss" in h]
    trained = trainer.model
    if settings.lora is not None:
        trained = trained.merge_and_unload()
    trained.generation_config.eos_token_id = eos  # the saved model stops as it did
    _save_checkpoint(trained.to("cpu"), tokenizer, out)
    shutil.rmtree(args.output_dir, ignore_errors=True)
    return UpdateResult(
        role,
        out,
        len(rows),
        steps=int(trainer.state.global_step),
        loss=float(losses[-1]) if losses else None,
        seconds=time.perf_counter() - t0,
        log=history,
        data_seed=seed,
    )


def _training_rows(
    records: list[dict[str, Any]], settings: UpdateSettings, seed: int
) -> list[dict[str, Any]]:
    """The rows an update trains on: those of the settings' acts (sft: the positive ones),
    at most ``max_rows`` (grpo: a batch per step by default) drawn across decisions."""
    rows = [r for r in records if settings.acts is None or r.get("act") in settings.acts]
    if settings.method == "sft":
        rows = [r for r in rows if r["label"]]
    limit = settings.max_rows
    if settings.method == "grpo" and limit is None:
        limit = settings.batch_size * settings.max_steps
    return draw_rows(rows, min(limit, len(rows)) if limit else len(rows), seed)


def _trainer_args(role: str, settings: UpdateSettings, dev: str, seed: int) -> dict[str, Any]:
    """The TRL config arguments every method shares (a scratch output folder, no saving or
    reporting, full precision, seeded)."""
    return dict(
        output_dir=tempfile.mkdtemp(prefix=f"llmdebate-{role}-"),
        max_steps=settings.max_steps,
        per_device_train_batch_size=settings.batch_size,
        learning_rate=settings.learning_rate,
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        use_cpu=dev == "cpu",
        bf16=False,
        fp16=False,
        seed=seed,
        data_seed=seed,
        activation_checkpointing=False,
        disable_tqdm=True,
        dataloader_num_workers=0,
    )


def _trainer(
    trl: Any, model: Any, tokenizer: Any, data: Any, settings: UpdateSettings,
    common: dict[str, Any], reward: Any,
) -> tuple[Any, Any, GroupRewards | None]:
    """The TRL trainer of the settings' method (grpo, kto or sft) on ``data``: its config, the
    trainer, and (grpo) the rewards of each prompt's group."""
    if settings.method == "grpo":
        return grpo_trainer(trl, model, tokenizer, data, settings, common, reward)
    if settings.method == "kto":
        args = trl.KTOConfig(**common, max_length=settings.max_length, beta=settings.beta)
        trainer = trl.KTOTrainer(
            model=model, args=args, train_dataset=data, processing_class=tokenizer,
            peft_config=_lora(settings),
        )
    else:
        args = trl.SFTConfig(**common, max_length=settings.max_length)
        trainer = trl.SFTTrainer(
            model=model, args=args, train_dataset=data, processing_class=tokenizer,
            peft_config=_lora(settings),
        )
    return args, trainer, None


def _save_checkpoint(trained: Any, tokenizer: Any, out: Path) -> None:
    """Save ``trained`` and its tokenizer as a model folder in ``out``: written beside it
    first, then moved over whatever ``out`` held."""
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    trained.save_pretrained(str(tmp))
    tokenizer.save_pretrained(str(tmp))
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)


def grpo_trainer(
    trl: Any, model: Any, tokenizer: Any, data: Any, settings: UpdateSettings,
    common: dict[str, Any], reward: Any = None,
) -> tuple[Any, Any, GroupRewards | None]:
    """TRL's GRPOTrainer on trl-prompt-only rows (``prompt``, ``state``), rewarded by
    :class:`llmdebate.rl.DebateReward` (or ``reward``): every sampled completion is played
    into the rest of its debate by the frozen models of the run the row came from.

    ``batch_size`` counts completions per step; it is rounded up to a multiple of
    ``num_generations`` (GRPO compares the completions of one prompt). A synchronous reward is
    wrapped in :class:`GroupRewards`, returned third, which keeps every group's rewards."""
    if reward is None:
        from llmdebate.rl import DebateReward

        reward = DebateReward(
            expected=not settings.sampled_reward, normalize=settings.normalize_reward,
            relative=settings.relative_reward,
            invalid_reward=settings.invalid_reward, margin=settings.invalid_margin,
            max_reply_chars=settings.max_reply_chars, logprobs_as=settings.logprobs_as,
        )
    g = settings.num_generations
    batch = -(-max(settings.batch_size, g) // g) * g
    rows = list(data)
    # a completion ends where the act's answer ends (TRL stops at the model's eos ids only)
    model.generation_config.eos_token_id = stop_token_ids(tokenizer, trained_acts(rows))
    args = trl.GRPOConfig(
        **{**common, "per_device_train_batch_size": batch},
        num_generations=g,
        max_completion_length=settings.max_completion_length or completion_cap(rows),
        beta=0.0,  # no KL term, no reference model (TRL's default)
        temperature=1.0,
        shuffle_dataset=False,
    )
    groups = None if inspect.iscoroutinefunction(reward.__call__) else GroupRewards(reward, g)
    trainer = trl.GRPOTrainer(
        model=model, reward_funcs=[groups or reward], args=args, train_dataset=data,
        processing_class=tokenizer, peft_config=_lora(settings),
    )
    return args, trainer, groups
