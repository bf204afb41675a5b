"""Persuasiveness ratings of debater models from judged matches (Khan et al. 2024, §4).

A :class:`Match` is one judged debate as a plain record: the model that argued the correct
answer, the model that argued the incorrect one (one of them is ``None`` in consultancy),
the judge's decision and, where it gave one, its probability on the correct answer.

:func:`persuasiveness` rates every model from such matches, with percentile bootstrap
intervals (the matches resampled with replacement from a recorded seed):

* ``overall``: one player per model, whichever side it argued;
* ``correct`` / ``incorrect``: one player per model and side (``model@correct`` meets
  ``model@incorrect`` of its opponent), as in the anchors' separate ratings — how persuasive
  a model is when it defends the truth, and when it defends a falsehood.

Two methods: ``bradley-terry`` (:func:`bradley_terry`, a maximum a posteriori fit by
Newton's method with a weak Gaussian prior; a tie is half a win, and the judge's probability
may stand in for the decision as a soft outcome) and ``openskill`` (the Weng–Lin ratings of
the ``openskill`` library, the ``tournament`` extra; decisions only, ties as draws, averaged
over a few seeded orders of the matches since its updates depend on order).

Consultancy (one debater) is rated against the judge: every consultancy is a match between
the consultant and the player :data:`JUDGE`, won by the consultant when the judge is
persuaded. Bradley–Terry pins the judge at 0, so a consultant's rating is the log-odds that
it persuades the judge.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from llmdebate.errors import MissingExtraError, UserError
from llmdebate.intervals import MIN_ITEMS, too_few

Method = Literal["bradley-terry", "openskill"]
Outcome = Literal["decision", "probability"]
Side = Literal["overall", "correct", "incorrect"]
Resample = Literal["match", "item"]

METHODS: tuple[str, ...] = ("bradley-terry", "openskill")
OUTCOMES: tuple[str, ...] = ("decision", "probability")
SIDES: tuple[Side, ...] = ("overall", "correct", "incorrect")
JUDGE = "(judge)"
"""The opponent of every consultant."""
PRIOR = 0.01
"""Precision of the Gaussian prior on Bradley–Terry strengths (logits): small enough to leave
well-observed strengths as they are, large enough to keep a debater that loses every match
at a finite rating."""
ELO_PER_LOGIT = 400.0 / math.log(10.0)
"""Elo points per logit: Elo's expected score 1/(1+10^(-Δ/400)) is σ(Δ/ELO_PER_LOGIT)."""


class RatingError(UserError, ValueError):
    """Matches or options that cannot be rated; the one-line message says which."""


