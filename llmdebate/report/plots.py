"""Plots of a comparison as PNG bytes (matplotlib, Agg backend; the ``report`` extra)."""

from __future__ import annotations

import io
from typing import Any

from llmdebate.errors import MissingExtraError
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


def accuracy_plot(m: dict[str, Any]) -> bytes | None:
    """Every row's figure (judge accuracy, or honest beats dishonest) with its 95% bootstrap
    interval where it has one, and its n; bars coloured by figure. None where no row has a
    value (:func:`not_drawn` says why)."""
    rows = accuracy_rows(m)
    if not rows:
        return None
    plt = _pyplot()
    colours = {"judge accuracy": "#4C78A8", "honest beats dishonest": "#54A24B"}
    fig, ax = plt.subplots(figsize=(7.5, 3.8))
    for figure, colour in colours.items():
        mine = [(k, r) for k, r in enumerate(rows) if r["figure"] == figure]
        if not mine:
            continue
        xs = [k for k, _ in mine]
        vals = [r["value"] for _, r in mine]
        cis = [r["ci95"] or [r["value"], r["value"]] for _, r in mine]
        err = [[max(0.0, v - c[0]) for v, c in zip(vals, cis, strict=True)],
               [max(0.0, c[1] - v) for v, c in zip(vals, cis, strict=True)]]
        ax.bar(xs, vals, yerr=err, capsize=5, color=colour, label=figure)
    for k, r in enumerate(rows):
        unit = "pairs" if r["figure"] == "honest beats dishonest" else "items"
        note = "" if r["ci95"] is not None else ", no CI"
        ax.annotate(f"{r['value']:.2f} (n = {r['items']} {unit}{note})", (k, r["value"]),
                    ha="center", fontsize=7, xytext=(0, 3), textcoords="offset points")
    ax.set_xticks(range(len(rows)), [r["label"] for r in rows])
    ax.axhline(0.5, color="grey", lw=0.8, ls="--", label="chance (0.5)")
    ax.set_ylim(0, 1.1)
    ax.set_xlabel("protocol (and the judge's view)")
    ax.set_ylabel("share (95% CI over items, or pairs)")
    ax.set_title("Judge accuracy / honest beats dishonest, per protocol and view")
    ax.legend(loc="upper right", fontsize=7)
    ax.tick_params(axis="x", labelsize=7, labelrotation=20)
    return _png(fig)


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


def payoff_plot(m: dict[str, Any], protocol: str | None = None) -> bytes | None:
    """Distributions of the honest and the dishonest prover's paid normalised payoffs: the
    pairs', or, without pairs, every debate's, titled unpaired. None where no debate of the
    protocol has a payoff."""
    protocol = protocol or payoff_protocol(m)
    if protocol is None:
        return None
    h, d, paired = payoff_values(m, protocol)
    if not h and not d:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 3.4))
    allv = h + d
    lo, hi = min(allv), max(allv)
    bins = 20 if hi > lo else 1
    rng = (lo, hi) if hi > lo else (lo - 0.5, hi + 0.5)
    kind = "pairs" if paired else "debates"
    for vals, who, colour in ((h, "honest", "#54A24B"), (d, "dishonest", "#E45756")):
        if vals:
            ax.hist(vals, bins=bins, range=rng, alpha=0.6, color=colour,
                    label=f"{who} (n = {len(vals)} {kind})")
    ax.legend(fontsize=8)
    ax.set_xlabel("paid payoff R_A / r^(d+1)")
    ax.set_ylabel("debates")
    how = ("paired: both answers on each item" if paired
           else "unpaired: honest and dishonest debates on different items")
    ax.set_title(f"Prover payoffs ({protocol}), {how}", fontsize=9)
    return _png(fig)


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


def calibration_plot(m: dict[str, Any]) -> bytes:
    """Reliability curve of the estimator's p_d against the gold truth of the claim."""
    cal = m["calibration"]
    fig, ax = reliability_axes(
        "Estimator calibration", "estimator p_d (bin mean)", "fraction of claims true"
    )
    full = reliability_curve(
        ax, cal["bins"], marker="o", color="#4C78A8", label=f"estimator (n={cal['n']})"
    )
    for b in full:
        ax.annotate(
            str(b["n"]),
            (b["mean_p"], b["frac_true"]),
            fontsize=7,
            xytext=(3, 3),
            textcoords="offset points",
        )
    ax.legend(fontsize=8, loc="upper left")
    return _png(fig)


def cost_plot(m: dict[str, Any]) -> bytes:
    """Model calls and tokens per protocol (and USD cost when any is non-zero)."""
    plt = _pyplot()
    names = list(m["protocols"])
    calls = [m["protocols"][p]["cost"]["calls"] for p in names]
    toks = [
        m["protocols"][p]["cost"]["tokens_in"] + m["protocols"][p]["cost"]["tokens_out"]
        for p in names
    ]
    usd = [m["protocols"][p]["cost"]["cost"] for p in names]
    fig, axes = plt.subplots(1, 3 if any(usd) else 2, figsize=(8.5, 3.2))
    axes[0].bar(names, calls, color="#F58518")
    axes[0].set_title("model calls")
    axes[1].bar(names, toks, color="#72B7B2")
    axes[1].set_title("tokens (in + out)")
    if any(usd):
        axes[2].bar(names, usd, color="#B279A2")
        axes[2].set_title("cost (USD)")
    for ax in axes:
        ax.tick_params(axis="x", labelrotation=35, labelsize=7)
    return _png(fig)


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
