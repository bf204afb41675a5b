"""The tournament section of a report: ratings, accuracy against rating, the prover ×
estimator grid, read off a run's transcripts (or several runs' merged).

It appears when the debates seat more than one debater model (``meta.seats``,
:mod:`llmdebate.tournament.seat_records`); the numbers come from
:func:`llmdebate.tournament.figures.section`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llmdebate.core.schemas import Transcript
from llmdebate.report.html import e, img, table
from llmdebate.report.sections import SECTIONS, Part, RunView
from llmdebate.tournament.figures import (
    PRIOR_NOTE,
    GridCell,
    grid_markdown,
    no_interval_lines,
    rating_ci,
    ratings_markdown,
    section,
)
from llmdebate.tournament.ratings import Match, Rating, RatingTable
from llmdebate.tournament.seat_records import debater_models, matches_of, pe_records_of

MAX_BOOT = 500
"""Bootstrap resamples of the ratings at most (each resample refits every rating)."""


@SECTIONS.register("tournament")
def tournament_section(run: RunView) -> Part | None:
    """The debater tournament, when more than one debater model held a seat."""
    return tournament_part(run.transcripts, seed=run.seed, n_boot=run.n_boot)


def tournament_part(
    transcripts: Sequence[Transcript], *, seed: int, n_boot: int
) -> Part | None:
    """The section, or None when there is nothing to compare: fewer than two debater models
    rated against each other (or as consultants) and fewer than two prover × estimator
    cells — a run whose seats hold one prover and one estimator model is no tournament."""
    models = debater_models(transcripts)
    if len(models) < 2:
        return None
    matches = matches_of(transcripts)
    pe = pe_records_of(transcripts)
    if len(rated_models(matches)) < 2 and len({(r.prover, r.estimator) for r in pe}) < 2:
        return None
    boot = min(n_boot, MAX_BOOT)
    data, figures = section(matches, pe, seed=seed, n_boot=boot) if matches or pe else ({}, {})
    if not matches:
        figures.pop("accuracy_vs_rating.png", None)
    data["models"] = sorted(models)
    data["matches"] = len(matches)
    md = "## Debater tournament\n\n" + _markdown(data, pe_cells=bool(pe))
    pngs = {name.removesuffix(".png"): png for name, png in figures.items()}
    return Part("tournament", data, md, _html(data, pngs), pngs)


def rated_models(matches: Sequence[Match]) -> set[str]:
    """The models a rating compares: those that met another model, and the consultants."""
    out: set[str] = set()
    for m in matches:
        if m.consultancy:
            out.add(str(m.correct or m.incorrect))
        elif m.correct != m.incorrect:
            out |= {str(m.correct), str(m.incorrect)}
    return out


def _markdown(data: dict[str, Any], *, pe_cells: bool) -> str:
    parts: list[str] = []
    tables = {p: _table(d) for p, d in (data.get("ratings") or {}).items()}
    if tables:
        parts.append(ratings_markdown(tables))
    if pe_cells:
        cells = [GridCell(**c) for c in data.get("prover_estimator_grid") or []]
        parts.append(grid_markdown(cells))
    return "\n".join(parts)


def _table(d: dict[str, Any]) -> RatingTable:
    ratings = tuple(
        Rating(
            model=r["model"],
            side=r["side"],
            value=r["value"],
            ci95=None if r["ci95"] is None else (r["ci95"][0], r["ci95"][1]),
            sd=r["sd"],
            matches=r["matches"],
            win_rate=r["win_rate"],
            prior_bound=r.get("prior_bound"),
            note=r.get("interval_note"),
        )
        for r in d["ratings"]
    )
    return RatingTable(
        method=d["method"], outcome=d["outcome"], consultancy=d["consultancy"], seed=d["seed"],
        n_boot=d["n_boot"], scale=d["scale"], resample=d["resample"], ratings=ratings,
    )


RATING_HEAD = ["model", "overall", "95% CI", "arguing correct", "arguing incorrect", "matches",
               "mean score"]


def _rating_rows(d: dict[str, Any]) -> list[list[str]]:
    by: dict[str, dict[str, dict[str, Any]]] = {}
    for r in d["ratings"]:
        by.setdefault(r["model"], {})[r["side"]] = r
    rows: list[list[str]] = []
    for model, sides in sorted(by.items(), key=lambda kv: -kv[1]["overall"]["value"]):
        o = sides["overall"]
        cells = [model, f"{o['value'] + 0.0:.2f}",
                 rating_ci(o["ci95"], o.get("prior_bound"), 2, o.get("interval_note"))]
        for side in ("correct", "incorrect"):
            s = sides.get(side)
            cells.append("–" if s is None else f"{s['value']:.2f} " + rating_ci(
                s["ci95"], s.get("prior_bound"), 2, s.get("interval_note")))
        cells += [str(o["matches"]), _f(o["win_rate"])]
        rows.append(cells)
    return rows


def _html(data: dict[str, Any], pngs: dict[str, bytes]) -> str:
    parts = [
        "<h2 id='tournament'>Debater tournament</h2>",
        f"<p class='muted'>Debater models: {e(', '.join(data['models']))}; "
        f"{data['matches']} judged debates rated. Persuasiveness: a Bradley–Terry fit of the "
        "judge's decisions (logits; a consultant against the judge), overall and separately "
        "when arguing the correct and the incorrect answer, with 95% percentile bootstrap "
        "intervals over items (none under 10 items). Debaters who chose their answer are "
        "rated apart (protocol “… (chosen)”).</p>",
    ]
    for proto, d in (data.get("ratings") or {}).items():
        parts += [
            f"<h3>{e(proto)}</h3>",
            f"<p class='muted'>{e(d['method'])}; {d['n_boot']} bootstrap resamples of "
            f"{'matches' if d['resample'] == 'match' else 'items'}, seed {d['seed']}.</p>",
            table(RATING_HEAD, _rating_rows(d)),
        ]
        if any(r.get("prior_bound") for r in d["ratings"]):
            parts.append(f"<p class='muted'>{e(PRIOR_NOTE)}</p>")
        parts += [f"<p class='muted'>{e(line)}</p>"
                  for line in no_interval_lines(_table(d).ratings)]
    if "accuracy_vs_rating" in pngs:
        parts += [
            "<h3>Judge accuracy against debater rating</h3>",
            "<p class='muted'>Judge accuracy: the share of debates where the judge chose the "
            "correct answer (a tie 1/2). With self-play, one point per model over the debates "
            "it argued on both sides, at its rating; otherwise one point per pair (model "
            "arguing the correct answer vs model arguing the incorrect one) at their rating "
            "difference; in consultancy one point per consultant.</p>",
            img(pngs["accuracy_vs_rating"], "judge accuracy against debater rating"),
        ]
    grid = data.get("prover_estimator_grid")
    if grid:
        head = ["prover", "estimator", "honest beats dishonest", "items", "honest payoff",
                "dishonest payoff", "leaf-claim accuracy", "leaves", "early stops / debates"]
        rows = [
            [c["prover"], c["estimator"], _f(c["honest_beats_dishonest"]), str(c["n_pairs"]),
             _f(c["honest_payoff"]), _f(c["dishonest_payoff"]), _f(c["leaf_claim_accuracy"]),
             str(c["n_leaves"]), f"{c['early_stops']} / {c['debates']}"]
            for c in grid
        ]
        parts += [
            "<h3>Prover model × estimator model</h3>",
            "<p class='muted'>Honest beats dishonest: P[R(honest) &gt; R(dishonest)] over the "
            "items with both debates in the cell, early stops included. Payoffs: mean "
            "R_A / r^(d+1), early stops included. Leaf-claim accuracy: the judge's verdict on "
            "the leaf claim, honest and dishonest debates pooled; an early stop reaches no "
            "leaf.</p>",
            table(head, rows),
        ]
        if "prover_estimator_grid" in pngs:
            parts.append(img(pngs["prover_estimator_grid"], "prover x estimator grid"))
    return "\n".join(parts)


def _f(x: float | None) -> str:
    return "–" if x is None else f"{x:.3f}"
