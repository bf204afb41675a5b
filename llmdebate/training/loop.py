"""A-leading Stackelberg training (Appendix D): for every prover update, the estimator is
updated ``estimator_updates`` times, each on debates played by the current models, so that the
prover's update comes from debates where the estimator plays an approximate best response.

Every generation of debates is an ordinary run of the experiment runner in
``<out>/iter-NN/gen-G/``; the rows an update trained on are in ``<out>/iter-NN/data/``, its
checkpoint in ``<out>/iter-NN/<role>-J/``; ``metrics.jsonl``, ``metrics.png`` and
``summary.json`` follow every generation and update.
"""

from __future__ import annotations

import gc
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from llmdebate.errors import ConfigError, UserError
from llmdebate.experiment.config import ExperimentConfig
from llmdebate.experiment.loading import dump, load, read_yaml, validate
from llmdebate.experiment.progress import Steps
from llmdebate.experiment.runner import run
from llmdebate.export import build, decision_rows, run_info
from llmdebate.export.api import injectable
from llmdebate.export.formats import BASELINES
from llmdebate.models.get_model import release_local
from llmdebate.prompts import Prompts
from llmdebate.protocols.registry import get_protocol, named_where
from llmdebate.records.paths import resolve_path
from llmdebate.records.rundir import load_transcripts, read_run_config
from llmdebate.report.judge_audit import hacking_line
from llmdebate.training.config import TrainConfig
from llmdebate.training.metrics import AUDIT_PREFIX, generation_metrics, plot_metrics
from llmdebate.training.update import (
    UpdateResult,
    _device,
    merged_adapter,
    model_dir,
    update_role,
)


def load_train_config(path: str | Path, overrides: dict[str, Any] | None = None) -> TrainConfig:
    """A :class:`TrainConfig` from YAML; errors name ``file:line:column`` and the field."""
    file = Path(path)
    data = read_yaml(file)
    data.update(overrides or {})
    try:
        return TrainConfig.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        dotted = ".".join(str(x) for x in err["loc"])
        text = yaml.compose(file.read_text(encoding="utf-8"))
        where = str(file)
        node: Any = text
        for key in [str(x) for x in err["loc"]]:
            found = None
            if isinstance(node, yaml.MappingNode):
                for k, v in node.value:
                    if k.value == key:
                        where = f"{file}:{k.start_mark.line + 1}:{k.start_mark.column + 1}"
                        found = v
            node = found
            if node is None:
                break
        msg = str(err.get("msg", "invalid value")).removeprefix("Value error, ")
        if err.get("type") == "extra_forbidden":
            msg = "unknown field"
        raise ConfigError(f"{where}: {dotted}: {msg} (got {err.get('input')!r})") from None


def experiment_of(cfg: TrainConfig) -> ExperimentConfig:
    if isinstance(cfg.experiment, dict):
        return validate(cfg.experiment)
    return load(resolve_path(cfg.experiment))


@dataclass
class TrainResult:
    out: Path
    prover_model: str
    estimator_model: str
    history: list[dict[str, Any]] = field(default_factory=list)
    updates: list[UpdateResult] = field(default_factory=list)
    seconds: float = 0.0
    expert: dict[str, Any] | None = None
    estimator_expert: dict[str, Any] | None = None
    labeller_reward: dict[str, Any] | None = None


