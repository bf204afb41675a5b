"""The judges section as HTML and Markdown tables (numbers from :mod:`.judges`)."""

from __future__ import annotations

from typing import Any

from llmdebate.report.html import e, table
from llmdebate.report.inference import short_note
from llmdebate.report.tables import markdown

HEAD = [
    "",
    "figure",
    "judgments",
    "items",
    "accuracy",
    "95% CI",
    "log score",
    "95% CI",
    "Brier",
    "95% CI",
    "mean active s",
]


def _f(x: float | None, nd: int = 3) -> str:
    return "–" if x is None else f"{x:.{nd}f}"


def _ci(ci: list[float] | None, note: str | None = None) -> str:
    if not ci:
        return short_note(note)
    return f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def _who(name: str, kind: str) -> str:
    return name if kind == "human" else f"{name} ({kind})"


def rows(per: dict[str, Any]) -> list[list[str]]:
    return [
        [
            _who(s.get("judge", name), s.get("kind", "human")),
            s.get("figure", ""),
            str(s["judgments"]),
            str(s.get("items", "")),
            _f(s["accuracy"]),
            _ci(s["accuracy_ci95"], s.get("accuracy_note")),
            _f(s["log_score"]),
            _ci(s["log_score_ci95"], s.get("log_score_note")),
            _f(s["brier"]),
            _ci(s["brier_ci95"], s.get("brier_note")),
            _f(s["mean_active_s"], 1),
        ]
        for name, s in per.items()
    ]


def _cal_rows(cal: dict[str, Any]) -> list[list[str]]:
    return [
        [f"{b['lo']:.1f}–{b['hi']:.1f}", str(b["n"]), _f(b["mean_p"]), _f(b["frac_true"])]
        for b in cal["bins"]
        if b["n"]
    ]


def _hlo(h: dict[str, Any] | None) -> list[list[str]]:
    if not h:
        return []
    return [
        [
            str(h["leaves"]),
            _f(h["human_accuracy"]),
            _f(h["llm_accuracy"]),
            _f(h["human_llm_agreement"]),
        ]
    ]


SAME_HEAD = [
    "protocol",
    "debates",
    "people's judgments",
    "people accuracy",
    "model accuracy",
    "oracle accuracy",
    "people = model",
    "people = oracle",
    "model = oracle",
]


def _same_rows(same: dict[str, Any] | None) -> list[list[str]]:
    if not same:
        return []
    return [
        [
            name,
            str(r["debates"]),
            str(r["human_judgments"]),
            _f(r["human_accuracy"]),
            _f(r["llm_accuracy"]),
            _f(r["oracle_accuracy"]),
            _f(r["human_llm_agreement"]),
            _f(r["human_oracle_agreement"]),
            _f(r["llm_oracle_agreement"]),
        ]
        for name, r in same.items()
    ]


CAL_JUDGE_HEAD = ["judge", "kind", "n", "Brier", "ECE", "accuracy at 0.5"]


def _cal_judge_rows(per: dict[str, Any]) -> list[list[str]]:
    return [
        [j, c["kind"], str(c["n"]), _f(c["brier"]), _f(c["ece"]), _f(c["accuracy"])]
        for j, c in per.items()
    ]


REVEAL_HEAD = ["protocol", "stepped judgments", "mean turns shown", "of", "mean stated cost"]


def _reveal_rows(per: dict[str, Any]) -> list[list[str]]:
    return [
        [
            name,
            str(s["stepped"]),
            _f(s["mean_turns_revealed"], 2),
            _f(s["mean_turns_total"], 2),
            _f(s["mean_reveal_cost"]),
        ]
        for name, s in per.items()
        if s.get("stepped")
    ]


MIXED_HEAD = ["row", "log-odds vs reference", "standard error", "95% interval"]


def _mixed_rows(mx: dict[str, Any] | None) -> list[list[str]]:
    if not mx:
        return []
    return [
        [f["row"], _f(f["log_odds"]), _f(f["se"]), _ci(f["ci95"], f.get("note"))]
        for f in mx["effects"]
    ]


def _mixed_note(mx: dict[str, Any]) -> str:
    sds = ", ".join(f"{k} {v:.3f}" for k, v in mx["random_effect_sd"].items())
    dropped = "".join(f" Dropped: {d}." for d in mx.get("dropped") or ())
    notes = sorted({f["note"] for f in mx["effects"] if f.get("note")})
    return (
        f"{mx['model']}; {mx['fit']}; reference row: {mx['reference']}; "
        f"{mx['judgments']} judgments, {mx['judges']} judges, {mx['items']} items; "
        f"random-effect sd: {sds or 'none'}.{dropped}"
        + "".join(f" No interval: {n}." for n in notes)
    )


HLO_HEAD = ["leaves", "people vs oracle", "model judge vs oracle", "people agree with model"]
CAL_HEAD = ["probability bin", "n", "mean probability", "share true"]


