"""The report of a debater tournament, from plain records (never transcripts).

* :func:`accuracy_points` / :func:`accuracy_vs_rating_plot`: judge accuracy against the
  debaters' persuasiveness rating, per protocol (Khan et al. 2024, Figure 1): one point per
  debater model, with 95% intervals on both axes;
* :func:`grid_cells` / :func:`grid_markdown` / :func:`grid_plot`: prover model × estimator
  model in prover-estimator debate: the honest prover's mean normalised payoff and the
  judge's accuracy in every cell.

The inputs are :class:`~llmdebate.tournament.ratings.Match` and :class:`PERecord` records: what
a run's transcripts reduce to, so that any reader can build them (merging runs:
:mod:`llmdebate.report.merge`).
"""

from __future__ import annotations

import math
import textwrap
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar
from typing import Protocol as TypingProtocol

import numpy as np

from llmdebate.report.inference import interval, short_note
from llmdebate.report.plots import _png, _pyplot
from llmdebate.tournament.ratings import (
    Match,
    Method,
    Outcome,
    Rating,
    RatingTable,
    Resample,
    persuasiveness,
)

# ---------------------------------------------------------------------------- accuracy vs rating


SELF_PLAY = "self-play"
DIFFERENCE = "rating difference"
CONSULTANT = "consultant"

DEFINITIONS = {
    SELF_PLAY: "x: the model's rating; y: judge accuracy in its self-play debates "
    "(the same model on both sides)",
    DIFFERENCE: "x: rating of the model arguing the correct answer − rating of the model "
    "arguing the incorrect one (no interval on x); y: judge accuracy in those debates",
    CONSULTANT: "x: the consultant's rating; y: judge accuracy in its consultancies "
    "(correct and incorrect answer assigned alike)",
}
"""What a point of the accuracy-against-rating figure is, by kind (stated on the figure)."""
ACCURACY = "judge accuracy = share of debates where the judge chose the correct answer (tie: 1/2)"


@dataclass(frozen=True, slots=True)
class AccuracyPoint:
    """One point: a debater model in self-play or as a consultant, or an ordered pair
    ``correct vs incorrect`` of models (kind ``rating difference``); its rating, or the
    rating difference, with the rating's 95% interval (none on a difference), and the
    judge's accuracy in its ``n`` debates over ``items`` items, with a 95% bootstrap interval
    over those items. A missing interval (None) has its reason in ``rating_note`` /
    ``accuracy_note``."""

    protocol: str
    model: str
    rating: float
    rating_ci: tuple[float, float] | None
    accuracy: float
    accuracy_ci: tuple[float, float] | None
    n: int
    kind: str = SELF_PLAY
    items: int = 0
    rating_note: str | None = None
    accuracy_note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "protocol": self.protocol,
            "model": self.model,
            "kind": self.kind,
            "definition": DEFINITIONS.get(self.kind, ""),
            "rating": self.rating,
            "rating_ci": None if self.rating_ci is None else list(self.rating_ci),
            "rating_note": self.rating_note,
            "accuracy": self.accuracy,
            "accuracy_ci": None if self.accuracy_ci is None else list(self.accuracy_ci),
            "accuracy_note": self.accuracy_note,
            "n": self.n,
            "items": self.items,
        }


NO_DIFFERENCE_INTERVAL = "no interval on a difference of two ratings"
Group = tuple[str, str, float, "tuple[float, float] | None", "str | None", list[Match]]


def _groups_of(matches: Sequence[Match], ratings: RatingTable, self_play: bool) -> list[Group]:
    """(kind, label, x, x interval, why none, the point's matches) of every point."""
    out: list[Group] = []
    if ratings.consultancy or self_play:
        kind = CONSULTANT if ratings.consultancy else SELF_PLAY
        for model in ratings.models():
            if ratings.consultancy:
                mine = [m for m in matches if model in (m.correct, m.incorrect)]
            else:
                mine = [m for m in matches if m.correct == m.incorrect == model]
            r = ratings.get(model)
            out.append((kind, model, r.value, r.ci95, r.note, mine))
        return out
    by_pair: dict[tuple[str, str], list[Match]] = defaultdict(list)
    for m in matches:
        if m.correct is not None and m.incorrect is not None and m.correct != m.incorrect:
            by_pair[(m.correct, m.incorrect)].append(m)
    for (c, i), mine in sorted(by_pair.items()):
        x = ratings.get(c).value - ratings.get(i).value
        out.append((DIFFERENCE, f"{c} vs {i}", x, None, NO_DIFFERENCE_INTERVAL, mine))
    return out


