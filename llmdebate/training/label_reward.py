"""A policy trained on a labeller's reward: does training on debate's labels teach what the
checker knows, or what the labeller can be talked into?

**The policy** is the embedded model with a LoRA adapter. It answers each question of a
labelling run that has two options with one token: True for the first option, False for the
second, on the estimator's True/False prompt about the first option's statement
(:func:`llmdebate.training.estimate_eval.estimate_prompt`); π = P(True) is the
:class:`~llmdebate.training.debate_reward.LeafTrainer`'s answer-word odds.

**The labels** are read once, from labelling runs' transcripts
(:func:`llmdebate.report.labels.labellers`: each protocol's label of each answer, the
checker's verdict), never by running a debate: every answer of every question must have been
labelled, so that the policy's answer space is covered (``datasets/answers/`` holds such a
file). They are cached in one JSON file (:func:`write_cache`), which a later run may read in
place of the runs. The speech word limits the runs enforced and what they did (speeches
within, cut, re-asked) are read from the transcripts and kept with the labels.

**An arm** is a reward r(question, answer) ∈ {0, 1/2, 1}: ``checker`` (the checker's verdict:
the roofline), ``shuffled`` (the checker's verdicts permuted among all the answers by a seeded
shuffle: the same base rate, nothing about which answer is right; the control), or a
labeller's label (1: labelled correct, 0: incorrect, 1/2: it abstained).

**A step** ascends the exact expected reward over the policy's two answers,
E[r] = π·r(q, first) + (1 − π)·r(q, second), on a seeded batch of training questions (the
leaf self-play's one-token step, :func:`llmdebate.training.self_play.prover_step`).

**A round** (every ``round_every`` steps; round 0 is the base model) measures:

* ``accuracy``: the checker's accuracy of the policy's answer on the held-out questions, in
  expectation over its answer (π on the first option's truth), with ``train_accuracy`` the
  same on the training questions;
* on ``samples`` answers drawn from the policy per training question (its own samples):
  ``mcc``, the labeller's Matthews correlation with the checker
  (:mod:`llmdebate.report.label_metrics`; abstentions left out), and ``reward``, the arm's
  mean reward;
* the judge-hacking audit (:func:`llmdebate.report.judge_audit.audit_shares`, the project's
  one definition) over the same samples with the labeller as the judge and the policy as the
  side: won = labelled correct, argued the truth = the answer is correct, judge correct = the
  label is the checker's (abstentions left out), its interval over the questions;
  :func:`~llmdebate.report.judge_audit.hacking_line` reads the rounds.

Every interval is a 95 % bootstrap over questions.
"""

from __future__ import annotations

import json
import math
import random
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from llmdebate.core.schemas import Transcript
from llmdebate.data.labelling import CORRECT
from llmdebate.errors import UserError
from llmdebate.records.paths import resolve_path
from llmdebate.records.rundir import load_transcripts
from llmdebate.report.judge_audit import audit_shares, hacking_line
from llmdebate.report.label_metrics import Label, confusion, mcc, metric_intervals
from llmdebate.report.labels import labellers, labelling
from llmdebate.report.records import item_id
from llmdebate.training.config import LabellerRewardSettings

CHECKER = "checker"
SHUFFLED = "shuffled"
ABSTAINED_REWARD = 0.5
"""The reward of an answer the labeller abstained on."""
SIDE = "policy"
CACHE_VERSION = 1


@dataclass(frozen=True)
class Question:
    """A question of two options: the statement the policy answers True / False on (the first
    option's), the two answers (True: ``answers[0]``), the checker's verdict of each and each
    labeller's label of each."""

    id: str
    claim: str
    answers: tuple[str, str]
    truth: tuple[int, int]
    labels: dict[str, tuple[Label, Label]] = field(default_factory=dict)


@dataclass
class LabelCache:
    """Every question's labels, the labellers, where they were read from and the speech rules
    the runs enforced (per labeller: the limits and what was done to the speeches)."""

    questions: list[Question]
    labellers: list[str]
    sources: list[str]
    speech: dict[str, dict[str, Any]] = field(default_factory=dict)


