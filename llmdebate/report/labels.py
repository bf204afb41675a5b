"""The labels of a labelling run: each protocol's label of every answer, scored against the
checker (the report's "Labels" section; ``docs/labelling.md``).

A labelling run's items ask whether a policy's answer is correct (options ``correct`` and
``incorrect``; :mod:`llmdebate.data.labelling`). A protocol's label of an answer comes from its
debates on that item:

* a protocol that ends with the judge's choice (direct judgment, consultancy, two-sided
  debate, a topology such as proposer–critic): the judge's probability that the answer is
  correct, averaged over the item's debates in which no seat defends "incorrect" (a
  consultant or proposer defending the answer; both orders of a debate that pairs); label 1
  above 1/2, 0 below, an abstention at exactly 1/2;
* a recursive protocol (prover-estimator debate): the paired debates on "the answer is
  correct" and "the answer is incorrect", labelled by the prover who earned the higher
  payoff (expected over the protocol's draws where the run recorded it,
  ``debate.expected_rewards``, else the sampled one); a tie abstains. Two other labels are
  shown beside it: the estimator's p_d for "the answer is correct" (``(p_d)``) and the sign
  of R_A in the debate on it (``(R_A)``), each abstaining at 1/2 and 0.

The metrics are :mod:`llmdebate.report.label_metrics`'s; calls and tokens per label count every
model call of the debates a label was read from.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from llmdebate.core.schemas import Transcript
from llmdebate.data.labelling import CORRECT, INCORRECT
from llmdebate.intervals import is_too_few, short_note
from llmdebate.protocols.families import RecursiveProtocol
from llmdebate.protocols.registry import protocol_of
from llmdebate.report.html import e, img, table
from llmdebate.report.label_metrics import (
    METRICS,
    Interval,
    Label,
    confusion,
    mcnemar_exact,
    metric_intervals,
)
from llmdebate.report.records import item_id, normalized_expected_payoff, normalized_payoff
from llmdebate.report.sections import SECTIONS, Part, RunView

NAMES = {
    "accuracy": "accuracy",
    "on_correct": "on correct",
    "on_incorrect": "on incorrect",
    "macro_f1": "macro-F1",
    "mcc": "MCC",
    "youden_j": "Youden's J",
    "abstention": "abstained",
}


@dataclass
class Labeller:
    """One row: a protocol's (or an alternative rule's) label of every answer it labelled."""

    name: str
    rank: int
    main: bool = True
    labels: dict[str, Label] = field(default_factory=dict)
    calls: int = 0
    tokens: int = 0


def labelling(t: Transcript) -> dict[str, Any] | None:
    """The answers line a debate's item records (``meta.labelling``), or None."""
    meta = (t.item or {}).get("meta") or {}
    found = meta.get("labelling")
    return found if isinstance(found, dict) else None


def _side(value: float | None, middle: float) -> Label:
    if value is None or value == middle:
        return None
    return int(value > middle)


def p_correct(t: Transcript) -> float | None:
    """The judge's probability that the answer is correct (a judge's choice)."""
    decision, p = t.meta.get("decision"), t.meta.get("decision_probability")
    if decision not in (CORRECT, INCORRECT) or p is None:
        return None
    return float(p) if decision == CORRECT else 1.0 - float(p)


def payoff(t: Transcript) -> float | None:
    """The prover's payoff: expected where recorded, else sampled."""
    expected = normalized_expected_payoff(t)
    return expected if expected is not None else normalized_payoff(t)


def _cost(ts: Sequence[Transcript]) -> tuple[int, int]:
    calls = [c for t in ts for c in t.calls]
    return len(calls), sum(c.tokens_in + c.tokens_out for c in calls)


def _row(rows: dict[str, Labeller], name: str, rank: int, main: bool = True) -> Labeller:
    if name not in rows:
        rows[name] = Labeller(name, rank, main)
    return rows[name]


