"""The judges section of a report: how people did, from ``judged.jsonl`` alone.

Every number comes from :func:`llmdebate.core.scoring.judgment_scores` on the judged transcripts
(the scoring module decides what is correct and what a probability scores):

Judgments are of three kinds (``meta.judgment.kind``): a person's (``human``), a model
judge's (``llm``, from ``llmdebate judge --model``) and the oracle's (``oracle``, from
``llmdebate judge --oracle``).

* accuracy, mean log score and mean Brier score per judge (every kind; a judge of both leaf
  claims and answer choices has a line for each) and per row
  (people; a row is a protocol and view: direct blind and expert, passage hidden and shown,
  apart), with intervals from the two-way cluster bootstrap over items and judges
  (:func:`llmdebate.report.inference.clustered_interval`); the figure is judge accuracy in
  the answer-choosing protocols and leaf-claim accuracy in the recursive ones;
* the rows of judge accuracy compared by a logistic regression with judge and item random
  effects (:func:`llmdebate.report.inference.mixed_logit`);
* calibration: the probability a judge gave to the first option (speech protocols) or to the
  leaf claim (recursive protocols) against the truth, in equal-width bins: the people pooled,
  and each judge on their own;
* active seconds per judgment; with stepped reveal, the turns each judge asked to see and
  their stated cost (computed by the scoring module);
* agreement: over debates judged by two or more people, the share of judge pairs that chose
  the same answer (or verdict);
* people, model and oracle on the same debates: per protocol, over the debates that people
  and a model judge or the oracle ruled on, each one's accuracy and how often they agree;
* (older runs) where a leaf claim judged by people was ruled on by a model judge in
  ``transcripts.jsonl``, the same comparison matched by the claim's text.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict
from itertools import combinations
from typing import Any

import numpy as np

from llmdebate.core import scoring
from llmdebate.core.schemas import Transcript
from llmdebate.judging import report_html
from llmdebate.protocols.registry import recursive
from llmdebate.report.inference import clustered_interval, mixed_logit
from llmdebate.report.metrics import (
    JUDGE_ACCURACY,
    LEAF_CLAIM_ACCURACY,
    calibration,
    item_id,
    row_of,
)
from llmdebate.report.sections import SECTIONS, Part, RunView

KINDS = ("human", "llm", "oracle")


def _judge(t: Transcript) -> str:
    return str((t.meta.get("judgment") or {}).get("judge", "?"))


def kind(t: Transcript) -> str:
    """Who gave a judgment: human, llm or oracle (judgments before kinds: human)."""
    return str((t.meta.get("judgment") or {}).get("kind", "human"))


def _answer(t: Transcript) -> Any:
    """What the judge decided: the leaf verdict (0/1) or the chosen answer's text."""
    if recursive(t):
        return t.rounds[-1].verdict.value if t.rounds and t.rounds[-1].verdict else None
    return str(t.meta.get("decision", "")).strip().lower()


def _p_true(t: Transcript) -> tuple[float, int] | None:
    """(the probability the judge gave, whether that proposition is true) for calibration."""
    s = scoring.judgment_scores(t)
    if s["p_correct"] is None or s["correct"] is None:
        return None
    if recursive(t):
        leaf = t.rounds[-1]
        assert leaf.verdict is not None and leaf.verdict.probability is not None
        return float(leaf.verdict.probability), int(leaf.claim.truth or 0)
    p_first = float((t.meta.get("judge") or {})["p_first"])
    truth = int(str(t.meta["options"][0]).strip().lower() == str(t.meta["gold"]).strip().lower())
    return p_first, truth


def figure(ts: Sequence[Transcript]) -> str:
    """What "accuracy" counts in these judgments: leaf-claim accuracy (recursive protocols:
    the judge rules on the leaf claim), else judge accuracy (the judge chooses the answer)."""
    kinds = {recursive(t) for t in ts}
    if kinds == {True}:
        return LEAF_CLAIM_ACCURACY
    return JUDGE_ACCURACY if kinds == {False} else "mixed"


