"""Best of n for speeches (two-sided debate, consultancy): each candidate is scored by the
judge's probability of the debater's answer after it; the best is played; the candidates
become preference pairs; fork and replay stay bit for bit."""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from llmdebate.core.schemas import ModelCallRecord, Transcript, Turn
from llmdebate.experiment.runner import run
from llmdebate.export import carrier_sums, decision_rows, export_run, run_info
from llmdebate.export.credit import judged
from llmdebate.protocols.common import transcript_text
from llmdebate.records.rundir import load_transcripts, read_run_config
from llmdebate.rl import fork, team_for
from llmdebate.rl.replay import Injection

try:
    from tests.export_fixtures import judged_config
except ImportError:  # pytest run from inside tests/
    from export_fixtures import judged_config  # type: ignore[no-redef]

HERE = Path(__file__).resolve()
N = 3
# the strength of candidate i in round r: round 1 has a clear best, round 2 a tie for the best
STRENGTHS = {1: (1, 3, 2), 2: (2, 2, 1)}
_asked: dict[str, int] = defaultdict(int)


def speech_responder(messages: list[dict[str, str]]) -> str:
    """Candidate i of a speech prompt (the i-th time that prompt is asked, modulo n) argues
    with strength STRENGTHS[round][i]."""
    key = hashlib.sha256(json.dumps(messages).encode()).hexdigest()
    i = _asked[key] % N
    _asked[key] += 1
    found = re.search(r"Round (\d+) of", messages[-1]["content"])
    rnd = int(found.group(1)) if found else 1
    return f"strength={STRENGTHS[rnd][i]} (candidate {i}) This answer follows from the text."


def judge_probability(messages: list[dict[str, str]]) -> float:
    """P(option A) = 0.5 + 0.1 per unit of strength argued for A, − for the other answer."""
    text = messages[-1]["content"]
    first = re.search(r'Is answer \(A\), "(.*)", the correct answer', text)
    assert first is not None
    p = 0.5
    for position, strength in re.findall(r'arguing for "([^"]*)"\):\nstrength=(\d)', text):
        p += (0.1 if position == first.group(1) else -0.1) * int(strength)
    return min(0.95, max(0.05, p))


def config(**judge: Any) -> Any:
    prover = {
        "model": "scripted",
        "options": {"responder": f"{HERE}:speech_responder"},
        "best_of": N,
        "best_of_acts": ["speech"],
    }
    judge_settings = {"model": "scripted", "kind": "llm",
                      "options": {"probabilities": f"{HERE}:judge_probability"}, **judge}
    return judged_config(
        protocols=["two-sided", "consultancy"], rounds=2, prover=prover, judge=judge_settings
    )


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bos") / "run"
    run(config(), out, progress=False)
    return out


def candidates(t: Transcript, turn: Turn) -> list[ModelCallRecord]:
    return [c for c in t.calls if c.role == turn.role and c.act == f"argue round {turn.round}"]


def seen_by(t: Transcript, turn: Turn) -> list[Turn]:
    """The turns the speaker saw (sequential two-sided debate and consultancy: all before)."""
    speeches = [x for x in t.turns if x.role != "judge"]
    return speeches[: speeches.index(turn)]


def expected_score(t: Transcript, turn: Turn, text: str) -> float:
    """The judge's probability of the speaker's answer after the transcript so far plus
    ``text``, as the judge prompt shows it."""
    options = t.meta["options"]
    shown = transcript_text([*seen_by(t, turn), turn.model_copy(update={"text": text})])
    p_first = judge_probability([{"role": "user", "content": (
        f'The debate:\n{shown}\n\nIs answer (A), "{options[0]}", the correct answer?')}])
    return p_first if turn.position == options[0] else 1.0 - p_first


def test_the_best_speech_is_played_and_every_candidate_scored_by_the_judge(
    run_dir: Path,
) -> None:
    ts = load_transcripts(run_dir)
    assert {t.protocol for t in ts} == {"two-sided", "consultancy"}
    speeches = ties = 0
    for t in ts:
        assert t.status == "complete", t.meta.get("error")
        for turn in (x for x in t.turns if x.role != "judge"):
            cands = candidates(t, turn)
            notes = [c.notes["best_of"] for c in cands]
            assert [n["candidate"] for n in notes] == list(range(N))
            scores = [n["expected_reward"] for n in notes]
            for c, s in zip(cands, scores, strict=True):
                assert s == pytest.approx(expected_score(t, turn, c.completion or ""), abs=1e-9)
            best = scores.index(max(scores))  # the first of the best
            assert [n["chosen"] for n in notes] == [i == best for i in range(N)]
            assert cands[best].completion == turn.text
            ties += scores.count(max(scores)) > 1
            scoring = [c for c in t.calls if c.decision == "scoring"
                       and c.notes["scoring"]["speaker"] == turn.role and c.round == turn.round]
            assert [c.notes["scoring"]["candidate"] for c in scoring] == list(range(N))
            assert all(c.role == "judge" for c in scoring)
            speeches += 1
    assert speeches == 2 * (2 * 2 * 2 + 2 * 2) and ties > 0