# ------------------------------------------------------------------------ the cache
def speech_rules(transcripts: Sequence[Transcript]) -> dict[str, dict[str, Any]]:
    """Per protocol: the word limits its speeches were held to and the last decision on each
    speech (``within``, ``truncated``, ``reask`` then kept), with the longest kept speech."""
    out: dict[str, dict[str, Any]] = {}
    for t in transcripts:
        for turn in t.turns:
            words = (turn.rules or {}).get("words") or []
            if not words:
                continue
            row = out.setdefault(
                t.protocol,
                {"speeches": 0, "max_words": [], "decisions": {}, "longest_kept": 0, "reasked": 0},
            )
            last = words[-1]
            row["speeches"] += 1
            row["reasked"] += int(len(words) > 1)
            if last.get("max_words") not in row["max_words"]:
                row["max_words"].append(last.get("max_words"))
            kind = str(last.get("decision"))
            row["decisions"][kind] = row["decisions"].get(kind, 0) + 1
            row["longest_kept"] = max(row["longest_kept"], int(last.get("kept_words") or 0))
    return out


def _answers_of(ts: Sequence[Transcript]) -> dict[str, tuple[str, str, list[str], str]]:
    """Per answer (item id): its question, the proposed answer, the options and the statement
    of the proposed answer."""
    out: dict[str, tuple[str, str, list[str], str]] = {}
    for t in ts:
        line = labelling(t)
        if line is None:
            continue
        i = item_id(t)
        claims = ((t.item or {}).get("meta") or {}).get("claims") or {}
        out[i] = (
            str(line.get("question_id") or i),
            str(line.get("proposed")),
            [str(c) for c in line.get("choices") or []],
            str(claims.get(CORRECT, "")),
        )
    return out


def cache_from_run(run_dir: Path) -> LabelCache:
    """The labels of one labelling run (its main labellers only); a question whose two
    answers were not both labelled by every labeller is a :class:`UserError`."""
    ts = load_transcripts(run_dir)
    rows, truth, _ = labellers(ts)
    rows = [r for r in rows if r.main]
    info = _answers_of(ts)
    by_question: dict[str, dict[str, str]] = defaultdict(dict)
    for i, (q, proposed, _, _) in info.items():
        by_question[q][proposed] = i
    questions = []
    for q, answers in sorted(by_question.items()):
        choices = info[next(iter(answers.values()))][2]
        if len(choices) != 2 or set(answers) != set(choices):
            raise UserError(
                f"{run_dir}: question {q}: the policy answers from two options, "
                f"and both must be labelled (options {choices}, labelled "
                f"{sorted(answers)})"
            )
        ids = (answers[choices[0]], answers[choices[1]])
        missing = [r.name for r in rows if any(i not in r.labels for i in ids)]
        if missing:
            raise UserError(f"{run_dir}: question {q}: not labelled by {', '.join(missing)}")
        questions.append(
            Question(
                q,
                info[ids[0]][3],
                (choices[0], choices[1]),
                (truth[ids[0]], truth[ids[1]]),
                {r.name: (r.labels[ids[0]], r.labels[ids[1]]) for r in rows},
            )
        )
    if not questions:
        raise UserError(f"{run_dir}: no labelled answers (not a labelling run?)")
    return LabelCache(questions, [r.name for r in rows], [str(run_dir)], speech_rules(ts))


def merge(caches: Sequence[LabelCache]) -> LabelCache:
    """The labellers of several caches on the same questions (a labeller's name once)."""
    first = caches[0]
    out = LabelCache(
        list(first.questions), list(first.labellers), list(first.sources), dict(first.speech)
    )
    for c in caches[1:]:
        twice = set(c.labellers) & set(out.labellers)
        if twice:
            raise UserError(
                f"{c.sources[0]}: labeller {sorted(twice)[0]} also in "
                f"{out.sources[0]}: one source per labeller"
            )
        theirs = {q.id: q for q in c.questions}
        if set(theirs) != {q.id for q in out.questions}:
            raise UserError(f"{c.sources[0]}: not the questions of {out.sources[0]}")
        out.questions = [
            Question(q.id, q.claim, q.answers, q.truth, {**q.labels, **theirs[q.id].labels})
            for q in out.questions
        ]
        out.labellers += c.labellers
        out.sources += c.sources
        out.speech.update(c.speech)
    return out


def write_cache(cache: LabelCache, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"version": CACHE_VERSION, **asdict(cache)}
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