def _stats(ts: Sequence[Transcript], seed: int, n_boot: int) -> dict[str, Any]:
    scores = [scoring.judgment_scores(t) for t in ts]
    out: dict[str, Any] = {"judgments": len(ts), "figure": figure(ts)}
    out["items"] = len({item_id(t) for t in ts})
    for k, name in enumerate(("correct", "log_score", "brier")):
        kept = [(s[name], t) for s, t in zip(scores, ts, strict=True) if s[name] is not None]
        vals = [float(v) for v, _ in kept]  # type: ignore[arg-type]
        ci, note = clustered_interval(
            vals, [item_id(t) for _, t in kept], [_judge(t) for _, t in kept],
            seed=seed + k, n_boot=n_boot,
        )
        key = "accuracy" if name == "correct" else name
        out[key] = float(np.mean(vals)) if vals else None
        out[f"{key}_ci95"] = ci
        out[f"{key}_note"] = note
        out[f"{key}_n"] = len(vals)
    secs = [
        float(t.meta["judgment"]["active_s"])
        for t in ts
        if (t.meta.get("judgment") or {}).get("active_s") is not None
    ]
    out["mean_active_s"] = float(np.mean(secs)) if secs else None
    out["median_active_s"] = float(np.median(secs)) if secs else None
    reveals = [r for r in ((t.meta.get("judgment") or {}).get("reveal") for t in ts) if r]
    out["stepped"] = len(reveals)
    if reveals:
        out["mean_turns_revealed"] = float(np.mean([r["turns"] for r in reveals]))
        out["mean_turns_total"] = float(np.mean([r["of"] for r in reveals]))
        out["mean_reveal_cost"] = float(np.mean([r["cost"] for r in reveals]))
    return out


def agreement(judged: Sequence[Transcript]) -> dict[str, Any]:
    """Pairwise agreement of judges on the same debate."""
    by: dict[str, list[Any]] = defaultdict(list)
    for t in judged:
        by[str(t.meta.get("debate_id", t.id))].append(_answer(t))
    pairs = agree = 0
    debates = 0
    for answers in by.values():
        if len(answers) < 2:
            continue
        debates += 1
        for a, b in combinations(answers, 2):
            pairs += 1
            agree += a == b
    return {"debates": debates, "pairs": pairs, "agreement": agree / pairs if pairs else None}


def _accuracy(ts: Sequence[Transcript]) -> float | None:
    vals = [scoring.judgment_scores(t)["correct"] for t in ts]
    known = [float(v) for v in vals if v is not None]
    return float(np.mean(known)) if known else None


def same_debates(judged: Sequence[Transcript]) -> dict[str, Any] | None:
    """People, the model judge(s) and the oracle on the debates they all ruled on, per row
    (protocol and view) and over all (None: no debate judged by people and by a model or the
    oracle).

    Accuracy is against the truth the scoring module uses; agreement is the share of
    (person, model) pairs, (person, oracle) pairs or (model, oracle) pairs with the same
    answer on a debate."""
    by: dict[str, dict[str, list[Transcript]]] = defaultdict(lambda: defaultdict(list))
    for t in judged:
        by[str(t.meta.get("debate_id", t.id))][kind(t)].append(t)
    rows: dict[str, dict[str, Any]] = {}
    groups: dict[str, list[dict[str, list[Transcript]]]] = defaultdict(list)
    for kinds in by.values():
        if kinds["human"] and (kinds["llm"] or kinds["oracle"]):
            t0 = kinds["human"][0]
            groups[row_of(t0)].append(kinds)
            groups["all"].append(kinds)
    if not groups:
        return None
    for name in [*sorted(p for p in groups if p != "all"), "all"]:
        gs = groups[name]

        def pick(k: str, gs: list[dict[str, list[Transcript]]] = gs) -> list[Transcript]:
            return [t for g in gs for t in g[k]]

        def agree(a: str, b: str, gs: list[dict[str, list[Transcript]]] = gs) -> float | None:
            pairs = [x == y for g in gs for x in map(_answer, g[a]) for y in map(_answer, g[b])]
            return float(np.mean(pairs)) if pairs else None

        rows[name] = {
            "debates": len(gs),
            "human_judgments": len(pick("human")),
            "with_llm": sum(bool(g["llm"]) for g in gs),
            "with_oracle": sum(bool(g["oracle"]) for g in gs),
            "human_accuracy": _accuracy(pick("human")),
            "llm_accuracy": _accuracy(pick("llm")),
            "oracle_accuracy": _accuracy(pick("oracle")),
            "human_llm_agreement": agree("human", "llm"),
            "human_oracle_agreement": agree("human", "oracle"),
            "llm_oracle_agreement": agree("llm", "oracle"),
        }
    return rows


