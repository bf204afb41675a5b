"""The lines that say what decided a run's prover-estimator debates, and the paper's two
lemmas stated with every term of their bounds (from ``summary.json`` "decided",
:mod:`llmdebate.report.decided`; definitions: ``docs/metrics.md``). Both the closing lines of
``llmdebate run`` and the report print them.

A lemma's line says "meets it" or "misses it" only where every term of its bound is known
and its preconditions hold. Lemma A.4's δ is estimated from below (the proof's own tests), so
a payoff under the bound computed with that estimate is within the bound, and one above it
is not decided.
"""

from __future__ import annotations

from typing import Any

from llmdebate.intervals import is_too_few


class Notes:
    """The sentences of missing intervals already said in one block of lines: the first
    time in full, afterwards not at all (the block's head says it once)."""

    def __init__(self) -> None:
        self.said: set[str] = set()

    def mark(self, note: str | None) -> None:
        if note and is_too_few(note):
            self.said.add(note)

    def ci(self, ci: list[float] | None, note: str | None) -> str:
        """`` (95% CI [a, b])``, `` (no interval: why)``, or nothing where the reason is a
        too-few sentence this block already said."""
        if ci:
            return f" (95% CI [{ci[0]:.3f}, {ci[1]:.3f}])"
        if note and note in self.said:
            return ""
        self.mark(note)
        return f" (no interval: {note})" if note else " (no interval)"


def num(x: float) -> str:
    """A payoff in a closing line: three decimals, thousands apart."""
    return f"{x:,.3f}"


def _share_line(who: str, side: dict[str, Any]) -> str:
    parts = []
    for pos, value in side["expected"].items():
        share = side["share"].get(pos)
        pct = "" if share is None else f" ({100 * share:.0f}%)"
        parts.append(f"{pos} {num(value)}{pct}")
    return f"      {who}, {side['n']} debates: " + ", ".join(parts)


def round_lines(d: dict[str, Any]) -> list[str]:
    """Each round's mean expected reward per side and its share |mean| / Σ |means|."""
    by = d.get("by_round") or {}
    if not by:
        return []
    out = ["    each round's part of the expected payoff (mean per debate, and its share of "
           "the sum of the rounds' absolute means):"]
    for who in ("honest", "dishonest"):
        if who in by:
            out.append(_share_line(who, by[who]))
    return out


def leaf_line(leaf: dict[str, Any]) -> str | None:
    """The judge's leaf verdicts by value, their P[True] range, and against the truth."""
    n = int(leaf.get("verdicts") or 0)
    if not n:
        return None
    said = f"True on {leaf['true']} of {n}, False on {leaf['false']} of {n}"
    if leaf.get("p_min") is not None:
        said += f" (its P[True] {leaf['p_min']:.3f}–{leaf['p_max']:.3f})"
    g = int(leaf.get("graded") or 0)
    if g:
        said += (f"; the leaf claims were true in {leaf['claims_true']} of {g}, so it ruled "
                 f"{leaf['right']} of {g} right (leaf-claim accuracy {leaf['right'] / g:.3f})")
    return "    the judge's leaf verdicts: " + said


def form_lines(forms: list[dict[str, Any]], most: int = 4) -> list[str]:
    """The estimator's mean p_k per claim form and round (at most ``most`` forms)."""
    if not forms:
        return []
    out = ["    the estimator's mean probability p_k by claim form (numbers written N) and "
           "round k, with how many of the claims were true:"]
    for f in forms[:most]:
        cells = []
        for r in f["rounds"]:
            truth = f", {r['true']} true" if r["graded"] == r["n"] else ""
            cells.append(f"k = {r['k']}: {r['mean_p']:.3f} (n = {r['n']}{truth})")
        out.append(f"      \"{f['form']}\": " + "; ".join(cells))
    if len(forms) > most:
        out.append(f"      and {len(forms) - most} other forms (summary.json decided)")
    return out


def truth_line(tj: dict[str, Any]) -> str | None:
    """Every debate re-scored with the truth as its leaf verdict."""
    if not tj or not tj.get("leaves_replaced"):
        return None
    h, d = tj["honest"], tj["dishonest"]
    sides = []
    for who, s in (("honest", h), ("dishonest", d)):
        if s["n"] and s["mean_paid"] is not None:
            exp = f"expected {num(s['mean_expected'])}, " if s["mean_expected"] is not None else ""
            sides.append(f"{who} {exp}paid {num(s['mean_paid'])}")
    line = (f"    had the judge ruled the truth at every leaf ({tj['leaves_replaced']} verdicts "
            f"replaced, each debate re-scored by the scoring module): " + "; ".join(sides))
    p = tj.get("pairs") or {}
    if p.get("n"):
        lost = p["n"] - p["honest_wins"] - p["ties"]
        line += (f"; honest beats dishonest in {p['honest_wins']} of {p['n']} pairs "
                 f"({p['ties']} ties, {lost} earned less)")
    if tj.get("leaf_truth_unknown"):
        line += f"; {tj['leaf_truth_unknown']} debates left out (leaf truth unknown)"
    return line