def accuracy_points(
    matches: Sequence[Match],
    ratings: RatingTable,
    *,
    protocol: str,
    self_play: bool = True,
    seed: int = 0,
    n_boot: int = 1000,
) -> list[AccuracyPoint]:
    """Judge accuracy against rating, as Khan et al. (2024, Figure 1) draw it: in debates
    with ``self_play``, one point per model over the debates it argued on both sides; without,
    one point per ordered pair (model arguing the correct answer, model arguing the incorrect
    one) at their rating difference — never a model's debates on either side pooled, which is
    a symmetric function of the pair; in consultancy, one point per consultant. A tie counts
    1/2. Points without debates are left out. The accuracy's interval:
    :func:`~llmdebate.report.inference.interval` over the point's items (an item's debates
    drawn together; none under 10 items), the k-th point (in order) with seed ``seed + k``
    and ``n_boot`` resamples."""
    points: list[AccuracyPoint] = []
    for kind, label, x, x_ci, x_note, mine in _groups_of(matches, ratings, self_play):
        if not mine:
            continue
        scores = [m.judge_correct for m in mine]
        where = [m.item for m in mine] if all(m.item for m in mine) else None
        ci, note = interval(
            scores, seed=seed + len(points), n_boot=n_boot, clusters=where,
            unit="items" if where is not None else "matches",
        )
        points.append(AccuracyPoint(
            protocol=protocol,
            model=label,
            rating=x,
            rating_ci=x_ci,
            accuracy=float(np.mean(scores)),
            accuracy_ci=None if ci is None else (ci[0], ci[1]),
            n=len(mine),
            kind=kind,
            items=len(set(where)) if where is not None else len(mine),
            rating_note=x_note,
            accuracy_note=note,
        ))
    return points


COLOURS = ("#4C78A8", "#E45756", "#54A24B", "#B279A2", "#F58518", "#72B7B2")


def _bar(value: float, ci: tuple[float, float] | None) -> tuple[float, float]:
    return (0.0, 0.0) if ci is None else (value - ci[0], ci[1] - value)