def human_llm_oracle(
    judged: Sequence[Transcript], others: Sequence[Transcript]
) -> dict[str, Any] | None:
    """People, a model judge and the gold truth on the same leaf claims (None: no overlap)."""
    model: dict[str, list[int]] = defaultdict(list)
    for t in others:
        if not recursive(t) or t.status != "complete" or not t.rounds:
            continue
        leaf = t.rounds[-1]
        if (
            leaf.k == 0
            and leaf.verdict is not None
            and not leaf.verdict.judge.startswith(("human", "oracle"))
        ):
            model[leaf.claim.text].append(leaf.verdict.value)
    rows = []
    for t in judged:
        if kind(t) != "human":
            continue
        if not recursive(t) or not t.rounds or t.rounds[-1].verdict is None:
            continue
        leaf = t.rounds[-1]
        if leaf.claim.text in model and leaf.claim.truth is not None:
            assert leaf.verdict is not None
            rows.append((leaf.verdict.value, model[leaf.claim.text][0], int(leaf.claim.truth)))
    if not rows:
        return None
    h, m, o = (np.array(x, dtype=float) for x in zip(*rows, strict=True))
    return {
        "leaves": len(rows),
        "human_accuracy": float(np.mean(h == o)),
        "llm_accuracy": float(np.mean(m == o)),
        "human_llm_agreement": float(np.mean(h == m)),
        "oracle_true_share": float(np.mean(o)),
    }


def section(
    judged: Sequence[Transcript],
    others: Sequence[Transcript] = (),
    *,
    seed: int = 0,
    n_boot: int = 2000,
    n_bins: int = 10,
) -> dict[str, Any]:
    """Every number of the judges section (JSON-ready; see the module doc)."""
    by_judge: dict[str, list[Transcript]] = defaultdict(list)
    by_protocol: dict[str, list[Transcript]] = defaultdict(list)
    by_kind: dict[str, int] = defaultdict(int)
    people = [t for t in judged if kind(t) == "human"]
    for t in judged:
        by_judge[_judge(t)].append(t)
        by_kind[kind(t)] += 1
    for t in people:
        by_protocol[row_of(t)].append(t)
    points = [p for p in (_p_true(t) for t in people) if p is not None]
    per_judge_cal = {}
    for j, ts in sorted(by_judge.items()):
        pts = [p for p in (_p_true(t) for t in ts) if p is not None]
        if pts:
            cal = asdict(calibration(pts, n_bins))
            cal.pop("points")
            per_judge_cal[j] = {"kind": kind(ts[0]), **cal}
    return {
        "judgments": len(judged),
        "by_kind": {k: by_kind[k] for k in KINDS if by_kind.get(k)},
        "bootstrap": {
            "resamples": n_boot, "level": 0.95, "unit": "item × judge (two-way cluster)",
            "seed": seed,
        },
        "per_judge": {
            key: {"judge": _judge(ts[0]), "kind": kind(ts[0]), **_stats(ts, seed + 10 * i, n_boot)}
            for i, (key, ts) in enumerate(sorted(_by_judge_and_figure(by_judge).items()))
        },
        "per_protocol": {
            p: _stats(ts, seed + 1000 + 10 * i, n_boot)
            for i, (p, ts) in enumerate(sorted(by_protocol.items()))
        },
        "mixed_effects": _mixed(people),
        "calibration": asdict(calibration(points, n_bins)),
        "calibration_per_judge": per_judge_cal,
        "agreement": agreement(people),
        "same_debates": same_debates(judged),
        "human_llm_oracle": human_llm_oracle(judged, others),
    }


def _by_judge_and_figure(
    by_judge: dict[str, list[Transcript]],
) -> dict[str, list[Transcript]]:
    """Each judge's judgments, split by figure where they judged both leaf claims and answer
    choices (keys ``judge · leaf-claim accuracy`` and ``judge · judge accuracy``): two
    figures are never pooled into one accuracy."""
    out: dict[str, list[Transcript]] = {}
    for j, ts in by_judge.items():
        groups: dict[str, list[Transcript]] = defaultdict(list)
        for t in ts:
            groups[figure([t])].append(t)
        for fig, mine in groups.items():
            out[j if len(groups) == 1 else f"{j} · {fig}"] = mine
    return out


def _mixed(people: Sequence[Transcript]) -> dict[str, Any] | None:
    """People's judge accuracy by row (answer-choosing protocols) with judge and item random
    effects (None: fewer than two such rows)."""
    data = [
        (float(c), row_of(t), _judge(t), item_id(t))
        for t in people
        if not recursive(t) and (c := scoring.judgment_scores(t)["correct"]) is not None
    ]
    if not data:
        return None
    y, rows_, judges, items = (list(x) for x in zip(*data, strict=True))
    return mixed_logit(y, rows_, judges, items)


@SECTIONS.register("judges")
def judges_section(run: RunView) -> Part | None:
    """The people (and models) who judged the run's debates, when any did."""
    if not run.judged:
        return None
    sec = section(run.judged, run.transcripts, seed=run.seed, n_boot=run.n_boot, n_bins=run.n_bins)
    png = report_html.calibration_png(sec["calibration"], sec.get("calibration_per_judge"))
    return Part(
        "judges",
        sec,
        report_html.render_markdown(sec),
        report_html.render(sec),
        {"judges_calibration": png},
    )
