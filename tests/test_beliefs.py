"""The prover's belief sources (llmdebate.beliefs): a bounded table, its biased and shuffled
variants, the oracle; named in the config, played by the prover's direction and recursion
without a model call."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llmdebate.agents.settings import BeliefSettings, ProverSettings
from llmdebate.beliefs import (
    BELIEF_SOURCES,
    BeliefTable,
    OracleBeliefs,
    TableBeliefs,
    belief_direction,
    build_table,
    load_table,
    make_source,
    polarity_width,
    shipped_tables,
)
from llmdebate.data.problems import divisor_statement
from llmdebate.errors import UserError
from llmdebate.experiment.runner import run
from llmdebate.records.rundir import load_transcripts
from llmdebate.training.bounded import table_numbers, tabular_check

try:
    from tests.export_fixtures import pe_config
except ImportError:  # pytest run from inside tests/
    from export_fixtures import pe_config  # type: ignore[no-redef]


def claim(n: int, lo: int, hi: int, none: bool) -> str:
    return divisor_statement(n, lo, hi, none)


def small_table() -> BeliefTable:
    texts = [claim(101, 2, 4, True), claim(103, 2, 4, True), claim(105, 2, 4, True),
             claim(105, 3, 40, False), claim(107, 3, 40, False)]
    return build_table(texts, [1, 1, 0, 1, 0], "divisors-polarity-width", {"numbers": [1, 2]})


def test_a_table_is_the_judges_rate_in_each_cell_laplace_smoothed() -> None:
    t = small_table()
    assert t.cells == {"no|1-2": (2, 3), "a|16+": (1, 2)}
    src = TableBeliefs(t)
    assert src.belief(claim(999, 5, 7, True)) == pytest.approx(3 / 5)  # another number
    assert src.belief(claim(999, 5, 30, False)) == pytest.approx(2 / 4)
    # what the feature cannot read, or a cell it never saw: the table's base rate
    assert src.belief("The sky is blue.") == pytest.approx(4 / 7) == t.base_rate
    assert src.belief(claim(999, 5, 9, True)) == pytest.approx(4 / 7)
    assert polarity_width(claim(5, 2, 9, False)) == "a|7-15"
    assert table_numbers(t) == {1, 2}


def test_the_shipped_table_round_trips_and_was_estimated_apart(tmp_path: Path) -> None:
    assert "divisors-polarity-width" in shipped_tables()
    t = load_table("divisors-polarity-width")
    assert len(t.cells) == 8 and sum(n for _, n in t.cells.values()) > 300
    no = [t.rate(c) for c in t.cells if c.startswith("no|")]
    a = [t.rate(c) for c in t.cells if c.startswith("a|")]
    assert min(no) > 0.5 > max(a)  # polarity alone separates the cells
    debate = {json.loads(line)["meta"]["n"]
              for line in Path("datasets/divisors.jsonl").read_text().splitlines() if line}
    assert table_numbers(t) and not table_numbers(t) & debate
    t.write(tmp_path / "t.json")
    assert load_table(str(tmp_path / "t.json")) == t
    with pytest.raises(UserError, match="no table"):
        load_table("no-such-table")


def test_shift_biases_every_belief_by_a_known_amount_clipped() -> None:
    t = small_table()
    plain, biased = TableBeliefs(t), TableBeliefs(t, shift=0.25)
    for c in (claim(9, 2, 3, True), claim(9, 2, 30, False), "not a claim"):
        assert biased.belief(c) == pytest.approx(min(1.0, plain.belief(c) + 0.25))
    assert TableBeliefs(t, shift=0.9).belief(claim(9, 2, 3, True)) == 1.0
    assert OracleBeliefs(shift=-0.25).belief(claim(9, 2, 4, False)) == pytest.approx(0.75)


def test_shuffled_beliefs_are_the_tables_own_and_say_nothing_about_the_claim() -> None:
    t = load_table("divisors-polarity-width")
    shuffled = TableBeliefs(t, shuffle_seed=7)
    values = {round(t.rate(c), 9) for c in t.cells}
    no = [shuffled.belief(claim(n, 2, 3, True)) for n in range(100, 1100)]
    a = [shuffled.belief(claim(n, 2, 3, False)) for n in range(100, 1100)]
    assert {round(q, 9) for q in no + a} <= values
    # deterministic per claim, different across claims of one cell
    assert shuffled.belief(claim(100, 2, 3, True)) == no[0]
    assert len(set(no)) > 3
    # the same distribution for a cell whose own q is 0.92 and one whose q is 0.08
    assert abs(sum(no) / len(no) - sum(a) / len(a)) < 0.03
    mean = sum(t.rate(c) * n for c, (_, n) in t.cells.items()) / sum(
        n for _, n in t.cells.values())
    assert sum(no + a) / len(no + a) == pytest.approx(mean, abs=0.02)
    # another seed deals them out differently
    other = TableBeliefs(t, shuffle_seed=8)
    assert [other.belief(claim(n, 2, 3, True)) for n in range(100, 1100)] != no


def test_the_oracle_knows_each_claims_truth() -> None:
    o = OracleBeliefs()
    assert o.belief(claim(91, 2, 8, False)) == 1.0  # 7 divides 91
    assert o.belief(claim(91, 2, 7, False)) == 0.0
    assert o.belief("not a claim") == 0.5


def test_sources_are_a_registry_and_the_settings_check_their_options() -> None:
    assert BELIEF_SOURCES.builtin_names() == ("model", "table", "oracle")
    assert make_source(BeliefSettings()) is None
    src = make_source(BeliefSettings(source="table", table="divisors-polarity-width",
                                     shift=0.1, shuffle_seed=3))
    assert isinstance(src, TableBeliefs) and src.shift == 0.1 and src.shuffle_seed == 3
    assert isinstance(make_source(BeliefSettings(source="oracle")), OracleBeliefs)
    with pytest.raises(ValueError, match="unknown prover belief source"):
        ProverSettings(beliefs={"source": "psychic"})
    with pytest.raises(UserError, match=r"needs prover\.beliefs\.table"):
        make_source(BeliefSettings(source="table"))
    with pytest.raises(UserError, match="apply to a table or oracle"):
        make_source(BeliefSettings(shift=0.2))
    with pytest.raises(UserError, match="no table and no shuffle_seed"):
        make_source(BeliefSettings(source="oracle", shuffle_seed=1))


def test_eq_13_direction() -> None:
    assert [belief_direction(q, 0.5, 0.1) for q in (0.7, 0.55, 0.45, 0.3)] == [1, 0, 0, -1]


@pytest.mark.parametrize("source", ["table", "oracle"])
def test_a_bounded_prover_plays_its_tables_beliefs_in_a_debate(tmp_path: Path,
                                                                source: str) -> None:
    beliefs = ({"source": "table", "table": "divisors-polarity-width"} if source == "table"
               else {"source": "oracle"})
    cfg = pe_config(prover={"direction": "belief", "recursion": "belief", "beliefs": beliefs})
    run(cfg, tmp_path / "run", progress=False)
    src = make_source(BeliefSettings(**beliefs))
    assert src is not None
    transcripts = load_transcripts(tmp_path / "run")
    assert transcripts
    seen = 0
    for t in transcripts:
        assert t.status == "complete"
        # no model call for a belief: the source gives them
        assert not [c for c in t.calls if c.act == "belief"]
        known = t.meta["prover_beliefs"]
        for text, q in known.items():
            assert q == pytest.approx(src.belief(text, {"meta": {"problem": "divisors"}}))
        eps = t.config.epsilon
        for r in t.rounds:
            if r.k == t.config.depth or r.p is None or r.direction is None:
                continue  # the top claim plays the prover's answer, not a belief
            if r.claim.text in known:
                seen += 1
                assert r.direction == belief_direction(known[r.claim.text], r.p, eps)
    assert seen > 0


def test_the_tabular_check_gives_the_expected_directions() -> None:
    """The game in miniature (seconds): B learns a bounded prover's beliefs exactly, a biased
    prover's bias, nothing from shuffled beliefs, and collapses against an omniscient one."""
    kw = {"seeds": (0,), "steps": 1500, "claims_per_bucket": 100}
    cal = tabular_check("calibrated", **kw)
    assert cal["seeds"][0]["max_abs_p_q"] < 0.02
    assert cal["seeds"][0]["brier"] == pytest.approx(cal["brier_optimum"], abs=0.002)
    biased = tabular_check("biased", **kw)
    assert biased["seeds"][0]["max_abs_p_q"] < 0.02  # p = min(1, rate + 0.25)
    assert biased["seeds"][0]["p"][0] == pytest.approx(0.35, abs=0.02)
    shuffled = tabular_check("shuffled", **kw)
    ps = shuffled["seeds"][0]["p"]
    assert max(ps) - min(ps) < 0.25  # each bucket at its own draws' median, about 0.5
    assert shuffled["seeds"][0]["brier"] > cal["brier_base_rate"] - 0.005
    omni = tabular_check("omniscient", **kw)
    ps = omni["seeds"][0]["p"]
    assert ps[0] < 0.02 and ps[-1] > 0.98
    assert omni["seeds"][0]["brier"] > cal["brier_base_rate"]