def render(sec: dict[str, Any]) -> str:
    """The HTML of the judges section."""
    agree = sec["agreement"]
    cal = sec["calibration"]
    parts = [
        "<h2 id='judges'>Human judges</h2>",
        f"<p class='muted'>{sec['judgments']} judgments from judged.jsonl. Accuracy (judge "
        "accuracy where the judge chooses the answer, leaf-claim accuracy where it rules on a "
        "leaf claim), log score (ln of the probability given to the truth) and Brier score "
        "from the scoring module; intervals: two-way cluster bootstrap over items and judges, "
        f"{sec['bootstrap']['resamples']} resamples, none under 10 items.</p>",
        "<h3>Per judge</h3>",
        table(["judge", *HEAD[1:]], rows(sec["per_judge"])),
        "<h3>Per protocol and view</h3>",
        table(["row", *HEAD[1:]], rows(sec["per_protocol"])),
        "<h3>Calibration</h3>",
        f"<p>People pooled: n = {cal['n']}, Brier = {_f(cal['brier'])}, "
        f"ECE = {_f(cal['ece'])}</p>",
        table(CAL_HEAD, _cal_rows(cal)),
        "<h4>Per judge</h4>",
        table(CAL_JUDGE_HEAD, _cal_judge_rows(sec.get("calibration_per_judge") or {})),
        "<h3>Agreement between judges</h3>",
        f"<p>{agree['debates']} debates judged by two or more people, {agree['pairs']} pairs of "
        f"judges, agreement {e(_f(agree['agreement']))}.</p>",
    ]
    mx = sec.get("mixed_effects")
    if mx:
        parts += [
            "<h3>Judge accuracy by row, judge and item random effects</h3>",
            f"<p class='muted'>{e(_mixed_note(mx))}</p>",
            table(MIXED_HEAD, _mixed_rows(mx)),
        ]
    reveal = _reveal_rows(sec["per_protocol"])
    if reveal:
        parts += [
            "<h3>Stepped reveal</h3>",
            "<p class='muted'>Turns each judge asked to see before answering, and their "
            "stated cost (the first turn free).</p>",
            table(REVEAL_HEAD, reveal),
        ]
    if sec.get("same_debates"):
        parts += [
            "<h3 id='people-model-oracle'>People, model judge and oracle on the same "
            "debates</h3>",
            "<p class='muted'>Debates ruled on by people and by a model judge or the oracle "
            "(<code>llmdebate judge --model / --oracle</code>); accuracy against the truth the "
            "scoring uses, agreement as the share of pairs with the same answer.</p>",
            table(SAME_HEAD, _same_rows(sec["same_debates"])),
        ]
    if sec.get("human_llm_oracle"):
        parts += [
            "<h3>People, model judge and oracle on the same leaves</h3>",
            table(HLO_HEAD, _hlo(sec["human_llm_oracle"])),
        ]
    return "\n".join(parts)


def render_markdown(sec: dict[str, Any]) -> str:
    out = [
        "## Human judges",
        "",
        f"{sec['judgments']} judgments.",
        "",
        "### Per judge",
        "",
        markdown(["judge", *HEAD[1:]], rows(sec["per_judge"])),
        "",
        "### Per protocol and view",
        "",
        markdown(["row", *HEAD[1:]], rows(sec["per_protocol"])),
        "",
        "### Calibration",
        "",
        markdown(CAL_HEAD, _cal_rows(sec["calibration"])),
        "",
        markdown(CAL_JUDGE_HEAD, _cal_judge_rows(sec.get("calibration_per_judge") or {})),
        "",
        f"Agreement between judges: {_f(sec['agreement']['agreement'])} over "
        f"{sec['agreement']['pairs']} pairs.",
        "",
    ]
    mx = sec.get("mixed_effects")
    if mx:
        out += [
            "### Judge accuracy by row, judge and item random effects",
            "",
            _mixed_note(mx),
            "",
            markdown(MIXED_HEAD, _mixed_rows(mx)),
            "",
        ]
    reveal = _reveal_rows(sec["per_protocol"])
    if reveal:
        out += ["### Stepped reveal", "", markdown(REVEAL_HEAD, reveal), ""]
    if sec.get("same_debates"):
        out += [
            "### People, model judge and oracle on the same debates",
            "",
            markdown(SAME_HEAD, _same_rows(sec["same_debates"])),
            "",
        ]
    if sec.get("human_llm_oracle"):
        out += [
            "### People, model judge and oracle",
            "",
            markdown(HLO_HEAD, _hlo(sec["human_llm_oracle"])),
            "",
        ]
    return "\n".join(out)


def calibration_png(cal: dict[str, Any], per_judge: dict[str, Any] | None = None) -> bytes:
    """Reliability curves: the people pooled (bold) and each judge (thin; at most 10)."""
    from llmdebate.report.plots import _png, reliability_axes, reliability_curve

    fig, ax = reliability_axes(
        "Judges' calibration", "probability given (bin mean)", "share true"
    )
    reliability_curve(
        ax, cal["bins"], marker="o", color="#E45756", label=f"people (n={cal['n']})", lw=2.2
    )
    for j, c in list((per_judge or {}).items())[:10]:
        reliability_curve(
            ax,
            c["bins"],
            marker=".",
            lw=0.9,
            alpha=0.8,
            ls="-" if c["kind"] == "human" else ":",
            label=f"{j} (n={c['n']})",
        )
    ax.legend(fontsize=8, loc="upper left")
    return _png(fig)
