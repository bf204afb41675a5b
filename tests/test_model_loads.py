"""Local models load one at a time in a process, and a replay team loads its models up front,
so that concurrent debates played by a reward function never load lazily together."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from llmdebate.models import hf_backend
from llmdebate.models.hf_backend import HFBackend, LoadInfo
from llmdebate.rl import replay

try:
    from tests.export_fixtures import pe_config
except ImportError:  # pytest run from inside tests/
    from export_fixtures import pe_config  # type: ignore[no-redef]


def test_loads_of_different_backends_never_overlap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    active: list[int] = [0]
    most: list[int] = [0]
    guard = threading.Lock()

    def slow_load(self: HFBackend) -> LoadInfo:
        with guard:
            active[0] += 1
            most[0] = max(most[0], active[0])
        time.sleep(0.05)  # from_pretrained's meta-device window
        with guard:
            active[0] -= 1
        self.model = object()
        return self.load_info

    monkeypatch.setattr(HFBackend, "_load", slow_load)
    backends = [HFBackend(f"m{i}", tmp_path, threads=1) for i in range(4)]
    threads = [threading.Thread(target=b.load) for b in backends for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most[0] == 1  # one load at a time in the process, across instances
    assert all(b.model is not None for b in backends)
    assert isinstance(hf_backend._LOAD_LOCK, type(threading.Lock()))


def _fake(load: bool, calls: list[str], name: str) -> Any:
    backend = SimpleNamespace(profile=SimpleNamespace(load=load),
                              load=lambda: calls.append(name))
    return SimpleNamespace(backend=backend)


def test_preload_loads_each_local_model_once() -> None:
    calls: list[str] = []
    shared = _fake(True, calls, "shared")
    replay.preload({"prover": shared, "estimator": shared,
                    "judge": _fake(False, calls, "remote")})
    assert calls == ["shared"]


def test_team_for_preloads_the_models_it_builds(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[set[str]] = []
    monkeypatch.setattr(replay, "preload", lambda models: seen.append(set(models)))
    replay.team_for(pe_config(dataset={"limit": 1}).model_dump(mode="json"))
    assert seen and {"prover", "estimator"} <= seen[0]
