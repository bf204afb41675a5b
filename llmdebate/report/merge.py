"""Several run directories read as one for ``llmdebate report RUN_DIR RUN_DIR ...``.

Each run becomes a :class:`~llmdebate.report.tournament.RunRecords` (its item ids from its
transcripts, its protocols and settings from ``config.yaml``) and
:func:`~llmdebate.report.tournament.merge_runs` decides whether they can be read as one,
refusing with one line (:class:`~llmdebate.report.tournament.MergeRefused`, exit 2) when
their items, protocols or settings make the comparison meaningless. The merged debates keep
their own ids prefixed with their run's name (``<run>:<debate id>``), so two runs may hold
the same debate; ``meta.run`` names the run.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from llmdebate.report.records import item_id
from llmdebate.report.tournament import RunRecords, merge_runs
from llmdebate.rundir import load_transcripts, read_run_config
from llmdebate.schemas import Transcript


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
