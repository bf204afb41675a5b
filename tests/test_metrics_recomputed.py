"""Every figure of comparison.json, summary.json and the Inspect export, recomputed from
transcripts.jsonl and judged.jsonl by tests/metrics_oracle.py (written from docs/metrics.md,
importing nothing of llmdebate), equals what the report and the export wrote.

Two fixture runs of scripted models cover the ground: a tournament of two debaters over
every answer-choosing protocol and prover-estimator debate, with the direct baseline blind and
expert and the passage hidden from the debate judges; and a study whose debates two people
judge, one of whom asks the consultant a question first.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import metrics_oracle as oracle
import pytest
import yaml
from inspect_ai.log import read_eval_log
from judging_study import SCRIPTED, assign, make_run, write_judges
from sqlalchemy import select

from llmdebate.cli import main
from llmdebate.core.schemas import Transcript
from llmdebate.inspect_ext.scores import figures
from llmdebate.judging.complete import Submission, ask, submit, waiting_by_id
from llmdebate.judging.db import Assignment, connect
from llmdebate.report.closing import closing_lines
from llmdebate.tournament.report_section import tournament_part

try:
    from tests.fixtures import tournament_players
except ImportError:  # pytest run from inside tests/
    sys.path.insert(0, str(Path(__file__).parent))
    from fixtures import tournament_players  # type: ignore[no-redef]

REPO = Path(__file__).resolve().parents[1]
BOOT = 200


def items(tmp: Path, n: int = 12) -> Path:
    """Divisors questions with a passage (so the direct baseline runs blind and expert)."""
    rows = [json.loads(x) for x in (REPO / "datasets" / "divisors.jsonl").read_text().splitlines()]
    for r in rows[:n]:
        r["context"] = f"A note on the number {r['meta']['n']}. " * 30
    path = tmp / "items.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows[:n]))
    return path


@pytest.fixture(scope="module")
def tournament_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("tour")
    cfg = {
        "name": "tour",
        "protocols": ["direct", "consultancy", "two-sided", "prover-estimator"],
        "dataset": {"path": str(items(tmp))},
        "prover": {**SCRIPTED, "decomposer": "formal"},
        "estimator": SCRIPTED,
        "judge": tournament_players.judge_settings(direct_passage=["hidden", "shown"]),
        "debate": {"depth": 1, "width": 2},
        "tournament": {
            "roster": {n: tournament_players.player(n) for n in ("strong", "random")},
            "self_play": True,
            "provers": ["random"],
        },
        "report": {"bootstrap": BOOT},
    }
    (tmp / "c.yaml").write_text(yaml.safe_dump(cfg))
    run_dir = tmp / "run"
    assert main(["run", "--config", str(tmp / "c.yaml"), "--run-dir", str(run_dir), "--quiet"]) == 0
    assert main(["report", str(run_dir), "--quiet"]) == 0
    return run_dir


@pytest.fixture(scope="module")
def cross_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tournament without self-play (three debaters, every ordered pair), so that the
    accuracy points are pairs at their rating difference, and two prover models."""
    tmp = tmp_path_factory.mktemp("cross")
    cfg = {
        "name": "cross",
        "protocols": ["two-sided", "prover-estimator"],
        "dataset": {"path": str(items(tmp))},
        "prover": {**SCRIPTED, "decomposer": "formal"},
        "estimator": SCRIPTED,
        "judge": tournament_players.judge_settings(),
        "debate": {"depth": 1, "width": 2},
        "tournament": {
            "roster": {n: tournament_players.player(n) for n in ("strong", "random", "concede")},
            "self_play": False,
            "provers": ["random"],
            "estimators": ["random", "strong"],
        },
        "report": {"bootstrap": BOOT},
    }
    (tmp / "c.yaml").write_text(yaml.safe_dump(cfg))
    run_dir = tmp / "run"
    assert main(["run", "--config", str(tmp / "c.yaml"), "--run-dir", str(run_dir), "--quiet"]) == 0
    assert main(["report", str(run_dir), "--quiet"]) == 0
    return run_dir


