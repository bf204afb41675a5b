"""Several run directories read as one for ``llmdebate report RUN_DIR RUN_DIR ...``.

Each run becomes a :class:`RunRecords` (its item ids from its
transcripts, its protocols and settings from ``config.yaml``) and
:func:`merge_runs` decides whether they can be read as one,
refusing with one line (:class:`MergeRefused`, exit 2) when
their items, protocols or settings make the comparison meaningless. The merged debates keep
their own ids prefixed with their run's name (``<run>:<debate id>``), so two runs may hold
the same debate; ``meta.run`` names the run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llmdebate.core.schemas import Transcript
from llmdebate.errors import UserError
from llmdebate.protocols.registry import known
from llmdebate.records.rundir import load_transcripts, read_run_config
from llmdebate.report.records import item_id

COMMON_SETTINGS = ("dataset", "judge_passage")
"""Settings every merged run must share where recorded."""
PE_SETTINGS = ("depth", "epsilon", "rho", "variant")
"""Settings prover-estimator runs must share as well."""


class MergeRefused(UserError):
    """Runs that cannot be read as one; the one-line message names them and the field."""


@dataclass(frozen=True)
class RunRecords:
    """What a report needs of one run: its name (the run directory), the ids of its items,
    its protocols, its recorded settings (``dataset``, ``judge_passage``, ``depth``,
    ``epsilon``, ``rho``, ``variant``, ...; a setting not recorded is absent) and its plain
    records (one mapping per debate)."""

    name: str
    items: frozenset[str]
    protocols: frozenset[str]
    settings: Mapping[str, Any] = field(default_factory=dict)
    records: tuple[Mapping[str, Any], ...] = ()


def _show(v: Any) -> str:
    return "true" if v is True else "false" if v is False else str(v)


def _sample(xs: set[str]) -> str:
    return ", ".join(sorted(xs)[:3]) + (", ..." if len(xs) > 3 else "")


def _difference(a: RunRecords, b: RunRecords) -> str | None:
    """Why ``b`` cannot be merged with ``a`` (one clause), or None."""
    if a.items != b.items:
        only_a, only_b = set(a.items - b.items), set(b.items - a.items)
        parts = [
            f"{len(xs)} only in {n} ({_sample(xs)})"
            for n, xs in ((a.name, only_a), (b.name, only_b))
            if xs
        ]
        return "items differ: " + "; ".join(parts)
    if a.protocols != b.protocols:
        return (
            f"protocols differ ({a.name}: {', '.join(sorted(a.protocols)) or 'none'}; "
            f"{b.name}: {', '.join(sorted(b.protocols)) or 'none'})"
        )
    pe = any((p := known(name)) is not None and p.can.estimator_rewards for name in a.protocols)
    keys = COMMON_SETTINGS + (PE_SETTINGS if pe else ())
    for key in keys:
        in_a, in_b = key in a.settings, key in b.settings
        if in_a != in_b:
            has, lacks = (a, b) if in_a else (b, a)
            return f"{key} is recorded in {has.name}, not in {lacks.name}"
        if in_a and a.settings[key] != b.settings[key]:
            return (
                f"{key} differs ({a.name}: {_show(a.settings[key])}, "
                f"{b.name}: {_show(b.settings[key])})"
            )
    return None


def merge_runs(runs: Sequence[RunRecords]) -> RunRecords:
    """One run of several: their records concatenated in the order given, each tagged with
    ``run`` (its run's name); name ``a+b+...``. Refused (:class:`MergeRefused`, one line
    naming the two runs and the field) unless every run has the same items, protocols and
    settings (:data:`COMMON_SETTINGS`, and :data:`PE_SETTINGS` with prover-estimator)."""
    if not runs:
        raise MergeRefused("cannot merge runs: none given")
    names = [r.name for r in runs]
    if len(set(names)) != len(names):
        twice = sorted({n for n in names if names.count(n) > 1})
        raise MergeRefused(f"cannot merge runs: {', '.join(twice)} given twice")
    first = runs[0]
    for other in runs[1:]:
        why = _difference(first, other)
        if why is not None:
            raise MergeRefused(f"cannot merge runs {first.name} and {other.name}: {why}")
    records = tuple({**rec, "run": r.name} for r in runs for rec in r.records)
    return RunRecords(
        name="+".join(names),
        items=first.items,
        protocols=first.protocols,
        settings=dict(first.settings),
        records=records,
    )


def run_settings(info: dict[str, Any]) -> dict[str, Any]:
    """The settings of a run that merged runs must share (as recorded in ``config.yaml``)."""
    out: dict[str, Any] = {}
    dataset = info.get("dataset") or {}
    if "path" in dataset:
        out["dataset"] = str(dataset["path"])
    judge = info.get("judge") or {}
    if "passage" in judge:
        out["judge_passage"] = judge["passage"]
    debate = info.get("debate") or {}
    for key in ("depth", "epsilon", "rho", "variant"):
        if key in debate:
            out[key] = debate[key]
    return out


def _tagged(ts: Sequence[Transcript], run: str) -> list[Transcript]:
    out: list[Transcript] = []
    for t in ts:
        c = t.model_copy(update={"id": f"{run}:{t.id}", "meta": {**t.meta, "run": run}})
        out.append(c)
    return out


def merged_runs(
    dirs: Sequence[Path],
) -> tuple[dict[str, Any], list[Transcript], list[Transcript]]:
    """(config of the first run with ``merged`` naming them all, every run's transcripts,
    every run's judged debates), or :class:`MergeRefused`."""
    runs: list[RunRecords] = []
    loaded: list[tuple[str, list[Transcript], list[Transcript]]] = []
    infos: list[dict[str, Any]] = []
    for d in dirs:
        info = read_run_config(d)
        ts = load_transcripts(d)
        name = d.name
        runs.append(
            RunRecords(
                name=name,
                items=frozenset(item_id(t) for t in ts),
                protocols=frozenset(str(p) for p in info.get("protocols") or []),
                settings=run_settings(info),
            )
        )
        loaded.append((name, ts, load_transcripts(d, judged=True)))
        infos.append(info)
    merge_runs(runs)
    info = dict(infos[0])
    info["merged"] = [r.name for r in runs]
    transcripts = [t for name, ts, _ in loaded for t in _tagged(ts, name)]
    judged = [t for name, _, js in loaded for t in _tagged(js, name)]
    return info, transcripts, judged