@dataclass(frozen=True, slots=True)
class Match:
    """One judged debate between debater models (or one consultancy), as a plain record.

    ``correct`` / ``incorrect``: the model that argued the correct / the incorrect answer
    (``None`` where no one did: consultancy). ``judge_correct``: 1.0 if the judge chose the
    correct answer, 0.0 if it chose the incorrect one, 0.5 for a tie. ``p_correct``: the
    judge's probability on the correct answer, where it gave one.
    """

    correct: str | None
    incorrect: str | None
    judge_correct: float
    p_correct: float | None = None
    item: str = ""
    protocol: str = ""

    def __post_init__(self) -> None:
        if self.correct is None and self.incorrect is None:
            raise RatingError("a match needs a debater on at least one side")
        if not 0.0 <= self.judge_correct <= 1.0:
            raise RatingError(f"judge_correct must lie in [0, 1], got {self.judge_correct!r}")
        if self.p_correct is not None and not 0.0 <= self.p_correct <= 1.0:
            raise RatingError(f"p_correct must lie in [0, 1], got {self.p_correct!r}")

    @property
    def consultancy(self) -> bool:
        """True when only one side had a debater."""
        return self.correct is None or self.incorrect is None

    def score(self, outcome: Outcome = "decision") -> float:
        """The correct side's score: the decision, or the judge's probability (``probability``;
        the decision where the judge gave none)."""
        if outcome == "probability" and self.p_correct is not None:
            return self.p_correct
        return self.judge_correct

    def to_dict(self) -> dict[str, Any]:
        return {
            "correct": self.correct,
            "incorrect": self.incorrect,
            "judge_correct": self.judge_correct,
            "p_correct": self.p_correct,
            "item": self.item,
            "protocol": self.protocol,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Match:
        p = d.get("p_correct")
        return cls(
            correct=None if d.get("correct") is None else str(d["correct"]),
            incorrect=None if d.get("incorrect") is None else str(d["incorrect"]),
            judge_correct=float(d["judge_correct"]),
            p_correct=None if p is None else float(p),
            item=str(d.get("item", "")),
            protocol=str(d.get("protocol", "")),
        )


@dataclass(frozen=True, slots=True)
class Rating:
    """One player's rating: its point estimate on all matches, the 95% percentile bootstrap
    interval and bootstrap standard deviation, its matches and its mean score in them (for a
    consultant: how often the judge was persuaded). No interval (``ci95`` None, ``note``
    says why) under :data:`~llmdebate.report.inference.MIN_ITEMS` items, for a player with
    no match against another, one that won or lost every one of its matches (its rating is
    the prior's), or where every resample gave the same rating."""

    model: str
    side: Side
    value: float
    ci95: tuple[float, float] | None
    sd: float
    """The resamples' standard deviation (given even where no interval is: a Swiss schedule
    pairs by it)."""
    matches: int
    win_rate: float | None
    prior_bound: str | None = None
    """``upper`` / ``lower``: that end of the interval is held only by the prior (the player
    won / lost every one of its matches in more than 2.5% of the resamples: the data set no
    limit there; Bradley–Terry only); None: both ends come from the data."""
    note: str | None = None
    """Why there is no interval (None where there is one)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "side": self.side,
            "value": self.value,
            "ci95": None if self.ci95 is None else list(self.ci95),
            "sd": self.sd,
            "matches": self.matches,
            "win_rate": self.win_rate,
            "prior_bound": self.prior_bound,
            "interval_note": self.note,
        }


@dataclass(frozen=True)
class RatingTable:
    """Every model's ratings (overall and per side) from one set of matches."""

    method: str
    outcome: str
    consultancy: bool
    seed: int
    n_boot: int
    scale: str
    resample: str
    ratings: tuple[Rating, ...]

    def get(self, model: str, side: Side = "overall") -> Rating:
        for r in self.ratings:
            if r.model == model and r.side == side:
                return r
        raise KeyError(f"no {side} rating of {model!r}")

    def models(self) -> list[str]:
        return sorted({r.model for r in self.ratings})

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "outcome": self.outcome,
            "consultancy": self.consultancy,
            "seed": self.seed,
            "n_boot": self.n_boot,
            "scale": self.scale,
            "resample": self.resample,
            "ratings": [r.to_dict() for r in self.ratings],
        }


Game = tuple[str, str, float]
"""(player i, player j, i's score in [0, 1])."""


def win_probability(a: float, b: float) -> float:
    """P(a player of strength ``a`` beats one of strength ``b``) under Bradley–Terry."""
    d = a - b
    if d >= 0:
        return 1.0 / (1.0 + math.exp(-d))
    e = math.exp(d)
    return e / (1.0 + e)