@pytest.fixture(scope="module")
def study_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("study")
    judge = {"kind": "human", "interactive": True, "turn_cost": 0.05, "log_base": 2}
    run_dir = make_run(
        tmp, ["direct", "consultancy", "prover-estimator"], limit=12, rounds=2, judge=judge,
        dataset=items(tmp),
    )
    assign(run_dir, write_judges(tmp / "j.yaml", ["ann", "bob"]), 1)
    sessions, waiting = connect(run_dir), waiting_by_id(run_dir)
    with sessions() as s:
        rows = sorted(s.scalars(select(Assignment)), key=lambda a: a.id)
    asker = next(a for a in rows if a.debate_id.startswith("consultancy/"))
    assert ask(sessions, run_dir, waiting, asker.judge_id, asker.id, "Which divisor?") == 1
    assert main(["answer", str(run_dir)]) == 0
    for n, a in enumerate(rows):
        if a.debate_id.startswith("prover-estimator/"):
            sub = Submission(verdict=n % 2, probability=(0.3, 0.8)[n % 2])
        else:
            sub = Submission(p_shown_first=0.2 + 0.1 * (n % 6), explanation=f"reason {n}")
        submit(sessions, run_dir, waiting, a.judge_id, a.id, sub)
    assert main(["report", str(run_dir), "--quiet", "--bootstrap", str(BOOT)]) == 0
    return run_dir


def _pick(d: dict[str, Any], keys: list[str]) -> dict[str, Any]:
    return {k: d.get(k) for k in keys}


def _flat(rating: dict[str, Any]) -> dict[str, Any]:
    """A rating's interval as two numbers (pytest.approx compares flat dicts only)."""
    lo, hi = rating["ci95"]
    return {**{k: v for k, v in rating.items() if k != "ci95"}, "lo": lo, "hi": hi}