def labellers(transcripts: Sequence[Transcript]) -> tuple[list[Labeller], dict[str, int],
                                                         dict[str, str]]:
    """Every labeller's labels, the truth of every answer and its question (its unit)."""
    by: dict[tuple[str, str], list[Transcript]] = defaultdict(list)
    truth: dict[str, int] = {}
    question: dict[str, str] = {}
    for t in transcripts:
        line = labelling(t)
        if line is None or t.status != "complete":
            continue
        i = item_id(t)
        truth[i] = int(bool(line.get("correct")))
        question[i] = str(line.get("question_id") or i)
        by[(t.protocol, i)].append(t)
    rows: dict[str, Labeller] = {}
    for (name, i), ts in by.items():
        proto = protocol_of(ts[0])
        if isinstance(proto, RecursiveProtocol):
            _recursive(rows, name, proto.rank, i, ts)
        else:
            used = [t for t in ts if t.meta.get("assigned") != INCORRECT]
            ps = [p for p in map(p_correct, used) if p is not None]
            if not ps:
                continue
            row = _row(rows, name, proto.rank)
            row.labels[i] = _side(sum(ps) / len(ps), 0.5)
            calls, tokens = _cost(used)
            row.calls += calls
            row.tokens += tokens
    ordered = sorted(rows.values(), key=lambda r: (r.rank, r.name))
    return ordered, truth, question


def _recursive(
    rows: dict[str, Labeller], name: str, rank: int, i: str, ts: Sequence[Transcript]
) -> None:
    """The labels of a recursive protocol's paired debates on item ``i``."""
    on = {t.meta.get("claimed_answer") or t.meta.get("assigned"): t for t in ts}
    yes, no = on.get(CORRECT), on.get(INCORRECT)
    if yes is not None and no is not None:
        a, b = payoff(yes), payoff(no)
        if a is not None and b is not None:
            row = _row(rows, name, rank)
            row.labels[i] = _side(a - b, 0.0)
            calls, tokens = _cost([yes, no])
            row.calls += calls
            row.tokens += tokens
    if yes is None:
        return
    calls, tokens = _cost([yes])
    if yes.init is not None:
        row = _row(rows, f"{name} (p_d)", rank, main=False)
        row.labels[i] = _side(float(yes.init.estimate.value), 0.5)
        row.calls += calls
        row.tokens += tokens
    total = payoff(yes)
    if total is not None:
        row = _row(rows, f"{name} (R_A)", rank, main=False)
        row.labels[i] = _side(total, 0.0)
        row.calls += calls
        row.tokens += tokens


def _metric(value: float | None, interval: Interval) -> dict[str, Any]:
    ci = interval.ci
    return {"value": value, "ci": None if ci is None else list(ci), "note": interval.note}


def label_data(transcripts: Sequence[Transcript], *, seed: int, n_boot: int) -> dict[str, Any]:
    """The section's numbers: per labeller its metrics with intervals, the confusion counts,
    calls and tokens per label; McNemar's test between every two protocols."""
    rows, truth, question = labellers(transcripts)
    out: list[dict[str, Any]] = []
    for r in rows:
        ids = list(r.labels)
        ys = [truth[i] for i in ids]
        xs = [r.labels[i] for i in ids]
        c = confusion(ys, xs)
        cis = metric_intervals(ys, xs, [question[i] for i in ids], seed=seed, n_boot=n_boot)
        out.append({
            "labeller": r.name,
            "main": r.main,
            "answers": len(ids),
            "confusion": {"tp": c.tp, "fn": c.fn, "fp": c.fp, "tn": c.tn,
                          "abstained": c.abstained},
            "metrics": {name: _metric(fn(c), cis[name]) for name, fn in METRICS.items()},
            "calls_per_label": r.calls / len(ids) if ids else None,
            "tokens_per_label": r.tokens / len(ids) if ids else None,
        })
    tests = []
    main = [r for r in rows if r.main]
    for a, b in itertools.combinations(main, 2):
        common = [i for i in a.labels if i in b.labels]
        m = mcnemar_exact([truth[i] for i in common], [a.labels[i] for i in common],
                          [b.labels[i] for i in common])
        tests.append({"first": a.name, "second": b.name, "answers": m.n, "b": m.b, "c": m.c,
                      "p": m.p})
    correct = sum(truth.values())
    return {"answers": len(truth), "correct": correct, "incorrect": len(truth) - correct,
            "questions": len(set(question.values())), "rows": out, "mcnemar": tests}


