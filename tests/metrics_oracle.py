"""An independent recomputation of a run's figures, written from docs/metrics.md alone.

It reads ``transcripts.jsonl`` and ``judged.jsonl`` as plain JSON (no llmdebate import at all)
and follows the definitions of docs/metrics.md step by step; tests compare what it finds with
``comparison.json``, ``summary.json`` and the run's Inspect export (every sample's scores and
the results block). Only scipy's optimisers are borrowed (the Bradley–Terry fit and the mixed
model's conditional mode); payoffs are recomputed from the rounds in exact arithmetic.
"""

from __future__ import annotations

import json
from collections import defaultdict
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

ORDER = ("direct", "consultancy", "two-sided", "naive-recursive", "prover-estimator")
RECURSIVE = ("naive-recursive", "prover-estimator")
MIN_ITEMS = 10
LO, HI = (1 - 0.95) / 2, 1 - (1 - 0.95) / 2


def lines(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def same(a: Any, b: Any) -> bool:
    return str(a).strip().lower() == str(b).strip().lower()


def item_of(t: dict[str, Any]) -> str:
    if "item_id" in t["meta"]:
        return str(t["meta"]["item_id"])
    return str((t.get("item") or {}).get("id", t["id"]))


def gold_of(t: dict[str, Any]) -> Any:
    return t["meta"].get("gold", (t.get("item") or {}).get("answer"))


def p_first(t: dict[str, Any]) -> float | None:
    p = (t["meta"].get("judge") or {}).get("p_first")
    return None if p is None else float(p)


def decision(t: dict[str, Any]) -> Any:
    """docs: the judge's decision is option A (the first of ``meta.options``) iff its
    P(option A is correct), ``meta.judge.p_first``, is at least 1/2; where no probability
    was recorded, ``meta.decision`` as written."""
    opts, p = t["meta"].get("options"), p_first(t)
    if t["status"] != "complete" or "decision" not in t["meta"]:
        return None
    if p is None or not opts or len(opts) != 2:
        return t["meta"]["decision"]
    return opts[0] if p >= 0.5 else opts[1]


def view(t: dict[str, Any]) -> str | None:
    v = t["meta"].get("variant")
    return v if v in ("blind", "expert") else t["meta"].get("passage")


def label(protocol: str, v: str | None) -> str:
    if v is None:
        return protocol
    return f"{protocol} ({v})" if v in ("blind", "expert") else f"{protocol} (passage {v})"


def dec(x: Any) -> Fraction:
    """A recorded number as the decimal it is written as (exact arithmetic from here on)."""
    return Fraction(str(x))


def ratio(t: dict[str, Any]) -> Fraction:
    """docs: r = ε(1−ρ)/4, exactly."""
    c = t["config"]
    return dec(c["epsilon"]) * (1 - dec(c["rho"])) / 4


def exact_total(t: dict[str, Any], expected: bool = False) -> Fraction:
    """R_A (or E[R_A]) of a prover-estimator debate from its rounds, in exact arithmetic
    (docs/protocol.md, Figure 2): r_init = r^(d+1)·1[ẑ = a] with ẑ = 1[u < p_d] (expected:
    r^(d+1)·P[ẑ = a]); each round r_k = r^k·s_k·(M − p_k), M the recorded M_D(z) (expected:
    E[M_D] where recorded) or, at the leaf, the verdict O (expected: its probability where
    given); p_d the estimate, then p_(k−1) = b_j of the subclaim recursed into (figure2)."""
    r, d, init = ratio(t), int(t["config"]["depth"]), t["init"]
    p_d, a = dec(init["estimate"]["value"]), int(init["answer"])
    if expected:
        total = r ** (d + 1) * (a * p_d + (1 - a) * (1 - p_d))
    else:
        total = r ** (d + 1) * int(int(dec(init["u"]) < p_d) == a)
    p_next: Fraction | None = p_d
    for rd in t["rounds"]:
        if rd.get("direction") is None or rd.get("p") is None:
            continue
        p = dec(rd["p"])
        if t["config"].get("variant", "figure2") == "figure2":
            assert p_next is not None and p == p_next, (t["id"], rd["k"], p, p_next)
        if rd["k"] == 0:
            o, po = rd["verdict"]["value"], rd["verdict"].get("probability")
            m = dec(po) if expected and po is not None else Fraction(o)
        else:
            zs = [int(dec(u) < dec(b)) for u, b in zip(rd["u"], rd["b"], strict=False)]
            assert rd["z"] == zs, t["id"]
            em = rd.get("expected_m")
            m = dec(em) if expected and em is not None else Fraction(rd["m"] or 0)
            p_next = dec(rd["b"][rd["recurse"]]) if rd.get("recurse") is not None else None
        total += r ** rd["k"] * int(rd["direction"]) * (m - p)
    return total


def payoff(t: dict[str, Any], key: str = "total") -> float | None:
    """docs ("Payoff of a debate"): R_A of a complete debate in the report's unit, recomputed
    from its rounds: prover-estimator debate R_A / r^(d+1) (exactly, then rounded once);
    naive recursive debate ±1 (+1 iff the judge's leaf verdict equals the prover's claim)."""
    if t["status"] != "complete" or t.get(key) is None:
        return None
    if t.get("init") is not None:
        exact = exact_total(t, expected=key == "expected_total")
        return float(exact / ratio(t) ** (int(t["config"]["depth"]) + 1))
    if not t["rounds"]:
        return None
    leaf = t["rounds"][-1]
    if leaf["k"] != 0 or leaf.get("verdict") is None:
        return -1.0  # the debate ended on a round whose stated values broke the rule
    return 1.0 if leaf["verdict"]["value"] == leaf.get("claimed") else -1.0


def bound(t: dict[str, Any]) -> float | None:
    """docs: Lemma A.5's (1 − ε)·r^(d+1), normalised: 1 − ε."""
    if t.get("init") is None:
        return None
    return float(1 - dec(t["config"]["epsilon"]))


def too_few(n: int, unit: str = "items") -> str:
    """docs: the one sentence of an interval not given for want of units."""
    return f"n = {n} {unit}: too few for an interval (at least {MIN_ITEMS})"


def interval(values: list[float], seed: int, n_boot: int,
             clusters: list[str] | None = None) -> list[float] | None:
    """docs: no interval under 10 units or when every value is the same; else the
    percentile bootstrap of the mean: of the values (one per unit), or, with ``clusters``,
    over the distinct units in order of first appearance, each resample's mean of every
    value of its drawn units = Σ_k S[idx_k] / Σ_k m[idx_k] (S a unit's sum, m its size)."""
    names = list(dict.fromkeys(clusters)) if clusters is not None else None
    n = len(values) if names is None else len(names)
    if n < MIN_ITEMS or max(values) == min(values):
        return None
    x = np.asarray(values, dtype=float)
    idx = np.random.default_rng(seed).integers(0, n, size=(n_boot, n))
    if names is None:
        means = x[idx].mean(axis=1)
    else:
        sums, sizes = np.zeros(n), np.zeros(n)
        for v, c in zip(values, clusters or [], strict=True):
            sums[names.index(c)] += v
            sizes[names.index(c)] += 1.0
        means = sums[idx].sum(axis=1) / sizes[idx].sum(axis=1)
    lo, hi = np.quantile(means, [LO, HI])
    return [float(lo), float(hi)]


def clustered(
    values: list[float], items: list[str], judges: list[str], seed: int, n_boot: int
) -> list[float] | None:
    """docs: two-way cluster bootstrap over items and judges."""
    names_i, names_j = sorted(set(items)), sorted(set(judges))
    if len(names_i) < MIN_ITEMS or max(values) == min(values):
        return None
    x = np.asarray(values, dtype=float)
    ii = np.array([names_i.index(i) for i in items])
    jj = np.array([names_j.index(j) for j in judges])
    rng = np.random.default_rng(seed)
    means = []
    for _ in range(n_boot):
        ci = np.bincount(rng.integers(0, len(names_i), len(names_i)), minlength=len(names_i))
        cj = np.bincount(rng.integers(0, len(names_j), len(names_j)), minlength=len(names_j))
        w = ci[ii] * cj[jj]
        if w.sum() > 0:
            means.append(float((w * x).sum() / w.sum()))
    lo, hi = np.quantile(np.asarray(means), [LO, HI])
    return [float(lo), float(hi)]


def pairing(t: dict[str, Any]) -> str:
    seats = t["meta"].get("seats") or {}
    return ";".join(f"{k}={v.get('name') or v.get('model')}" for k, v in sorted(seats.items()))


def pairs(ts: list[dict[str, Any]]) -> list[tuple[str, float, float]]:
    """(item, R_h, R_d) for every item and seating with both debates complete."""
    by: dict[tuple[str, str], dict[str, float]] = defaultdict(dict)
    for t in ts:
        p = payoff(t)
        if p is not None and t["meta"].get("variant") in ("honest", "dishonest"):
            by[(item_of(t), pairing(t))][t["meta"]["variant"]] = p
    return [(i, v["honest"], v["dishonest"]) for (i, _), v in by.items() if len(v) == 2]


def item_scores(ts: list[dict[str, Any]], protocol: str) -> dict[str, float]:
    acc: dict[str, list[float]] = defaultdict(list)
    if protocol in RECURSIVE:
        for i, h, d in pairs(ts):
            acc[i].append(1.0 if h > d else 0.0)
    else:
        for t in ts:
            g, dec = gold_of(t), decision(t)
            if t["status"] == "complete" and dec is not None and g is not None:
                acc[item_of(t)].append(float(same(dec, g)))
    return {i: float(np.mean(v)) for i, v in acc.items()}


def rows(ts: list[dict[str, Any]], seed: int, n_boot: int) -> list[dict[str, Any]]:
    out = []
    present = [p for p in ORDER if any(t["protocol"] == p for t in ts)]
    for k, proto in enumerate(present):
        mine = [t for t in ts if t["protocol"] == proto]
        views = sorted({view(t) for t in mine}, key=lambda v: (v is not None, v or ""))
        for j, v in enumerate(views):
            scores = item_scores([t for t in mine if view(t) == v], proto)
            vals = list(scores.values())
            out.append({
                "label": label(proto, v), "protocol": proto, "view": v,
                "figure": "honest beats dishonest" if proto in RECURSIVE else "judge accuracy",
                "items": len(vals), "value": float(np.mean(vals)) if vals else None,
                "ci95": interval(vals, seed + k + 1000 * j, n_boot),
                "bootstrap_seed": seed + k + 1000 * j, "item_scores": scores,
            })
    return out


PASSAGE_OF_VIEW = {"blind": "hidden", "expert": "shown", "hidden": "hidden", "shown": "shown"}


def by_passage(rs: list[dict[str, Any]]) -> dict[str, Any]:
    """docs: a protocol's rows under ``hidden`` / ``shown`` (blind counts as hidden, expert as
    shown), with the rows' own numbers, the value also under its figure's name."""
    return {
        PASSAGE_OF_VIEW[r["view"]]: {
            "row": r["label"], "figure": r["figure"], "items": r["items"], "value": r["value"],
            "accuracy": r["value"] if r["figure"] == "judge accuracy" else None,
            "honest_beats_dishonest": r["value"] if r["figure"] == "honest beats dishonest"
            else None,
            "ci95": r["ci95"], "bootstrap_seed": r["bootstrap_seed"],
        }
        for r in rs if r["view"] in PASSAGE_OF_VIEW
    }


def comparisons(rs: list[dict[str, Any]], seed: int, n_boot: int) -> list[dict[str, Any]]:
    acc = [r for r in rs if r["figure"] == "judge accuracy"]
    out: list[dict[str, Any]] = []
    for n, a in enumerate(acc):
        for b in acc[n + 1:]:
            shared = [i for i in a["item_scores"] if i in b["item_scores"]]
            if not shared:
                continue
            diffs = [a["item_scores"][i] - b["item_scores"][i] for i in shared]
            out.append({"a": a["label"], "b": b["label"], "items": len(shared),
                        "difference": float(np.mean(diffs)),
                        "ci95": interval(diffs, seed + 300 + len(out), n_boot),
                        "bootstrap_seed": seed + 300 + len(out)})
    return out


def pair_stats(ts: list[dict[str, Any]], seed: int, n_boot: int) -> dict[str, Any]:
    """docs: the pairs' figures, each interval over items (an item's pairs drawn together)."""
    ps = pairs(ts)
    if not ps:
        return {"n": 0}
    wins = [1.0 if h > d else 0.0 for _, h, d in ps]
    gaps = [h - d for _, h, d in ps]
    where = [i for i, _, _ in ps]
    return {"n": len(ps), "items": len(set(where)), "discrimination": float(np.mean(wins)),
            "discrimination_ci95": interval(wins, seed, n_boot, where),
            "ties": sum(h == d for _, h, d in ps), "mean_gap": float(np.mean(gaps)),
            "mean_gap_ci95": interval(gaps, seed + 1, n_boot, where),
            "honest": [h for _, h, _ in ps], "dishonest": [d for _, _, d in ps]}


def side(t: dict[str, Any]) -> str | None:
    claimed, g = t["meta"].get("claimed_answer"), gold_of(t)
    if claimed is None or g is None:
        return None
    return "honest" if same(claimed, g) else "dishonest"


def payoffs(ts: list[dict[str, Any]], seed: int, n_boot: int) -> dict[str, Any]:
    """docs: per side the mean payoff over debates, its interval over items."""
    out: dict[str, Any] = {}
    bounds = {bound(t) for t in ts if side(t) and payoff(t) is not None}
    for j, s in enumerate(("honest", "dishonest")):
        mine = [t for t in ts if side(t) == s and payoff(t) is not None]
        vals = [float(payoff(t)) for t in mine]  # type: ignore[arg-type]
        exp = [(e, item_of(t)) for t in mine if (e := payoff(t, "expected_total")) is not None]
        out[s] = {"n": len(vals), "items": len({item_of(t) for t in mine}),
                  "mean_normalized": float(np.mean(vals)) if vals else None,
                  "mean_normalized_ci95": interval(vals, seed + 2 * j, n_boot,
                                                   [item_of(t) for t in mine]),
                  "mean_expected_normalized": float(np.mean([e for e, _ in exp]))
                  if exp else None,
                  "mean_expected_normalized_ci95": interval(
                      [e for e, _ in exp], seed + 2 * j + 1, n_boot, [i for _, i in exp])}
    out["completeness_bound"] = bounds.pop() if len(bounds) == 1 else None
    out["soundness_threshold"] = 0.0 if out["completeness_bound"] is not None else None
    return out


def costs(ts: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for t in ts:
        c = out.setdefault(t["protocol"], {"debates": 0, "failed": 0, "calls": 0,
                                           "cached_calls": 0, "tokens_in": 0, "tokens_out": 0,
                                           "cost": 0.0})
        c["debates"] += 1
        c["failed"] += t["status"] == "failed"
        for call in t["calls"]:
            c["calls"] += 1
            c["cached_calls"] += bool(call["cached"])
            c["tokens_in"] += call["tokens_in"]
            c["tokens_out"] += call["tokens_out"]
            c["cost"] += call["cost"]
    return out


def calibration(ts: list[dict[str, Any]]) -> dict[str, Any]:
    seen, pts = set(), []
    for t in ts:
        init = t.get("init")
        if t["protocol"] != "prover-estimator" or not init or init["claim"].get("truth") is None:
            continue
        key = (item_of(t), init["claim"]["text"])
        if key not in seen:
            seen.add(key)
            pts.append((float(init["estimate"]["value"]), int(init["claim"]["truth"])))
    return calibration_of(pts)


def calibration_of(pts: list[tuple[float, int]]) -> dict[str, Any]:
    """docs: 10 equal-width bins, Brier, ECE and the accuracy of p > 1/2."""
    if not pts:
        return {"n": 0}
    p = np.array([a for a, _ in pts])
    y = np.array([b for _, b in pts], dtype=float)
    b = np.minimum((p * 10).astype(int), 9)
    ece = 0.0
    for k in range(10):
        m = b == k
        if m.sum():
            ece += m.sum() / len(p) * abs(float(p[m].mean()) - float(y[m].mean()))
    bins = [{"lo": k / 10, "hi": (k + 1) / 10, "n": int((b == k).sum()),
             "mean_p": float(p[b == k].mean()) if (b == k).any() else None,
             "frac_true": float(y[b == k].mean()) if (b == k).any() else None}
            for k in range(10)]
    return {"n": len(pts), "brier": float(np.mean((p - y) ** 2)), "ece": float(ece),
            "accuracy": float(np.mean((p > 0.5) == (y == 1))), "bins": bins,
            "points": [[float(a), int(c)] for a, c in pts]}


def metrics(ts: list[dict[str, Any]], seed: int, n_boot: int) -> dict[str, Any]:
    """Every figure of comparison.json's core, as docs/metrics.md defines them."""
    rs = rows(ts, seed, n_boot)
    present = [p for p in ORDER if any(t["protocol"] == p for t in ts)]
    per: dict[str, Any] = {}
    cost = costs(ts)
    for k, proto in enumerate(present):
        mine = [t for t in ts if t["protocol"] == proto]
        own = [r for r in rs if r["protocol"] == proto]
        one = own[0] if len(own) == 1 else None
        value = one["value"] if one else None
        fig = "honest beats dishonest" if proto in RECURSIVE else "judge accuracy"
        e: dict[str, Any] = {
            "figure": fig, "rows": [r["label"] for r in own], "cost": cost[proto],
            "value": value, "items": one["items"] if one else None,
            "accuracy": value if fig == "judge accuracy" else None,
            "honest_beats_dishonest": value if fig == "honest beats dishonest" else None,
            **{k: one[k] if one else None for k in ("ci95", "bootstrap_seed", "item_scores")},
        }
        views = by_passage(own)
        if views:
            e["by_passage"] = views
        if proto in RECURSIVE:
            e["pairs"] = {**pair_stats(mine, seed + 100 + k, n_boot),
                          "bootstrap_seed": seed + 100 + k}
            e["payoff"] = {**payoffs(mine, seed + 150 + k, n_boot),
                           "bootstrap_seed": seed + 150 + k}
            if e["pairs"]["n"] == 0:
                del e["pairs"]["bootstrap_seed"]
        per[proto] = e
    return {"n_transcripts": len(ts), "rows": rs, "comparisons": comparisons(rs, seed, n_boot),
            "protocols": per, "calibration": calibration(ts)}


def leaf_claims(ts: list[dict[str, Any]]) -> dict[str, Any]:
    hits = [float(rd["verdict"]["value"] == rd["claim"]["truth"])
            for t in ts for rd in t["rounds"]
            if rd.get("verdict") is not None and rd["claim"].get("truth") is not None]
    return {"n": len(hits), "accuracy": float(np.mean(hits)) if hits else None}


def usage(ts: list[dict[str, Any]]) -> dict[str, Any]:
    calls = [c for t in ts for c in t["calls"]]
    status: dict[str, int] = defaultdict(int)
    for t in ts:
        status[t["status"]] += 1
    by_protocol: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    by_role: dict[str, dict[str, Any]] = {}
    for t in ts:
        by_protocol[t["protocol"]][t["status"]] += 1
    for c in calls:
        r = by_role.setdefault(c["role"] or "?", {"calls": 0, "tokens_in": 0, "tokens_out": 0,
                                                  "cost": 0.0})
        r["calls"] += 1
        r["tokens_in"] += c["tokens_in"]
        r["tokens_out"] += c["tokens_out"]
        r["cost"] += c["cost"]
    return {"transcripts": len(ts), "status": dict(status), "calls": len(calls),
            "tokens_in": sum(c["tokens_in"] for c in calls),
            "tokens_out": sum(c["tokens_out"] for c in calls),
            "cached_calls": sum(bool(c["cached"]) for c in calls),
            "calls_per_debate": len(calls) / len(ts) if ts else None,
            "cost": sum(c["cost"] for c in calls),
            "by_role": dict(sorted(by_role.items())),
            "by_protocol": {p: dict(v) for p, v in sorted(by_protocol.items())}}


# ------------------------------------------------------------------------ people's verdicts


def judgment_correct(t: dict[str, Any]) -> float | None:
    """docs: the leaf verdict against the leaf claim's truth (recursive protocols: leaf-claim
    accuracy), else the chosen answer against the gold answer (judge accuracy)."""
    if t.get("init") is not None or (t["rounds"] and t["protocol"] in RECURSIVE):
        leaf = t["rounds"][-1] if t["rounds"] else None
        if not leaf or leaf["k"] != 0 or leaf.get("verdict") is None:
            return None
        if leaf["claim"].get("truth") is None:
            return None
        return float(leaf["verdict"]["value"] == leaf["claim"]["truth"])
    if decision(t) is None or gold_of(t) is None:
        return None
    return float(same(decision(t), gold_of(t)))


def given(t: dict[str, Any]) -> tuple[float, int] | None:
    """docs: (the probability the judge gave to its proposition, the proposition's truth):
    P[leaf claim true] against the leaf's truth, or P(first option) against whether it is
    the gold answer; None where either is unknown."""
    if judgment_correct(t) is None:
        return None
    if t.get("init") is not None or (t["rounds"] and t["protocol"] in RECURSIVE):
        leaf = t["rounds"][-1]
        p = leaf["verdict"].get("probability")
        return None if p is None else (float(p), int(leaf["claim"]["truth"]))
    p = (t["meta"].get("judge") or {}).get("p_first")
    opts = t["meta"].get("options")
    if p is None or not opts:
        return None
    return float(p), int(same(opts[0], gold_of(t)))


def log_score(t: dict[str, Any]) -> float | None:
    """docs: ln of the probability the judge gave to the truth (none at p = 0 or 1)."""
    g = given(t)
    if g is None or not 0.0 < g[0] < 1.0:
        return None
    return float(np.log(g[0] if g[1] else 1.0 - g[0]))


def brier_of(t: dict[str, Any]) -> float | None:
    """docs: (p − truth)² of the probability the judge gave."""
    g = given(t)
    return None if g is None else float((g[0] - g[1]) ** 2)


def judges(judged: list[dict[str, Any]], seed: int, n_boot: int) -> dict[str, Any]:
    """Per judge and per row of people: judgments, items, accuracy and its clustered
    interval (seeds: judge i: seed + 10·i; row i: seed + 1000 + 10·i, both in sorted order)."""
    def kind(t: dict[str, Any]) -> str:
        return str((t["meta"].get("judgment") or {}).get("kind", "human"))

    def who(t: dict[str, Any]) -> str:
        return str((t["meta"].get("judgment") or {}).get("judge", "?"))

    def stats(ts: list[dict[str, Any]], s: int) -> dict[str, Any]:
        out: dict[str, Any] = {
            "judgments": len(ts), "items": len({item_of(t) for t in ts}),
            "figure": "leaf-claim accuracy" if all(t["protocol"] in RECURSIVE for t in ts)
            else "judge accuracy" if not any(t["protocol"] in RECURSIVE for t in ts)
            else "mixed"}
        for k, (key, f) in enumerate((("accuracy", judgment_correct), ("log_score", log_score),
                                      ("brier", brier_of))):
            kept = [(c, t) for t in ts if (c := f(t)) is not None]
            vals = [c for c, _ in kept]
            out[key] = float(np.mean(vals)) if vals else None
            out[f"{key}_ci95"] = clustered(vals, [item_of(t) for _, t in kept],
                                           [who(t) for _, t in kept], s + k, n_boot) \
                if vals else None
            out[f"{key}_n"] = len(vals)
        secs = [float(a) for t in ts
                if (a := (t["meta"].get("judgment") or {}).get("active_s")) is not None]
        out["mean_active_s"] = float(np.mean(secs)) if secs else None
        out["median_active_s"] = float(np.median(secs)) if secs else None
        out["stepped"] = sum(bool((t["meta"].get("judgment") or {}).get("reveal")) for t in ts)
        return out

    by_judge: dict[str, list[dict[str, Any]]] = defaultdict(list)
    by_row: dict[str, list[dict[str, Any]]] = defaultdict(list)
    leafy = {who(t): set() for t in judged}
    for t in judged:
        leafy[who(t)].add(t["protocol"] in RECURSIVE)
    for t in judged:
        fig = "leaf-claim accuracy" if t["protocol"] in RECURSIVE else "judge accuracy"
        by_judge[who(t) if len(leafy[who(t)]) == 1 else f"{who(t)} · {fig}"].append(t)
        if kind(t) == "human":
            by_row[label(t["protocol"], view(t))].append(t)
    people = [t for t in judged if kind(t) == "human"]
    per_judge_cal = {}
    for j in sorted({who(t) for t in judged}):
        mine = [t for t in judged if who(t) == j]
        pts = [g for t in mine if (g := given(t)) is not None]
        if pts:
            cal = calibration_of(pts)
            del cal["points"]
            per_judge_cal[j] = {"kind": kind(mine[0]), **cal}
    kinds: dict[str, int] = defaultdict(int)
    for t in judged:
        kinds[kind(t)] += 1
    answers: dict[str, list[Any]] = defaultdict(list)
    for t in people:
        leafy = t.get("init") is not None or (t["rounds"] and t["protocol"] in RECURSIVE)
        answers[str(t["meta"].get("debate_id", t["id"]))].append(
            (t["rounds"][-1].get("verdict") or {}).get("value") if leafy
            else str(decision(t) or "").strip().lower())
    multi = [a for a in answers.values() if len(a) > 1]
    n_pairs = sum(len(a) * (len(a) - 1) // 2 for a in multi)
    agree = sum(a[x] == a[y] for a in multi for x in range(len(a)) for y in range(x + 1, len(a)))
    return {
        "judgments": len(judged),
        "by_kind": dict(kinds),
        "per_judge": {j: stats(ts, seed + 10 * i)
                      for i, (j, ts) in enumerate(sorted(by_judge.items()))},
        "per_protocol": {r: stats(ts, seed + 1000 + 10 * i)
                         for i, (r, ts) in enumerate(sorted(by_row.items()))},
        "calibration": calibration_of([g for t in people if (g := given(t)) is not None]),
        "calibration_per_judge": per_judge_cal,
        "agreement": {"debates": len(multi), "pairs": n_pairs,
                      "agreement": agree / n_pairs if n_pairs else None},
    }


# ------------------------------------------------------------------------ the tournament


def tournament(ts: list[dict[str, Any]], seed: int = 0) -> dict[str, Any]:
    """docs (tournament figures): judge accuracy against rating — per model in self-play or
    as a consultant, else per ordered pair of models at their rating difference (``diffs``)
    — with its interval over items (the k-th point of a protocol: seed + k, 1000
    resamples), and the prover x estimator grid."""
    diffs: dict[tuple[str, str], float] = {}
    grid: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for t in ts:
        seats = t["meta"].get("seats") or {}
        if t["status"] != "complete" or not seats:
            continue
        if t["protocol"] in RECURSIVE:
            grid[(seats["prover"]["name"], seats["estimator"]["name"])].append(t)
            continue
    points = []
    for proto, ms in sorted(matches_of(ts).items()):
        consult = all(c is None or i is None for c, i, _, _ in ms)
        self_play = any(c is not None and c == i for c, i, _, _ in ms)
        groups: list[tuple[str, str, list[tuple[float, str]]]] = []
        if consult or self_play:
            for model in sorted({m for c, i, _, _ in ms for m in (c, i) if m}):
                mine = [(s, it) for c, i, s, it in ms
                        if (model in (c, i) if consult else c == i == model)]
                groups.append(("consultant" if consult else "self-play", model, mine))
        else:
            point = _ratings_of(ms)
            pairs_: dict[tuple[str, str], list[tuple[float, str]]] = defaultdict(list)
            for c, i, s, it in ms:
                if c is not None and i is not None and c != i:
                    pairs_[(c, i)].append((s, it))
            for (c, i), mine in sorted(pairs_.items()):
                groups.append(("rating difference", f"{c} vs {i}", mine))
                diffs[(proto, f"{c} vs {i}")] = point[(c, "overall")] - point[(i, "overall")]
        for kind, model, mine in groups:
            if not mine:
                continue
            vals, where = [s for s, _ in mine], [it for _, it in mine]
            ci = interval(vals, seed + len([p for p in points if p["protocol"] == proto]),
                          1000, where)
            n_items = len(set(where))
            note = (too_few(n_items) if n_items < MIN_ITEMS else None if ci is not None
                    else f"every one of the {n_items} items scored {vals[0]:g}: no spread "
                    "to resample")
            points.append({"protocol": proto, "model": model, "kind": kind,
                           "accuracy": float(np.mean(vals)), "n": len(vals), "items": n_items,
                           "accuracy_ci": ci, "accuracy_note": note})
    cells = []
    for (p, e), rs in sorted(grid.items()):
        hon = [payoff(t) for t in rs if side(t) == "honest"]
        dis = [payoff(t) for t in rs if side(t) == "dishonest"]
        by_item: dict[str, dict[str, float]] = defaultdict(dict)
        for t in rs:
            by_item[item_of(t)].setdefault(str(side(t)), payoff(t))  # type: ignore[arg-type]
        wins = [float(v["honest"] > v["dishonest"]) for v in by_item.values() if len(v) == 2]
        leaves = [c for t in rs if (c := leaf(t)) is not None]
        cells.append({"prover": p, "estimator": e,
                      "honest_payoff": float(np.mean(hon)) if hon else None,
                      "n_honest": len(hon),
                      "dishonest_payoff": float(np.mean(dis)) if dis else None,
                      "n_dishonest": len(dis),
                      "honest_beats_dishonest": float(np.mean(wins)) if wins else None,
                      "n_pairs": len(wins),
                      "leaf_claim_accuracy": float(np.mean(leaves)) if leaves else None,
                      "n_leaves": len(leaves), "debates": len(rs),
                      "early_stops": sum(bool(t["stopped_early"]) for t in rs)})
    return {"points": points, "grid": cells, "diffs": diffs}


def leaf(t: dict[str, Any]) -> float | None:
    for rd in reversed(t["rounds"]):
        if rd.get("verdict") is not None and rd["claim"].get("truth") is not None:
            return float(rd["verdict"]["value"] == rd["claim"]["truth"])
    return None


def laplace(y: np.ndarray, x: np.ndarray, zs: list[np.ndarray], sigma: list[float]
            ) -> tuple[float, np.ndarray, np.ndarray]:
    """docs (mixed effects): at random-effect sds ``sigma``, the conditional mode (β̂, v̂) of
    Σ [y·η − ln(1 + e^η)] − ½‖v‖², η = Xβ + Σ_g σ_g·Z_g v_g (found here by scipy's
    trust-region Newton method), the Laplace deviance −2·ℓ + ln det H_vv, and H⁻¹."""
    from scipy.optimize import minimize

    a = np.hstack([x] + [z * s for z, s in zip(zs, sigma, strict=True)])
    p = x.shape[1]
    pen = np.r_[np.zeros(p), np.ones(a.shape[1] - p)]

    def f(b: np.ndarray) -> tuple[float, np.ndarray]:
        eta = a @ b
        mu = 1.0 / (1.0 + np.exp(-eta))
        return (float(-(y @ eta) + np.logaddexp(0.0, eta).sum() + 0.5 * pen @ (b * b)),
                -(a.T @ (y - mu)) + pen * b)

    def hess(b: np.ndarray) -> np.ndarray:
        mu = 1.0 / (1.0 + np.exp(-(a @ b)))
        return (a.T * (mu * (1 - mu))) @ a + np.diag(pen)

    res = minimize(f, np.zeros(a.shape[1]), jac=True, hess=hess, method="trust-exact",
                   options={"gtol": 1e-12})
    h = hess(res.x)
    return 2.0 * float(res.fun) + float(np.linalg.slogdet(h[p:, p:])[1]), res.x, np.linalg.inv(h)


def mixed_effects(judged: list[dict[str, Any]], sigma: dict[str, float]) -> dict[str, Any]:
    """docs: people's judge accuracy (answer-choosing protocols) by row, judge and item random
    intercepts (a factor with one level dropped), fitted by maximum likelihood under the
    Laplace approximation: recomputed at the random-effect sds the report found (``sigma``),
    with ``local_min`` whether no sd 10⁻³ away fits better (the report's σ does minimise
    the deviance); effects against the first row in sorted order, Wald intervals β ± 1.96·se,
    none under 10 items."""
    data = [
        (c, label(t["protocol"], view(t)), t["meta"]["judgment"]["judge"], item_of(t))
        for t in judged
        if t["protocol"] not in RECURSIVE
        and t["meta"]["judgment"].get("kind", "human") == "human"
        and (c := judgment_correct(t)) is not None
    ]
    names = sorted({r for _, r, _, _ in data})
    y = np.array([c for c, _, _, _ in data])
    for name in names:  # a row judged all right or all wrong has no finite estimate
        assert len({c for c, r, _, _ in data if r == name}) == 2, name
    x = np.column_stack([np.ones(len(data))] + [
        np.array([float(r == n) for _, r, _, _ in data]) for n in names[1:]])
    factors = {"judge": [j for _, _, j, _ in data], "item": [i for _, _, _, i in data]}
    kept = [g for g in ("judge", "item") if len(set(factors[g])) > 1]
    zs = []
    for g in kept:
        levels = sorted(set(factors[g]))
        zs.append(np.array([[float(v == lv) for lv in levels] for v in factors[g]]))
    s = [sigma[g] for g in kept]
    dev, b, inv = laplace(y, x, zs, s)
    nearby = [dev - laplace(y, x, zs, [max(0.0, v + dv * (k == j)) for k, v in enumerate(s)])[0]
              for j in range(len(s)) for dv in (-1e-3, 1e-3)]
    n_items = len(set(factors["item"]))
    # docs: Student's t with (levels − rows) degrees of freedom where every level of a random
    # factor saw one row (the least such), else the normal quantile
    rows_ = [r for _, r, _, _ in data]
    dfs = [len(set(factors[g])) - len(names) for g in kept
           if all(len({r for r, v in zip(rows_, factors[g], strict=True) if v == lv}) == 1
                  for lv in set(factors[g]))]
    df = min(dfs) if dfs else None
    from scipy.stats import t as student

    q = 1.959963984540054 if df is None else float(student.ppf(0.975, df))
    effects = []
    for k, n in enumerate(names[1:], start=1):
        est, se = float(b[k]), float(np.sqrt(inv[k, k]))
        effects.append({"row": n, "log_odds": est, "se": se, "df": df,
                        "ci95": None if n_items < MIN_ITEMS else [est - q * se, est + q * se],
                        "note": too_few(n_items) if n_items < MIN_ITEMS else None})
    return {"model": "logit(P[correct]) ~ row" + "".join(f" + (1 | {g})" for g in kept),
            "reference": names[0], "judgments": len(data),
            "judges": len(set(factors["judge"])), "items": n_items,
            "dropped": [f"the {g} random effect: every judgment is of one {g}"
                        for g in ("judge", "item") if g not in kept],
            "effects": effects, "deviance": dev,
            "local_min": all(d <= 1e-6 for d in nearby)}



# ------------------------------------------------------------------------ the Inspect export


def nan_mean(xs: list[float]) -> float:
    """docs: a figure an item does not define is NaN (Inspect: unscored)."""
    return float(np.mean(xs)) if xs else float("nan")


def inspect_group(t: dict[str, Any]) -> str:
    """docs (Inspect): the score a debate counts in."""
    p, v = t["protocol"], t["meta"].get("variant")
    if p == "direct" and v in ("blind", "expert"):
        return f"direct {v}"
    ctx = (t.get("item") or {}).get("context")
    if isinstance(ctx, str) and ctx.strip() and t["meta"].get("passage") == "shown":
        return f"{p} (passage shown)"
    return str(p)


def inspect_figures(ts: list[dict[str, Any]], protocol: str) -> dict[str, float]:
    """docs (Inspect): the figures of one item's complete debates of one score."""
    if protocol not in RECURSIVE:
        return {"judge_accuracy": nan_mean([
            float(same(decision(t), gold_of(t))) for t in ts
            if decision(t) is not None and gold_of(t) is not None])}
    return {
        "honest_beats_dishonest": nan_mean([1.0 if h > d else 0.0 for _, h, d in pairs(ts)]),
        "item_leaf_claim_accuracy": nan_mean(
            [c for t in ts if (c := judgment_correct(t)) is not None]),
        "item_payoff_honest": nan_mean(
            [p for t in ts if side(t) == "honest" and (p := payoff(t)) is not None]),
        "item_payoff_dishonest": nan_mean(
            [p for t in ts if side(t) == "dishonest" and (p := payoff(t)) is not None]),
    }


def people_figures(ts: list[dict[str, Any]], protocol: str) -> dict[str, float]:
    """docs (Inspect): people's verdicts on one item, the share judged correctly."""
    key = "item_leaf_claim_accuracy" if protocol in RECURSIVE else "item_judge_accuracy"
    return {key: nan_mean([c for t in ts if (c := judgment_correct(t)) is not None])}


def inspect_samples(
    ts: list[dict[str, Any]], judged: list[dict[str, Any]]
) -> dict[str, dict[str, dict[str, float]]]:
    """Per item (a sample): per score (``<group>``, ``<group> · human``) its figures, each
    named ``<score> · <figure>``."""
    items: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for t in ts:
        items[item_of(t)].append(t)
    debate_item = {t["id"]: item_of(t) for t in ts}
    people: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for j in judged:
        people[debate_item[j["id"].split("#")[0]]].append(j)
    out: dict[str, dict[str, dict[str, float]]] = {}
    for i, mine in items.items():
        scores: dict[str, dict[str, float]] = {}
        for done, suffix, fig in ((mine, "", inspect_figures),
                                  (people[i], " · human", people_figures)):
            groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
            for t in done:
                if t["status"] == "complete":
                    groups[inspect_group(t)].append(t)
            for g, gts in groups.items():
                name = g + suffix
                scores[name] = {f"{name} · {k}": v
                                for k, v in fig(gts, gts[0]["protocol"]).items()}
        out[i] = scores
    return out


def inspect_results(samples: dict[str, dict[str, dict[str, float]]]) -> dict[str, Any]:
    """docs (Inspect): the results block, per (score, figure): the mean over the samples
    where the figure is not NaN, Inspect's stderr (sample sd / sqrt(n)) from two samples on,
    the scored and unscored sample counts."""
    per: dict[tuple[str, str], list[float]] = defaultdict(list)
    for scores in samples.values():
        for name, figs in scores.items():
            for key, v in figs.items():
                if not np.isnan(v):
                    per[(name, key)].append(v)
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for k, vs in per.items():
        metrics = {"mean": float(np.mean(vs))}
        if len(vs) > 1:
            metrics["stderr"] = float(np.std(vs, ddof=1) / np.sqrt(len(vs)))
        out[k] = {"metrics": metrics, "scored": len(vs), "unscored": len(samples) - len(vs)}
    return {"scores": out, "total_samples": len(samples),
            "completed_samples": sum(1 for s in samples.values() if s)}


def asking_score(t: dict[str, Any]) -> float | None:
    """docs: a judge who asks scores log_b p(correct) − turn_cost × the rounds it asked for
    (``asked``), p(correct) from ``p_first`` and whether the first option is gold; none
    (−∞) at p(correct) = 0."""
    rec, p, opts = t["meta"]["judge_turns"], p_first(t), t["meta"].get("options")
    if p is None or not opts or gold_of(t) is None:
        return None
    pc = p if same(opts[0], gold_of(t)) else 1.0 - p
    if pc == 0.0:
        return None
    return float(np.log(pc) / np.log(float(rec["log_base"]))
                 - float(rec["turn_cost"]) * int(rec["asked"]))


def asking(ts: list[dict[str, Any]]) -> dict[str, Any]:
    """docs: a judge who asks and stops, per row over the complete debates (model judges')
    and judgments (people's) that record ``meta.judge_turns``."""
    by: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for t in ts:
        if t["status"] == "complete" and isinstance(t["meta"].get("judge_turns"), dict):
            by[label(t["protocol"], view(t))].append(t)
    out: dict[str, Any] = {}
    for row, mine in sorted(by.items()):
        recs = [t["meta"]["judge_turns"] for t in mine]
        scores = [v for t in mine if (v := asking_score(t)) is not None]
        correct = [float(same(decision(t), gold_of(t))) for t in mine
                   if decision(t) is not None and gold_of(t) is not None]
        out[row] = {"debates": len(mine),
                    "rounds_heard": float(np.mean([len(r["turns"]) for r in recs])),
                    "max_rounds": max(int(r["max_rounds"]) for r in recs),
                    "questions": float(np.mean([r["asked"] for r in recs])),
                    "accuracy": float(np.mean(correct)) if correct else None,
                    "score": float(np.mean(scores)) if scores else None,
                    "minus_infinity": len(recs) - len(scores),
                    "turn_cost": recs[0]["turn_cost"], "log_base": recs[0]["log_base"]}
    return out


def run_facts(ts: list[dict[str, Any]]) -> dict[str, Any]:
    """docs (summary.json): retries, failures by kind, debate wall times and the estimator's
    graded probabilities."""
    walls = [float(w) for t in ts if isinstance(w := t["meta"].get("wall_s"), int | float)]
    kinds: dict[str, int] = defaultdict(int)
    for t in ts:
        if t["status"] == "failed":
            head = (t.get("failure") or "").split(":", 1)[0].strip()
            kinds[head if head.isidentifier() else "other"] += 1
    pts: list[tuple[float, int]] = []
    for t in ts:
        init = t.get("init")
        if not init or init["estimate"].get("method") in ("strategy", "oracle"):
            continue
        if init["claim"].get("truth") is not None:
            pts.append((init["estimate"]["value"], int(init["claim"]["truth"])))
        for rd in t["rounds"]:
            if not rd.get("decomposition"):
                continue
            truths = [c.get("truth") for c in rd["decomposition"]["subclaims"]]
            probs = ([(p, i) for i, level in enumerate(rd["table"]) for p in level]
                     if rd.get("table") is not None else [(p, i) for i, p in enumerate(rd["b"])])
            pts += [(p, int(v)) for p, i in probs if (v := truths[i]) is not None]
    estimates: dict[str, Any] = {"graded": len(pts)}
    if pts:
        share = sum(v for _, v in pts) / len(pts)
        estimates.update({"true_share": share,
                          "brier": sum((p - v) ** 2 for p, v in pts) / len(pts),
                          "brier_base_rate": share * (1 - share)})
    return {
        "retries": sum(int(c.get("retries") or 0) for t in ts for c in t["calls"]),
        "failures": {"by_kind": dict(sorted(kinds.items())),
                     "debates": [{"id": t["id"], "reason": t.get("failure")}
                                 for t in ts if t["status"] == "failed"]},
        "debate_wall_s": {"mean": float(np.mean(walls)) if walls else None,
                          "median": float(np.median(walls)) if walls else None,
                          "max": max(walls) if walls else None},
        "estimates": estimates,
    }


def beliefs(ts: list[dict[str, Any]]) -> dict[str, Any]:
    """docs (summary.json, beliefs): the answer masses of the prover's belief calls and of the
    estimator's calls, the beliefs graded against the recorded truths, and the directions
    below the top claim against B's errors (every key but ``assessment``)."""
    masses: dict[str, list[float]] = {"prover": [], "estimator": []}
    graded: dict[str, list[tuple[float, int]]] = {"prover": [], "estimator": []}
    rounds = nonzero = toward = oracle_like = 0
    for t in ts:
        for c in t["calls"]:
            m = (c.get("notes") or {}).get("masses")
            who = ("prover" if c["role"] == "prover" and c["act"] == "belief"
                   else "estimator" if c["role"] == "estimator" else None)
            if who and m:
                masses[who].append(m["p_true_mass"] + m["p_false_mass"])
        truth: dict[str, int] = {}
        claims = [t["init"]["claim"]] if t.get("init") else []
        for rd in t["rounds"]:
            claims.append(rd["claim"])
            claims += (rd.get("decomposition") or {}).get("subclaims") or []
        for c in claims:
            if c.get("truth") is not None:
                truth.setdefault(c["text"], int(c["truth"]))
        believed = t["meta"].get("prover_beliefs") or {}
        graded["prover"] += [(p, truth[x]) for x, p in believed.items() if x in truth]
        init = t.get("init")
        if init and init["estimate"].get("method") not in ("strategy", "oracle"):
            if init["claim"].get("truth") is not None:
                graded["estimator"].append((init["estimate"]["value"], init["claim"]["truth"]))
            for rd in t["rounds"]:
                if not rd.get("decomposition"):
                    continue
                subs = rd["decomposition"]["subclaims"]
                probs = ([(p, i) for i, level in enumerate(rd["table"]) for p in level]
                         if rd.get("table") is not None
                         else [(p, i) for i, p in enumerate(rd["b"])])
                graded["estimator"] += [(p, int(subs[i]["truth"])) for p, i in probs
                                        if subs[i].get("truth") is not None]
        for rd in t["rounds"]:
            v = rd["claim"].get("truth")
            if (rd["k"] >= t["config"]["depth"] or rd.get("direction") is None
                    or rd.get("p") is None or v is None or rd["claim"]["text"] not in believed):
                continue
            err = v - rd["p"]
            sign = (err > 0) - (err < 0)
            rounds += 1
            nonzero += rd["direction"] != 0
            toward += rd["direction"] != 0 and rd["direction"] == sign
            oracle_like += rd["direction"] == (sign if abs(err) > t["config"]["epsilon"] else 0)
    out: dict[str, Any] = {}
    for who in ("prover", "estimator"):
        ms, gs = masses[who], graded[who]
        mean = sum(ms) / len(ms) if ms else None
        out[who] = {"calls": len(ms), "mean_answer_mass": mean,
                    "min_answer_mass": min(ms) if ms else None,
                    "noise": mean < 0.5 if ms else None, "graded": len(gs)}
        if gs:
            share = sum(v for _, v in gs) / len(gs)
            out[who].update(true_share=share, brier=sum((p - v) ** 2 for p, v in gs) / len(gs),
                            brier_base_rate=share * (1 - share))
    out["prover"]["directions"] = {
        "rounds": rounds, "nonzero": nonzero, "toward_truth": toward,
        "toward_truth_share": toward / nonzero if nonzero else None,
        "as_oracle": oracle_like, "as_oracle_share": oracle_like / rounds if rounds else None}
    return out


# ------------------------------------------------------------------------ tournament ratings

PRIOR = 0.01
JUDGE = "(judge)"


def matches_of(ts: list[dict[str, Any]]) -> dict[str, list[tuple[str | None, str | None, float,
                                                                  str]]]:
    """docs (tournament): per protocol, (correct model, incorrect model, score, item) of every
    match, in transcript order."""
    out: dict[str, list[tuple[str | None, str | None, float, str]]] = defaultdict(list)
    for t in ts:
        seats = t["meta"].get("seats") or {}
        if t["status"] != "complete" or not seats or t["protocol"] in RECURSIVE:
            continue
        sides = {v["side"]: v["name"] for v in seats.values() if v.get("side")}
        dec, g = decision(t), gold_of(t)
        if not sides or dec is None or g is None:
            continue
        score = 0.5 if (t["meta"].get("judge") or {}).get("p_first") == 0.5 else float(same(dec, g))
        out[t["protocol"]].append((sides.get("correct"), sides.get("incorrect"), score,
                                   item_of(t)))
    return out


def bt_fit(games: list[tuple[str, str, float]], anchor: str | None) -> dict[str, float]:
    """docs: the maximum of Σ s·ln σ(θ_i − θ_j) + (1 − s)·ln σ(θ_j − θ_i) − (prior/2)·Σ θ²
    (the anchor, when given, fixed at 0 and out of the prior), by scipy's trust-region
    Newton method from its exact gradient and Hessian."""
    from scipy.optimize import minimize

    names = sorted({n for i, j, _ in games for n in (i, j)} | ({anchor} if anchor else set()))
    free = [n for n in names if n != anchor]
    pos = {n: k for k, n in enumerate(free)}
    rows = [(i, j, s) for i, j, s in games if i != j]
    if not rows:
        return dict.fromkeys(names, 0.0)

    def theta(x: np.ndarray, n: str) -> float:
        return 0.0 if n == anchor else float(x[pos[n]])

    def f(x: np.ndarray) -> tuple[float, np.ndarray]:
        value, grad = 0.5 * PRIOR * float(x @ x), PRIOR * x.copy()
        for i, j, s in rows:
            d = theta(x, i) - theta(x, j)
            value -= s * -np.logaddexp(0.0, -d) + (1 - s) * -np.logaddexp(0.0, d)
            r = s - 1.0 / (1.0 + np.exp(-d))
            if i in pos:
                grad[pos[i]] -= r
            if j in pos:
                grad[pos[j]] += r
        return value, grad

    def hess(x: np.ndarray) -> np.ndarray:
        h = PRIOR * np.eye(len(free))
        for i, j, _ in rows:
            p = 1.0 / (1.0 + np.exp(-(theta(x, i) - theta(x, j))))
            w = p * (1 - p)
            for a, b, sign in ((i, i, 1), (j, j, 1), (i, j, -1), (j, i, -1)):
                if a in pos and b in pos:
                    h[pos[a], pos[b]] += sign * w
        return h

    res = minimize(f, np.zeros(len(free)), jac=True, hess=hess, method="trust-exact",
                   options={"gtol": 1e-12})
    return {n: theta(res.x, n) for n in names}


def _ratings_of(ms: list[tuple[str | None, str | None, float, str]]) -> dict[tuple[str, str],
                                                                             float]:
    consult = any(c is None or i is None for c, i, _, _ in ms)
    out: dict[tuple[str, str], float] = {}
    for by_side in (False, True):
        games = []
        for c, i, s, _ in ms:
            pc = None if c is None else (f"{c}@correct" if by_side else c)
            pi = None if i is None else (f"{i}@incorrect" if by_side else i)
            if pc and pi:
                games.append((pc, pi, s))
            elif pc:
                games.append((pc, JUDGE, s))
            elif pi:
                games.append((pi, JUDGE, 1.0 - s))
        for name, v in bt_fit(games, JUDGE if consult else None).items():
            if name == JUDGE:
                continue
            model, _, side = name.rpartition("@") if by_side else (name, "", "overall")
            out[(model, side)] = v
    return out


def _seat_scores(ms: list[tuple[str | None, str | None, float, str]]
                 ) -> dict[tuple[str, str], list[float]]:
    seats: dict[tuple[str, str], list[float]] = defaultdict(list)
    for c, i, s, _ in ms:
        for model, side, score in ((c, "correct", s), (i, "incorrect", 1.0 - s)):
            if model is None:
                continue
            seats[(model, side)].append(score)
            if c != i:
                seats[(model, "overall")].append(score)
    return seats


def rating_note(n_items: int, scores: list[float], boots: np.ndarray) -> str | None:
    """docs (ratings): why a rating has no interval — under 10 items, no match against
    another model, won or lost every one of its matches (the prior's), every resample the
    same — or None."""
    if n_items < MIN_ITEMS:
        return too_few(n_items)
    if not scores:
        return "no match against another model: nothing to rate it by"
    if min(scores) == 1.0 or max(scores) == 0.0:
        what = "won" if min(scores) == 1.0 else "lost"
        return f"{what} every one of its {len(scores)} matches: its rating is the prior's"
    if float(np.ptp(boots)) <= 1e-9 * max(1.0, float(np.max(np.abs(boots)))):
        return "every resample gave the same rating: no spread"
    return None


def ratings(ts: list[dict[str, Any]], seed: int, n_boot: int) -> dict[str, list[dict[str, Any]]]:
    """docs (tournament, ratings): per protocol, every (model, side) rating with its item
    bootstrap interval, sd, matches, win rate and prior bound."""
    out: dict[str, list[dict[str, Any]]] = {}
    for proto, ms in matches_of(ts).items():
        point = _ratings_of(ms)
        groups: dict[str, list[Any]] = defaultdict(list)
        for m in ms:
            groups[m[3]].append(m)
        units = list(groups.values())
        rng = np.random.default_rng(seed)
        boots: dict[tuple[str, str], list[float]] = defaultdict(list)
        swept: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
        for _ in range(n_boot):
            sample = [m for k in rng.integers(0, len(units), len(units)) for m in units[int(k)]]
            for key, v in _ratings_of(sample).items():
                boots[key].append(v)
            for key, sc in _seat_scores(sample).items():
                swept[key][0] += min(sc) == 1.0
                swept[key][1] += max(sc) == 0.0
        seats = _seat_scores(ms)
        rows = []
        for (model, side), value in sorted(point.items()):
            xs = np.array(boots[(model, side)] or [value])
            sc = seats.get((model, side), [])
            won, lost = swept[(model, side)]
            bound = ("upper" if (sc and min(sc) == 1.0) or won > 0.025 * n_boot
                     else "lower" if (sc and max(sc) == 0.0) or lost > 0.025 * n_boot else None)
            note = rating_note(len(units), sc, xs)
            rows.append({"model": model, "side": side, "value": value,
                         "ci95": None if note else [float(np.percentile(xs, 2.5)),
                                                    float(np.percentile(xs, 97.5))],
                         "sd": float(np.std(xs)), "matches": len(sc),
                         "win_rate": float(np.mean(sc)) if sc else None,
                         "prior_bound": None if note else bound, "interval_note": note})
        out[proto] = rows
    return out


# ------------------------------------------------------------------------ the closing lines


def verdict(value: float, ci: list[float] | None, units: int, ties: int = 0,
            lost: int = 0, wins: int = 0) -> str:
    """docs (closing lines): yes (interval above 0.5), no (below; not established when the
    ties alone put it there), not established (it includes 0.5), too few items to tell (no
    interval for want of items); with items enough but every one scored alike, yes / no by
    that score (not established at 0.5)."""
    if ci is None:
        if units < MIN_ITEMS:
            return "too few items to tell"
        return "yes" if value > 0.5 else "no" if value < 0.5 else "no interval"
    said = "yes" if ci[0] > 0.5 else "no" if ci[1] < 0.5 else "not established"
    return "not established" if said == "no" and lost <= wins and ties else said


def _ci_text(ci: list[float] | None, units: int) -> str:
    return f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else (
        too_few(units) if units < MIN_ITEMS else "no spread")


def closing(ts: list[dict[str, Any]], seed: int, n_boot: int) -> list[str]:
    """The figures the closing lines of ``llmdebate run`` state, as text fragments: per
    recursive protocol its verdict, pairs won of all, the discrimination and its interval,
    and each side's mean expected (else sampled) payoff; per
    judge-accuracy row its value over its items and its verdict. ``A ... B``: A, then B,
    on one line."""
    m = metrics(ts, seed, n_boot)
    out: list[str] = []
    for proto, e in m["protocols"].items():
        if proto not in RECURSIVE:
            continue
        p = e["pairs"]
        if p["n"]:
            wins = round(p["discrimination"] * p["n"])
            lost = p["n"] - wins - p["ties"]
            out += [f"{proto}: did the debate favour the truth? " + verdict(
                        p["discrimination"], p["discrimination_ci95"], p["items"], p["ties"],
                        lost, wins),
                    f"{wins} of {p['n']} pairs", f"{p['discrimination']:.3f}",
                    _ci_text(p["discrimination_ci95"], p["items"])]
        pay = e["payoff"]
        for s in ("honest", "dishonest"):
            v = pay[s]
            mean = v["mean_expected_normalized"]
            if mean is None:
                mean = v["mean_normalized"]
            if mean is None:
                continue
            out.append(f"{mean:.3f}")  # the lemmas' lines are checked in tests/test_decided.py
    for r in m["rows"]:
        if r["figure"] != "judge accuracy" or r["value"] is None:
            continue
        out += [f"{r['label']}: the judge chose the right answer on a share {r['value']:.3f} "
                f"of {r['items']} items",
                f"{r['label']}: ... " + verdict(r["value"], r["ci95"], r["items"])]
    return out
