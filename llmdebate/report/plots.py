"""Plots of a comparison as PNG bytes (matplotlib, Agg backend; the ``report`` extra)."""

from __future__ import annotations

import io
from typing import Any

import numpy as np

from llmdebate.errors import MissingExtraError
from llmdebate.intervals import is_too_few
from llmdebate.protocols.registry import PROTOCOLS


def _pyplot() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise MissingExtraError("matplotlib", "report") from exc
    return plt


def _png(fig: Any, *, tight: bool = True) -> bytes:
    buf = io.BytesIO()
    if tight:
        fig.tight_layout()
    fig.savefig(buf, format="png", dpi=90)
    _pyplot().close(fig)
    return buf.getvalue()


def accuracy_rows(m: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows the accuracy plot draws: those with a value."""
    return [r for r in m.get("rows") or [] if r["value"] is not None]


INTERVAL_COLOUR = "#222222"
"""The colour of every drawn interval (error bars)."""
FIGURE_COLOURS = {"judge accuracy": "#4C78A8", "honest beats dishonest": "#54A24B"}


def accuracy_figure(m: dict[str, Any]) -> tuple[Any, Any] | None:
    """The accuracy plot's (figure, axes): every row's figure (judge accuracy, or honest beats
    dishonest) as a bar coloured by figure, its 95% bootstrap interval drawn where it has
    one, and each bar labelled with its value, n and, without an interval, why not. None
    where no row has a value (:func:`not_drawn` says why)."""
    rows = accuracy_rows(m)
    if not rows:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8.8, 3.8))
    for figure, colour in FIGURE_COLOURS.items():
        mine = [(k, r) for k, r in enumerate(rows) if r["figure"] == figure]
        if mine:
            ax.bar([k for k, _ in mine], [r["value"] for _, r in mine], width=0.6,
                   color=colour, label=figure)
    for k, r in enumerate(rows):
        if r["ci95"] is not None:
            lo, hi = r["ci95"]
            err = [[max(0.0, r["value"] - lo)], [max(0.0, hi - r["value"])]]
            ax.errorbar([k], [r["value"]], yerr=err, fmt="none", ecolor=INTERVAL_COLOUR,
                        elinewidth=1.6, capsize=6, capthick=1.6)
        unit = "pairs" if r["figure"] == "honest beats dishonest" else "items"
        why = "" if r["ci95"] is not None else (
            f"; no CI: {r.get('items')} < 10 items" if is_too_few(r.get("interval_note"))
            else "; no CI")
        top = r["ci95"][1] if r["ci95"] is not None else r["value"]
        ax.annotate(f"{r['value']:.2f} (n = {r['items']} {unit}{why})", (k, top),
                    ha="center", fontsize=7, xytext=(0, 4), textcoords="offset points")
    ax.set_xticks(range(len(rows)), [r["label"] for r in rows])
    ax.set_xlim(-0.6 - 0.4 * (len(rows) < 3), len(rows) - 0.4 + 0.4 * (len(rows) < 3))
    ax.axhline(0.5, color="grey", lw=0.8, ls="--", label="chance (0.5)")
    ax.set_ylim(0, 1.15)
    ax.set_xlabel("protocol (and the judge's view)")
    ax.set_ylabel("share; black lines: 95% CI over items", fontsize=8)
    ax.set_title("Judge accuracy / honest beats dishonest, per protocol and view", fontsize=10)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7)
    ax.tick_params(axis="x", labelsize=7, labelrotation=20)
    return fig, ax


def accuracy_plot(m: dict[str, Any]) -> bytes | None:
    """:func:`accuracy_figure` as PNG bytes (None where it has nothing to draw)."""
    drawn = accuracy_figure(m)
    return None if drawn is None else _png(drawn[0])


def payoff_values(m: dict[str, Any], protocol: str) -> tuple[list[float], list[float], bool]:
    """(honest, dishonest) normalised payoffs to plot and whether they are paired: the pairs'
    where there are any, else every complete debate's by side (different items)."""
    entry = m["protocols"].get(protocol, {})
    p = entry.get("pairs") or {}
    if p.get("n"):
        return list(p["honest"]), list(p["dishonest"]), True
    pay = entry.get("payoff") or {}
    return (list((pay.get("honest") or {}).get("normalized") or []),
            list((pay.get("dishonest") or {}).get("normalized") or []), False)


def payoff_protocol(m: dict[str, Any]) -> str | None:
    """The protocol whose provers' payoffs the payoff plot draws: the run's first whose
    estimator is rewarded (prover-estimator debate); None where the run has none."""
    for name in m["protocols"]:
        if name in PROTOCOLS and PROTOCOLS.get(name).can.estimator_rewards:
            return str(name)
    return None


SIDE_COLOURS = {"honest": "#54A24B", "dishonest": "#E45756"}
PAYOFF_BINS = 12


def payoff_figure(m: dict[str, Any], protocol: str | None = None) -> tuple[Any, Any] | None:
    """The payoff plot's (figure, axes): the honest and the dishonest prover's paid normalised
    payoffs, as bars side by side in each bin (opaque, never overlapping), counts on whole
    numbers: the pairs', or, without pairs, every debate's, titled unpaired. None where no
    debate of the protocol has a payoff."""
    protocol = protocol or payoff_protocol(m)
    if protocol is None:
        return None
    h, d, paired = payoff_values(m, protocol)
    if not h and not d:
        return None
    plt = _pyplot()
    from matplotlib.ticker import MaxNLocator

    fig, ax = plt.subplots(figsize=(6.5, 3.4))
    allv = h + d
    lo, hi = min(allv), max(allv)
    edges = (np.linspace(lo, hi, PAYOFF_BINS + 1) if hi > lo
             else np.array([lo - 0.5, hi + 0.5]))
    width = float(edges[1] - edges[0])
    kind = "pairs" if paired else "debates"
    for j, (vals, who) in enumerate(((h, "honest"), (d, "dishonest"))):
        counts, _ = np.histogram(vals, bins=edges)
        ax.bar(edges[:-1] + width * (0.1 + 0.4 * j), counts, width=width * 0.4, align="edge",
               color=SIDE_COLOURS[who], label=f"{who} (n = {len(vals)} {kind})")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.legend(fontsize=8)
    ax.set_xlabel("paid payoff R_A / r^(d+1)")
    ax.set_ylabel("debates (count)")
    how = ("paired: both answers on each item" if paired
           else "unpaired: honest and dishonest debates on different items")
    ax.set_title(f"Prover payoffs ({protocol}), {how}", fontsize=9)
    return fig, ax


def payoff_plot(m: dict[str, Any], protocol: str | None = None) -> bytes | None:
    """:func:`payoff_figure` as PNG bytes (None where it has nothing to draw)."""
    drawn = payoff_figure(m, protocol)
    return None if drawn is None else _png(drawn[0])


def reliability_axes(title: str, xlabel: str, ylabel: str) -> tuple[Any, Any]:
    """A reliability figure: the diagonal of perfect calibration, both axes over [0, 1]."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(4.6, 4.2))
    ax.plot([0, 1], [0, 1], color="grey", lw=0.8, ls="--", label="perfect calibration")
    ax.set_xlim(0, 1)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    return fig, ax


def reliability_curve(ax: Any, bins: list[dict[str, Any]], **style: Any) -> list[dict[str, Any]]:
    """The non-empty calibration ``bins`` drawn as (mean p, share true); the bins drawn."""
    full = [b for b in bins if b["n"]]
    if full:
        ax.plot([b["mean_p"] for b in full], [b["frac_true"] for b in full], **style)
    return full


CALIBRATION_COLOUR = "#4C78A8"


def calibration_plot(m: dict[str, Any]) -> bytes:
    """Reliability curve of the estimator's p_d against the gold truth of the top claim,
    with its Brier score named for what it grades (p_d alone, not every b_i)."""
    cal = m["calibration"]
    brier = f", Brier of p_d {cal['brier']:.3f}" if cal.get("brier") is not None else ""
    fig, ax = reliability_axes(
        "Estimator calibration: p_d on the top claims", "estimator p_d (bin mean)",
        "fraction of claims true"
    )
    full = reliability_curve(
        ax, cal["bins"], marker="o", color=CALIBRATION_COLOUR,
        label=f"estimator p_d (n = {cal['n']} top claims{brier})"
    )
    for b in full:
        ax.annotate(
            str(b["n"]),
            (b["mean_p"], b["frac_true"]),
            fontsize=7,
            xytext=(3, 3),
            textcoords="offset points",
        )
    ax.legend(fontsize=7, loc="lower right")
    return _png(fig)


COST_COLOURS = ("#F58518", "#72B7B2", "#B279A2")


def cost_figure(m: dict[str, Any]) -> tuple[Any, Any]:
    """The cost plot's (figure, axes list): model calls, tokens (in + out) and, when any is
    non-zero, USD cost per protocol, each bar labelled with its number."""
    plt = _pyplot()
    names = list(m["protocols"])
    cost = [m["protocols"][p]["cost"] for p in names]
    panels = [
        ("model calls", "calls", [c["calls"] for c in cost], "{:,.0f}"),
        ("tokens (in + out)", "tokens", [c["tokens_in"] + c["tokens_out"] for c in cost],
         "{:,.0f}"),
    ]
    usd = [c["cost"] for c in cost]
    if any(usd):
        panels.append(("cost (USD)", "USD", usd, "{:,.4f}"))
    fig, axes = plt.subplots(1, len(panels), figsize=(8.5, 3.4))
    for ax, (title, unit, vals, fmt), colour in zip(axes, panels, COST_COLOURS, strict=False):
        bars = ax.bar(names, vals, color=colour)
        ax.bar_label(bars, labels=[fmt.format(v) for v in vals], fontsize=7, padding=2)
        ax.set_title(f"{title} per protocol", fontsize=9)
        ax.set_ylabel(unit)
        ax.margins(y=0.15)
        ax.tick_params(axis="x", labelrotation=35, labelsize=7)
    return fig, list(axes)


def cost_plot(m: dict[str, Any]) -> bytes:
    """:func:`cost_figure` as PNG bytes."""
    return _png(cost_figure(m)[0])


def all_plots(m: dict[str, Any]) -> dict[str, bytes]:
    """Every plot of the report that has something to draw, by file stem (the others:
    :func:`not_drawn`)."""
    drawn = {
        "accuracy": accuracy_plot(m),
        "payoffs": payoff_plot(m),
        "calibration": calibration_plot(m),
        "cost": cost_plot(m),
    }
    return {name: png for name, png in drawn.items() if png is not None}


def not_drawn(m: dict[str, Any]) -> dict[str, str]:
    """The plots :func:`all_plots` leaves out, each with why."""
    out: dict[str, str] = {}
    if not accuracy_rows(m):
        out["accuracy"] = ("no row has a value: no item has a judge's choice, and no item has "
                           "both an honest and a dishonest debate complete")
    protocol = payoff_protocol(m)
    if protocol is None:
        out["payoffs"] = "no prover-estimator debate in this run"
    elif not any(payoff_values(m, protocol)[:2]):
        out["payoffs"] = "no prover-estimator debate has a payoff"
    return out
