"""What the driver and every worker process share while debates run: the garbage collector's
settings, the server each role reaches, what each server enforces of structured outputs, and
the protocol settings of a config.

No module here imports the runner or an executor, so both (and the workers) can import it.
"""

from __future__ import annotations

import contextlib
import gc
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from llmdebate.experiment.config import ExperimentConfig
from llmdebate.models import Model
from llmdebate.models.enforcement import ENFORCEMENT
from llmdebate.protocols.spec import ProtocolSettings
from llmdebate.records.rundir import STRUCTURED_FILE, write_atomic

GC_THRESHOLDS = (20_000, 20, 20)


def quiet_gc() -> None:
    """Fewer garbage collections from now on: the objects made so far (modules, config, jobs)
    are frozen out of the collector's scans, and the young generation is collected every
    20,000 allocations instead of 700. Debates make many short-lived objects that reference
    counting frees; the collector's scans cost about a fifth of the client's CPU at hundreds
    of calls a second. A worker process calls this once, as it starts."""
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


@contextlib.contextmanager
def lean_gc() -> Iterator[None]:
    """:func:`quiet_gc` while the block runs (the driver's debates); the previous settings
    come back afterwards."""
    before = gc.get_threshold()
    quiet_gc()
    try:
        yield
    finally:
        gc.set_threshold(*before)
        gc.unfreeze()


def servers_of(models: dict[str, Model]) -> dict[str, str | None]:
    """The effective server URL of each role (None for local and scripted models)."""
    return {role: m.base_url for role, m in models.items()}


def begin_enforcement(run_dir: Path, resuming: bool) -> None:
    """Start the run's record of which endpoints enforce their structured field: a resumed
    run takes the verdicts its directory holds (no probe is sent again), and every new
    verdict is written there at once (a run killed after a probe keeps it)."""
    path = run_dir / STRUCTURED_FILE
    recorded: dict[str, Any] | None = None
    if resuming and path.is_file():
        with contextlib.suppress(ValueError):
            loaded = json.loads(path.read_text(encoding="utf-8"))
            recorded = loaded if isinstance(loaded, dict) else None

    def save(snapshot: dict[str, dict[str, Any]]) -> None:
        write_atomic(path, json.dumps(snapshot, indent=2) + "\n")

    ENFORCEMENT.begin(recorded, on_change=save)


def enforcement_summary() -> tuple[dict[str, dict[str, Any]], int]:
    """The run's verdicts by endpoint, and the probe requests this invocation sent."""
    snapshot = ENFORCEMENT.snapshot()
    probes = sum(v["probes"] for v in snapshot.values() if v["how"] in ("probe", "refused"))
    return snapshot, probes


def protocol_settings(config: ExperimentConfig) -> ProtocolSettings:
    """The protocol settings of a run (the debate's seed is the run's)."""
    return ProtocolSettings.from_config(
        config.debate, seed=config.seed, rounds=config.rounds, mode=config.mode
    )