def _cell(m: dict[str, Any]) -> str:
    """The value with its interval, or with why there is none (want of questions is said
    once, under the table)."""
    if m["value"] is None:
        return "–"
    ci = m["ci"]
    if ci:
        return f"{m['value']:.2f} [{ci[0]:.2f}, {ci[1]:.2f}]"
    return f"{m['value']:.2f}" + ("" if is_too_few(m["note"]) else f" {short_note(m['note'])}")


def too_few_line(data: dict[str, Any]) -> str | None:
    """The sentence under the table where a row has too few questions for an interval."""
    notes = {m["note"] for r in data["rows"] for m in r["metrics"].values()
             if is_too_few(m["note"])}
    return ("No interval where " + "; ".join(sorted(notes)) + ".") if notes else None


def label_rows(data: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """The labels table: a row per labeller, its metrics with their intervals."""
    head = ["labeller", "answers", *NAMES.values(), "calls/label", "tokens/label"]
    rows = []
    for r in data["rows"]:
        rows.append([
            r["labeller"], str(r["answers"]),
            *(_cell(r["metrics"][k]) for k in NAMES),
            "–" if r["calls_per_label"] is None else f"{r['calls_per_label']:.1f}",
            "–" if r["tokens_per_label"] is None else f"{r['tokens_per_label']:.0f}",
        ])
    return head, rows


def mcnemar_rows(data: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    head = ["first", "second", "answers", "only first right", "only second right", "p"]
    rows = [[m["first"], m["second"], str(m["answers"]), str(m["b"]), str(m["c"]),
             f"{m['p']:.3g}"] for m in data["mcnemar"]]
    return head, rows


def _md(head: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def mcc_plot(data: dict[str, Any]) -> bytes | None:
    """Each labeller's MCC against the checker with its interval (None: no MCC to draw)."""
    rows = [r for r in data["rows"] if r["metrics"]["mcc"]["value"] is not None]
    if not rows:
        return None
    from llmdebate.report.plots import _png, _pyplot

    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 0.5 + 0.45 * len(rows)))
    for y, r in enumerate(rows):
        m = r["metrics"]["mcc"]
        ax.plot([m["value"]], [y], "o", color="#1f77b4")
        if m["ci"]:
            ax.plot(m["ci"], [y, y], "-", color="#222222")
    ax.axvline(0.0, color="#888888", linewidth=0.8)
    ax.set_yticks(range(len(rows)), [r["labeller"] for r in rows])
    ax.invert_yaxis()
    ax.set_xlim(-1.05, 1.05)
    ax.set_xlabel("MCC of the labels with the checker (0: chance; bars: 95% interval)")
    return _png(fig)


INTRO = (
    "Each protocol labels every answer correct or incorrect, scored against the checker. "
    "Metrics over the labelled answers (abstentions apart); intervals: percentile bootstrap "
    "over the questions; McNemar's exact test between every two protocols "
    "(docs/labelling.md)."
)


@SECTIONS.register("labels")
def labels_section(run: RunView) -> Part | None:
    """The labels of a labelling run, when its items are a policy's answers."""
    if not any(labelling(t) is not None for t in run.transcripts):
        return None
    data = label_data(run.transcripts, seed=run.seed, n_boot=run.n_boot)
    head, rows = label_rows(data)
    mhead, mrows = mcnemar_rows(data)
    counts = (f"{data['answers']} answers to {data['questions']} questions: "
              f"{data['correct']} correct, {data['incorrect']} incorrect by the checker.")
    few = too_few_line(data)
    counts += f" {few}" if few else ""
    md = "\n\n".join(["## Labels", INTRO, counts, _md(head, rows), "### McNemar's exact tests",
                      _md(mhead, mrows) if mrows else "(fewer than two protocols)"])
    png = mcc_plot(data)
    pngs = {"labels_mcc": png} if png is not None else {}
    html = (f"<h2>Labels</h2><p>{e(INTRO)}</p><p>{e(counts)}</p>{table(head, rows)}"
            f"<h3>McNemar's exact tests</h3>{table(mhead, mrows)}"
            + (img(png, "MCC of each protocol's labels") if png is not None else ""))
    if png is not None:
        md += "\n\n![MCC of each protocol's labels](plots/labels_mcc.png)"
    return Part("labels", data, md, html, pngs)
