"""llmdebate transcripts inside Inspect eval logs, both ways.

* :func:`log_transcripts`: every transcript a log's samples carry in their metadata (the
  task ``llmdebate/debate`` and :func:`write_run_log` put them there), read with Inspect's
  own log API (``read_eval_log``), for ``llmdebate score LOG.eval``;
* :func:`write_run_log`: a run directory as one Inspect eval log (``llmdebate export RUN
  --format inspect-log --out run.eval``), one sample per item, its debates as spans (each
  model call a span named by its act) with readable events and in its metadata; one score
  per protocol (:mod:`llmdebate.inspect_ext.scores`) and, for people's judgments
  (``judged.jsonl``, every judgment of a debate), one per protocol named ``<protocol> ·
  human``; a results block (each figure's mean and stderr, the sample counts, the run's
  time) so the viewer's list shows them.

``inspect_ai`` is imported only when one of these runs.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, cast

from pydantic import ValidationError

from llmdebate.core.schemas import Transcript
from llmdebate.errors import UserError
from llmdebate.records.rundir import (
    SUMMARY_FILE,
    TRANSCRIPTS_FILE,
    load_transcripts,
    read_run_config,
)
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


def debate_of(judged_id: str) -> str:
    """The debate a line of ``judged.jsonl`` judges (its id is ``<debate id>#<judgment>``)."""
    return judged_id.split("#", 1)[0]


HUMAN = " · human"
"""The suffix of the score name of people's verdicts (``consultancy · human``)."""


def _scores(ts: list[Transcript], people: list[Transcript]) -> dict[str, Any]:
    """One score per protocol of the item (the direct baselines and a shown passage apart:
    :func:`~llmdebate.inspect_ext.scores.group_of`): the model judges' and the people's
    (``<name> · human``), never pooled across protocols."""
    from llmdebate.inspect_ext.scores import by_protocol
    from llmdebate.inspect_ext.task import sample_score

    scores: dict[str, Any] = {}
    for group, (protocol, done) in by_protocol(ts).items():  # awaiting or failed: no score
        scores[group] = _named(group, sample_score([_json(t) for t in done], protocol))
    for group, (protocol, done) in by_protocol(people).items():
        human = _named(group + HUMAN, sample_score([_json(t) for t in done], protocol,
                                                   judgments=True))
        human.metadata = {**(human.metadata or {}), "judge": "human",
                          "judgments": [t.id for t in done]}
        scores[group + HUMAN] = human
    return scores


def _named(name: str, score: Any) -> Any:
    """``score`` with each figure named after its score too (``consultancy ·
    judge_accuracy``), so the viewer, which shows figure names alone, tells protocols apart."""
    score.value = {f"{name} · {k}": v for k, v in dict(score.value).items()}
    return score


def _json(t: Transcript) -> dict[str, Any]:
    from llmdebate.inspect_ext.task import transcript_json

    return transcript_json(t)


def _events(ts: list[Transcript]) -> list[Any]:
    from inspect_ai.event import InfoEvent, SpanBeginEvent, SpanEndEvent

    from llmdebate.inspect_ext.events import SOURCE, span_name, stages
    from llmdebate.models.inspect_backend import decision_label

    events: list[Any] = []
    for t in ts:
        events.append(SpanBeginEvent(id=t.id, name=span_name(t.id), type="debate"))
        card, *rest = list(stages(t))  # the debate's card, then its calls, then its stages
        events.append(InfoEvent(source=SOURCE, data=card, span_id=t.id))
        for n, call in enumerate(t.calls):  # each model call in a span named by its act
            sid = f"{t.id}/call-{n}"
            name = decision_label(call.tag, (call.role, call.act))
            events.append(SpanBeginEvent(id=sid, parent_id=t.id, name=name, type="llmdebate"))
            events.append(InfoEvent(source=SOURCE, data=call_markdown(call), span_id=sid))
            events.append(SpanEndEvent(id=sid))
        events += [InfoEvent(source=SOURCE, data=text, span_id=t.id) for text in rest]
        events.append(SpanEndEvent(id=t.id))
    return events


def call_markdown(call: Any) -> str:
    """One recorded model call, briefly: who, which model, tokens, and its reply."""
    head = (
        f"**{call.role} · {call.act}** — {call.model}, {call.tokens_in} + {call.tokens_out} "
        "tokens"
    )
    if call.error:
        return f"{head}\n\nfailed: {call.error}"
    reply = (call.completion or "").strip()
    return f"{head}\n\n{reply[:2000]}" if reply else head


def _sample(item_id: str, ts: list[Transcript], people: list[Transcript]) -> Any:
    """One item: its debates, the people's judgments of them, their scores and events."""
    from inspect_ai.log import EvalSample
    from inspect_ai.model import ModelOutput

    item = ts[0].item or {}
    done = ts + people
    return EvalSample(
        id=item_id,
        epoch=1,
        input=str(item.get("question", item_id)),
        target=str(ts[0].meta.get("gold", item.get("answer", ""))),
        choices=item.get("choices"),
        output=ModelOutput.from_content(
            "llmdebate", "; ".join(f"{t.id}: {t.status}" for t in done)
        ),
        scores=_scores(ts, people),
        metadata={METADATA_KEY: {"transcripts": [_json(t) for t in done]}, "item_id": item_id},
        events=_events(done),
    )


def write_run_log(run_dir: Path, out: Path) -> str:
    """Write run directory ``run_dir`` as an Inspect eval log at ``out`` (see
    :func:`log_path`): samples, their scores per protocol and a results block with each
    score's metrics, the sample counts and the run's span of time; what was written, in
    words (the path included)."""
    from inspect_ai.log import EvalConfig, EvalDataset, EvalLog, EvalSpec, write_eval_log

    if not (run_dir / TRANSCRIPTS_FILE).is_file():
        raise UserError(f"{run_dir}: no {TRANSCRIPTS_FILE} (not a run directory)")
    config = read_run_config(run_dir)
    transcripts = load_transcripts(run_dir)
    people: dict[str, list[Transcript]] = {}
    for j in load_transcripts(run_dir, judged=True):
        people.setdefault(debate_of(j.id), []).append(j)
    items = _items(transcripts)
    samples = [
        _sample(i, ts, [j for t in ts for j in people.get(t.id, [])]) for i, ts in items.items()
    ]
    roles = {r: (config.get(r) or {}).get("model", "") for r in ("prover", "estimator", "judge")}
    created = datetime.now(timezone.utc)
    task = f"llmdebate/{run_dir.name}"
    path = log_path(out, created, run_dir.name)
    spec = EvalSpec(
        created=created.isoformat(),
        task=task,
        dataset=EvalDataset(
            name=str((config.get("dataset") or {}).get("path", "")), samples=len(samples)
        ),
        model=roles["judge"] or "llmdebate",
        config=EvalConfig(),
        metadata={"llmdebate_config": config, "roles": roles},
    )
    log = EvalLog(
        status="success", eval=spec, samples=samples, results=results(samples),
        stats=run_stats(run_dir, transcripts, created),
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    write_eval_log(log, str(path))
    n_people = sum(len(v) for v in people.values())
    return (
        f"{path}: {len(samples)} samples ({len(transcripts)} debates, {n_people} judgments "
        "by a person)"
    )


def log_path(out: Path, created: datetime, name: str) -> Path:
    """Where the log goes so that ``inspect log list`` and the viewer list it: ``out`` as
    given for a ``.eval`` file or a ``.json`` file named as Inspect names its logs (starting
    with an ISO time); a ``.json`` file named otherwise gets that time in front; a folder
    gets ``<time>_llmdebate-<run>.eval`` inside."""
    stamp = created.strftime("%Y-%m-%dT%H-%M-%S+00-00")
    if out.is_dir() or not out.suffix:
        return out / f"{stamp}_llmdebate-{_slug(name)}.eval"
    if not is_inspect_log(out):
        raise UserError(f"--out {out}: an Inspect log is a .eval or .json file, or a folder")
    if out.suffix == ".json" and not _INSPECT_NAME.match(out.name):
        return out.with_name(f"{stamp}_{out.name}")
    return out


_INSPECT_NAME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}[:-]\d{2}[:-]\d{2}")


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9-]+", "-", name).strip("-") or "run"


