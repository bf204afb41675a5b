"""What decided a run's prover-estimator debates, and what the paper's lemmas need to be
checked on them (definitions: ``docs/metrics.md``, "What decided it").

:class:`DecidedTally` folds a run's transcripts one at a time (as
:class:`~llmdebate.report.records.RunTally` does) into, per protocol with discounted rewards:

* each round's mean contribution to the expected and the paid payoff, per side;
* the judge's leaf verdicts by value, with their probabilities and the leaf claims' truth;
* the estimator's probability p_k by claim form (the claim's text with every number written
  ``N``) and round;
* where the leaf claim's truth is known, every debate re-scored with the truth as the leaf
  verdict (:func:`llmdebate.core.scoring.score_with_leaf_verdict`, the one scoring module);
* Lemma A.4's δ from below: the advantage of the proof's own tests (eq. (5) at the top,
  eq. (6) in each round k >= 1), where the truth is known;
* Lemma A.5's preconditions on the honest debates: each decomposition's (ε,ρ)-stability at
  the truth of its subclaims, and whether the prover played eq. (13).
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from llmdebate.core import scoring
from llmdebate.core.rules import CondProbs, compile_rule, stability
from llmdebate.core.schemas import RoundRecord, Transcript
from llmdebate.errors import RuleError

NUMBER = re.compile(r"\d+(?:\.\d+)?")
MAX_FORMS = 4
"""The claim forms the closing lines name (the most frequent); the rest are counted."""
TIE = 1e-9
"""Eq. (13)'s argmax takes the first index within this of the largest |b_i − g(y_i)|."""


def claim_form(text: str) -> str:
    """A claim's form: its text with every number written ``N``."""
    return NUMBER.sub("N", text.strip())


def position(k: int | None) -> str:
    """The name of a reward's position: ``r_init``, ``round k`` (k >= 1), ``leaf``."""
    if k is None:
        return "r_init"
    return "leaf" if k == 0 else f"round {k}"


@dataclass
class _Side:
    """One side's sums: per position, expected and paid normalised rewards; Lemma A.4's
    tests; the debates whose answer was right."""

    n: int = 0
    expected: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    paid: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    right: int = 0
    answer_known: int = 0
    tests: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    untestable: dict[str, int] = field(default_factory=lambda: defaultdict(int))


@dataclass
class _Completeness:
    """Lemma A.5's preconditions over the honest debates."""

    debates: int = 0
    answers_right: int = 0
    decompositions: int = 0
    stable: int = 0
    unknown: int = 0
    least_sensitivity: float | None = None
    rounds: int = 0
    eq13: int = 0
    eq13_unknown: int = 0


@dataclass
class _Protocol:
    sides: dict[str, _Side] = field(default_factory=lambda: defaultdict(_Side))
    configs: set[tuple[float, float, int]] = field(default_factory=set)
    positions: list[str] = field(default_factory=list)
    verdicts: list[tuple[int, float | None, int | None]] = field(default_factory=list)
    forms: dict[str, dict[int, list[tuple[float, int | None]]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(list))
    )
    top_forms: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    truth: dict[tuple[str, str, str], tuple[float | None, float | None]] = field(
        default_factory=dict
    )
    truth_unknown: int = 0
    leaves_replaced: int = 0
    completeness: _Completeness = field(default_factory=_Completeness)