def read_cache(path: Path) -> LabelCache:
    """A cache :func:`write_cache` wrote; another file is a :class:`UserError`."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("version") != CACHE_VERSION:
            raise ValueError(f"version {data.get('version')!r}, not {CACHE_VERSION}")
        questions = [
            Question(
                q["id"],
                q["claim"],
                tuple(q["answers"]),
                tuple(q["truth"]),
                {k: tuple(v) for k, v in q["labels"].items()},
            )
            for q in data["questions"]
        ]
        return LabelCache(
            questions,
            list(data["labellers"]),
            list(data["sources"]),
            dict(data.get("speech") or {}),
        )
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise UserError(f"{path}: not a label cache ({exc})") from None


def load_labels(paths: Sequence[str]) -> LabelCache:
    """The labels of ``paths``: labelling run directories or label caches."""
    caches = []
    for n, p in enumerate(paths):
        path = resolve_path(p)
        if path.is_dir():
            caches.append(cache_from_run(path))
        elif path.is_file():
            caches.append(read_cache(path))
        else:
            raise UserError(
                f"labeller_reward.labels[{n}]: {p}: no such run directory or label cache"
            )
    return merge(caches)


# -------------------------------------------------------------------------- rewards
def arms_of(cache: LabelCache, wanted: Sequence[str] | None) -> list[str]:
    """The arms to train: ``wanted``, each checked, or checker, every labeller, shuffled."""
    known = [CHECKER, *cache.labellers, SHUFFLED]
    if wanted is None:
        return known
    for a in wanted:
        if a not in known:
            raise UserError(f"labeller_reward.arms: {a!r} is not one of {', '.join(known)}")
    return list(wanted)


def rewards(cache: LabelCache, arm: str, seed: int = 0) -> dict[str, tuple[float, float]]:
    """r(question, answer) of each question's two answers under ``arm``."""
    if arm == CHECKER:
        return {q.id: (float(q.truth[0]), float(q.truth[1])) for q in cache.questions}
    if arm == SHUFFLED:
        flat = [float(t) for q in cache.questions for t in q.truth]
        random.Random(seed).shuffle(flat)
        return {q.id: (flat[2 * k], flat[2 * k + 1]) for k, q in enumerate(cache.questions)}

    def value(x: Label) -> float:
        return ABSTAINED_REWARD if x is None else float(x)

    return {q.id: (value(q.labels[arm][0]), value(q.labels[arm][1])) for q in cache.questions}


def labels_of(r: dict[str, tuple[float, float]]) -> dict[str, tuple[Label, Label]]:
    """An arm's reward read as a label (1/2: abstained)."""

    def label(x: float) -> Label:
        return None if x == ABSTAINED_REWARD else int(x)

    return {k: (label(a), label(b)) for k, (a, b) in r.items()}


def expected_reward(p: Any, r_first: Any, r_second: Any) -> Any:
    """E[r] = π·r(first) + (1 − π)·r(second) (floats or tensors)."""
    return p * r_first + (1 - p) * r_second


def split(cache: LabelCache, held_out: int, seed: int) -> tuple[list[Question], list[Question]]:
    """(training, held-out) questions: ``held_out`` of them drawn by ``seed``."""
    qs = sorted(cache.questions, key=lambda q: q.id)
    if held_out >= len(qs):
        raise UserError(
            f"labeller_reward.held_out: {held_out} of {len(qs)} questions leaves none to train on"
        )
    random.Random(seed).shuffle(qs)
    return qs[held_out:], qs[:held_out]


# -------------------------------------------------------------------------- figures
def _ci(
    values: Sequence[float], clusters: Sequence[str], draws: int, seed: int
) -> dict[str, float]:
    from llmdebate.training.self_play import interval

    code: dict[str, int] = {}
    return interval(values, [code.setdefault(c, len(code)) for c in clusters], draws, seed)


def sample_rows(
    questions: Sequence[Question], p: Sequence[float], samples: int, rng: np.random.Generator
) -> list[tuple[str, int]]:
    """(question, answer index) of ``samples`` answers drawn from the policy per question."""
    out = []
    for q, pi in zip(questions, p, strict=True):
        for u in rng.random(samples):
            out.append((q.id, 0 if u < pi else 1))
    return out