def accuracy_vs_rating_plot(
    points: Sequence[AccuracyPoint], *, rating_label: str = "persuasiveness rating (logit)"
) -> bytes:
    """PNG: judge accuracy (y) against the debaters' rating (x), one colour per protocol,
    each point labelled with its model and drawn with its two 95% intervals; a least-squares
    line per protocol with at least two points; chance at 0.5."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7.2, 5.4))
    for k, (proto, group) in enumerate(sorted(_by_protocol(points).items())):
        pts = sorted(group, key=lambda p: p.rating)
        colour = COLOURS[k % len(COLOURS)]
        xs = np.array([p.rating for p in pts])
        ys = np.array([p.accuracy for p in pts])
        # a percentile interval need not contain its point estimate: clip the bars at it
        # a point without an interval (too few items, no spread) gets no bar on that axis
        xerr = np.array([_bar(p.rating, p.rating_ci) for p in pts]).T
        yerr = np.array([_bar(p.accuracy, p.accuracy_ci) for p in pts]).T
        xerr, yerr = np.clip(xerr, 0.0, None), np.clip(yerr, 0.0, None)
        ax.errorbar(
            xs, ys, xerr=xerr, yerr=yerr, fmt="o", color=colour, capsize=3, label=proto, ms=6
        )
        for j, p in enumerate(pts):
            ax.annotate(
                f"{p.model} (n={p.n}, {p.items} items)",
                (p.rating, p.accuracy),
                fontsize=7,
                xytext=(4, 4 if (k + j) % 2 == 0 else -11),  # neighbours' labels apart
                textcoords="offset points",
            )
        if len(pts) >= 2 and float(np.ptp(xs)) > 0:
            slope, icept = np.polyfit(xs, ys, 1)
            grid = np.linspace(float(xs.min()), float(xs.max()), 20)
            ax.plot(grid, slope * grid + icept, color=colour, lw=1, ls="-", alpha=0.6)
    if not points:
        ax.text(0.5, 0.5, "no rated debaters", ha="center", transform=ax.transAxes)
    ax.axhline(0.5, color="grey", lw=0.8, ls="--", label="chance (0.5)")
    ax.set_ylim(0, 1.05)
    kinds = sorted({p.kind for p in points})
    if kinds == [DIFFERENCE]:
        rating_label = f"rating difference: correct side − incorrect side ({rating_label})"
    ax.set_xlabel(rating_label)
    ax.set_ylabel("judge accuracy (95% CI over items; none under 10 items)")
    ax.set_title("Judge accuracy against debater rating")
    ax.legend(loc="lower right", fontsize=8)
    notes = [ACCURACY, *(f"{k}: {DEFINITIONS[k]}" for k in kinds)]
    fig.text(0.01, 0.01, "\n".join(textwrap.fill(n, 120) for n in notes), fontsize=7,
             va="bottom", ha="left")
    lines = sum(len(textwrap.wrap(n, 120)) for n in notes)
    fig.tight_layout(rect=(0, 0.02 + 0.03 * lines, 1, 1))
    return _png(fig, tight=False)


# ---------------------------------------------------------------------------- prover × estimator


@dataclass(frozen=True, slots=True)
class PERecord:
    """One prover-estimator debate as a plain record: the prover's and the estimator's
    model, whether the prover defended the gold answer (``honest``), its normalised payoff
    R_A / r^(d+1) (early stops included), whether the judge ruled the leaf claim right
    (1.0 / 0.0; ``None`` where no leaf was judged: an early stop), the item and whether the
    debate stopped early."""

    prover: str
    estimator: str
    honest: bool
    payoff: float | None
    correct: float | None
    item: str = ""
    stopped_early: bool = False


@dataclass(frozen=True, slots=True)
class GridCell:
    """One prover model × estimator model cell: both provers' mean payoffs, honest beats
    dishonest (P[R(honest) > R(dishonest)] over the items with both debates in the cell,
    early stops included) and leaf-claim accuracy (debates that reached a judged leaf)."""

    prover: str
    estimator: str
    honest_payoff: float | None
    n_honest: int
    dishonest_payoff: float | None = None
    n_dishonest: int = 0
    honest_beats_dishonest: float | None = None
    n_pairs: int = 0
    leaf_claim_accuracy: float | None = None
    n_leaves: int = 0
    debates: int = 0
    early_stops: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "prover": self.prover,
            "estimator": self.estimator,
            "honest_payoff": self.honest_payoff,
            "n_honest": self.n_honest,
            "dishonest_payoff": self.dishonest_payoff,
            "n_dishonest": self.n_dishonest,
            "honest_beats_dishonest": self.honest_beats_dishonest,
            "n_pairs": self.n_pairs,
            "leaf_claim_accuracy": self.leaf_claim_accuracy,
            "n_leaves": self.n_leaves,
            "debates": self.debates,
            "early_stops": self.early_stops,
        }


def _mean_or_none(xs: Sequence[float]) -> float | None:
    return float(np.mean(xs)) if xs else None


def _cell(prover: str, estimator: str, rs: Sequence[PERecord]) -> GridCell:
    pay = {True: [r.payoff for r in rs if r.honest and r.payoff is not None],
           False: [r.payoff for r in rs if not r.honest and r.payoff is not None]}
    by_item: dict[str, dict[bool, float]] = defaultdict(dict)
    for r in rs:
        if r.item and r.payoff is not None:
            by_item[r.item].setdefault(r.honest, r.payoff)
    wins = [float(v[True] > v[False]) for v in by_item.values() if len(v) == 2]
    leaves = [r.correct for r in rs if r.correct is not None]
    return GridCell(
        prover=prover,
        estimator=estimator,
        honest_payoff=_mean_or_none(pay[True]),
        n_honest=len(pay[True]),
        dishonest_payoff=_mean_or_none(pay[False]),
        n_dishonest=len(pay[False]),
        honest_beats_dishonest=_mean_or_none(wins),
        n_pairs=len(wins),
        leaf_claim_accuracy=_mean_or_none(leaves),
        n_leaves=len(leaves),
        debates=len(rs),
        early_stops=sum(r.stopped_early for r in rs),
    )


def grid_cells(records: Sequence[PERecord]) -> list[GridCell]:
    """Every (prover, estimator) cell that has debates (:class:`GridCell`), in sorted order."""
    cells: dict[tuple[str, str], list[PERecord]] = {}
    for r in records:
        cells.setdefault((r.prover, r.estimator), []).append(r)
    return [_cell(p, e, rs) for (p, e), rs in sorted(cells.items())]


def _axes(cells: Sequence[GridCell]) -> tuple[list[str], list[str]]:
    return sorted({c.prover for c in cells}), sorted({c.estimator for c in cells})


def _f(x: float | None) -> str:
    return "–" if x is None else f"{x:.3f}"


def _fmt(x: float | None, n: int) -> str:
    return "–" if x is None else f"{x:.3f} (n={n})"


GRID_TITLES = {
    "honest_beats_dishonest": "Honest beats dishonest: P[R(honest) > R(dishonest)] over items "
    "with both debates, early stops included",
    "honest_payoff": "Honest prover's mean normalised payoff R_A / r^(d+1), early stops included",
    "dishonest_payoff": "Dishonest prover's mean normalised payoff, early stops included",
    "leaf_claim_accuracy": "Leaf-claim accuracy: the judge's verdict on the leaf claim against "
    "its truth, honest and dishonest debates pooled; early stops reach no leaf and are not in it",
}


def grid_markdown(cells: Sequence[GridCell]) -> str:
    """Markdown tables, rows = prover model, columns = estimator model, each titled with what
    it counts: honest beats dishonest, both provers' mean payoffs, leaf-claim accuracy."""
    provers, estimators = _axes(cells)
    at = {(c.prover, c.estimator): c for c in cells}
    parts: list[str] = []
    shows: tuple[tuple[str, Callable[[GridCell], str]], ...] = (
        (GRID_TITLES["honest_beats_dishonest"],
         lambda c: _fmt(c.honest_beats_dishonest, c.n_pairs)),
        (GRID_TITLES["honest_payoff"], lambda c: _fmt(c.honest_payoff, c.n_honest)),
        (GRID_TITLES["dishonest_payoff"], lambda c: _fmt(c.dishonest_payoff, c.n_dishonest)),
        (GRID_TITLES["leaf_claim_accuracy"], lambda c: _fmt(c.leaf_claim_accuracy, c.n_leaves)
         + f" ({c.early_stops} of {c.debates} stopped early)"),
    )
    for title, get in shows:
        head = "| prover \\ estimator | " + " | ".join(estimators) + " |"
        rule = "|---" * (len(estimators) + 1) + "|"
        rows = [
            f"| {p} | "
            + " | ".join(get(at[(p, e)]) if (p, e) in at else "–" for e in estimators)
            + " |"
            for p in provers
        ]
        parts.append("\n".join([f"**{title}**", "", head, rule, *rows]))
    return "\n\n".join(parts) + "\n"


