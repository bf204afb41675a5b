"""The Inspect task ``llmdebate/debate``: any llmdebate protocol on any dataset, in Inspect.

::

    inspect eval llmdebate/debate -T protocol=prover-estimator -T dataset=datasets/divisors.jsonl \\
        --model-role prover=openai/gpt-4o-mini --model-role estimator=openai/gpt-4o-mini \\
        --model-role judge=openai/gpt-4o-mini

A sample is one item; its solver runs every debate the protocol holds on the item (``paired``
assignment: honest and dishonest) as llmdebate's runner would (:func:`~llmdebate.experiment
.jobs.make_jobs`, :func:`~llmdebate.experiment.debate.run_one`), with each role's Inspect
model (``get_model(role=...)``; a role not given uses ``--model``) as an llmdebate backend.
The full transcripts ride in the sample's metadata (``llmdebate.records.transcripts``), so that
``llmdebate score LOG`` re-scores them exactly; the debate is also written into the sample's
log as readable events (:mod:`llmdebate.inspect_ext.events`). The scorer reports the
protocol's figures under their names (:mod:`llmdebate.inspect_ext.scores`; ``docs/metrics.md``
defines them): the judge's accuracy for speech protocols; for protocols with rewards whether
the honest prover's payoff beat the dishonest one's, the item's leaf-claim accuracy and both
payoffs, early stops included.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import Dataset, MemoryDataset, Sample
from inspect_ai.model import Model as InspectModel
from inspect_ai.model import get_model
from inspect_ai.scorer import Score, Scorer, Target, accuracy, mean, scorer, stderr
from inspect_ai.solver import Generate, Solver, TaskState, solver

from llmdebate.agents.factory import Team
from llmdebate.core.schemas import Transcript
from llmdebate.data import Item, load_items
from llmdebate.experiment.config import ExperimentConfig
from llmdebate.experiment.debate import run_one
from llmdebate.experiment.jobs import Job, make_jobs
from llmdebate.experiment.loading import load
from llmdebate.experiment.runtime import protocol_settings
from llmdebate.inspect_ext.events import emit, span_name
from llmdebate.inspect_ext.scores import (
    explanation,
    figures,
    group_for,
    grouped_figures,
    judgment_figures,
    score_metadata,
)
from llmdebate.models import Model
from llmdebate.models.inspect_backend import InspectBackend
from llmdebate.prompts import Prompts
from llmdebate.protocols.common import VIEW_VARIANTS
from llmdebate.protocols.families import rewarded
from llmdebate.protocols.registry import get_protocol, protocol_of
from llmdebate.records.paths import resolve_path
from llmdebate.records.transcripts import transcript_line

METADATA_KEY = "llmdebate"
"""The sample-metadata key holding ``{"transcripts": [...], "item": {...}}``."""


def experiment_config(
    protocol: str, config: str | None, seed: int | None, overrides: dict[str, Any]
) -> ExperimentConfig:
    """The llmdebate config of the task: a YAML file's, with ``-T`` overrides (dotted keys,
    as ``llmdebate run``'s flags: ``-T debate.depth=1``)."""
    flat = {k: v for k, v in overrides.items() if v is not None}
    flat["protocols"] = [protocol]
    if seed is not None:
        flat["seed"] = seed
    for role in ("prover", "estimator", "judge"):  # the models come from Inspect's roles
        flat.setdefault(f"{role}.model", "scripted")
    return load(config, flat)


def items_of(dataset: str | Dataset | Sequence[Sample], cfg: ExperimentConfig) -> list[Item]:
    """The items of a dataset llmdebate loads (a path, ``hf:<name>``) or of Inspect samples
    (``input`` the question, ``target`` the answer, ``choices``)."""
    if isinstance(dataset, str):
        ds = cfg.dataset
        return load_items(
            resolve_path(dataset), shuffle_seed=ds.shuffle_seed, limit=ds.limit, ids=ds.ids,
            password=ds.password, split=ds.split, subset=ds.subset, fields=ds.fields,
        )
    out: list[Item] = []
    for n, s in enumerate(dataset):
        target = s.target if isinstance(s.target, str) else s.target[0]
        choices = list(s.choices) if s.choices else None
        if choices and len(target) == 1 and target.isalpha() and target not in choices:
            target = choices[ord(target.upper()) - ord("A")]  # Inspect's letter targets
        out.append(Item.model_validate({
            "id": str(s.id if s.id is not None else n), "question": _text(s.input),
            "choices": choices, "answer": target, "meta": dict(s.metadata or {}),
        }))
    return out[: cfg.dataset.limit] if cfg.dataset.limit else out


