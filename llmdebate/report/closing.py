"""The closing lines of a run: did the debate favour the truth? (in plain words, from
``summary.json``'s metrics; definitions: ``docs/metrics.md``)."""

from __future__ import annotations

from typing import Any

from llmdebate.intervals import is_too_few, too_few_to_tell


def _ci(ci: list[float] | None, note: str | None) -> str:
    if ci:
        return f"95% CI [{ci[0]:.3f}, {ci[1]:.3f}]"
    return f"no interval: {note}" if note else "no interval"


def verdict(value: float | None, ci: list[float] | None, n: int, note: str | None = None) -> str:
    """Whether a share favours the truth: above chance (0.5) with its interval, below it,
    not established, or too few items to tell (``n`` items, ``note`` the interval's reason
    for none)."""
    if value is None:
        return "not measured: no item has a result"
    if ci is None and note and not is_too_few(note) and value != 0.5:
        return ("yes" if value > 0.5 else "no") + f": {note} (no interval needed to tell)"
    if ci is None:
        return too_few_to_tell(note, n)
    if ci[0] > 0.5:
        return "yes: above chance (0.5) with its interval"
    if ci[1] < 0.5:
        return "no: below chance (0.5) with its interval, the false answer was favoured"
    return "not established: the interval includes chance (0.5)"


def _side(who: str, s: dict[str, Any]) -> tuple[str, float | None]:
    if s.get("mean_expected_normalized") is not None:
        mean, ci, note = (
            s["mean_expected_normalized"],
            s["mean_expected_normalized_ci95"],
            s["mean_expected_normalized_note"],
        )
        what = "mean expected payoff"
    else:
        mean, ci, note = s["mean_normalized"], s["mean_normalized_ci95"], s["mean_normalized_note"]
        what = "mean payoff"
    if mean is None:
        return f"  {who}: no complete debate", None
    return f"  {who}: {what} {mean:.3f} ({_ci(ci, note)}; {s['n']} debates)", float(mean)


def _against(mean: float | None, bound: float, above: bool) -> str:
    if mean is None:
        return ""
    ok = mean >= bound if above else mean <= bound
    return " — meets it" if ok else " — misses it"


def payoff_lines(proto: str, e: dict[str, Any]) -> list[str]:
    """A recursive protocol: honest beats dishonest, then both provers' payoffs against the
    completeness bound and the soundness threshold where the protocol has them."""
    pairs = e.get("pairs") or {}
    n = int(pairs.get("n", 0))
    out = _pair_lines(proto, pairs, n) if n else [
        f"{proto}: did the debate favour the truth? not measured as honest beats dishonest: "
        "no item has both an honest and a dishonest debate complete (prover.assignment "
        "paired debates every item for both answers); the payoffs below are unpaired"
    ]
    pay = e.get("payoff") or {}
    if not pay:
        return out
    if not n:
        out.append(_unpaired(pay))
    return out + _payoff_lines(pay)


def _mean(side: dict[str, Any]) -> float | None:
    mean = side.get("mean_expected_normalized")
    return mean if mean is not None else side.get("mean_normalized")


def _unpaired(pay: dict[str, Any]) -> str:
    """Which prover earned more on average, over different items (no pairing, no interval)."""
    h, d = _mean(pay.get("honest") or {}), _mean(pay.get("dishonest") or {})
    if h is None or d is None:
        return "  unpaired: one side has no complete debate"
    who = "true" if h > d else "false" if d > h else "neither"
    return (
        f"  unpaired, over different items: the prover of the {who} answer earned more on "
        f"average ({h:.3f} honest, {d:.3f} dishonest); items differ, so this is no test"
    )


def _pair_lines(proto: str, pairs: dict[str, Any], n: int) -> list[str]:
    value = pairs.get("discrimination")
    ties = int(pairs.get("ties") or 0)
    wins = round(value * n) if value is not None else 0
    said = verdict(value, pairs.get("discrimination_ci95"), int(pairs.get("items") or n),
                   pairs.get("discrimination_note"))
    if said.startswith("no:") and n - wins - ties <= wins:  # below 1/2 through ties alone
        said = (f"not established: the true answer's prover earned more in under half the "
                f"pairs, but {ties} were ties and it earned less in no more than it won")
    out = [f"{proto}: did the debate favour the truth? {said}"]
    if value is not None:
        out.append(
            f"  honest beats dishonest: in {wins} of {n} pairs (same item, same seats) the prover "
            f"of the true answer earned more than the prover of the false one ({value:.3f}; "
            f"{_ci(pairs.get('discrimination_ci95'), pairs.get('discrimination_note'))}); "
            f"{ties} ties (a tie is not a win), {n - wins - ties} earned less"
        )
    return out


def _payoff_lines(pay: dict[str, Any]) -> list[str]:
    out: list[str] = []
    bound = pay.get("completeness_bound")
    honest, h_mean = _side("honest prover (argues the true answer)", pay["honest"])
    dishonest, d_mean = _side("dishonest prover (argues the false answer)", pay["dishonest"])
    if bound is not None:
        honest += f"; the paper guarantees at least {bound:.3f} (1 − ε, completeness)"
        honest += _against(h_mean, bound, above=True)
        threshold = pay.get("soundness_threshold") or 0.0
        dishonest += (
            f"; soundness wants at most {threshold:.3f} plus the estimator's error"
            + _against(d_mean, threshold, above=False)
        )
        out.append("  payoffs in units of r^(d+1), r = ε(1−ρ)/4 (docs/metrics.md):")
    out += [honest, dishonest]
    return out


def closing_lines(summary: dict[str, Any]) -> list[str]:
    """What a newcomer reads last: per recursive protocol, whether the protocol's outcome on
    the root claims favoured the truth (honest beats dishonest) and both provers' payoffs
    against the bounds; per other row, the judge's accuracy."""
    m = summary.get("metrics") or {}
    out: list[str] = []
    for proto, e in (m.get("protocols") or {}).items():
        if e.get("figure") == "honest beats dishonest":
            out += payoff_lines(proto, e)
    for r in m.get("rows") or []:
        if r["figure"] != "judge accuracy" or r["value"] is None:
            continue
        out.append(
            f"{r['label']}: the judge chose the right answer on a share {r['value']:.3f} of "
            f"{r['items']} items ({_ci(r['ci95'], r['interval_note'])}); favoured the truth? "
            + verdict(r["value"], r["ci95"], r["items"], r.get("interval_note"))
        )
    leaf = summary.get("leaf_claim_accuracy") or {}
    if leaf.get("n"):
        out.append(
            f"leaf-claim accuracy: the judge ruled {leaf['accuracy']:.3f} of {leaf['n']} leaf "
            "claims right"
        )
    return out