def _close(got: Any, want: Any, where: str = "", tol: float = 1e-9) -> None:
    """``got`` equals ``want``, floats to ``tol`` (payoffs: the report sums in floating
    point, the oracle in exact fractions); everything else exactly."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and set(got) >= set(want), (where, got, want)
        for k, v in want.items():
            _close(got[k], v, f"{where}.{k}", tol)
    elif isinstance(want, list | tuple):
        assert isinstance(got, list | tuple) and len(got) == len(want), (where, got, want)
        for k, (g, w) in enumerate(zip(got, want, strict=True)):
            _close(g, w, f"{where}[{k}]", tol)
    elif isinstance(want, float) and not isinstance(got, bool):
        assert got == pytest.approx(want, rel=tol, abs=tol * 1e-3), (where, got, want)
    else:
        assert got == want, (where, got, want)


def _check_metrics(written: dict[str, Any], ts: list[dict[str, Any]], seed: int) -> None:
    want = oracle.metrics(ts, seed, BOOT)
    assert written["n_transcripts"] == want["n_transcripts"]
    keys = ["label", "protocol", "view", "figure", "items", "value", "ci95", "bootstrap_seed",
            "item_scores"]
    assert [_pick(r, keys) for r in written["rows"]] == [_pick(r, keys) for r in want["rows"]]
    ckeys = ["a", "b", "items", "difference", "ci95", "bootstrap_seed"]
    assert [_pick(c, ckeys) for c in written["comparisons"]] == want["comparisons"]
    assert set(written["protocols"]) == set(want["protocols"])
    for proto, w in want["protocols"].items():
        got = written["protocols"][proto]
        assert _pick(got, [k for k in w if k not in ("pairs", "payoff", "by_passage")]) == {
            k: v for k, v in w.items() if k not in ("pairs", "payoff", "by_passage")}
        assert {v: _pick(e, list(w["by_passage"][v])) for v, e in got["by_passage"].items()
                } == w["by_passage"]
        if "pairs" in w:
            _close(got["pairs"], w["pairs"], f"{proto}.pairs")
            for s in ("honest", "dishonest"):
                _close(got["payoff"][s], w["payoff"][s], f"{proto}.payoff.{s}")
            top = ["completeness_bound", "soundness_threshold", "bootstrap_seed"]
            _close(_pick(got["payoff"], top), _pick(w["payoff"], top), f"{proto}.payoff")
    cal = want["calibration"]
    assert _pick(written["calibration"], list(cal)) == cal


def test_comparison_and_summary_of_a_tournament_equal_the_recomputation(
    tournament_run: Path,
) -> None:
    ts = oracle.lines(tournament_run / "transcripts.jsonl")
    comparison = json.loads((tournament_run / "comparison.json").read_text())
    summary = json.loads((tournament_run / "summary.json").read_text())
    # what the fixture must cover
    labels = {r["label"] for r in comparison["rows"]}
    assert {"direct (blind)", "direct (expert)", "consultancy (passage hidden)",
            "two-sided (passage hidden)", "prover-estimator (passage hidden)"} <= labels
    _check_metrics(comparison, ts, seed=0)
    _check_metrics(summary["metrics"], ts, seed=0)
    use = oracle.usage(ts)
    assert summary["transcripts"] == use["transcripts"] and summary["status"] == use["status"]
    assert summary["by_protocol"] == use["by_protocol"]
    keys = ["calls", "tokens_in", "tokens_out", "cached_calls", "calls_per_debate", "cost",
            "by_role"]
    assert _pick(summary["usage"], keys) == _pick(use, keys)
    facts = oracle.run_facts(ts)
    assert _pick(summary, ["retries", "failures", "debate_wall_s"]) == _pick(
        facts, ["retries", "failures", "debate_wall_s"])
    assert _pick(summary["estimates"], list(facts["estimates"])) == facts["estimates"]
    assert facts["estimates"]["graded"] > 0
    believed = oracle.beliefs(ts)
    assert {r: {k: v for k, v in summary["beliefs"][r].items() if k != "assessment"}
            for r in believed} == believed
    assert believed["estimator"]["calls"] > 0
    run = comparison["run"]
    assert (run["debates"], run["debates_complete"], run["items"]) == (
        len(ts), use["status"].get("complete", 0), len({oracle.item_of(t) for t in ts}))
    assert _pick(summary["leaf_claim_accuracy"], ["n", "accuracy"]) == oracle.leaf_claims(ts)
    # the tournament: accuracy against rating and the prover x estimator grid
    assert _check_tournament(comparison, ts) == {"self-play", "consultant"}


def _check_tournament(comparison: dict[str, Any], ts: list[dict[str, Any]]) -> set[str]:
    """The tournament section equals the recomputation: accuracy against rating (its x the
    rating, or the difference of two ratings), the prover x estimator grid, the ratings;
    returns the kinds of point."""
    tour = oracle.tournament(ts)
    written = comparison["tournament"]["accuracy_vs_rating"]
    keys = ["protocol", "model", "kind", "accuracy", "n", "items", "accuracy_ci",
            "accuracy_note"]
    assert [_pick(p, keys) for p in written] == tour["points"]
    _close(comparison["tournament"].get("prover_estimator_grid", []), tour["grid"], "grid")
    # the ratings: an independent Bradley-Terry fit (scipy) of every resample of the items;
    # two optimisers agree to 1e-7, the rest exactly
    rated = oracle.ratings(ts, seed=0, n_boot=BOOT)
    tables = comparison["tournament"]["ratings"]
    assert set(tables) == set(rated)
    for proto, want in rated.items():
        assert (tables[proto]["resample"], tables[proto]["n_boot"]) == ("item", BOOT)
        got = [_pick(r, list(want[0])) for r in tables[proto]["ratings"]]
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            assert (g["ci95"] is None) == (w["ci95"] is None), (proto, g, w)
            assert (g["interval_note"], g["prior_bound"]) == (
                w["interval_note"], w["prior_bound"]), (proto, w)
            flat = {k: v for k, v in g.items() if k not in ("ci95", "interval_note")}
            want_flat = {k: v for k, v in w.items() if k not in ("ci95", "interval_note")}
            assert flat == pytest.approx(want_flat, abs=1e-7), (proto, w)
            if w["ci95"] is not None:
                assert g["ci95"] == pytest.approx(w["ci95"], abs=1e-7), (proto, w)
        overall = {w["model"]: w for w in want if w["side"] == "overall"}
        for p in written:
            if p["protocol"] != proto:
                continue
            if p["kind"] == "rating difference":  # x = rating(correct) − rating(incorrect)
                assert p["rating"] == pytest.approx(tour["diffs"][(proto, p["model"])],
                                                    abs=1e-7)
                assert p["rating_ci"] is None
                continue
            x = overall[p["model"]]
            assert p["rating"] == pytest.approx(x["value"], abs=1e-7)
            assert (p["rating_ci"] is None) == (x["ci95"] is None)
            if x["ci95"] is not None:
                assert p["rating_ci"] == pytest.approx(x["ci95"], abs=1e-7)
    assert comparison["tournament"]["matches"] == sum(
        len(m) for m in oracle.matches_of(ts).values())
    assert comparison["tournament"]["models"] == sorted(
        {n for ms in oracle.matches_of(ts).values() for m in ms for n in m[:2] if n})
    return {p["kind"] for p in written}


def test_the_judges_section_of_a_study_equals_the_recomputation(study_run: Path) -> None:
    judged = oracle.lines(study_run / "judged.jsonl")
    comparison = json.loads((study_run / "comparison.json").read_text())
    sec = comparison["judges"]
    assert {(t["meta"].get("judgment") or {}).get("judge") for t in judged} == {"ann", "bob"}
    asked = [t for t in judged
             if any(x["role"] == "judge" and x["text"] == "Question: Which divisor?"
                    for x in t["turns"])]
    assert len(asked) == 1 and asked[0]["protocol"] == "consultancy"
    want = oracle.judges(judged, seed=0, n_boot=BOOT)
    keys = ["judgments", "items", "figure", "mean_active_s", "median_active_s", "stepped"]
    keys += [f"{f}{x}" for f in ("accuracy", "log_score", "brier") for x in ("", "_ci95", "_n")]
    for part in ("per_judge", "per_protocol"):
        assert {k: _pick(v, keys) for k, v in sec[part].items()} == want[part]
    for part in ("judgments", "by_kind", "calibration_per_judge", "agreement"):
        assert sec[part] == want[part], part
    assert _pick(sec["calibration"], list(want["calibration"])) == want["calibration"]
    # blind and expert, hidden and shown: separate rows in the study too
    assert any(r.startswith("direct (") for r in sec["per_protocol"])
    assert "direct" not in sec["per_protocol"]
    # the mixed model recomputed at the random-effect sds the report found, which do
    # minimise its Laplace deviance
    mx = sec["mixed_effects"]
    mixed = oracle.mixed_effects(judged, mx["random_effect_sd"])
    assert mixed.pop("local_min") and len(mixed["effects"]) >= 2
    _close(_pick(mx, list(mixed)), mixed, "mixed", tol=1e-6)  # two optimisers of one mode
    # the judge who asked: its row, over the people's judgments that record their turns
    ts_all = oracle.lines(study_run / "transcripts.jsonl") + judged
    assert comparison["asking_judge"] == oracle.asking(ts_all)
    ts = oracle.lines(study_run / "transcripts.jsonl")
    assert comparison["n_transcripts"] == len(ts)
    _check_metrics(comparison, ts, seed=0)


# ------------------------------------------------------------------------ the Inspect export


def _exported(run_dir: Path, tmp: Path) -> Any:
    """The run exported as an Inspect log, read back with Inspect's own reader."""
    out = tmp / f"{run_dir.parent.name}.eval"
    assert main(["export", str(run_dir), "--format", "inspect-log", "--out", str(out)]) == 0
    return read_eval_log(str(out))