def results(samples: list[Any]) -> Any:
    """The log's results block: every score of the samples with, per figure, Inspect's own
    ``mean`` and ``stderr`` over the samples that have it (NaN: not scored; no ``stderr``
    from a single sample)."""
    from inspect_ai.log import EvalMetric, EvalResults, EvalScore
    from inspect_ai.scorer import SampleScore, Score, mean, stderr

    names: list[str] = []
    for s in samples:
        names += [n for n in s.scores or {} if n not in names]
    out: list[Any] = []
    for name in names:
        per: dict[str, list[Any]] = {}
        for s in samples:
            score = (s.scores or {}).get(name)
            for key, v in (score.value if score is not None else {}).items():
                if isinstance(v, int | float) and not math.isnan(v):
                    per.setdefault(key, []).append(
                        SampleScore(score=Score(value=float(v)), sample_id=s.id)
                    )
        for key, got in per.items():
            metrics = {  # no stderr from one sample (Inspect would print 0)
                m: EvalMetric(name=m, value=float(cast(float, f()(got))))
                for m, f in (("mean", mean), ("stderr", stderr)) if m == "mean" or len(got) > 1
            }
            out.append(EvalScore(name=key, scorer=name, metrics=metrics,
                                 scored_samples=len(got),
                                 unscored_samples=len(samples) - len(got)))
    scored = sum(1 for s in samples if s.scores)
    return EvalResults(total_samples=len(samples), completed_samples=scored, scores=out)


def run_stats(run_dir: Path, transcripts: list[Transcript], created: datetime) -> Any:
    """The run's time: its last invocation's wall time (``summary.json``), else the sum of
    its debates' own, ending when ``transcripts.jsonl`` was last written."""
    import json

    from inspect_ai.log import EvalStats

    end = datetime.fromtimestamp((run_dir / TRANSCRIPTS_FILE).stat().st_mtime, timezone.utc)
    wall: float | None = None
    summary = run_dir / SUMMARY_FILE
    if summary.is_file():
        wall = (json.loads(summary.read_text()).get("last_invocation") or {}).get("wall_s")
    if wall is None:
        wall = sum(float(t.meta.get("wall_s") or 0.0) for t in transcripts)
    start = end - timedelta(seconds=float(wall))
    return EvalStats(started_at=start.isoformat(), completed_at=end.isoformat())
