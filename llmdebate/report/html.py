"""One self-contained HTML report: tables, inlined plots, and every debate to browse.

No external resource is referenced (images are base64 data URIs, the style sheet is inline,
no script). Every string that came from a model, a dataset or a config is escaped.
"""

from __future__ import annotations

import base64
import html
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from llmdebate.core import scoring
from llmdebate.core.schemas import Claim, RoundRecord, Transcript
from llmdebate.protocols.families import RecursiveProtocol
from llmdebate.protocols.registry import protocol_of
from llmdebate.report import tables

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;max-width:1200px;margin:1.5em auto;
padding:0 1em;color:#222;line-height:1.4}
h1{font-size:1.6em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:1.6em}
table{border-collapse:collapse;margin:.6em 0}td,th{border:1px solid #ccc;padding:.25em .55em;
font-size:.9em;vertical-align:top}th{background:#f2f2f2}
.caveat{background:#fff4e5;border-left:5px solid #f0a030;padding:.6em 1em;margin:1em 0}
.plots img{max-width:100%;border:1px solid #ddd;margin:.3em}
details{margin:.25em 0 .25em .6em}summary{cursor:pointer}
.debate{border:1px solid #ddd;border-radius:4px;padding:.2em .6em;margin:.4em 0}
.tree ul{list-style:none;padding-left:1.3em;border-left:1px dashed #bbb}
.tree li{margin:.25em 0;background:#fff}
.tree li.path{background:#eef6ff;border-left:3px solid #4C78A8}
.claim{font-weight:600}.k{color:#666;font-size:.85em}
.win{color:#2a7a2a;font-weight:600}.lose{color:#b02a2a;font-weight:600}
pre{white-space:pre-wrap;background:#f8f8f8;padding:.4em;margin:.2em 0;font-size:.85em}
.turn{margin:.4em 0;padding:.3em .6em;border-left:3px solid #999}
.muted{color:#777;font-size:.85em}
.lvl1{margin-left:1.5em}.lvl2{margin-left:3em}
"""


def e(x: Any) -> str:
    """Escape anything for HTML text and attribute values."""
    return html.escape("" if x is None else str(x), quote=True)


def img(png: bytes, alt: str) -> str:
    data = base64.b64encode(png).decode("ascii")
    return f'<img alt="{e(alt)}" src="data:image/png;base64,{data}">'


def table(head: list[str], rows: list[list[str]]) -> str:
    th = "".join(f"<th>{e(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><tr>{th}</tr>{body}</table>"


def _num(x: float | None, nd: int = 4) -> str:
    return "–" if x is None else f"{x:.{nd}g}"


DIRS = {-1: "−1 (over-estimated)", 0: "0 (about right)", 1: "+1 (under-estimated)"}


def _claim(c: Claim) -> str:
    truth = (
        ""
        if c.truth is None
        else f' <span class="k">[gold: {"true" if c.truth else "false"}]</span>'
    )
    return f'<span class="claim">{e(c.text)}</span>{truth}'


def _unit(t: Transcript) -> tuple[float, str]:
    """The page's one unit of payoff: r^(d+1) for discounted rewards (named), else as is."""
    if scoring.reward_scheme(t) == scoring.DISCOUNTED:
        return scoring.normalizer(t.config), " / r^(d+1)"
    return 1.0, ""


def _round_body(rd: RoundRecord, unit: tuple[float, str] = (1.0, "")) -> str:
    scale, per = unit
    bits = [f'<span class="k">round k = {rd.k}</span>']
    if rd.p is not None:
        bits.append(f"estimator p = {_num(rd.p)}")
    if rd.direction is not None:
        bits.append(f"prover direction s = {e(DIRS.get(rd.direction, rd.direction))}")
    if rd.claimed is not None:
        bits.append(f"prover says: {'true' if rd.claimed else 'false'}")
    if rd.decomposition is not None:
        bits.append(f"rule M_D = {e(rd.decomposition.rule.describe())}")
    if rd.m is not None:
        bits.append(f"M_D(z) = {rd.m}")
    if rd.expected_m is not None:
        bits.append(f"E[M_D] = {_num(rd.expected_m)}")
    if rd.reward is not None:
        bits.append(f"reward r_{rd.k}{per} = {_num(rd.reward / scale)}")
    if rd.expected_reward is not None:
        bits.append(f"E[r_{rd.k} | path]{per} = {_num(rd.expected_reward / scale)}")
    out = "<div>" + " · ".join(bits) + "</div>"
    if rd.decomposition is not None and rd.decomposition.rationale:
        out += f'<div class="muted">rationale: {e(rd.decomposition.rationale)}</div>'
    if rd.evidence is not None:
        out += f"<div>evidence (fresh context):<pre>{e(rd.evidence.text)}</pre></div>"
    if rd.verdict is not None:
        v = rd.verdict
        prob = "" if v.probability is None else f" (P[O=1] = {_num(v.probability)})"
        out += f"<div>judge verdict O = {v.value}{prob} {e(v.judge)}</div>"
        if v.rationale:
            out += f'<div class="muted">judge: {e(v.rationale)}</div>'
    return out


def claim_tree(t: Transcript) -> str:
    """The recursion as a nested list: each round's subclaims, the chosen one expanded."""
    if not t.rounds:
        return '<p class="muted">no rounds recorded</p>'

    def node(i: int) -> str:
        rd = t.rounds[i]
        html_ = _round_body(rd, _unit(t))
        dec = rd.decomposition
        if dec is None:
            return html_
        items = []
        for j, sub in enumerate(dec.subclaims):
            extra = []
            if j < len(rd.b):
                extra.append(f"b = {_num(rd.b[j])}")
            if j < len(rd.u):
                extra.append(f"u = {_num(rd.u[j])}")
            if j < len(rd.z):
                extra.append(f"sampled z = {rd.z[j]}")
            if rd.claimed_subclaims and j < len(rd.claimed_subclaims):
                extra.append(f"prover says {'true' if rd.claimed_subclaims[j] else 'false'}")
            chosen = rd.recurse == j
            tag = " ← recursion (chosen)" if chosen else ""
            inner = ""
            if chosen and i + 1 < len(t.rounds):
                inner = node(i + 1)
            cls = ' class="path"' if chosen else ""
            items.append(
                f"<li{cls}>y{j + 1}: {_claim(sub)} "
                f'<span class="k">{e(" · ".join(extra))}{e(tag)}</span>{inner}</li>'
            )
        return html_ + "<ul>" + "".join(items) + "</ul>"

    top = t.rounds[0].claim
    return (
        f'<div class="tree"><div>{_claim(top)}</div><ul><li class="path">{node(0)}</li></ul></div>'
    )


def _init(t: Transcript) -> str:
    if t.init is None:
        return ""
    i = t.init
    return (
        f"<div>initialisation: prover answer a = {i.answer}, "
        f"estimator p_d = {_num(i.estimate.value)} ({e(i.estimate.method)}), "
        f"u = {_num(i.u)}, ẑ = {i.zhat}, r_init / r^(d+1) = "
        f"{_num(i.reward / scoring.normalizer(t.config))}</div>"
    )


def _turns(t: Transcript) -> str:
    parts = []
    for turn in t.turns:
        pos = f" arguing “{e(turn.position)}”" if turn.position else ""
        parts.append(
            f'<div class="turn"><b>{e(turn.role)}</b> <span class="k">round {turn.round}</span>'
            f"{pos}<pre>{e(turn.text)}</pre></div>"
        )
    return "".join(parts)


def _calls(t: Transcript) -> str:
    if not t.calls:
        return ""
    rows = [
        [
            c.role,
            c.act,
            c.model,
            str(c.tokens_in),
            str(c.tokens_out),
            f"{c.cost:.5f}",
            "yes" if c.cached else "",
            (c.completion or "")[:400] or (c.error or ""),
        ]
        for c in t.calls
    ]
    head = ["role", "act", "model", "in", "out", "cost", "cached", "completion / error"]
    return f"<details><summary>{len(t.calls)} model calls</summary>{table(head, rows)}</details>"


def _outcome(t: Transcript) -> str:
    bits = [f"status: {e(t.status)}"]
    if t.meta.get("decision") is not None:
        ok = str(t.meta["decision"]).lower() == str(t.meta.get("gold", "")).lower()
        cls = "win" if ok else "lose"
        bits.append(f'judge chose <span class="{cls}">{e(t.meta["decision"])}</span>')
    paid = scoring.normalized_total(t)
    if paid is not None:
        per = _unit(t)[1]
        bits.append(f"prover payoff R_A{per} = {paid:.3f}")
        expected = scoring.normalized_total(t, expected=True)
        if expected is not None:
            bits.append(f"expected{per} = {expected:.3f}")
    if t.prover_won is not None:
        bits.append("prover won" if t.prover_won else "prover lost")
    if t.stopped_early:
        bits.append(f"stopped early at round {t.stop_round} (all remaining directions 0)")
    if t.failure:
        bits.append(f"failure: {e(t.failure)}")
    return " · ".join(bits)


def debate_html(t: Transcript) -> str:
    variant = t.meta.get("variant", "")
    summary = f"{e(t.protocol)} · {e(variant)} · {_outcome(t)}"
    body = [f'<div class="muted">debate {e(t.id)} · seed {t.seed} · agents {e(t.agents)}</div>']
    if t.meta.get("decision_probability") is not None:
        body.append(f"<div>judge P[choice] = {_num(t.meta['decision_probability'])}</div>")
    body.append(_init(t))
    if t.rounds:
        body.append(claim_tree(t))
    body.append(_turns(t))
    body.append(_calls(t))
    p = protocol_of(t)
    opened = " open" if isinstance(p, RecursiveProtocol) and p.opens_in_report else ""
    return f'<details class="debate"{opened}><summary>{summary}</summary>{"".join(body)}</details>'


def _item_header(t: Transcript) -> str:
    item = t.item or {}
    q = item.get("question", "")
    choices = item.get("choices")
    gold = t.meta.get("gold", item.get("answer"))
    iid = item.get("id", t.meta.get("item_id", ""))
    return f"{e(iid)}: {e(q)} — choices {e(choices)}, gold {e(gold)}"


def debates_section(transcripts: Sequence[Transcript]) -> str:
    by_item: dict[str, list[Transcript]] = defaultdict(list)
    for t in transcripts:
        by_item[str(t.meta.get("item_id", t.id))].append(t)
    out = []
    for n, (_, ts) in enumerate(by_item.items()):
        inner = "".join(debate_html(t) for t in ts)
        out.append(
            f"<details{' open' if n == 0 else ''}><summary>{_item_header(ts[0])} "
            f"({len(ts)} debates)</summary>"
            f"{inner}</details>"
        )
    return "".join(out)


def render(
    metrics: dict[str, Any],
    transcripts: Sequence[Transcript],
    plots: dict[str, bytes],
    *,
    title: str,
    caveat: str,
    notes: str = "",
    extra: str = "",
) -> str:
    """The whole report as one HTML string."""
    cal = metrics["calibration"]
    b = metrics["bootstrap"]
    parts = [
        f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{e(title)}</title>",
        f"<style>{CSS}</style></head><body><h1>{e(title)}</h1>",
        f'<div class="caveat">{caveat}</div>',
        notes,
        "<h2 id='rows'>Judge accuracy and honest-beats-dishonest per protocol and view</h2>",
        f"<p class='muted'>Judge accuracy: the share of the item's debates where the judge "
        f"chose the gold answer. Honest beats dishonest: P[R(honest) &gt; R(dishonest)] over "
        f"items (recursive protocols). Percentile bootstrap over items, {b['resamples']} "
        f"resamples, seed {b['seed']}; no interval under 10 items. Definitions in "
        f"docs/metrics.md.</p>",
        table(tables.ACC_HEAD, tables.accuracy_rows(metrics)),
    ]
    if tables.comparison_rows(metrics):
        parts += [
            "<h2>Judge accuracy compared on the same items</h2>",
            table(tables.COMPARE_HEAD, tables.comparison_rows(metrics)),
        ]
    if tables.quote_rows(metrics):
        parts += [
            "<h2>Quotes from the passage (checked against it)</h2>",
            table(tables.QUOTE_HEAD, tables.quote_rows(metrics)),
        ]
    parts += [
        "<h2>Honest against dishonest prover on the same item</h2>",
        table(tables.PAIR_HEAD, tables.pair_rows(metrics)),
        table(tables.PAYOFF_HEAD, tables.payoff_rows(metrics)),
        "<h2>Estimator calibration</h2>",
        f"<p>n = {cal['n']} top claims, Brier of p_d on the top claims = "
        f"{_num(cal['brier'], 3)} (the closing lines' estimator Brier also grades each b_i), "
        f"ECE = {_num(cal['ece'], 3)}, "
        f"accuracy of p_d &gt; 0.5 = {_num(cal['accuracy'], 3)}</p>",
        "<h2>Calls, tokens and cost per protocol</h2>",
        table(tables.COST_HEAD, tables.cost_rows(metrics)),
    ]
    if metrics.get("formal"):
        f = metrics["formal"]
        parts += [
            "<h2>Formal obfuscation table</h2>",
            f"<p>{e(f.get('caption', ''))}</p>",
            table(f["head"], f["rows"]),
        ]
        if f.get("notes"):
            parts.append(f"<p class='muted'>{e(' '.join(x.strip(' -') for x in f['notes']))}</p>")
    parts.append(extra)
    parts.append('<h2>Plots</h2><div class="plots">')
    parts += [img(png, name) for name, png in plots.items()]
    parts.append("</div>")
    parts += [
        f"<p class='muted'>{e(name)}.png not drawn: {e(why)}</p>"
        for name, why in (metrics.get("plots_not_drawn") or {}).items()
    ]
    parts.append("<h2>Every debate</h2>")
    parts.append(
        "<p class='muted'>Grouped by item; open an item, then a debate. The claim tree "
        "shows each round's subclaims with the estimator's probabilities b, the uniforms "
        "u and sampled outcomes z; the highlighted branch is the recursion path.</p>"
    )
    parts.append(debates_section(transcripts))
    parts.append("</body></html>")
    return "\n".join(parts)
