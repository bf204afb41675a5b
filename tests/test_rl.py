"""Fork and replay, and the reward functions of TRL, verl and OpenRLHF."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from llmdebate.core import scoring
from llmdebate.core.schemas import Transcript
from llmdebate.experiment.runner import run
from llmdebate.export import build, decision_rows, run_info
from llmdebate.export.api import injectable
from llmdebate.export.rows import TRAINED_SOURCES
from llmdebate.records.rundir import load_transcripts, read_run_config
from llmdebate.rl import AsyncDebateReward, DebateReward, compute_score, fork, reward_func, team_for

try:
    from tests.export_fixtures import pe_config
except ImportError:  # pytest run from inside tests/
    from export_fixtures import pe_config  # type: ignore[no-redef]


def plain(t: Transcript) -> dict[str, Any]:
    """A transcript as data, without the timings and cache flags of its calls."""
    d = t.model_dump(mode="json")
    for c in d["calls"]:
        c.pop("latency_s")
        c.pop("cached")
    return d


@pytest.fixture(scope="module", params=["model", "belief"])
def run_dir(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp(request.param) / "run"
    over: dict[str, Any] = {"dataset": {"limit": 2}}
    if request.param == "belief":
        over["prover"] = {"direction": "belief", "recursion": "belief"}
        over["estimator"] = {"independent": True}
    run(pe_config(**over), out, progress=False)
    return out


def test_fork_with_the_same_agents_reproduces_the_debate_bit_for_bit(run_dir: Path) -> None:
    team = team_for(read_run_config(run_dir))
    forks = 0
    for t in load_transcripts(run_dir):
        for at in range(t.config.depth + 1):
            new = asyncio.run(fork(t, team, at))
            assert plain(new) == plain(t), (t.id, at)
            forks += 1
    assert forks == 12


def test_fork_with_a_swapped_estimator_keeps_the_past_and_changes_the_rest(
    run_dir: Path,
) -> None:
    t = next(t for t in load_transcripts(run_dir) if len(t.rounds) == 3)
    team = team_for(read_run_config(run_dir), {"estimator": "scripted"})  # says 0.5 throughout
    new = asyncio.run(fork(t, team, 1, swapped=("estimator",)))
    assert new.rounds[0] == t.rounds[0]  # round 2 replayed as recorded
    assert [e.value for e in new.rounds[1].estimates] == [0.5] * len(new.rounds[1].estimates)
    assert new.meta["forked"] == {"from": t.id, "at": 1, "swapped": ["estimator"],
                                  "injected": False}
    assert not scoring.score_transcript(new).mismatches
    # the same seed draws the same uniforms: only the probabilities changed
    assert new.rounds[1].u == t.rounds[1].u
    deferred = asyncio.run(fork(t, team_for(read_run_config(run_dir), {"judge": "deferred"}), 0,
                                swapped=("judge",)))
    assert deferred.status == "awaiting_verdict"


def prompt_only(run_dir: Path, text: bool = False) -> list[dict[str, Any]]:
    config = read_run_config(run_dir)
    pairs = decision_rows(load_transcripts(run_dir), run_info(run_dir, config, 0.0))
    pairs = [(r, t) for r, t in pairs if injectable(r) and r.source in TRAINED_SOURCES]
    recs = build(pairs, "trl-prompt-only", config, text=text)
    for rec, (row, _) in zip(recs, pairs, strict=True):
        rec["recorded_completion"] = row.completion[0]["content"]
    return recs


def test_trl_reward_of_the_recorded_reply_is_the_recorded_return(run_dir: Path) -> None:
    recs = [r for r in prompt_only(run_dir) if r["role"] == "prover"][:12]
    assert recs
    raw = DebateReward(normalize=False)
    sampled = DebateReward(normalize=False, expected=False)
    # the scripted prover's first reply to a direction prompt ("True") does not parse: it was
    # asked again, and the refused reply is no training row
    assert not any(r["act"] == "direction" and r["recorded_completion"].strip() == "True"
                   for r in recs)
    for r in recs:
        args = ([r["prompt"]], [[{"role": "assistant", "content": r["recorded_completion"]}]])
        got = raw(*args, state=[r["state"]])[0]
        assert got == pytest.approx(r["expected_return_to_go"], rel=1e-12, abs=1e-300)
        assert sampled(*args, state=[r["state"]])[0] == pytest.approx(r["return_to_go"],
                                                                      rel=1e-12, abs=1e-300)
    directions = [r for r in recs if r["act"] == "direction"]
    if read_run_config(run_dir)["prover"].get("direction") == "belief":
        assert not directions  # a rule chose them (eq. 13): no model's decision to train
        return
    first = directions[0]
    t = Transcript.model_validate(json.loads(first["state"])["transcript"])
    scaled = asyncio.run(AsyncDebateReward(relative=False)([first["prompt"]], ["no idea"],
                                                           state=[first["state"]]))
    assert scaled == [-1.5]  # invalid reply: -1 - the default margin, on the debate's scale
    good = DebateReward(relative=False)([first["prompt"]], ["higher"], state=[first["state"]])[0]
    assert isinstance(good, float) and -1.0 <= good <= 1.0
    assert scoring.normalizer(t.config) > 0
    # relative to the decision (the default): the recorded reply is the baseline, 0, and the
    # invalid reply is -1.5 times the debate's scale in the decision's frame, below every valid one
    relative = DebateReward()
    recorded = relative([first["prompt"]], [first["recorded_completion"]],
                        state=[first["state"]])[0]
    assert recorded == 0.0
    invalid = relative([first["prompt"]], ["no idea"], state=[first["state"]])[0]
    unit = first["decision_unit"]
    assert unit == scoring.ratio_for(t.config) ** first["round_k"]
    assert invalid == pytest.approx(
        (-1.5 * first["reward_unit"] - first["expected_return_to_go"]) / unit, rel=1e-12)
    assert invalid < -first["reward_unit"] / unit - first["expected_return_to_go"] / unit


def test_verl_and_openrlhf_reward_functions(run_dir: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    recs = [r for r in prompt_only(run_dir, text=True) if r["role"] == "prover"]
    r = next(r for r in recs if r["act"] in ("recurse", "direction", "evidence"))
    state = json.loads(r["state"])
    t = Transcript.model_validate(state["transcript"])
    unit = scoring.reward_scale(scoring.DISCOUNTED, scoring.ratio_for(t.config), t.config.depth)
    assert r["reward_unit"] == unit
    score = compute_score("llmdebate/prover-estimator/prover", r["recorded_completion"],
                          r["state"], {}, relative=False)
    assert score == pytest.approx(r["expected_return_to_go"] / unit, rel=1e-12)
    # relative to the decision (the default): the recorded reply is the baseline
    assert compute_score("llmdebate/prover-estimator/prover", r["recorded_completion"],
                         r["state"], {}) == 0.0
    monkeypatch.setenv("LLMDEBATE_RL_SAMPLED", "1")
    monkeypatch.setenv("LLMDEBATE_RL_RELATIVE", "0")
    out = reward_func([r["prompt"] + r["recorded_completion"]], [r["prompt"]], [r["state"]])
    assert float(out["rewards"][0]) == pytest.approx(r["return_to_go"] / unit, rel=1e-6)
    # a query that does not start with its prompt: never read whole, the invalid reward
    out = reward_func(["True " + r["recorded_completion"]], [r["prompt"]], [r["state"]])
    assert float(out["rewards"][0]) == -1.5
    monkeypatch.setenv("LLMDEBATE_RL_RELATIVE", "1")
    out = reward_func([r["prompt"] + r["recorded_completion"]], [r["prompt"]], [r["state"]])
    assert float(out["rewards"][0]) == 0.0


def test_estimator_rewards_follow_the_estimators_elicitation_method(run_dir: Path) -> None:
    from llmdebate.rl.rewards import LogprobsCompletionError

    recs = [r for r in prompt_only(run_dir) if r["role"] == "estimator"][:6]
    assert recs
    refuse = DebateReward(logprobs_as="refuse")
    with pytest.raises(LogprobsCompletionError):  # the scripted estimator elicits by logprobs
        refuse([recs[0]["prompt"]], ["0.4"], state=[recs[0]["state"]])
    frozen = DebateReward(normalize=False, logprobs_as="frozen")
    for r in recs:
        got = frozen([r["prompt"]], ["ignored"], state=[r["state"]])[0]
        assert got == pytest.approx(r["expected_return_to_go"], rel=1e-12, abs=1e-300)
    answer = DebateReward(normalize=False, logprobs_as="answer")
    sure = answer([recs[0]["prompt"]], ["True"], state=[recs[0]["state"]])[0]
    assert sure != answer([recs[0]["prompt"]], ["False"], state=[recs[0]["state"]])[0]