def _matrix(cells: Sequence[GridCell], attr: str) -> np.ndarray:
    provers, estimators = _axes(cells)
    m = np.full((len(provers), len(estimators)), np.nan)
    for c in cells:
        v = getattr(c, attr)
        if v is not None:
            m[provers.index(c.prover), estimators.index(c.estimator)] = v
    return m


def grid_plot(cells: Sequence[GridCell]) -> bytes:
    """PNG: two heat maps (rows prover model, columns estimator model), the honest prover's
    mean normalised payoff and the judge's accuracy, every cell annotated with its value."""
    plt = _pyplot()
    provers, estimators = _axes(cells)
    at = {(c.prover, c.estimator): c for c in cells}
    w = 2.2 + 1.1 * max(1, len(estimators))
    fig, axes = plt.subplots(1, 2, figsize=(2 * w, 1.6 + 0.7 * max(1, len(provers))))
    panels = (
        ("honest_payoff", "honest prover's mean payoff R_A / r^(d+1)\n(early stops included)",
         "RdYlGn", None),
        ("honest_beats_dishonest",
         "honest beats dishonest: P[R(honest) > R(dishonest)]\nover items, early stops included",
         "Blues", (0.0, 1.0)),
    )
    for ax, (attr, title, cmap, lim) in zip(axes, panels, strict=True):
        m = _matrix(cells, attr)
        finite = m[np.isfinite(m)]
        if lim is None:
            span = float(np.max(np.abs(finite))) if finite.size else 1.0
            lim = (-span, span) if span > 0 else (-1.0, 1.0)
        colours = plt.get_cmap(cmap).with_extremes(bad="#dddddd")  # a cell without debates
        im = ax.imshow(m, cmap=colours, vmin=lim[0], vmax=lim[1], aspect="auto")
        for (i, j), v in np.ndenumerate(m):
            cell = at.get((provers[i], estimators[j]))
            n = 0 if cell is None else cell.n_honest if attr == "honest_payoff" else cell.n_pairs
            label = "–" if math.isnan(v) else f"{v:.2f}\nn={n}"
            r, g, b, _ = (1.0, 1.0, 1.0, 1.0) if math.isnan(v) else im.cmap(im.norm(v))
            colour = "white" if 0.299 * r + 0.587 * g + 0.114 * b < 0.5 else "black"
            ax.text(j, i, label, ha="center", va="center", fontsize=9, color=colour)
        ax.set_xticks(range(len(estimators)), estimators, fontsize=8, rotation=20)
        ax.set_yticks(range(len(provers)), provers, fontsize=8)
        ax.set_xlabel("estimator model")
        ax.set_ylabel("prover model")
        ax.set_title(title, fontsize=9)
        fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    return _png(fig)


