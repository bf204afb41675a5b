"""The one scoring implementation: formulas, properties, re-scoring and ``llmdebate score``."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from core_agents import ToyEstimator, ToyJudge, ToyProver
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llmdebate.cli import cli, main
from llmdebate.core import scoring
from llmdebate.core.engine import debate_seed, run_prover_estimator, run_sync
from llmdebate.core.schemas import Claim, DebateConfig, Transcript
from llmdebate.records.transcripts import append_transcript

X = Claim(text="x", id="x")


def run(cfg: DebateConfig, prover: ToyProver | None = None, seed: int | None = None) -> Transcript:
    return run_sync(
        run_prover_estimator(
            X, prover or ToyProver(q=cfg.width), ToyEstimator(), ToyJudge(), cfg, seed=seed
        )
    )


def test_formulas_on_a_hand_computed_case() -> None:
    r = scoring.reward_ratio(0.2, 0.5)
    assert r == 0.025
    assert scoring.init_reward(r, 2, 1, 1) == 0.025**3
    assert scoring.init_reward(r, 2, 0, 1) == 0.0
    assert scoring.expected_init_reward(r, 2, 0.8, 1) == 0.025**3 * 0.8
    assert scoring.expected_init_reward(r, 2, 0.8, 0) == pytest.approx(0.025**3 * 0.2)
    assert scoring.round_reward(r, 1, -1, 0, 0.7) == pytest.approx(0.025 * 0.7)
    assert scoring.leaf_reward(r, 1, 1, 0.25) == 0.75
    assert scoring.completeness_bound(0.2, r, 2) == pytest.approx(0.8 * 0.025**3)
    assert scoring.naive_payoff(1, 1) == 1 and scoring.naive_payoff(0, 1) == -1


@given(
    st.floats(0.01, 0.49),
    st.floats(0.01, 0.99),
    st.integers(0, 4),
    st.integers(1, 4),
    st.integers(0, 2**31),
)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_direction_zero_everywhere_gives_r_init(
    eps: float, rho: float, depth: int, width: int, seed: int
) -> None:
    cfg = DebateConfig(epsilon=eps, rho=rho, depth=depth, width=width, seed=seed)
    t = run(cfg, ToyProver(q=width, directions=0))
    assert t.init is not None
    assert len(t.rounds) == depth + 1
    assert t.total == t.init.reward
    assert t.expected_total == t.init.expected_reward


def test_numpy_and_python_floats_give_identical_rewards() -> None:
    rng = np.random.default_rng(0)
    p, m, s = rng.random(1000), rng.integers(0, 2, 1000), rng.integers(-1, 2, 1000)
    r = scoring.reward_ratio(0.17, 0.3)
    vec = scoring.round_reward(r, 3, s, m, p)
    one = [
        scoring.round_reward(r, 3, int(a), int(b), float(c))
        for a, b, c in zip(s, m, p, strict=True)
    ]
    assert vec.tolist() == one
    zh = rng.integers(0, 2, 1000)
    assert scoring.init_reward(r, 3, zh, 1).tolist() == [
        scoring.init_reward(r, 3, int(v), 1) for v in zh
    ]


def test_sampled_total_and_its_expectation_agree_on_average() -> None:
    """E[R_A] = E[E[R_A | history]]: the Monte Carlo means agree within their interval."""
    cfg = DebateConfig(epsilon=0.3, rho=0.2, depth=2, width=2)
    ts = [run(cfg, seed=debate_seed(42, i)) for i in range(3000)]
    diff = np.array([t.total - t.expected_total for t in ts])  # type: ignore[operator]
    half = 3.5 * diff.std(ddof=1) / math.sqrt(len(diff))
    assert abs(diff.mean()) <= half
    assert diff.std() > 0  # the sampled reward does vary


def write(tmp_path: Path, ts: list[Transcript]) -> Path:
    path = tmp_path / "transcripts.jsonl"
    for t in ts:
        append_transcript(path, t)
    return path


def test_rescoring_finds_nothing_on_honest_files_and_every_tampering(tmp_path: Path) -> None:
    cfg = DebateConfig(depth=2, width=3)
    ts = [run(cfg, seed=debate_seed(1, i)).model_copy(update={"id": f"d{i}"}) for i in range(20)]
    path = write(tmp_path, ts)
    res = CliRunner().invoke(cli, ["score", str(path), "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["scored"] == 20 and out["mismatches"] == []

    bad = ts[3].model_copy(deep=True)
    bad.rounds[1].reward = (bad.rounds[1].reward or 0.0) + 1e-15
    flipped = ts[4].model_copy(deep=True)
    flipped.rounds[0].z = [1 - v for v in flipped.rounds[0].z]
    path2 = tmp_path / "bad.jsonl"
    for t in (ts[0], bad, flipped):
        append_transcript(path2, t)
    res = CliRunner().invoke(cli, ["score", str(path2)])
    assert res.exit_code == 1
    assert "round 1 reward" in res.output and "round 2 z" in res.output


def score_cli(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(cli, ["score", *args])
    return res.exit_code, res.stdout, res.stderr


def test_a_bad_line_is_reported_by_number_and_the_others_are_scored(tmp_path: Path) -> None:
    ts = [run(DebateConfig(depth=1, width=2), seed=i) for i in range(3)]
    ts = [t.model_copy(update={"id": f"d{i}"}) for i, t in enumerate(ts)]
    path = write(tmp_path, ts[:1])
    with path.open("a") as fh:
        fh.write('{"id": "broken", "config": {"epsilon": 0.9}}\n')
    append_transcript(path, ts[1])
    code, out, err = score_cli(str(path))
    assert code == 1
    assert err.strip().splitlines() == [
        f"error: {path}:2: config.epsilon: " + err.split("config.epsilon: ", 1)[1].strip()
    ]
    assert "2 transcripts, 2 scored, 0 mismatches, 1 bad lines" in out


def test_invalid_json_gives_line_and_column(tmp_path: Path) -> None:
    path = write(tmp_path, [run(DebateConfig(depth=1, width=2))])
    with path.open("a") as fh:
        fh.write('{"id": "x", oops}\n')
    code, out, _err = score_cli(str(path), "--json")
    res = json.loads(out)
    assert code == 1 and res["scored"] == 1
    (bad,) = res["bad_lines"]
    assert bad["line"] == 2 and "column 13" in bad["error"] and "not valid JSON" in bad["error"]


def test_a_torn_last_line_is_reported_and_the_complete_lines_scored(tmp_path: Path) -> None:
    ts = [run(DebateConfig(depth=1, width=2), seed=i) for i in range(2)]
    path = tmp_path / "t.jsonl"
    whole = ts[0].model_dump_json()
    path.write_text(whole + "\n" + ts[1].model_dump_json()[:-40])
    code, out, err = score_cli(str(path))
    assert code == 1 and f"{path}:2: torn last line" in err
    assert "1 transcripts, 1 scored, 0 mismatches, 1 bad lines" in out
    # a complete last line without its newline is torn too (the write may have been cut)
    path.write_text(whole + "\n" + whole)
    code, _out, err = score_cli(str(path))
    assert code == 1 and f"{path}:2: torn last line" in err


def test_duplicate_debate_ids_are_detected(tmp_path: Path) -> None:
    t = run(DebateConfig(depth=1, width=2))
    path = write(tmp_path, [t, t, t.model_copy(update={"id": "other"})])
    code, out, err = score_cli(str(path))
    assert code == 1
    assert f"{path}:2: duplicate debate id {t.id!r} (first on line 1)" in err
    assert "3 transcripts, 3 scored, 0 mismatches, 0 bad lines, 1 duplicate ids" in out


def test_a_file_with_no_complete_transcript_exits_1_with_one_line(tmp_path: Path) -> None:
    t = run(DebateConfig(depth=1, width=2))
    failed = [t.model_copy(update={"id": f"f{i}", "status": "failed"}) for i in range(4)]
    path = write(tmp_path, failed)
    code, out, err = score_cli(str(path))
    assert code == 1 and out == ""
    assert err.strip().splitlines() == [
        f"error: {path}: none of its 4 transcripts completed: nothing was scored"]
    code, out, _err = score_cli(str(path), "--json")
    assert code == 1 and json.loads(out)["scored"] == 0
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    code, _out, err = score_cli(str(empty))
    assert code == 1 and "no transcript completed" in err


def test_a_missing_file_is_the_only_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["score", str(tmp_path / "missing.jsonl")]) == 2
    assert "no such transcript file" in capsys.readouterr().err


def test_a_rule_naming_a_missing_subclaim_is_one_line_with_file_and_line(tmp_path: Path) -> None:
    t = run(DebateConfig(depth=1, width=2))
    bad = t.model_dump_json().replace(
        '"kind":"and","k":null,"expr":null', '"kind":"expr","k":null,"expr":"y1 & y3"'
    )
    assert bad != t.model_dump_json()
    path = tmp_path / "t.jsonl"
    path.write_text(t.model_dump_json() + "\n" + bad + "\n")
    code, _out, err = score_cli(str(path))
    assert code == 1
    assert err.strip() == (
        f"error: {path}:2: rule expression 'y1 & y3': names subclaim y3, "
        "but the decomposition has y1..y2"
    )


def test_the_schema_and_scoring_agree_on_r() -> None:
    """DebateConfig's depth bound uses r = ε(1-ρ)/4 as scoring.reward_ratio does."""
    for eps, rho in ((0.2, 0.5), (0.01, 0.9), (0.49, 0.01)):
        r = scoring.reward_ratio(eps, rho)
        most = int(math.log(1e-300) / math.log(r)) - 1
        assert scoring.normalizer(DebateConfig(epsilon=eps, rho=rho, depth=most)) >= 1e-300
        with pytest.raises(ValueError, match=f"depth must be <= {most}"):
            DebateConfig(epsilon=eps, rho=rho, depth=most + 1)


@given(
    st.floats(0.01, 0.49),
    st.floats(0.01, 0.99),
    st.integers(0, 3),
    st.integers(1, 4),
    st.integers(0, 2**31),
    st.booleans(),
)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_every_debate_rescores_to_the_last_bit_after_a_json_round_trip(
    eps: float, rho: float, depth: int, width: int, seed: int, expected: bool
) -> None:
    cfg = DebateConfig(
        epsilon=eps, rho=rho, depth=depth, width=width, seed=seed, expected_rewards=expected
    )
    t = run(cfg)
    back = Transcript.model_validate_json(t.model_dump_json())
    s = scoring.score_transcript(back)
    assert s.mismatches == []
    assert s.total == t.total == scoring.total([t.init.reward, *(r.reward for r in t.rounds)])  # type: ignore[union-attr]
    assert len(t.rounds) == depth + 1 and all(len(r.z) == width for r in t.rounds[:-1])