def bradley_terry(
    games: Iterable[Game],
    *,
    prior: float = PRIOR,
    anchor: str | None = None,
    tol: float = 1e-10,
    max_iter: int = 100,
) -> dict[str, float]:
    """Bradley–Terry strengths (logits) of every player of ``games``.

    Maximises Σ [s·ln σ(θ_i - θ_j) + (1-s)·ln σ(θ_j - θ_i)] - (prior/2)·Σ θ² by Newton's
    method with step halving; a score s may be fractional (a tie is 0.5; the judge's
    probability is a soft outcome). Without ``anchor`` the strengths sum to 0 (the prior's
    gauge); with it, that player is pinned at 0. A player's own games (i = j) carry no
    information and are ignored.
    """
    if prior <= 0:
        raise RatingError("prior must be positive")
    rows = [(str(i), str(j), float(s)) for i, j, s in games]
    bad = next((r for r in rows if not 0.0 <= r[2] <= 1.0), None)
    if bad is not None:
        raise RatingError(
            f"a game's score must lie in [0, 1], got {bad[2]!r} ({bad[0]} v {bad[1]})"
        )
    names = sorted({n for i, j, _ in rows for n in (i, j)} | ({anchor} if anchor else set()))
    index = {n: k for k, n in enumerate(names)}
    pairs = [(index[i], index[j], s) for i, j, s in rows if i != j]
    if not pairs:
        return dict.fromkeys(names, 0.0)
    ii = np.array([p[0] for p in pairs])
    jj = np.array([p[1] for p in pairs])
    ss = np.array([p[2] for p in pairs])
    free = np.array([n != anchor for n in names])
    theta = np.zeros(len(names))

    def objective(t: np.ndarray) -> float:
        d = t[ii] - t[jj]
        ll = ss * -np.logaddexp(0.0, -d) + (1.0 - ss) * -np.logaddexp(0.0, d)
        return float(ll.sum() - 0.5 * prior * float(t[free] @ t[free]))

    current = objective(theta)
    for _ in range(max_iter):
        d = theta[ii] - theta[jj]
        p = 1.0 / (1.0 + np.exp(-d))
        resid = ss - p
        grad: np.ndarray = np.bincount(ii, resid, len(names)) - np.bincount(jj, resid, len(names))
        grad -= prior * theta
        w = p * (1.0 - p)
        hess = np.zeros((len(names), len(names)))
        np.add.at(hess, (ii, ii), w)
        np.add.at(hess, (jj, jj), w)
        np.add.at(hess, (ii, jj), -w)
        np.add.at(hess, (jj, ii), -w)
        hess += prior * np.eye(len(names))
        step = np.zeros(len(names))
        step[free] = np.linalg.solve(hess[np.ix_(free, free)], grad[free])
        scale = 1.0
        while scale > 1e-6:
            trial = theta + scale * step
            value = objective(trial)
            if value >= current - 1e-12:
                break
            scale /= 2.0
        theta, current = trial, value
        if float(np.max(np.abs(scale * step))) < tol:
            break
    return {n: float(theta[k]) for n, k in index.items()}


# ---------------------------------------------------------------------------- players


def _player(model: str, side: Side) -> str:
    return model if side == "overall" else f"{model}@{side}"


def games_of(
    matches: Iterable[Match], outcome: Outcome = "decision", *, by_side: bool = False
) -> list[Game]:
    """The games of ``matches`` between players: models (``by_side=False``) or
    ``model@correct`` / ``model@incorrect``; a consultant plays :data:`JUDGE`."""
    out: list[Game] = []
    for m in matches:
        s = m.score(outcome)
        c = None if m.correct is None else _player(m.correct, "correct" if by_side else "overall")
        i = (
            None
            if m.incorrect is None
            else _player(m.incorrect, "incorrect" if by_side else "overall")
        )
        if c is not None and i is not None:
            out.append((c, i, s))
        elif c is not None:
            out.append((c, JUDGE, s))
        elif i is not None:
            out.append((i, JUDGE, 1.0 - s))
    return out


def _seats(matches: Sequence[Match], outcome: Outcome) -> dict[tuple[str, Side], list[float]]:
    """Every (model, side)'s scores in its matches (a self-play match counts once per side,
    and not in ``overall``, where it carries no information)."""
    seats: dict[tuple[str, Side], list[float]] = {}
    for m in matches:
        s = m.score(outcome)
        if m.correct is not None:
            seats.setdefault((m.correct, "correct"), []).append(s)
            if m.correct != m.incorrect:
                seats.setdefault((m.correct, "overall"), []).append(s)
        if m.incorrect is not None:
            seats.setdefault((m.incorrect, "incorrect"), []).append(1.0 - s)
            if m.correct != m.incorrect:
                seats.setdefault((m.incorrect, "overall"), []).append(1.0 - s)
    return seats


# ---------------------------------------------------------------------------- openskill


def _openskill_model(name: str) -> Any:
    try:
        from openskill import models
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise MissingExtraError("openskill", "tournament") from exc
    for cls in models.MODELS:
        if cls.__name__ == name:
            return cls()
    names = ", ".join(c.__name__ for c in models.MODELS)
    raise RatingError(f"unknown openskill model {name!r} (allowed: {names})")