def test_candidates_export_as_preference_pairs_and_sums_stay_exact(
    run_dir: Path, tmp_path: Path
) -> None:
    ts = load_transcripts(run_dir)
    out = tmp_path / "pairs.jsonl"
    export_run(run_dir, out, role="debater", fmt="trl-preference")
    pairs = [json.loads(x) for x in out.read_text().splitlines()]
    played = {x.text for t in ts for x in t.turns}
    # 2 items × 6 speeches a round (two-sided: 2 orders × 2 debaters; consultancy: 2), with
    # two worse candidates in round 1 and one in round 2 (its tie for the best makes no pair)
    assert len(pairs) == 2 * (4 + 2) * (2 + 1)
    for p in pairs:
        assert p["act"] == "speech" and p["reward_gap"] > 0
        assert p["reward_gap"] == p["chosen_reward"] - p["rejected_reward"]
        assert p["chosen"][0]["content"] in played
        assert p["rejected"][0]["content"] not in played
    info = run_info(run_dir, read_run_config(run_dir), 0.0)
    rows = [r for r, _ in decision_rows(ts, info)]
    speech = [r for r in rows if r.act == "speech"]
    assert {r.source for r in speech} == {"candidate"}
    assert all(r.candidate_score is not None for r in speech)
    by_id = {t.id: t for t in ts}
    for r in speech:
        t = by_id[r.debate_id]
        if r.completion[0]["content"] in played:
            assert (r.reward, r.expected_reward) == judged(t, r.speaker)  # the debate's payoff
        else:
            assert r.reward == r.expected_reward == r.candidate_score and not r.credited
    assert not any(r.reward is not None for r in rows if r.role == "judge")
    sums = carrier_sums(rows)
    for t in ts:
        for speaker in {x.role for x in t.turns if x.role != "judge"}:
            assert sums[(t.id, speaker)] == judged(t, speaker)


def plain(t: Transcript) -> dict[str, Any]:
    d = t.model_dump(mode="json")
    for c in d["calls"]:
        c.pop("latency_s")
        c.pop("cached")
    return d


def test_fork_with_best_of_speeches_reproduces_the_debate_bit_for_bit(run_dir: Path) -> None:
    team = team_for(read_run_config(run_dir))
    forks = 0
    for t in load_transcripts(run_dir):
        speakers = sorted({x.role for x in t.turns if x.role != "judge"})
        for at in (1, 2, 3):
            for speaker in (None, *speakers):
                new = asyncio.run(fork(t, team, at, speaker=speaker))
                assert plain(new) == plain(t), (t.id, at, speaker)
                forks += 1
    assert forks == 2 * (2 * 3 * 3 + 2 * 3 * 2)


def test_a_fork_keeps_replayed_speeches_and_their_scores_and_plays_the_rest_best_of_n(
    run_dir: Path,
) -> None:
    t = next(t for t in load_transcripts(run_dir) if t.protocol == "two-sided")
    # a judge that says 0.5 to everything: every live candidate ties, so candidate 0 plays
    team = team_for(read_run_config(run_dir), swap={"judge": "scripted"})
    new = asyncio.run(fork(t, team, 2))
    assert new.turns[:2] == t.turns[:2]
    kept = [c for c in t.calls if c.round == 1 or c.act.endswith("round 1")]
    assert [c.model_dump(exclude={"latency_s", "cached"}) for c in new.calls[: len(kept)]] == [
        c.model_dump(exclude={"latency_s", "cached"}) for c in kept
    ]
    for turn in new.turns[2:4]:
        cands = candidates(new, turn)
        assert [c.notes["best_of"]["expected_reward"] for c in cands] == [0.5] * N
        assert cands[0].completion == turn.text and cands[0].notes["best_of"]["chosen"]
    # an injected speech is that one reply, not a best of n
    inj = Injection(speaker="debater B", act="speech", round=1, completion="I concede.")
    got = asyncio.run(fork(t, team_for(read_run_config(run_dir)), 1, speaker="debater B",
                           inject=inj))
    b1 = [c for c in got.calls if c.role == "debater B" and c.act == "argue round 1"]
    assert [c.notes for c in b1] == [{"injected": True}] and got.turns[1].text == "I concede."
    assert len(candidates(got, got.turns[2])) == N


def test_best_of_speeches_need_a_model_judge(tmp_path: Path) -> None:
    got = run(config(kind="deferred"), tmp_path / "run", progress=False)
    assert got.stop_exit_code == 2 and got.summary["transcripts"] == 0
    assert got.stopped == ("prover.best_of_acts: speech needs a model judge to score the "
                           "candidate speeches (judge.kind is deferred)")
