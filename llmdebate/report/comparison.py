"""Paired comparison of protocols: the same items, the same role models, one run directory.

Layout of a run directory::

    config.yaml         the comparison config as run
    transcripts.jsonl   one line per debate, append-only; a debate id already there is skipped
    comparison.json     every metric (metrics.compute) + run facts
    comparison.md       the Markdown tables
    plots/*.png         accuracy, payoffs, calibration, cost
    report.html         one self-contained file (tables, inlined plots, every debate)

Debate ids are ``<protocol>/<item id>/<variant>``; every debate on item i uses the seed
``engine.debate_seed(seed, i)`` (recorded in the transcript), so paired debates share their
protocol randomness. A debate that raises is written with status ``failed`` and retried on resume.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator

from llmdebate.engine import debate_seed
from llmdebate.errors import ConfigError
from llmdebate.protocols.common import ProtocolSettings, RoleModels
from llmdebate.protocols.registry import PROTOCOLS, debate_id, get_protocol
from llmdebate.schemas import DebateConfig, Transcript
from llmdebate.transcripts import append_transcript, read_transcripts


class ModelsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    debater: str = "scripted"
    estimator: str = "scripted"
    judge: str = "scripted"


class CompareConfig(BaseModel):
    """A comparison, as read from ``configs/compare-*.yaml``."""

    model_config = ConfigDict(extra="forbid")
    name: str = "compare"
    dataset: str
    limit: int | None = 20
    ids: list[str] | None = None
    shuffle_seed: int = 0
    seed: int = 0
    protocols: list[str] = Field(default_factory=lambda: list(PROTOCOLS))
    models: ModelsConfig = Field(default_factory=ModelsConfig)
    method: str = "logprobs"
    samples: int = 8
    max_tokens: int = 64
    temperature: float = 0.0
    debate: DebateConfig = Field(default_factory=lambda: DebateConfig(depth=1, width=2))
    rounds: int = 1
    mode: str = "sequential"
    concurrency: int = 4
    bootstrap: int = 2000
    calibration_bins: int = 10
    prompts_dir: str | None = None
    decomposer: str = "model"
    formal: bool = False

    @field_validator("protocols")
    @classmethod
    def _known(cls, v: list[str]) -> list[str]:
        for p in v:
            get_protocol(p)
        if len(set(v)) != len(v):
            raise ValueError("a protocol is listed twice")
        return v

    @field_validator("decomposer")
    @classmethod
    def _decomposer(cls, v: str) -> str:
        if v not in ("model", "facts"):
            raise ValueError("decomposer is 'model' or 'facts'")
        return v

    @field_validator("method")
    @classmethod
    def _method(cls, v: str) -> str:
        if v not in ("logprobs", "sampling", "verbalised"):
            raise ValueError("method is one of logprobs, sampling, verbalised")
        return v

    @classmethod
    def from_yaml(cls, path: str | Path) -> CompareConfig:
        path = Path(path)
        if not path.is_file():
            raise ConfigError(f"{path}: no such config file")
        try:
            data = yaml.safe_load(path.read_text()) or {}
            return cls.model_validate(data)
        except (yaml.YAMLError, ValueError) as exc:
            first = str(exc).splitlines()
            raise ConfigError(f"{path}: {' '.join(first[:3])}") from None

    def settings(self) -> ProtocolSettings:
        return ProtocolSettings(debate=self.debate, rounds=self.rounds, mode=self.mode)


def load_items(cfg: CompareConfig, base: Path) -> list[Any]:
    from llmdebate.data import load_items as _load

    path = Path(cfg.dataset)
    if not path.is_absolute() and not path.exists():
        path = base / path
    return _load(path, shuffle_seed=cfg.shuffle_seed, limit=cfg.limit, ids=cfg.ids)


def done_ids(path: Path) -> dict[str, Transcript]:
    """The last transcript recorded under each id (complete ones only)."""
    out: dict[str, Transcript] = {}
    if path.is_file():
        for t in read_transcripts(path):
            out[t.id] = t
    return {k: t for k, t in out.items() if t.status == "complete"}


def failed_transcript(
    did: str,
    protocol: str,
    seed: int,
    item: Any,
    variant: str,
    cfg: CompareConfig,
    exc: BaseException,
) -> Transcript:
    return Transcript(
        id=did,
        protocol=protocol,
        config=cfg.debate,
        seed=seed,
        item=item.model_dump(),
        status="failed",
        failure=f"{type(exc).__name__}: {exc}"[:2000],
        meta={"item_id": item.id, "variant": variant},
    )


async def run_comparison(
    cfg: CompareConfig,
    roles: RoleModels,
    items: list[Any],
    run_dir: Path,
    *,
    progress: Callable[[str], None] | None = None,
) -> list[Transcript]:
    """Run every (item, protocol, variant) not yet in ``transcripts.jsonl``; return all."""
    run_dir.mkdir(parents=True, exist_ok=True)
    tpath = run_dir / "transcripts.jsonl"
    done = done_ids(tpath)
    settings = cfg.settings()
    sem = asyncio.Semaphore(max(1, cfg.concurrency))
    jobs = []
    for i, item in enumerate(items):
        seed = debate_seed(cfg.seed, i)
        for proto in cfg.protocols:
            runner, variants = get_protocol(proto)
            for v in variants:
                did = debate_id(proto, item.id, v)
                if did not in done:
                    jobs.append((did, proto, runner, v, item, seed))

    async def one(did: str, proto: str, runner: Any, v: str, item: Any, seed: int) -> None:
        async with sem:
            try:
                t = await runner(item, roles, settings, variant=v, seed=seed, debate_id=did)
            except Exception as exc:  # recorded in the transcript, retried on resume
                t = failed_transcript(did, proto, seed, item, v, cfg, exc)
            append_transcript(tpath, t)
            done[did] = t
            if progress:
                progress(f"{did}: {t.status}")

    await asyncio.gather(*(one(*j) for j in jobs))
    return latest(tpath, cfg, items)


def latest(path: Path, cfg: CompareConfig, items: list[Any]) -> list[Transcript]:
    """The last transcript of every debate of this comparison, in item/protocol/variant order."""
    order: dict[str, int] = {}
    for it in items:
        for p in cfg.protocols:
            for v in get_protocol(p)[1]:
                order[debate_id(p, it.id, v)] = len(order)
    out: dict[str, Transcript] = {}
    if path.is_file():
        for t in read_transcripts(path):
            if t.id in order:
                out[t.id] = t
    return sorted(out.values(), key=lambda t: order[t.id])


def save_config(cfg: CompareConfig, run_dir: Path) -> None:
    """Write config.yaml, or check that a resumed run has the same config."""
    path = run_dir / "config.yaml"
    data = cfg.model_dump(mode="json")
    if path.is_file():
        old = yaml.safe_load(path.read_text())
        if old != data:
            raise ConfigError(
                f"{run_dir} holds a different comparison config; use another --run-id"
            )
        return
    run_dir.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def write_json(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n")


def now() -> float:
    return time.perf_counter()