def openskill_ratings(
    games: Sequence[Game], *, model: str = "BradleyTerryFull", orders: int = 4, seed: int = 0
) -> dict[str, float]:
    """Weng–Lin (openskill) μ of every player, averaged over ``orders`` seeded shuffles of
    ``games`` (the updates are sequential). A score above 1/2 is a win, 1/2 a draw."""
    rater = _openskill_model(model)
    names = sorted({n for g in games for n in g[:2]})
    totals = dict.fromkeys(names, 0.0)
    rng = random.Random(seed)
    for _ in range(max(1, orders)):
        order = list(games)
        rng.shuffle(order)
        state = {n: rater.rating(name=n) for n in names}
        for i, j, s in order:
            if i == j:
                continue
            ranks = [0, 0] if s == 0.5 else ([0, 1] if s > 0.5 else [1, 0])
            [[a], [b]] = rater.rate([[state[i]], [state[j]]], ranks=ranks)
            state[i], state[j] = a, b
        for n in names:
            totals[n] += float(state[n].mu)
    return {n: v / max(1, orders) for n, v in totals.items()}


# ---------------------------------------------------------------------------- ratings


def _fit(
    matches: Sequence[Match],
    method: Method,
    outcome: Outcome,
    *,
    prior: float,
    seed: int,
    orders: int,
) -> dict[tuple[str, Side], float]:
    """Every (model, side)'s rating from one set of matches."""
    consult = bool(matches) and matches[0].consultancy
    out: dict[tuple[str, Side], float] = {}
    for by_side in (False, True):
        games = games_of(matches, outcome, by_side=by_side)
        if method == "bradley-terry":
            fitted = bradley_terry(games, prior=prior, anchor=JUDGE if consult else None)
        else:
            fitted = openskill_ratings(games, orders=orders, seed=seed)
        for name, v in fitted.items():
            if name == JUDGE:
                continue
            if by_side:
                model, _, side = name.rpartition("@")
                out[(model, "correct" if side == "correct" else "incorrect")] = v
            else:
                out[(name, "overall")] = v
    return out


def _check(matches: Sequence[Match], method: str, outcome: str, n_boot: int) -> None:
    if method not in METHODS:
        raise RatingError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    if outcome not in OUTCOMES:
        raise RatingError(f"outcome must be one of {', '.join(OUTCOMES)}, got {outcome!r}")
    if method == "openskill" and outcome == "probability":
        raise RatingError(
            "openskill rates decisions only; rate the judge's probability with bradley-terry"
        )
    if n_boot < 1:
        raise RatingError("n_boot must be at least 1")
    if not matches:
        raise RatingError("no matches to rate")
    if len({m.consultancy for m in matches}) > 1:
        raise RatingError("rate debates and consultancies separately (both were given)")
    if len({m.protocol for m in matches}) > 1:
        protocols = ", ".join(sorted({m.protocol for m in matches}))
        raise RatingError(f"rate one protocol at a time (given: {protocols})")


def _groups(matches: Sequence[Match], resample: str) -> list[list[Match]]:
    """The units a bootstrap resamples: single matches, or every item's matches."""
    if resample == "match":
        return [[m] for m in matches]
    if resample != "item":
        raise RatingError(f"resample must be one of match, item, got {resample!r}")
    by_item: dict[str, list[Match]] = {}
    for m in matches:
        by_item.setdefault(m.item, []).append(m)
    return list(by_item.values())


def _count_separated(
    counts: dict[tuple[str, Side], list[int]], seats: dict[tuple[str, Side], list[float]]
) -> None:
    """Add one resample's separated seats: [won every match, lost every match]."""
    for key, scores in seats.items():
        if key in counts and scores:
            counts[key][0] += min(scores) == 1.0
            counts[key][1] += max(scores) == 0.0


