"""A long training run keeps only the models its roles play now in memory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from llmdebate.experiment.loading import dump
from llmdebate.experiment.runner import run
from llmdebate.models.get_model import get_model, release_local, shared_local_models
from llmdebate.training import TrainConfig
from llmdebate.training import loop as train_loop
from llmdebate.training.update import UpdateResult

try:
    from tests.export_fixtures import pe_config
except ImportError:  # pytest run from inside tests/
    from export_fixtures import pe_config  # type: ignore[no-redef]


def fake_checkpoint(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "config.json").write_text("{}")
    return path


def test_the_registry_does_not_grow_across_iterations(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    release_local()
    run_dir = tmp_path / "run"
    exp = pe_config(dataset={"limit": 1})
    run(exp, run_dir, progress=False)
    loaded: list[Any] = []

    def update_role(role: str, start: Path, records: list[dict[str, Any]], out: Path,
                    settings: Any, **kw: Any) -> UpdateResult:
        # what the next generation does with the checkpoint: the registry loads it
        model = get_model(f"hf/{fake_checkpoint(out).resolve()}")
        model.backend.model = bytearray(1 << 20)  # stands for the weights
        loaded.append(model.backend)
        return UpdateResult(role, out, len(records), steps=1)

    monkeypatch.setattr(train_loop, "update_role", update_role)
    monkeypatch.setattr(train_loop, "model_dir", lambda model, cache_dir=None: tmp_path)
    cfg = TrainConfig(experiment=dump(exp), estimator_updates=2)
    trainer = train_loop.Trainer(cfg, tmp_path / "train", progress=False)
    sizes = []
    for it in range(4):
        for j in range(2):
            trainer.update("estimator", run_dir, it, j)
        trainer.update("prover", run_dir, it, 0)
        sizes.append(len(shared_local_models()))
    assert sizes == [2, 2, 2, 2]
    assert sorted(shared_local_models()) == sorted(trainer.models.values())
    assert len(loaded) == 12
    assert [b.model is None for b in loaded].count(False) == 2  # the weights of the rest: gone
    assert release_local() and shared_local_models() == []