def _text(value: str | list[Any]) -> str:
    """An Inspect sample's input as text (its messages' texts joined)."""
    return value if isinstance(value, str) else "\n\n".join(m.text for m in value)


def role_models(roles: Sequence[str]) -> dict[str, Model]:
    """Each role's Inspect model (``--model-role``, else ``--model``) as an llmdebate model:
    Inspect's retries and cache apply, llmdebate's are off."""
    by_model: dict[int, Model] = {}
    out: dict[str, Model] = {}
    for role in roles:
        m: InspectModel = get_model(role=role)
        if id(m) not in by_model:
            backend = InspectBackend(f"inspect/{m}", str(m), inspect_model=m, native=True)
            by_model[id(m)] = Model(backend, use_cache=False, max_retries=0)
        out[role] = by_model[id(m)]
    return out


def transcript_json(t: Transcript) -> dict[str, Any]:
    """``t`` as its JSON line in a run's ``transcripts.jsonl`` (redacted), parsed."""
    data: dict[str, Any] = json.loads(transcript_line(t))
    return data


_JOBS: dict[str, dict[str, list[Job]]] = {}
"""The debates of each task built in this process, by item id (keyed by the task's token)."""


@solver
def debate_solver(config_json: str, jobs_key: str) -> Solver:
    """Run the item's debates with the roles' models; their transcripts into the metadata."""
    cfg = ExperimentConfig.model_validate_json(config_json)
    jobs = _JOBS[jobs_key]
    settings = protocol_settings(cfg)

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        team = Team(role_models(list(cfg.role_settings())), Prompts(cfg.prompts_dir),
                    cfg.prover, cfg.estimator, cfg.judge)
        done: list[dict[str, Any]] = []
        for job in jobs[str(state.sample_id)]:
            from inspect_ai.util import span

            async with span(span_name(job.spec.debate_id), type="debate"):
                t, _ = await run_one(job, team, settings)
                emit(t)
            done.append(transcript_json(t))
        state.metadata[METADATA_KEY] = {"transcripts": done}
        state.output.completion = "; ".join(
            f"{d['id']}: {d['status']}" + (f", judge decided {d['meta']['decision']!r}"
                                           if "decision" in d.get("meta", {}) else "")
            for d in done
        )
        return state

    return solve


def job_groups(cfg: ExperimentConfig, key: str) -> list[str]:
    """The score groups of a task's debates (:func:`~llmdebate.inspect_ext.scores.group_for`)."""
    groups: list[str] = []
    for jobs in _JOBS[key].values():
        for job in jobs:
            s = job.spec
            passage = VIEW_VARIANTS.get(s.variant, cfg.judge.passage)
            g = group_for(s.protocol, s.variant, bool((s.item.context or "").strip()), passage)
            if g not in groups:
                groups.append(g)
    return groups


def _jobs_by_item(cfg: ExperimentConfig, items: list[Item]) -> str:
    """Every debate of ``items`` as llmdebate's runner makes them, kept under a new key."""
    out: dict[str, list[Job]] = {}
    for job in make_jobs(items, cfg):
        out.setdefault(job.spec.item.id, []).append(job)
    key = uuid.uuid4().hex
    _JOBS[key] = out
    return key


def answer_text(ts: list[Transcript]) -> str:
    """What the sample's debates came to, in a few words (never the gold answer alone)."""
    parts = []
    for t in ts:
        who = str(t.meta.get("variant") or t.id)
        if "decision" in t.meta:
            parts.append(f"{who}: judge chose {t.meta['decision']!r}")
        elif (p := protocol_of(t).payoff(t)) is not None:
            parts.append(f"{who}: payoff {p:.3g}" + (" (stopped early)" if t.stopped_early else ""))
        else:
            parts.append(f"{who}: {t.status}")
    return "; ".join(parts)