def _prior_bound(counts: list[int], scores: list[float], n_boot: int) -> str | None:
    """Which end of a percentile interval only the prior holds (see :class:`Rating`)."""
    share = 0.025 * max(1, n_boot)
    if (scores and min(scores) == 1.0) or counts[0] > share:
        return "upper"
    if (scores and max(scores) == 0.0) or counts[1] > share:
        return "lower"
    return None


def _no_interval(scores: Sequence[float], boots: np.ndarray, prior: bool) -> str | None:
    """Why a rating gets no interval from enough units (None: it gets one); ``prior``: the
    ratings hold a prior (Bradley–Terry), which alone holds a player's that swept."""
    if not scores:
        return "no match against another model: nothing to rate it by"
    if prior and (min(scores) == 1.0 or max(scores) == 0.0):
        what = "won" if min(scores) == 1.0 else "lost"
        return f"{what} every one of its {len(scores)} matches: its rating is the prior's"
    if float(np.ptp(boots)) <= 1e-9 * max(1.0, float(np.max(np.abs(boots)))):
        return "every resample gave the same rating: no spread"
    return None


def _rating(
    key: tuple[str, Side], value: float, boots: list[float], scores: list[float],
    bound: str | None, short: str | None, prior: bool,
) -> Rating:
    xs = np.array(boots or [value])
    note = short or _no_interval(scores, xs, prior)
    return Rating(
        model=key[0],
        side=key[1],
        value=value,
        ci95=None if note else (float(np.percentile(xs, 2.5)), float(np.percentile(xs, 97.5))),
        sd=float(np.std(xs)),
        matches=len(scores),
        win_rate=float(np.mean(scores)) if scores else None,
        prior_bound=None if note else bound,
        note=note,
    )


def persuasiveness(
    matches: Sequence[Match],
    *,
    method: Method = "bradley-terry",
    outcome: Outcome = "decision",
    n_boot: int = 200,
    seed: int = 0,
    prior: float = PRIOR,
    orders: int = 4,
    resample: Resample = "match",
) -> RatingTable:
    """Every model's persuasiveness rating, overall and when arguing the correct and the
    incorrect answer, with 95% percentile bootstrap intervals over ``n_boot`` resamples
    (``numpy.random.default_rng(seed)``) of the matches, or with ``resample="item"`` of the
    items with all their matches (debates on one item share its difficulty). No intervals
    under :data:`~llmdebate.report.inference.MIN_ITEMS` units (items, or matches), and none
    for a rating :class:`Rating` says cannot have one.

    Bradley–Terry ratings are logits (multiply by :data:`ELO_PER_LOGIT` for Elo points);
    openskill's are its μ (the library's default scale, 25 at the start). All matches must be
    of one protocol, and either all debates or all consultancies.
    """
    _check(matches, method, outcome, n_boot)
    point = _fit(matches, method, outcome, prior=prior, seed=seed, orders=orders)
    groups = _groups(matches, resample)
    short = None
    if len(groups) < MIN_ITEMS:
        short = too_few(len(groups), "items" if resample == "item" else "matches")
    boots: dict[tuple[str, Side], list[float]] = {k: [] for k in point}
    separated: dict[tuple[str, Side], list[int]] = {k: [0, 0] for k in point}
    rng = np.random.default_rng(seed)
    for b in range(n_boot):
        idx = rng.integers(0, len(groups), len(groups))
        sample = [m for k in idx for m in groups[int(k)]]
        fitted = _fit(sample, method, outcome, prior=prior, seed=seed + b + 1, orders=1)
        for k, v in fitted.items():
            boots[k].append(v)
        _count_separated(separated, _seats(sample, outcome))
    seats = _seats(matches, outcome)
    ratings = [
        _rating(
            key, value, boots[key], seats.get(key, []),
            _prior_bound(separated[key], seats.get(key, []), n_boot)
            if method == "bradley-terry" else None,
            short,
            method == "bradley-terry",
        )
        for key, value in sorted(point.items())
    ]
    return RatingTable(
        method=method,
        outcome=outcome,
        consultancy=matches[0].consultancy,
        seed=seed,
        n_boot=n_boot,
        scale="logit" if method == "bradley-terry" else "openskill mu",
        resample=resample,
        ratings=tuple(ratings),
    )