def decided_lines(d: dict[str, Any] | None) -> list[str]:
    """What decided a protocol's debates (``summary.json`` "decided"[protocol])."""
    if not d:
        return []
    out = ["  what decided it:", *round_lines(d)]
    leaf = leaf_line(d.get("leaf") or {})
    if leaf:
        out.append(leaf)
    out += form_lines(d.get("estimator_by_form") or [])
    truth = truth_line(d.get("truth_judged") or {})
    if truth:
        out.append(truth)
    return out


def _stability(c: dict[str, Any]) -> str:
    least = c.get("least_sensitivity")
    worst = (f"; the closest to stable moves P[M_D = 1] by {least:.3f} under an "
             "ε-perturbation" if least is not None else "")
    known = c["decompositions"] - c["unknown"]
    return f"{c['stable']} of {known} decompositions are stable at their subclaims' " \
           f"truth{worst}"


def completeness_line(mean: float | None, bound: float | None, d: dict[str, Any]) -> str | None:
    """Lemma A.5 with its preconditions, and whether this run meets them; a verdict on the
    honest prover's expected payoff only where it does."""
    s = d.get("settings")
    if bound is None or s is None:
        return None
    eps, rho = s["epsilon"], s["rho"]
    head = (f"  Lemma A.5 (completeness): E[R_A] ≥ (1 − ε)·r^(d+1), {bound:.3f} in these units, "
            f"for a prover that answers every claim truly and plays eq. (13), on decompositions "
            f"that are (ε,ρ)-stable (a perturbation of ε = {eps:g} moves P[M_D = 1] by less "
            f"than ρε = {rho * eps:g}); this run: ")
    c = d.get("completeness") or {}
    if not c.get("debates"):
        return head + "no honest debate"
    if c["stable"] < c["decompositions"] - c["unknown"]:  # one unstable one suffices
        unknown = (f" ({c['unknown']} more with a subclaim of unknown truth)"
                   if c["unknown"] else "")
        return head + _stability(c) + unknown + ", so the lemma does not apply to it"
    if c["unknown"]:
        return head + (f"not checkable here: {c['unknown']} of {c['decompositions']} "
                       "decompositions have a subclaim of unknown truth")
    if c["answers_right"] < c["debates"] or c["eq13_unknown"]:
        return head + "not checkable here: needs the truth of every claim the prover argued"
    if c["eq13"] < c["rounds"]:
        return head + (f"every decomposition is stable, but the prover's direction or "
                       f"recursion departs from eq. (13) in {c['rounds'] - c['eq13']} of "
                       f"{c['rounds']} rounds, so the lemma does not apply to it")
    met = ("every decomposition stable" if c["decompositions"] else
           "no decomposition (every honest debate stopped at the top)")
    met += f", eq. (13) in every round ({c['rounds']})"
    if mean is None:
        return head + met + "; the expected payoff was not recorded, so it is not checked"
    verdict = "meets it" if mean >= bound else "misses it"
    return head + (f"{met}; the honest prover's mean expected payoff {num(mean)} against "
                   f"{bound:.3f} — {verdict}")


def soundness_line(mean: float | None, d: dict[str, Any]) -> str | None:
    """Lemma A.4 with every term: P[A correct] of the dishonest prover, and δ estimated from
    below by the proof's own tests where the truth is known."""
    s = d.get("settings")
    snd = (d.get("soundness") or {}).get("dishonest")
    if s is None or not snd:
        return None
    depth = int(s["depth"])
    coef = (2 * depth + 1) / s["r"] ** (depth + 1)
    p = snd.get("p_correct")
    pc = f"{p:.3f}" if p is not None else "P[A correct]"
    head = (f"  Lemma A.4 (soundness): E[R_A] < r^(d+1)·P[A correct] + (2d+1)·δ, in these "
            f"units P[A correct] + (2d+1)·δ/r^(d+1) = {pc} + {coef:,.6g}·δ, δ the estimator's "
            "indistinguishability (the largest advantage of a test that queries A); ")
    delta = snd.get("delta_lower")
    if p is None or delta is None:
        what = ", ".join(snd.get("untestable") or []) or "the top claim"
        return head + f"not checkable here: needs δ (the truth at {what} is unknown)"
    tests = ", ".join(f"{k} {v:.3f}" for k, v in snd["advantages"].items() if v is not None)
    bound = p + coef * delta
    head += (f"δ ≥ δ̂ = {delta:.4f} (the proof's own tests on these debates, mean advantage "
             f"per round: {tests}), so the bound is at least {num(bound)}")
    if mean is None:
        return head + "; the expected payoff was not recorded, so it is not checked"
    if mean < bound:
        return head + f"; the dishonest prover's mean expected payoff {num(mean)} is within it"
    return head + (f"; the dishonest prover's mean expected payoff {num(mean)} is above it, "
                   "and δ may exceed δ̂: not decided")


def protocol_lines(pay: dict[str, Any], d: dict[str, Any] | None) -> list[str]:
    """What decided a protocol's debates, then its lemmas' lines (``pay``: its payoff
    entry of the metrics, ``d``: its "decided" entry)."""
    if not d:
        return []
    honest = (pay.get("honest") or {}).get("mean_expected_normalized")
    dishonest = (pay.get("dishonest") or {}).get("mean_expected_normalized")
    lemmas = [completeness_line(honest, pay.get("completeness_bound"), d),
              soundness_line(dishonest, d)]
    return decided_lines(d) + [line for line in lemmas if line]