def _nan_safe(x: Any) -> Any:
    """NaN as a marker, so that two unscored figures compare equal (NaN != NaN)."""
    if isinstance(x, dict):
        return {k: _nan_safe(v) for k, v in x.items()}
    return "NaN" if isinstance(x, float) and x != x else x


def _check_inspect(
    log: Any, ts: list[dict[str, Any]], judged: list[dict[str, Any]]
) -> dict[str, Any]:
    want = oracle.inspect_samples(ts, judged)
    got = {str(s.id): {n: dict(sc.value) for n, sc in (s.scores or {}).items()}
           for s in log.samples or []}
    assert set(got) == set(want)
    _close(_nan_safe(got), _nan_safe(want), "inspect samples")
    res = oracle.inspect_results(want)
    assert log.results.total_samples == res["total_samples"]
    assert log.results.completed_samples == res["completed_samples"]
    written = {(e.scorer, e.name): {"metrics": {m: v.value for m, v in e.metrics.items()},
                                    "scored": e.scored_samples, "unscored": e.unscored_samples}
               for e in log.results.scores}
    assert set(written) == set(res["scores"])
    _close(written, res["scores"], "inspect results")
    return res


def _row_of(group: str) -> str:
    """The report's row of an exported score on items that all have a passage."""
    if group.startswith("direct "):
        return f"direct ({group.split(' ')[1]})"
    return group if group.endswith("(passage shown)") else f"{group} (passage hidden)"