def test_the_benchmarks_figures_are_their_definitions() -> None:
    """benchmarks/bench_estimator_debate_reward.py's held-out figures, recomputed by hand."""
    import importlib.util
    import math

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_estimator_debate_reward.py"
    spec = importlib.util.spec_from_file_location("bench_edr", path)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    rows = [{"p": p, "t": t, "q": q, "number": n} for p, t, q, n in
            [(0.9, 1, 0.8, 1), (0.2, 0, 0.3, 1), (0.6, 1, 0.5, 2), (0.05, 0, 0.1, 3)]]
    f = bench.figures(rows, draws=200)
    assert f["brier"]["value"] == pytest.approx((0.01 + 0.04 + 0.16 + 0.0025) / 4, abs=1e-4)
    assert f["log_loss"]["value"] == pytest.approx(
        -(math.log(0.9) + math.log(0.8) + math.log(0.6) + math.log(0.95)) / 4, abs=1e-4)
    assert f["mean_p"]["value"] == pytest.approx(1.75 / 4, abs=1e-4)
    assert f["share_mid"]["value"] == pytest.approx(2 / 4)  # 0.2 and 0.6
    assert f["abs_p_q"]["value"] == pytest.approx(0.35 / 4, abs=1e-4)
    ps, ts = [0.9, 0.2, 0.6, 0.05], [1, 0, 1, 0]
    mp, mt = sum(ps) / 4, 0.5
    cov = sum((p - mp) * (t - mt) for p, t in zip(ps, ts, strict=True))
    slope = cov / sum((p - mp) ** 2 for p in ps)
    assert f["slope"]["value"] == pytest.approx(slope, abs=1e-4)
    assert f["brier"]["low"] <= f["brier"]["value"] <= f["brier"]["high"]
    assert bench.slope([0.3] * 5, [0, 1, 0, 1, 1]) is None  # a constant p has no slope
    # the arms' provers are prover.beliefs sections
    assert bench.arm_settings("biased", "divisors-polarity-width", 0.25, 7).shift == 0.25
    assert bench.arm_settings("omniscient", "t", 0, 0).source == "oracle"
    assert bench.arm_settings("proper", "t", 0, 0) is None