def sample_score(
    transcripts: list[dict[str, Any]], protocol: str | None = None,
    groups: list[str] | None = None, judgments: bool = False,
) -> Score:
    """The score of the item's debates of one protocol (``protocol``, else the debates'
    own): its figures under their names (:mod:`llmdebate.inspect_ext.scores`); with
    ``groups`` (the direct baselines, a shown passage) each group's figures apart; with
    ``judgments`` (people's verdicts) the share judged correctly."""
    ts = [Transcript.model_validate(d) for d in transcripts]
    name = protocol or (ts[0].protocol if ts else "")
    complete = [t for t in ts if t.status == "complete" and t.protocol == name]
    if not complete:
        reasons = "; ".join(f"{t.id}: {t.failure or t.status}" for t in ts)
        raise RuntimeError(f"no debate of the item completed ({reasons})")
    value = (
        grouped_figures(complete, groups) if groups
        else judgment_figures(name, complete) if judgments
        else dict(figures(name, complete))
    )
    return Score(
        value=value,
        answer=answer_text(complete),
        explanation=explanation(complete),
        metadata=score_metadata(ts, protocol=name),
    )


_SPEECH_METRICS: dict[str, list[Any]] = {"judge_accuracy": [accuracy(), stderr()]}
_REWARD_METRICS: dict[str, list[Any]] = {
    "honest_beats_dishonest": [mean(), stderr()],
    "item_leaf_claim_accuracy": [accuracy(), stderr()],
    "item_payoff_honest": [mean(), stderr()],
    "item_payoff_dishonest": [mean(), stderr()],
}


@scorer(metrics=_REWARD_METRICS)
def debate_scorer() -> Scorer:
    """Protocols with rewards: honest against dishonest, leaf-claim accuracy, the payoffs."""

    async def score(state: TaskState, target: Target) -> Score:
        return sample_score(state.metadata[METADATA_KEY]["transcripts"])

    return score


@scorer(metrics={"*": [mean(), stderr()]})
def grouped_scorer(groups: list[str]) -> Scorer:
    """A task whose debates fall in several groups (the direct baselines, a shown passage):
    each group's figures apart, named ``<figure> (<group>)``."""

    async def score(state: TaskState, target: Target) -> Score:
        return sample_score(state.metadata[METADATA_KEY]["transcripts"], groups=groups)

    return score


@scorer(metrics=_SPEECH_METRICS)
def judge_scorer() -> Scorer:
    """Speech protocols: the judge's accuracy on the item's debates."""

    async def score(state: TaskState, target: Target) -> Score:
        return sample_score(state.metadata[METADATA_KEY]["transcripts"])

    return score


@task
def debate(
    protocol: str = "prover-estimator",
    dataset: str | Dataset | Sequence[Sample] = "datasets/divisors.jsonl",
    config: str | None = None,
    seed: int | None = None,
    limit: int | None = None,
    depth: int | None = None,
    width: int | None = None,
    assignment: str | None = None,
    judge_method: str | None = None,
    estimator_method: str | None = None,
    rounds: int | None = None,
) -> Task:
    """Any llmdebate protocol on any dataset; roles prover, estimator and judge.

    ``config``: an llmdebate experiment config (YAML) for every other setting.
    """
    get_protocol(protocol, where="-T protocol")
    cfg = experiment_config(protocol, config, seed, {
        "dataset.limit": limit, "debate.depth": depth, "debate.width": width,
        "prover.assignment": assignment, "judge.method": judge_method,
        "estimator.method": estimator_method, "rounds": rounds,
    })
    items = items_of(dataset, cfg)
    samples = [
        Sample(input=it.question, target=it.answer, choices=it.choices, id=it.id,
               metadata={"item_id": it.id})
        for it in items
    ]
    paid = rewarded(get_protocol(protocol))
    key = _jobs_by_item(cfg, items)
    groups = job_groups(cfg, key)
    chosen = (
        grouped_scorer(groups) if groups != [protocol]
        else debate_scorer() if paid else judge_scorer()
    )
    return Task(
        dataset=MemoryDataset(samples, name=dataset if isinstance(dataset, str) else None),
        solver=debate_solver(cfg.model_dump_json(), key),
        scorer=chosen,
        metadata={"llmdebate_config": json.loads(cfg.model_dump_json())},
    )