def test_the_inspect_export_of_a_tournament_equals_the_recomputation(
    tournament_run: Path, tmp_path: Path
) -> None:
    ts = oracle.lines(tournament_run / "transcripts.jsonl")
    res = _check_inspect(_exported(tournament_run, tmp_path), ts, [])
    # each score's item-level figure averages to the report's row value over the same items
    rows = {r["label"]: r for r in json.loads(
        (tournament_run / "comparison.json").read_text())["rows"]}
    shared = 0
    for (group, name), e in res["scores"].items():
        figure = name.rsplit(" · ", 1)[1]
        if figure in ("judge_accuracy", "honest_beats_dishonest"):
            row = rows[_row_of(group)]
            assert (e["metrics"]["mean"], e["scored"]) == (row["value"], row["items"])
            shared += 1
    assert shared == 5  # direct blind and expert, consultancy, two-sided, prover-estimator
    # several pairs of one item (the tournament's seats) are scored, not their mean payoffs
    assert any(n.endswith("honest_beats_dishonest") for _, n in res["scores"])


def test_the_inspect_export_of_a_study_equals_the_recomputation(
    study_run: Path, tmp_path: Path
) -> None:
    ts = oracle.lines(study_run / "transcripts.jsonl")
    judged = oracle.lines(study_run / "judged.jsonl")
    res = _check_inspect(_exported(study_run, tmp_path), ts, judged)
    human = {n for g, n in res["scores"] if g.endswith(" · human")}
    assert {"consultancy · human · item_judge_accuracy",
            "prover-estimator · human · item_leaf_claim_accuracy"} <= human
    # people's verdicts are judged for correctness only: no pairing of two people's judgments
    assert not any("payoff" in n or "honest_beats" in n for n in human)


def test_by_passage_gives_honest_beats_dishonest_under_its_name_never_as_accuracy(
    tournament_run: Path,
) -> None:
    entry = json.loads((tournament_run / "comparison.json").read_text())["protocols"]
    pe = entry["prover-estimator"]["by_passage"]["hidden"]
    assert pe["figure"] == "honest beats dishonest" and pe["accuracy"] is None
    assert pe["honest_beats_dishonest"] == pe["value"] == entry["prover-estimator"]["value"]
    blind = entry["direct"]["by_passage"]["hidden"]
    assert blind["row"] == "direct (blind)" and blind["accuracy"] == blind["value"]
    assert blind["honest_beats_dishonest"] is None


def test_inspect_honest_beats_dishonest_pairs_by_seats_and_counts_a_tie_as_zero(
    tournament_run: Path,
) -> None:
    """The item's score is the report's: the share of its (same seats) pairs the honest
    prover won outright; never a comparison of the two sides' mean payoffs, nor 1/2 a tie."""
    ts = [Transcript.model_validate(t) for t in oracle.lines(tournament_run / "transcripts.jsonl")]
    item = ts[0].meta["item_id"]
    mine = [t for t in ts if t.protocol == "prover-estimator" and t.meta["item_id"] == item]
    seatings = sorted({oracle.pairing(t.model_dump()) for t in mine})
    assert len(seatings) == 2 and len(mine) == 4
    r = (mine[0].config.epsilon * (1 - mine[0].config.rho) / 4) ** (mine[0].config.depth + 1)
    payoffs = {(seatings[0], "honest"): 1.0, (seatings[0], "dishonest"): 1.0,  # a tie: 0
               (seatings[1], "honest"): 3.0, (seatings[1], "dishonest"): -5.0}  # won: 1
    for t in mine:
        t.total = payoffs[(oracle.pairing(t.model_dump()), t.meta["variant"])] * r
    got = figures("prover-estimator", mine)
    assert got["honest_beats_dishonest"] == 0.5  # mean payoffs 2 > -2 would have said 1
    assert got["item_payoff_honest"] == pytest.approx(2.0)
    assert got["item_payoff_dishonest"] == pytest.approx(-2.0)


