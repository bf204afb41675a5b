"""llmdebate transcripts inside Inspect eval logs, both ways.

* :func:`log_transcripts`: every transcript a log's samples carry in their metadata (the
  task ``llmdebate/debate`` and :func:`write_run_log` put them there), read with Inspect's
  own log API (``read_eval_log``), for ``llmdebate score LOG.eval``;
* :func:`write_run_log`: a run directory as one Inspect eval log (``llmdebate export RUN
  --format inspect-log --out run.eval``), one sample per item, its debates as events and in
  its metadata, the judge's correctness and payoff as scores, and a person's judgment of a
  debate (``judged.jsonl``) as a score of its own (``human``).

``inspect_ai`` is imported only when one of these runs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from llmdebate.core.schemas import Transcript
from llmdebate.errors import UserError
from llmdebate.records.rundir import TRANSCRIPTS_FILE, load_transcripts, read_run_config
from llmdebate.records.transcripts import BadLine

METADATA_KEY = "llmdebate"
LOG_SUFFIXES = (".eval", ".json")


def is_inspect_log(path: Path) -> bool:
    """Whether ``path`` names an Inspect eval log (``.eval``, or ``.json``)."""
    return path.suffix in LOG_SUFFIXES


def log_transcripts(
    path: Path, on_error: Callable[[BadLine], None]
) -> Iterator[tuple[int, Transcript]]:
    """(number, transcript) of every transcript in the samples of Inspect log ``path``,
    numbered from 1 in the log's order; one that does not validate goes to ``on_error``."""
    from inspect_ai.log import read_eval_log

    try:
        log = read_eval_log(str(path))
    except FileNotFoundError:
        raise
    except Exception as exc:
        raise UserError(f"{path}: not an Inspect eval log ({type(exc).__name__}: {exc})") from exc
    n = 0
    for sample in log.samples or []:
        for data in (sample.metadata.get(METADATA_KEY) or {}).get("transcripts", []):
            n += 1
            try:
                yield n, Transcript.model_validate(data)
            except ValidationError as exc:
                on_error(BadLine(path, n, f"sample {sample.id}: not a transcript ({exc})"))


def _items(transcripts: list[Transcript]) -> dict[str, list[Transcript]]:
    out: dict[str, list[Transcript]] = {}
    for t in transcripts:
        out.setdefault(str(t.meta.get("item_id") or (t.item or {}).get("id") or t.id), []).append(t)
    return out


def _scores(ts: list[Transcript], judged: dict[str, Transcript]) -> dict[str, Any]:
    from llmdebate.inspect_ext.task import sample_score

    scores: dict[str, Any] = {}
    if any(t.status == "complete" for t in ts):  # else no score (awaiting a person, failed)
        scores["llmdebate"] = sample_score([_json(t) for t in ts])
    people = [judged[t.id] for t in ts if t.id in judged]
    if people:
        human = sample_score([_json(t) for t in people])
        human.metadata = {**(human.metadata or {}), "judge": "human"}
        scores["human"] = human
    return scores


def _json(t: Transcript) -> dict[str, Any]:
    from llmdebate.inspect_ext.task import transcript_json

    return transcript_json(t)


def _events(ts: list[Transcript]) -> list[Any]:
    from inspect_ai.event import InfoEvent, SpanBeginEvent, SpanEndEvent

    from llmdebate.inspect_ext.events import SOURCE, span_name, stages

    events: list[Any] = []
    for t in ts:
        events.append(SpanBeginEvent(id=t.id, name=span_name(t.id), type="debate"))
        events += [InfoEvent(source=SOURCE, data=text, span_id=t.id) for text in stages(t)]
        events.append(SpanEndEvent(id=t.id))
    return events


def _sample(item_id: str, ts: list[Transcript], judged: dict[str, Transcript]) -> Any:
    from inspect_ai.log import EvalSample
    from inspect_ai.model import ModelOutput

    item = ts[0].item or {}
    done = [judged.get(t.id, t) for t in ts]
    return EvalSample(
        id=item_id,
        epoch=1,
        input=str(item.get("question", item_id)),
        target=str(ts[0].meta.get("gold", item.get("answer", ""))),
        choices=item.get("choices"),
        output=ModelOutput.from_content(
            "llmdebate", "; ".join(f"{t.id}: {t.status}" for t in done)
        ),
        scores=_scores(ts, judged),
        metadata={METADATA_KEY: {"transcripts": [_json(t) for t in done]}, "item_id": item_id},
        events=_events(done),
    )


def write_run_log(run_dir: Path, out: Path) -> str:
    """Write run directory ``run_dir`` as the Inspect eval log ``out`` (``.eval`` or
    ``.json``); what was written, in words."""
    from inspect_ai.log import EvalConfig, EvalDataset, EvalLog, EvalSpec, write_eval_log

    if not (run_dir / TRANSCRIPTS_FILE).is_file():
        raise UserError(f"{run_dir}: no {TRANSCRIPTS_FILE} (not a run directory)")
    if not is_inspect_log(out):
        raise UserError(f"--out {out}: an Inspect log is a .eval or .json file")
    config = read_run_config(run_dir)
    transcripts = load_transcripts(run_dir)
    judged = {t.id: t for t in load_transcripts(run_dir, judged=True)}
    items = _items(transcripts)
    samples = [_sample(i, ts, judged) for i, ts in items.items()]
    roles = {r: (config.get(r) or {}).get("model", "") for r in ("prover", "estimator", "judge")}
    spec = EvalSpec(
        created=datetime.now(timezone.utc).isoformat(),
        task=f"llmdebate/{run_dir.name}",
        dataset=EvalDataset(
            name=str((config.get("dataset") or {}).get("path", "")), samples=len(samples)
        ),
        model=roles["judge"] or "llmdebate",
        config=EvalConfig(),
        metadata={"llmdebate_config": config, "roles": roles},
    )
    log = EvalLog(status="success", eval=spec, samples=samples)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_eval_log(log, str(out))
    return f"{len(samples)} samples ({len(transcripts)} debates, {len(judged)} judged by a person)"
