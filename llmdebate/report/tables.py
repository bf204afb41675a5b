"""Markdown tables of a comparison (from the dict of :func:`llmdebate.report.metrics.compute`)."""

from __future__ import annotations

from typing import Any

from llmdebate.report.inference import short_note


def _f(x: float | None, nd: int = 3) -> str:
    return "–" if x is None else f"{x:.{nd}f}"


def _ci(ci: list[float] | None, nd: int = 3, note: str | None = None) -> str:
    if not ci:
        return short_note(note)
    return f"[{ci[0]:.{nd}f}, {ci[1]:.{nd}f}]"


def accuracy_rows(m: dict[str, Any]) -> list[list[str]]:
    """One row per protocol and view (blind / expert, passage hidden / shown): its figure."""
    return [
        [r["label"], r["figure"], str(r["items"]), _f(r["value"]),
         _ci(r["ci95"], note=r.get("interval_note"))]
        for r in m.get("rows") or []
    ]


def comparison_rows(m: dict[str, Any]) -> list[list[str]]:
    """Judge accuracy of two rows on the items both have."""
    return [
        [c["a"], c["b"], str(c["items"]), _f(c["difference"]), _ci(c["ci95"], note=c["note"])]
        for c in m.get("comparisons") or []
    ]


def payoff_rows(m: dict[str, Any]) -> list[list[str]]:
    """Mean normalised payoff of honest and dishonest provers, sampled and expected."""
    rows = []
    for proto, e in m["protocols"].items():
        pay = e.get("payoff")
        if not pay:
            continue
        for s in ("honest", "dishonest"):
            v = pay[s]
            rows.append([
                proto, s, str(v["n"]), str(v.get("items", "–")), _f(v["mean_normalized"]),
                _ci(v["mean_normalized_ci95"], note=v["mean_normalized_note"]),
                _f(v["mean_expected_normalized"]),
                _ci(v["mean_expected_normalized_ci95"], note=v["mean_expected_normalized_note"]),
                _f(pay.get("completeness_bound")),
            ])
    return rows


def pair_rows(m: dict[str, Any]) -> list[list[str]]:
    rows = []
    for proto, e in m["protocols"].items():
        p = e.get("pairs")
        if not p or not p.get("n"):
            continue
        rows.append(
            [
                proto,
                str(p["n"]),
                str(p.get("items", "–")),
                _f(p["discrimination"]),
                _ci(p["discrimination_ci95"], note=p.get("discrimination_note")),
                str(p["ties"]),
                _f(p["mean_gap"]),
                _ci(p["mean_gap_ci95"], note=p.get("mean_gap_note")),
            ]
        )
    return rows


def cost_rows(m: dict[str, Any]) -> list[list[str]]:
    rows = []
    for proto, e in m["protocols"].items():
        c = e["cost"]
        rows.append(
            [
                proto,
                str(c["debates"]),
                str(c["failed"]),
                str(c["calls"]),
                str(c["tokens_in"]),
                str(c["tokens_out"]),
                f"{c['cost']:.4f}",
            ]
        )
    return rows


def quote_rows(m: dict[str, Any]) -> list[list[str]]:
    """Verified quotes per protocol, side and model."""
    return [
        [q["protocol"], q["side"], q["model"], str(q["quotes"]), str(q["verified"]),
         _f(q["share_verified"])]
        for q in m.get("quotes") or []
    ]


ACC_HEAD = ["row", "figure", "items", "value", "95% bootstrap CI (items)"]
COMPARE_HEAD = [
    "row a", "row b", "shared items", "judge accuracy a − b", "95% paired bootstrap CI"
]
PAYOFF_HEAD = [
    "protocol", "prover", "debates", "items", "mean normalised payoff", "95% CI (items)",
    "mean expected normalised payoff", "95% CI", "completeness bound (1 − ε)",
]
QUOTE_HEAD = ["protocol", "side", "model", "quotes", "verified", "share verified"]
PAIR_HEAD = [
    "protocol",
    "pairs",
    "items",
    "P[R(honest) > R(dishonest)]",
    "95% CI (items)",
    "ties",
    "mean normalized gap",
    "95% CI (items)",
]
COST_HEAD = ["protocol", "debates", "failed", "calls", "tokens in", "tokens out", "cost (USD)"]


def markdown(head: list[str], rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows]
    return "\n".join(out)


def comparison_markdown(m: dict[str, Any], title: str = "Protocol comparison") -> str:
    """The Markdown report written next to comparison.json."""
    b = m["bootstrap"]
    cal = m["calibration"]
    parts = [
        f"# {title}",
        "",
        f"{m['n_transcripts']} transcripts. Intervals: percentile bootstrap over items, "
        f"{b['resamples']} resamples, seed {b['seed']}; none with fewer than 10 items "
        "(\"none (n < 10)\") or when every item scored the same (\"none (no spread)\"). "
        "Definitions: docs/metrics.md.",
        "",
        "## Judge accuracy and honest-beats-dishonest per protocol and view",
        "",
        "Judge accuracy: the share of the item's debates where the judge chose the gold "
        "answer. Honest beats dishonest: P[R(honest) > R(dishonest)] over items "
        "(recursive protocols). Blind and expert, passage hidden and shown are separate rows.",
        "",
        markdown(ACC_HEAD, accuracy_rows(m)),
        "",
    ]
    if comparison_rows(m):
        parts += [
            "## Judge accuracy compared on the same items",
            "",
            markdown(COMPARE_HEAD, comparison_rows(m)),
            "",
        ]
    if quote_rows(m):
        parts += [
            "## Quotes from the passage (checked against it)",
            "",
            markdown(QUOTE_HEAD, quote_rows(m)),
            "",
        ]
    parts += [
        "## Honest against dishonest prover on the same item",
        "",
        markdown(PAIR_HEAD, pair_rows(m)),
        "",
        markdown(PAYOFF_HEAD, payoff_rows(m)),
        "",
        "## Estimator calibration (prover-estimator, p_d against gold)",
        "",
        f"n = {cal['n']} top claims, Brier of p_d on the top claims = {_f(cal['brier'])} (the "
        "closing lines' estimator Brier also grades each b_i), ECE = "
        f"{_f(cal['ece'])}, "
        f"accuracy of p_d > 0.5 = {_f(cal['accuracy'])}",
        "",
        "## Calls, tokens and cost per protocol",
        "",
        markdown(COST_HEAD, cost_rows(m)),
        "",
    ]
    if m.get("formal"):
        parts += ["## Formal obfuscation table", "", m["formal"]["markdown"], ""]
    return "\n".join(parts)