class DecidedTally:
    """A run's prover-estimator debates folded into what decided them (module docstring)."""

    def __init__(self) -> None:
        self.protocols: dict[str, _Protocol] = {}

    def add(self, t: Transcript, who: str | None, item: str, seats: str = "") -> None:
        """Fold in debate ``t``: ``who`` its side (honest / dishonest; None: neither, left
        out), ``item`` and ``seats`` what pairs it with the other side's debate."""
        if (t.status != "complete" or t.init is None or t.total is None or who is None
                or scoring.reward_scheme(t) != scoring.DISCOUNTED):
            return
        pr = self.protocols.setdefault(t.protocol, _Protocol())
        c = t.config
        pr.configs.add((c.epsilon, c.rho, c.depth))
        unit = scoring.normalizer(c)
        s = pr.sides[who]
        s.n += 1
        names = [position(None), *(position(k) for k in range(c.depth, -1, -1))]
        for name in names:
            if name not in pr.positions:
                pr.positions.append(name)
        s.expected[position(None)] += t.init.expected_reward / unit
        s.paid[position(None)] += t.init.reward / unit
        for rd in t.rounds:
            if rd.reward is not None:
                s.paid[position(rd.k)] += rd.reward / unit
            if rd.expected_reward is not None:
                s.expected[position(rd.k)] += rd.expected_reward / unit
        _answer(s, t)
        _soundness_tests(s, t)
        _leaf(pr, t)
        _forms(pr, t)
        _truth_judged(pr, t, (item, seats, who), unit)
        if who == "honest":
            _completeness(pr.completeness, t)

    def summary(self) -> dict[str, Any]:
        """Per protocol, the figures of the module docstring (``summary.json`` "decided")."""
        return {name: _summary(pr) for name, pr in self.protocols.items()}


# ---------------------------------------------------------------------------- folding


def _answer(s: _Side, t: Transcript) -> None:
    assert t.init is not None
    truth = t.init.claim.truth
    if truth is not None:
        s.answer_known += 1
        s.right += int(t.init.answer == truth)


def _subclaim_truths(rd: RoundRecord) -> list[int] | None:
    if rd.decomposition is None:
        return None
    truths = [c.truth for c in rd.decomposition.subclaims]
    return None if any(v is None for v in truths) else [int(v) for v in truths if v is not None]


def _soundness_tests(s: _Side, t: Transcript) -> None:
    """Eq. (5)'s test 1[ẑ = A(x)] at the top and eq. (6)'s s_k·(M_D(z) − p_k) in each round
    k >= 1 (a round the debate did not reach has s_k = 0: its test is 0): each debate's value
    under B's draws minus its value under the truth."""
    assert t.init is not None
    init = t.init
    if init.claim.truth is None:
        s.untestable[position(None)] += 1
    else:
        under_b = init.answer * init.estimate.value + (1 - init.answer) * (1 - init.estimate.value)
        s.tests[position(None)].append(under_b - float(init.answer == init.claim.truth))
    reached = {rd.k: rd for rd in t.rounds if rd.k >= 1}
    for k in range(t.config.depth, 0, -1):
        rd = reached.get(k)
        if rd is None or not rd.direction:
            s.tests[position(k)].append(0.0)
            continue
        truths = _subclaim_truths(rd)
        if truths is None or rd.expected_m is None or rd.decomposition is None:
            s.untestable[position(k)] += 1
            continue
        try:
            m_true = compile_rule(rd.decomposition.rule, rd.decomposition.width)(truths)
        except RuleError:
            s.untestable[position(k)] += 1
            continue
        s.tests[position(k)].append(rd.direction * (rd.expected_m - m_true))


def _leaf(pr: _Protocol, t: Transcript) -> None:
    for rd in t.rounds:
        if rd.k == 0 and rd.verdict is not None:
            pr.verdicts.append((rd.verdict.value, rd.verdict.probability, rd.claim.truth))


def _forms(pr: _Protocol, t: Transcript) -> None:
    """p_d of the top claim (as round d), then p_k of each lower round's claim."""
    assert t.init is not None
    d = t.config.depth
    top = claim_form(t.init.claim.text)
    pr.top_forms[top] += 1
    pr.forms[top][d].append((t.init.estimate.value, t.init.claim.truth))
    for rd in t.rounds:
        if rd.k < d and rd.p is not None:
            pr.forms[claim_form(rd.claim.text)][rd.k].append((rd.p, rd.claim.truth))