def round_figures(
    train: Sequence[Question],
    held: Sequence[Question],
    p_train: Sequence[float],
    p_held: Sequence[float],
    r: dict[str, tuple[float, float]],
    samples: int,
    *,
    seed: int,
    draws: int,
) -> dict[str, Any]:
    """One round's figures (module docstring) from the policy's π on each question."""
    truth = {q.id: q.truth for q in [*train, *held]}
    labels = labels_of(r)
    rows = sample_rows(train, p_train, samples, np.random.default_rng(seed))
    ys = [truth[q][a] for q, a in rows]
    xs = [labels[q][a] for q, a in rows]
    qids = [q for q, _ in rows]
    m = mcc(confusion(ys, xs))
    m_ci = metric_intervals(ys, xs, qids, seed=seed, n_boot=draws)["mcc"]
    audited = [(x == 1, y == 1, x == y) for x, y in zip(xs, ys, strict=True) if x is not None]
    items = [q for q, x in zip(qids, xs, strict=True) if x is not None]
    audit = audit_shares(audited, items, seed=seed)

    def acc(qs: Sequence[Question], ps: Sequence[float]) -> list[float]:
        return [
            float(expected_reward(pi, q.truth[0], q.truth[1])) for q, pi in zip(qs, ps, strict=True)
        ]

    return {
        "accuracy": _ci(acc(held, p_held), [q.id for q in held], draws, seed),
        "train_accuracy": _ci(acc(train, p_train), [q.id for q in train], draws, seed),
        "mcc": {"value": m, "ci": None if m_ci.ci is None else list(m_ci.ci), "note": m_ci.note},
        "reward": _ci([r[q][a] for q, a in rows], qids, draws, seed),
        "mean_p": math.fsum(p_train) / len(p_train),
        "samples": len(rows),
        **{f"audit_{k}": v for k, v in audit.items()},
    }


# ---------------------------------------------------------------------------- train
def _lr(s: LabellerRewardSettings, step: int) -> float:
    return s.learning_rate * min(1.0, (step + 1) / max(1, s.warmup_steps)) * (1 - step / s.steps)