def _check_closing(run_dir: Path, ts: list[dict[str, Any]]) -> None:
    """The closing lines state the recomputed figures: each fragment ``A ... B`` of the
    oracle's is on one line, A before B."""
    lines = closing_lines(json.loads((run_dir / "summary.json").read_text()))
    for fragment in oracle.closing(ts, 0, BOOT):
        parts = fragment.split(" ... ")
        assert any(_in_order(line, parts) for line in lines), (fragment, lines)


def _in_order(line: str, parts: list[str]) -> bool:
    at = 0
    for part in parts:
        at = line.find(part, at)
        if at < 0:
            return False
        at += len(part)
    return True


def _check_decisions(ts: list[dict[str, Any]]) -> int:
    """Every recorded decision is the option the judge's p_first points at (docs: option A
    iff P(A) ≥ 1/2); returns how many were checked."""
    checked = 0
    for t in ts:
        if oracle.p_first(t) is not None and t["meta"].get("options") and t["status"] == (
                "complete") and "decision" in t["meta"]:
            assert oracle.same(t["meta"]["decision"], oracle.decision(t)), t["id"]
            checked += 1
    return checked


def test_the_closing_lines_and_the_decisions_equal_the_recomputation(
    tournament_run: Path, study_run: Path
) -> None:
    ts = oracle.lines(tournament_run / "transcripts.jsonl")
    _check_closing(tournament_run, ts)
    assert _check_decisions(ts) > 0
    judged = oracle.lines(study_run / "judged.jsonl")
    assert _check_decisions(judged) > 0
    # the recursive payoffs are the rounds' own: a transcript's recorded total agrees
    for t in ts:
        if t.get("init") is not None and t["status"] == "complete":
            r_d1 = oracle.ratio(t) ** (t["config"]["depth"] + 1)
            assert t["total"] == pytest.approx(float(oracle.exact_total(t)), abs=1e-12)
            assert oracle.payoff(t) == pytest.approx(float(oracle.exact_total(t) / r_d1))


def test_a_tournament_without_self_play_equals_the_recomputation(cross_run: Path) -> None:
    """The accuracy points are ordered pairs at their rating difference, recomputed; and
    every other figure, the closing lines and the decisions with them."""
    ts = oracle.lines(cross_run / "transcripts.jsonl")
    comparison = json.loads((cross_run / "comparison.json").read_text())
    _check_metrics(comparison, ts, seed=0)
    assert _check_tournament(comparison, ts) == {"rating difference"}
    points = comparison["tournament"]["accuracy_vs_rating"]
    assert len(points) == 6  # every ordered pair of three models
    assert len(comparison["tournament"]["prover_estimator_grid"]) == 2
    _check_closing(cross_run, ts)
    assert _check_decisions(ts) > 0


def test_no_tournament_section_where_no_debater_models_are_compared(
    tournament_run: Path,
) -> None:
    """Self-play debates alone, or one prover model against one estimator model (the main
    job's seats), compare no debaters: no section, never a 0-match row with a mean of nan."""
    ts = [Transcript.model_validate(t) for t in oracle.lines(tournament_run / "transcripts.jsonl")]
    self_play = [t for t in ts if t.protocol == "two-sided"
                 and len({s["name"] for s in t.meta["seats"].values()}) == 1]
    assert self_play and tournament_part(self_play, seed=0, n_boot=5) is None
    one_cell = [t for t in ts if t.protocol == "prover-estimator"
                and t.meta["seats"]["estimator"]["name"] == "strong"]
    assert one_cell and tournament_part(one_cell, seed=0, n_boot=5) is None
    part = tournament_part(ts, seed=0, n_boot=5)
    assert part is not None and "nan" not in part.markdown