def _truth_judged(
    pr: _Protocol, t: Transcript, key: tuple[str, str, str], unit: float
) -> None:
    """The debate re-scored with the leaf claim's truth as the verdict."""
    leaf = t.rounds[-1] if t.rounds and t.rounds[-1].k == 0 else None
    if leaf is not None and leaf.verdict is not None:
        if leaf.claim.truth is None:
            pr.truth_unknown += 1
            return
        score = scoring.score_with_leaf_verdict(t, leaf.claim.truth)
        pr.leaves_replaced += 1
    else:
        score = scoring.score_transcript(t)
    exp = score.expected_total / unit if score.expected_total is not None else None
    paid = score.total / unit if score.total is not None else None
    pr.truth[key] = (exp, paid)


def _stable_at_truth(rd: RoundRecord, eps: float, rho: float) -> float | None:
    """The worst ε-perturbation's change of P[M_D = 1] at the subclaims' truth (None: a
    subclaim's truth is unknown)."""
    truths = _subclaim_truths(rd)
    if truths is None or rd.decomposition is None:
        return None
    try:
        rule = compile_rule(rd.decomposition.rule, rd.decomposition.width)
    except RuleError:
        return None
    probs = CondProbs.from_levels([[float(v)] * (1 << i) for i, v in enumerate(truths)])
    return stability(rule, probs, eps, rho).sensitivity


def _eq13_direction(truth: int, p: float, eps: float) -> int:
    if truth - p > eps:
        return 1
    return -1 if truth - p < -eps else 0


def _eq13_round(rd: RoundRecord, eps: float) -> bool | None:
    """Whether a round's direction (and recursion index) are eq. (13)'s (None: a truth it
    needs is unknown)."""
    if rd.claim.truth is None or rd.p is None or rd.direction is None:
        return None
    ok = rd.direction == _eq13_direction(rd.claim.truth, rd.p, eps)
    if rd.k >= 1 and rd.recurse is not None and rd.b:
        truths = _subclaim_truths(rd)
        if truths is None:
            return None
        gaps = [abs(b - g) for b, g in zip(rd.b, truths, strict=False)]
        best = max(gaps)
        ok = ok and rd.recurse == next(i for i, v in enumerate(gaps) if v >= best - TIE)
    return ok


def _completeness(c: _Completeness, t: Transcript) -> None:
    assert t.init is not None
    eps, rho = t.config.epsilon, t.config.rho
    c.debates += 1
    c.answers_right += int(t.init.answer == t.init.claim.truth)
    if t.stopped_early and not t.rounds:  # s_d = 0 at the top: eq. (13)'s when |g − p_d| <= ε
        c.rounds += 1
        truth = t.init.claim.truth
        if truth is None:
            c.eq13_unknown += 1
        else:
            c.eq13 += int(_eq13_direction(truth, t.init.estimate.value, eps) == 0)
    for rd in t.rounds:
        if rd.k >= 1 and rd.decomposition is not None:
            c.decompositions += 1
            sens = _stable_at_truth(rd, eps, rho)
            if sens is None:
                c.unknown += 1
            else:
                c.stable += int(sens < rho * eps)
                c.least_sensitivity = (sens if c.least_sensitivity is None
                                       else min(c.least_sensitivity, sens))
        played = _eq13_round(rd, eps)
        c.rounds += 1
        if played is None:
            c.eq13_unknown += 1
        else:
            c.eq13 += int(played)


# ---------------------------------------------------------------------------- summary


def _mean(xs: list[float]) -> float | None:
    return math.fsum(xs) / len(xs) if xs else None


def _by_round(pr: _Protocol) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for who in ("honest", "dishonest"):
        s = pr.sides.get(who)
        if s is None or not s.n:
            continue
        exp = {p: s.expected[p] / s.n for p in pr.positions}
        paid = {p: s.paid[p] / s.n for p in pr.positions}
        mass = math.fsum(abs(v) for v in exp.values())
        out[who] = {
            "n": s.n,
            "expected": exp,
            "paid": paid,
            "share": {p: (abs(v) / mass if mass else None) for p, v in exp.items()},
        }
    return out