def train_arm(
    trainer: Any,
    prompts: dict[str, str],
    train: Sequence[Question],
    held: Sequence[Question],
    r: dict[str, tuple[float, float]],
    s: LabellerRewardSettings,
    *,
    seed: int,
    on_log: Callable[[dict[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
    """A fresh adapter (``seed``) on the trainer's model, trained on the expected reward
    ``r``; one entry of :func:`round_figures` per round, with the steps' mean objective."""
    from llmdebate.training.self_play import _ascend, _Batches

    torch = trainer.torch
    trainer.reset(seed)
    params = [p for p in trainer.model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=s.learning_rate, weight_decay=0.0)
    batches = _Batches(len(train), s.batch_size, seed)
    history: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    since: list[float] = []

    def record(step: int) -> None:
        p_train = trainer.score([prompts[q.id] for q in train])
        p_held = trainer.score([prompts[q.id] for q in held])
        entry = {
            "step": step,
            **round_figures(
                train,
                held,
                p_train,
                p_held,
                r,
                s.samples,
                seed=seed * 100_003 + step,
                draws=s.draws,
            ),
        }
        entry["train_objective"] = math.fsum(since) / len(since) if since else None
        entry["seconds"] = round(time.perf_counter() - t0, 1)
        history.append(entry)
        if on_log is not None:
            on_log(entry)

    record(0)
    for step in range(s.steps):
        batch = [train[i] for i in batches.next()]
        trainer.model.train()
        p = trainer.probabilities([prompts[q.id] for q in batch])
        r0 = torch.tensor([r[q.id][0] for q in batch], device=p.device)
        r1 = torch.tensor([r[q.id][1] for q in batch], device=p.device)
        value = expected_reward(p, r0, r1).mean()
        _ascend(torch, opt, params, value, _lr(s, step))
        since.append(float(value.detach()))
        if (step + 1) % s.round_every == 0 or step + 1 == s.steps:
            record(step + 1)
            since = []
    return history


def policy_prompts(questions: Sequence[Question]) -> dict[str, str]:
    """The policy's True/False prompt on each question's first option's statement."""
    from llmdebate.prompts import Prompts
    from llmdebate.training.estimate_eval import estimate_prompt

    prompts = Prompts()
    return {q.id: estimate_prompt(prompts, q.claim) for q in questions}


def train_on_labels(
    s: LabellerRewardSettings,
    model_dir: Path,
    out: Path,
    *,
    cache: LabelCache | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Every arm of ``s`` (each seed) on the labels of ``s.labels`` (or ``cache``, read from
    them), from ``model_dir``; writes ``<out>/cache.json``, ``metrics.jsonl``,
    ``summary.json`` and ``table.md``."""
    from llmdebate.experiment.progress import Steps
    from llmdebate.training.debate_reward import LeafTrainer
    from llmdebate.training.sft import torch_threads

    cache = cache if cache is not None else load_labels(s.labels)
    arms = arms_of(cache, s.arms)
    train, held = split(cache, s.held_out, s.split_seed)
    out.mkdir(parents=True, exist_ok=True)
    write_cache(cache, out / "cache.json")
    prompts = policy_prompts(cache.questions)
    metrics = out / "metrics.jsonl"
    metrics.write_text("", encoding="utf-8")
    t0 = time.perf_counter()
    results = []
    with torch_threads(s.threads):
        trainer = LeafTrainer(model_dir, s.lora, list(prompts.values()))
        for arm in arms:
            for seed in s.seeds:
                shown = Steps(f"{arm} seed {seed}", s.steps, progress, every_s=0.0)

                def log(e: dict[str, Any], arm: str = arm, seed: int = seed,
                        shown: Steps = shown) -> None:
                    with metrics.open("a", encoding="utf-8") as f:
                        f.write(json.dumps({"arm": arm, "seed": seed, **e}) + "\n")
                    shown.update(e["step"], note=round_line(e))

                history = train_arm(
                    trainer,
                    prompts,
                    train,
                    held,
                    rewards(cache, arm, seed),
                    s,
                    seed=seed,
                    on_log=log,
                )
                shown.close()
                results.append(
                    {
                        "arm": arm,
                        "seed": seed,
                        "history": history,
                        "hacking": hacking_line(history, SIDE),
                    }
                )
    summary = {
        "questions": len(cache.questions),
        "train": len(train),
        "held_out": len(held),
        "labellers": cache.labellers,
        "sources": cache.sources,
        "speech": cache.speech,
        "seconds": round(time.perf_counter() - t0, 1),
        "arms": results,
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    (out / "table.md").write_text(table(results), encoding="utf-8")
    return summary


# ---------------------------------------------------------------------------- lines
def _fmt(f: dict[str, Any] | None, key: str = "value") -> str:
    if f is None or f.get(key) is None:
        return "none"
    if "low" in f:
        return f"{f['value']:.2f} [{f['low']:.2f}, {f['high']:.2f}]"
    ci = f.get("ci")
    return f"{f['value']:.2f}" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")


def round_line(e: dict[str, Any]) -> str:
    """A round's figures in one line."""
    return (
        f"held-out accuracy {_fmt(e['accuracy'])}, labeller's MCC on the policy's "
        f"samples {_fmt(e['mcc'])}, reward {_fmt(e['reward'])}"
    )


def table(results: Sequence[dict[str, Any]]) -> str:
    """Arm × round: held-out accuracy, the labeller's MCC, the reward (95 % intervals over
    questions), then each arm's judge-hacking line."""
    head = (
        "| arm | seed | step | held-out accuracy | train accuracy | labeller's MCC | "
        "reward |\n|---|---|---|---|---|---|---|\n"
    )
    rows = []
    for res in results:
        for e in res["history"]:
            rows.append(
                f"| {res['arm']} | {res['seed']} | {e['step']} | "
                f"{_fmt(e['accuracy'])} | {_fmt(e['train_accuracy'])} | "
                f"{_fmt(e['mcc'])} | {_fmt(e['reward'])} |\n"
            )
    lines = [f"- {r['arm']} (seed {r['seed']}): {r['hacking']}\n" for r in results]
    return head + "".join(rows) + "\n" + "".join(lines)


def decisions_line(speech: dict[str, dict[str, Any]]) -> str:
    """The word limits the runs held their speeches to, and what was done to them."""
    if not speech:
        return "speech word limits: none recorded (no speech protocol, or no limit set)"
    parts = []
    for name, row in sorted(speech.items()):
        done = Counter(row["decisions"])
        parts.append(
            f"{name} {row['max_words']} words: {row['speeches']} speeches, "
            + ", ".join(f"{k} {v}" for k, v in sorted(done.items()))
            + f", longest kept {row['longest_kept']}"
        )
    return "speech word limits: " + "; ".join(parts)
