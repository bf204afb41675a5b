"""Fork and replay, and the reward functions, for naive recursive debate and the speech
protocols (two-sided, consultancy, direct)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from llmdebate.core.schemas import Transcript
from llmdebate.errors import UserError
from llmdebate.experiment.runner import run
from llmdebate.export import build, decision_rows, run_info
from llmdebate.export.api import injectable
from llmdebate.records.rundir import load_transcripts, read_run_config
from llmdebate.rl import DebateReward, fork, team_for
from llmdebate.rl.replay import Injection
from llmdebate.rl.rewards import LogprobsCompletionError, completion_probability

try:
    from tests.export_fixtures import judged_config
except ImportError:  # pytest run from inside tests/
    from export_fixtures import judged_config  # type: ignore[no-redef]


def plain(t: Transcript) -> dict[str, Any]:
    d = t.model_dump(mode="json")
    for c in d["calls"]:
        c.pop("latency_s")
        c.pop("cached")
    return d


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("judged") / "run"
    run(judged_config(rounds=2), out, progress=False)
    return out


def fork_points(t: Transcript) -> list[dict[str, Any]]:
    if t.protocol == "naive-recursive":
        return [{"at": k, "act": a} for k in range(t.config.depth + 1)
                for a in ("decompose", "value", "recurse", "evidence", "verdict")]
    if t.protocol == "direct":
        return [{"at": 0}]
    rounds = int(t.meta["rounds"])
    speakers = sorted({x.role for x in t.turns if x.role != "judge"})
    return [{"at": r, "speaker": s} for r in range(1, rounds + 2) for s in (None, *speakers)]


def test_fork_with_the_same_agents_reproduces_every_protocol_bit_for_bit(run_dir: Path) -> None:
    team = team_for(read_run_config(run_dir))
    seen: dict[str, int] = {}
    for t in load_transcripts(run_dir):
        assert t.status == "complete", t.id
        for point in fork_points(t):
            new = asyncio.run(fork(t, team, **point))
            assert plain(new) == plain(t), (t.id, point)
            seen[t.protocol] = seen.get(t.protocol, 0) + 1
    assert set(seen) == {"naive-recursive", "two-sided", "consultancy", "direct"}


def test_a_judge_swap_forks_a_choice_debate_or_is_refused_in_one_line(run_dir: Path) -> None:
    """``swap={"judge": ...}``: a person's (deferred) judge waits; the oracle, which rules on
    leaf claims only, is refused for a debate that ends with the judge's choice."""
    t = next(t for t in load_transcripts(run_dir) if t.protocol == "consultancy")
    config = read_run_config(run_dir)
    deferred = team_for(config, swap={"judge": "deferred"})
    waiting = asyncio.run(fork(t, deferred, 1, swapped=("judge",)))
    assert waiting.status == "awaiting_verdict" and waiting.meta["forked"]["swapped"] == ["judge"]
    with pytest.raises(UserError, match=r"judge kind 'oracle' rules on leaf claims only") as e:
        asyncio.run(fork(t, team_for(config, swap={"judge": "oracle"}), 1, swapped=("judge",)))
    assert "\n" not in str(e.value)


def test_an_injected_speech_changes_the_rest_of_a_two_sided_debate(run_dir: Path) -> None:
    t = next(t for t in load_transcripts(run_dir) if t.protocol == "two-sided")
    team = team_for(read_run_config(run_dir))
    inj = Injection(speaker="debater B", act="speech", round=1, completion="I concede.")
    new = asyncio.run(fork(t, team, 1, speaker="debater B", inject=inj))
    assert new.turns[0] == t.turns[0]  # debater A's first speech replayed
    assert new.turns[1].text == "I concede." and new.turns[1].role == "debater B"
    assert new.meta["forked"]["injected"] is True
    assert new.calls[1].notes == {"injected": True}
    with pytest.raises(Exception, match=r"1\.\.3"):
        asyncio.run(fork(t, team, 4))


def online_rows(run_dir: Path) -> list[dict[str, Any]]:
    config = read_run_config(run_dir)
    pairs = decision_rows(load_transcripts(run_dir), run_info(run_dir, config, 0.0))
    pairs = [(r, t) for r, t in pairs if injectable(r)]
    recs = build(pairs, "trl-prompt-only", config)
    for rec, (row, _) in zip(recs, pairs, strict=True):
        rec["recorded_completion"] = row.completion[0]["content"]
    return recs


def test_rewards_of_recorded_replies_are_the_recorded_rewards_in_every_protocol(
    run_dir: Path,
) -> None:
    recs = online_rows(run_dir)
    acts = {(r["protocol"], r["speaker"], r["act"]) for r in recs}
    assert ("two-sided", "debater B", "speech") in acts
    assert ("consultancy", "consultant", "speech") in acts
    assert ("naive-recursive", "prover", "decompose") in acts
    assert ("naive-recursive", "challenger", "recurse") in acts
    expected = DebateReward(logprobs_as="frozen")
    sampled = DebateReward(logprobs_as="frozen", expected=False)
    for r in recs:
        args = ([r["prompt"]], [r["recorded_completion"]])
        assert expected(*args, state=[r["state"]]) == [r["expected_reward"]], r["act"]
        assert sampled(*args, state=[r["state"]]) == [r["reward"]], r["act"]
    speech = next(r for r in recs if r["act"] == "speech")
    other = DebateReward()([speech["prompt"]], ["I concede: the other answer is right."],
                           state=[speech["state"]])[0]
    assert 0.0 <= other <= 1.0


def test_a_logprobs_probability_decision_is_refused_or_read_as_stated(run_dir: Path) -> None:
    recs = online_rows(run_dir)
    value = next(r for r in recs if r["act"] == "value")  # the prover's belief_method: logprobs
    with pytest.raises(LogprobsCompletionError, match="logprobs_as"):
        DebateReward(logprobs_as="refuse")([value["prompt"]], ["True"], state=[value["state"]])
    as_answer = DebateReward()  # logprobs_as="answer" by default
    got = [as_answer([value["prompt"]], [w], state=[value["state"]])[0] for w in ("True", "no")]
    assert all(g in (-1.0, 1.0) for g in got)
    assert as_answer([value["prompt"]], ["maybe"], state=[value["state"]]) == [-1.5]


def test_completion_probability_follows_the_elicitation_method() -> None:
    assert completion_probability(" 0.7\n", "verbalised") == (True, 0.7)
    with pytest.raises(ValueError, match="no number"):
        completion_probability("True", "verbalised")
    with pytest.raises(ValueError, match="alone"):  # the whole reply must be the number
        completion_probability("P = 0.7", "verbalised")
    assert completion_probability("True.", "sampling") == (True, 2 / 3)
    assert completion_probability("false", "sampling") == (True, 1 / 3)
    assert completion_probability("False", "logprobs", logprobs_as="answer") == (True, 0.0)
    assert completion_probability("False", "logprobs", logprobs_as="frozen") == (False, None)
    assert completion_probability("0.3", "logprobs", logprobs_as="verbalised") == (True, 0.3)
    with pytest.raises(ValueError, match="neither True nor False"):
        completion_probability("0.3", "logprobs")
    with pytest.raises(LogprobsCompletionError):
        completion_probability("0.3", "logprobs", logprobs_as="refuse")