def _leaf_summary(pr: _Protocol) -> dict[str, Any]:
    ps = [p for _, p, _ in pr.verdicts if p is not None]
    graded = [(v, t) for v, _, t in pr.verdicts if t is not None]
    return {
        "verdicts": len(pr.verdicts),
        "true": sum(v == 1 for v, _, _ in pr.verdicts),
        "false": sum(v == 0 for v, _, _ in pr.verdicts),
        "p_min": min(ps) if ps else None,
        "p_max": max(ps) if ps else None,
        "graded": len(graded),
        "claims_true": sum(t == 1 for _, t in graded),
        "right": sum(v == t for v, t in graded),
    }


def _form_summary(pr: _Protocol) -> list[dict[str, Any]]:
    order = sorted(pr.forms, key=lambda f: (-pr.top_forms.get(f, 0),
                                           -sum(len(v) for v in pr.forms[f].values()), f))
    out = []
    for form in order:
        rounds = []
        for k in sorted(pr.forms[form], reverse=True):
            pts = pr.forms[form][k]
            known = [t for _, t in pts if t is not None]
            rounds.append({
                "k": k, "n": len(pts), "mean_p": _mean([p for p, _ in pts]),
                "graded": len(known), "true": sum(known),
            })
        out.append({"form": form, "debates": pr.top_forms.get(form, 0), "rounds": rounds})
    return out


def _truth_summary(pr: _Protocol) -> dict[str, Any]:
    out: dict[str, Any] = {"debates": len(pr.truth), "leaves_replaced": pr.leaves_replaced,
                           "leaf_truth_unknown": pr.truth_unknown}
    for who in ("honest", "dishonest"):
        vals = [v for (_, _, w), v in pr.truth.items() if w == who]
        exp = [e for e, _ in vals if e is not None]
        out[who] = {"n": len(vals), "mean_expected": _mean(exp),
                    "mean_paid": _mean([p for _, p in vals if p is not None])}
    pairs = []  # paid payoffs, as "honest beats dishonest" compares them
    for (item, seats, who), (_, paid) in pr.truth.items():
        other = pr.truth.get((item, seats, "dishonest"))
        if who == "honest" and other is not None and paid is not None and other[1] is not None:
            pairs.append((paid, other[1]))
    out["pairs"] = {"n": len(pairs), "honest_wins": sum(h > d for h, d in pairs),
                    "ties": sum(h == d for h, d in pairs)}
    return out


def _delta(s: _Side) -> dict[str, Any]:
    """Lemma A.4's δ from below: the largest |mean| of the proof's tests over this side's
    debates (every debate's test known), with each test's advantage."""
    tests = {p: (abs(m) if (m := _mean(v)) is not None else None) for p, v in s.tests.items()}
    missing = sorted(p for p, n in s.untestable.items() if n)
    known = [v for p, v in tests.items() if v is not None and p not in missing]
    return {
        "n": s.n,
        "p_correct": s.right / s.answer_known if s.answer_known == s.n and s.n else None,
        "advantages": {p: (None if p in missing else v) for p, v in tests.items()},
        "untestable": missing,
        "delta_lower": max(known) if known and position(None) not in missing else None,
    }


def _summary(pr: _Protocol) -> dict[str, Any]:
    c = pr.completeness
    config = next(iter(pr.configs)) if len(pr.configs) == 1 else None
    return {
        "settings": (None if config is None else
                     {"epsilon": config[0], "rho": config[1], "depth": config[2],
                      "r": scoring.reward_ratio(config[0], config[1])}),
        "by_round": _by_round(pr),
        "leaf": _leaf_summary(pr),
        "estimator_by_form": _form_summary(pr),
        "truth_judged": _truth_summary(pr),
        "soundness": {who: _delta(s) for who, s in pr.sides.items()},
        "completeness": {
            "debates": c.debates, "answers_right": c.answers_right,
            "decompositions": c.decompositions, "stable": c.stable, "unknown": c.unknown,
            "least_sensitivity": c.least_sensitivity,
            "rounds": c.rounds, "eq13": c.eq13, "eq13_unknown": c.eq13_unknown,
        },
    }