class Trainer:
    """The state of one training run: the current models, the history, the output folder."""

    def __init__(self, cfg: TrainConfig, out: Path, *, progress: bool = True) -> None:
        self.cfg, self.out, self.progress = cfg, out, progress
        self.exp = experiment_of(cfg)
        self.trained = [p for p in self.exp.protocols if get_protocol(p).can.estimator_rewards]
        if not self.trained:
            raise UserError(
                "train: the experiment must run a protocol with estimator rewards "
                f"({', '.join(named_where(lambda p: p.can.estimator_rewards))})"
            )
        self.models = {"prover": self.exp.prover.model, "estimator": self.exp.estimator.model}
        self.history: list[dict[str, Any]] = []
        self.updates: list[UpdateResult] = []
        self.t0 = time.perf_counter()
        self.device = _device(cfg.device)
        """Where the updates run; the debates' local models are generated there too."""

    def say(self, message: str) -> None:
        if self.progress:
            print(message, flush=True)

    def generate(self, it: int, g: int) -> Path:
        """Debates of the experiment with the current models: ``iter-NN/gen-G``."""
        e = self.exp
        exp = e.model_copy(
            update={
                "name": f"{self.cfg.name}-iter{it}-gen{g}",
                "seed": self.cfg.seed + 1000 * it + g,
                "protocols": self.trained,
                "prover": on_device(self.settings_of("prover"), self.device),
                "estimator": on_device(self.settings_of("estimator"), self.device),
                "judge": on_device(e.judge, self.device),
            }
        )
        run_dir = self.out / f"iter-{it:02d}" / f"gen-{g}"
        self.say(f"iteration {it}, generation {g}: debates into {run_dir}")
        res = run(exp, run_dir, progress=self.progress)
        if res.stopped:
            raise UserError(f"{run_dir}: the debates stopped: {res.stopped}")
        m = generation_metrics(load_transcripts(run_dir))
        m.update(
            label=f"{it}.{g}", iteration=it, generation=g, run_dir=str(run_dir),
            prover_model=self.models["prover"], estimator_model=self.models["estimator"],
            elapsed_s=round(time.perf_counter() - self.t0, 2),
        )
        self.history.append(m)
        self.write()
        return run_dir

    def settings_of(self, role: str) -> Any:
        """The role's model settings with its current model; a checkpoint already holds the
        experiment's adapter (merged before the first update), so it is not applied again."""
        settings = getattr(self.exp, role)
        model = self.models[role]
        if model == settings.model:
            return settings
        options = {k: v for k, v in settings.options.items() if k != "adapter"}
        return settings.model_copy(update={"model": model, "options": options})

    def update(self, role: str, run_dir: Path, it: int, j: int) -> UpdateResult:
        """Export ``role``'s decisions of ``run_dir`` and train its model on them."""
        settings = getattr(self.cfg, role)
        config = read_run_config(run_dir)
        info = run_info(run_dir, config, self.cfg.test_fraction)
        pairs = [
            (r, t)
            for r, t in decision_rows(load_transcripts(run_dir), info, role=role)
            if r.split == "train"
        ]
        if settings.method == "grpo":  # online: the rows a completion can be played from
            pairs = [(r, t) for r, t in pairs if injectable(r)]
            records = build(pairs, "trl-prompt-only", config, text=self.cfg.text)
        else:
            records = build(pairs, "trl-unpaired", config, text=self.cfg.text,
                            baseline=_baseline(settings.baseline))
        data = self.out / f"iter-{it:02d}" / "data" / f"{role}-{j}.jsonl"
        data.parent.mkdir(parents=True, exist_ok=True)
        data.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
        start = model_dir(self.models[role], self.exp.cache_dir)
        adapter = getattr(self.exp, role).options.get("adapter")
        if adapter and self.models[role] == getattr(self.exp, role).model:
            start = merged_adapter(start, adapter, self.out / f"{role}-start")
        ckpt = self.out / f"iter-{it:02d}" / f"{role}-{j}"
        self.say(f"iteration {it}: {role} update {j} on {len(records)} rows from {start}")
        res = update_role(role, start, records, ckpt, settings, device=self.cfg.device,
                          seed=self.cfg.seed + 1000 * it + j)
        if res.skipped is None:
            self.models[role] = f"hf/{res.checkpoint.resolve()}"
            self.release()
        self.updates.append(res)
        self.write()
        return res

    def release(self) -> None:
        """Drop the weights of every local model the roles no longer play (the checkpoints an
        update replaced), so that memory stays flat however many iterations run."""
        released = release_local(keep=self.models.values())
        if released:
            gc.collect()
            self.say(f"released {len(released)} replaced model(s)")

    def write(self) -> None:
        self.out.mkdir(parents=True, exist_ok=True)
        lines = "".join(json.dumps(h) + "\n" for h in self.history)
        (self.out / "metrics.jsonl").write_text(lines, encoding="utf-8")
        if self.history:
            plot_metrics(self.history, self.out / "metrics.png")
        summary = {
            "models": self.models,
            "generations": len(self.history),
            "judge_audit": {side: hacking_line(self.history, side, prefix)
                            for side, prefix in AUDIT_PREFIX.items()},
            "updates": [
                {"role": u.role, "checkpoint": str(u.checkpoint), "rows": u.rows,
                 "steps": u.steps, "loss": u.loss, "seconds": round(u.seconds, 2),
                 "skipped": u.skipped, "log": u.log}
                for u in self.updates
            ],
            "wall_s": round(time.perf_counter() - self.t0, 2),
        }
        (self.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")

    def iteration(self, it: int) -> None:
        m, regen = self.cfg.estimator_updates, self.cfg.regenerate
        run_dir = self.generate(it, 0)
        g = 0
        for j in range(m):
            if j > 0 and regen:
                g += 1
                run_dir = self.generate(it, g)
            self.update("estimator", run_dir, it, j)
        if m > 0 and regen:
            g += 1
            run_dir = self.generate(it, g)
        self.update("prover", run_dir, it, 0)


def on_device(settings: Any, device: str) -> Any:
    """A role's model settings with its local model (``local``, ``hf/...``) on ``device``
    (the training device), unless its options name a device already; other models as they
    are."""
    model = getattr(settings, "model", None)
    if not isinstance(model, str) or not (model == "local" or model.startswith("hf/")):
        return settings
    if "device" in settings.options:
        return settings
    return settings.model_copy(update={"options": {**settings.options, "device": device}})


def train(cfg: TrainConfig, out: Path, *, progress: bool = True) -> TrainResult:
    """Run the whole schedule (and, with ``evaluate_last``, a generation with the last models)."""
    trainer = Trainer(cfg, out, progress=progress)
    out.mkdir(parents=True, exist_ok=True)
    saved = cfg.model_dump(mode="json")
    saved["experiment"] = dump(trainer.exp)
    (out / "train.yaml").write_text(yaml.safe_dump(saved, sort_keys=False), encoding="utf-8")
    expert = run_expert(cfg, trainer, out, progress=progress) if cfg.expert else None
    estimator = (run_estimator_expert(cfg, trainer, out, progress=progress)
                 if cfg.estimator_expert else None)
    labelled = (run_labeller_reward(cfg, trainer, out, progress=progress)
                if cfg.labeller_reward else None)
    shown = Steps("train", cfg.iterations, progress, unit="iteration", every_s=0.0)
    for it in range(cfg.iterations):
        trainer.iteration(it)
        shown.update(it + 1)
    shown.close()
    if cfg.evaluate_last:
        trainer.generate(cfg.iterations, 0)
    if cfg.iterations or cfg.evaluate_last:
        trainer.write()
    return TrainResult(
        out, trainer.models["prover"], trainer.models["estimator"], trainer.history,
        trainer.updates, time.perf_counter() - trainer.t0, expert, estimator, labelled,
    )


def run_expert(cfg: TrainConfig, trainer: Trainer, out: Path, *, progress: bool) -> Any:
    """Expert iteration of the prover's decompose act (``expert``), into ``<out>/expert``."""
    from llmdebate.training.expert import expert_iteration

    assert cfg.expert is not None
    if cfg.iterations:
        raise ConfigError(
            "expert: expert iteration trains an adapter on its own; set iterations: 0 (and "
            "train debates from the adapter's prover in a second run)"
        )
    exp = trainer.exp
    start = model_dir(exp.prover.model, exp.cache_dir)
    prompts = Prompts(resolve_path(exp.prompts_dir) if exp.prompts_dir else None)
    return expert_iteration(cfg.expert, start, out / "expert", prompts=prompts,
                            seed=cfg.seed, device=trainer.device, progress=progress)


def run_estimator_expert(cfg: TrainConfig, trainer: Trainer, out: Path, *,
                         progress: bool) -> Any:
    """Expert iteration of the estimator's probabilities (``estimator_expert``), into
    ``<out>/estimator-expert``."""
    from llmdebate.training.estimator_expert import estimator_iteration

    assert cfg.estimator_expert is not None
    if cfg.iterations:
        raise ConfigError(
            "estimator_expert: expert iteration trains an adapter on its own; set "
            "iterations: 0 (and train debates from the adapter's estimator in a second run)"
        )
    exp = trainer.exp
    start = model_dir(exp.estimator.model, exp.cache_dir)
    prompts = Prompts(resolve_path(exp.prompts_dir) if exp.prompts_dir else None)
    return estimator_iteration(cfg.estimator_expert, start, out / "estimator-expert",
                               prompts=prompts, seed=cfg.seed, device=trainer.device,
                               progress=progress)


def run_labeller_reward(cfg: TrainConfig, trainer: Trainer, out: Path, *,
                        progress: bool) -> dict[str, Any]:
    """A policy trained on labellers' cached labels (``labeller_reward``), into
    ``<out>/labeller-reward``."""
    from llmdebate.training.label_reward import arms_of, load_labels, train_on_labels

    s = cfg.labeller_reward
    assert s is not None
    if cfg.iterations:
        raise ConfigError(
            "labeller_reward: the policy is trained on cached labels on its own; set "
            "iterations: 0"
        )
    cache = load_labels(s.labels)  # a bad path or arm stops the run before the model loads
    arms_of(cache, s.arms)
    start = model_dir(trainer.exp.prover.model, trainer.exp.cache_dir)
    return train_on_labels(s, start, out / "labeller-reward", cache=cache, progress=progress)


def _baseline(value: str) -> str | float:
    if value in BASELINES:
        return value
    try:
        return float(value)
    except ValueError:
        raise ConfigError(
            f"baseline: use advantage, expected, mean or a number (got {value!r})"
        ) from None