# ---------------------------------------------------------------------------- a report section


def ratings_by_protocol(
    matches: Sequence[Match],
    *,
    method: Method = "bradley-terry",
    outcome: Outcome = "decision",
    seed: int = 0,
    n_boot: int = 200,
    resample: Resample = "match",
) -> dict[str, RatingTable]:
    """:func:`~llmdebate.tournament.ratings.persuasiveness` of each protocol's matches."""
    by: dict[str, list[Match]] = {}
    for m in matches:
        by.setdefault(m.protocol, []).append(m)
    return {
        proto: persuasiveness(
            ms, method=method, outcome=outcome, seed=seed, n_boot=n_boot, resample=resample
        )
        for proto, ms in sorted(by.items())
    }


PRIOR_NOTE = (
    "† held only by the prior: the player won (upper) or lost (lower) every one of its "
    "matches in more than 2.5% of the resamples, so the data set no limit on that side."
)


def rating_ci(
    ci: Sequence[float] | None, prior_bound: str | None, nd: int = 3, note: str | None = None
) -> str:
    """``[lo, hi]``, the end that only the prior holds marked ``†``; without an interval
    its short reason (``none (n < 10)``, ``none (no spread)``, ``none``)."""
    if ci is None:
        return short_note(note)
    lo = f"{ci[0]:.{nd}f}" + ("†" if prior_bound == "lower" else "")
    hi = f"{ci[1]:.{nd}f}" + ("†" if prior_bound == "upper" else "")
    return f"[{lo}, {hi}]"


def ratings_markdown(tables: Mapping[str, RatingTable]) -> str:
    """One Markdown table per protocol: every model's rating overall and per side, with its
    95% interval, matches and mean score."""
    parts: list[str] = []
    for proto, t in tables.items():
        unit = "matches" if t.resample == "match" else "items"
        head = f"**{proto}** ({t.method}, {t.scale}; {t.n_boot} bootstrap resamples of "
        head += f"{unit}, seed {t.seed})"
        rows = ["| model | side | rating | 95% CI | matches | mean score |", "|---" * 6 + "|"]
        for r in sorted(t.ratings, key=lambda r: (-t.get(r.model).value, r.model, r.side)):
            rows.append(
                f"| {r.model} | {r.side} | {r.value + 0.0:.3f} | "
                f"{rating_ci(r.ci95, r.prior_bound, note=r.note)} "
                f"| {r.matches} | {_f(r.win_rate)} |"
            )
        parts.append("\n".join([head, "", *rows]))
        if any(r.prior_bound for r in t.ratings):
            parts.append(PRIOR_NOTE)
        parts += no_interval_lines(t.ratings)
    return "\n\n".join(parts) + "\n"


def no_interval_lines(ratings: Sequence[Rating]) -> list[str]:
    """Why a rating has no interval, one line per reason with the seats it applies to."""
    by: dict[str, list[str]] = defaultdict(list)
    for r in ratings:
        if r.note:
            by[r.note].append(f"{r.model} {r.side}")
    if len(by) == 1 and sum(map(len, by.values())) == len(ratings) > 1:
        return [f"No interval (every rating): {next(iter(by))}."]
    return [f"No interval ({', '.join(seats)}): {note}." for note, seats in by.items()]


G = TypeVar("G", bound="_HasProtocol")


class _HasProtocol(TypingProtocol):
    @property
    def protocol(self) -> str: ...


def _by_protocol(records: Iterable[G]) -> dict[str, list[G]]:
    """``records`` grouped by their protocol, in order of appearance."""
    out: dict[str, list[G]] = defaultdict(list)
    for r in records:
        out[r.protocol].append(r)
    return dict(out)


def _points(
    matches: Sequence[Match], table: RatingTable, protocol: str, seed: int
) -> list[AccuracyPoint]:
    """Accuracy per model over its self-play debates where the schedule had them (Khan et
    al.'s plot), else over the debates it argued either side of."""
    self_play = any(m.correct is not None and m.correct == m.incorrect for m in matches)
    return accuracy_points(matches, table, protocol=protocol, self_play=self_play, seed=seed)


def section(
    matches: Sequence[Match],
    pe_records: Sequence[PERecord] = (),
    *,
    method: Method = "bradley-terry",
    seed: int = 0,
    n_boot: int = 200,
) -> tuple[dict[str, Any], dict[str, bytes]]:
    """A report's tournament section: (plain data for ``comparison.json``, PNG figures by
    file name). Ratings per protocol, accuracy against rating, and the prover × estimator
    grid where ``pe_records`` are given."""
    # debates on one item share its difficulty: resample items where every match names one
    resample: Resample = "item" if matches and all(m.item for m in matches) else "match"
    tables = ratings_by_protocol(
        matches, method=method, seed=seed, n_boot=n_boot, resample=resample
    )
    by_protocol = _by_protocol(matches)
    points = [
        p
        for proto, t in tables.items()
        for p in _points(by_protocol.get(proto, []), t, proto, seed)
    ]
    data: dict[str, Any] = {
        "ratings": {proto: t.to_dict() for proto, t in tables.items()},
        "accuracy_vs_rating": [p.to_dict() for p in points],
    }
    label = "rating (logit)" if method == "bradley-terry" else "rating (openskill mu)"
    figures = {"accuracy_vs_rating.png": accuracy_vs_rating_plot(points, rating_label=label)}
    if pe_records:
        cells = grid_cells(pe_records)
        data["prover_estimator_grid"] = [c.to_dict() for c in cells]
        figures["prover_estimator_grid.png"] = grid_plot(cells)
    return data, figures
