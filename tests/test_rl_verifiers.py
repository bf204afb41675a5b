"""A debate seat as a verifiers environment, evaluated by verifiers' own ``vf-eval`` against
the fake OpenAI-compatible server: the model plays one decision of a scripted
prover-estimator debate, the other seats play the rest, and each rollout's reward is the
protocol's decision reward (the same number :class:`llmdebate.rl.DebateReward` gives the
reply), an invalid reply's below every valid one."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from llmdebate.experiment.runner import run
from llmdebate.export import build, decision_rows, run_info
from llmdebate.export.api import injectable
from llmdebate.records.rundir import load_transcripts, read_run_config
from llmdebate.rl.rewards import DebateRewardBase

try:
    from tests.export_fixtures import pe_config
    from tests.fixtures.fake_server import FakeServer
except ImportError:  # pytest run from inside tests/
    from export_fixtures import pe_config  # type: ignore[no-redef]
    from fixtures.fake_server import FakeServer  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parent.parent
ENV_DIR = ROOT / "environments" / "llmdebate_seat"


def reply(body: dict[str, Any]) -> str:
    """The seat's model: a direction word where one is asked for, a junk reply otherwise."""
    last = next(m for m in reversed(body["messages"]) if m["role"] == "user")["content"]
    return "lower" if "higher" in last and "lower" in last else "{garbage ]]"


def rows(tmp: Path) -> list[dict[str, Any]]:
    run(pe_config(dataset={"limit": 1}), tmp / "run", progress=False)
    config = read_run_config(tmp / "run")
    pairs = [(r, t) for r, t in decision_rows(load_transcripts(tmp / "run"),
                                              run_info(tmp / "run", config, 0.0))
             if injectable(r)]
    records = build(pairs, "trl-prompt-only", config, text=False)
    directions = [r for r in records if r["act"] == "direction"][:2]
    recurse = [r for r in records if r["act"] == "recurse"][:1]
    return directions + recurse


def test_vf_eval_scores_each_reply_by_the_debate_reward(tmp_path: Path) -> None:
    picked = rows(tmp_path)
    assert [r["act"] for r in picked] == ["direction", "direction", "recurse"]
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in picked), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ENV_DIR)]),
           "OPENAI_API_KEY": "sk-test"}
    with FakeServer() as server:
        server.responder = reply
        done = subprocess.run(
            [sys.executable, "-c", "from verifiers.v1.cli.eval.main import main; main()",
             "llmdebate-seat", "--env.taskset.rows", str(path),
             "--env.agent.runtime.type", "subprocess", "--model", "seat-model",
             "--client.base-url", server.url, "--no-push", "--no-rich",
             "-o", str(tmp_path / "vf"), "--run.name", "seat"],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
        )
        asked = server.requests
    assert done.returncode == 0, done.stderr[-3000:]
    episodes = [json.loads(x) for x in
                (tmp_path / "vf" / "seat" / "traces.jsonl").read_text().splitlines()]
    assert asked == len(picked) == len(episodes)
    got = {e["traces"][0]["task"]["data"]["idx"]: e["traces"][0] for e in episodes}
    reward = DebateRewardBase()
    for i, row in enumerate(picked):
        trace = got[i]
        assert trace["ok"], trace["errors"]
        score = trace["rewards"]["debate_reward"]["score"]
        said = "lower" if row["act"] == "direction" else "{garbage ]]"
        assert score == pytest.approx(asyncio.run(reward.score(said, row["state"])))
        # relative to the decision (the default): (return - the recorded reply's) / r^level,
        # so every valid reply lies within the decision's frame of [-scale, scale]
        base, unit, scale = (row["expected_return_to_go"], row["decision_unit"],
                             row["reward_unit"])
        floor = (-scale - base) / unit
        if row["act"] == "direction":  # a valid reply
            assert floor <= score <= (scale - base) / unit
        else:  # "{garbage ]]" names no subclaim: the invalid reward, below every valid one
            assert score == pytest.approx((-1.5 * scale - base) / unit, rel=1e-12)
            assert score < floor
        # the judge-hacking audit of the debate played on from the reply, recomputed from
        # its leaf: r_0 > 0 (the prover won), s_0 towards the truth, the verdict the truth
        _, played = asyncio.run(reward.play(said, row["state"]))
        metrics = trace["metrics"]
        if played is None:  # an invalid reply: no debate, nothing audited
            assert metrics == {"judge_audited": 0.0, "judge_win": 0.0, "argued_truth": 0.0,
                               "judge_correct": 0.0}
            continue
        leaf = played.rounds[-1]
        assert leaf.k == 0 and leaf.verdict is not None and leaf.claim.truth is not None
        truth = int(leaf.claim.truth)
        assert metrics == {
            "judge_audited": 1.0,
            "judge_win": float(leaf.reward > 0),
            "argued_truth": float(leaf.direction == (1 if truth else -1)),
            "judge_correct": float(leaf.verdict.value == truth),
        }


def test_a_bad_row_is_named_by_its_file_and_line(tmp_path: Path) -> None:
    from llmdebate.rl.verifiers_env import read_rows

    state = {"speaker": "prover", "act": "direction"}
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps({"prompt": "p", "state": json.dumps(state)}) + "\n\n"
                    + json.dumps({"prompt": "p", "state": {**state, "speaker": "estimator"}})
                    + "\n{garbage\n", encoding="utf-8")
    with pytest.raises(ValueError, match=rf"^{path}:4: not a trl-prompt-only row"):
        read_rows(path)
    path.write_text(path.read_text().rsplit("{garbage", 1)[0], encoding="utf-8")
    assert [r["state"]["speaker"] for r in read_rows(path)] == ["prover", "estimator"]
    assert [r["state"]["speaker"] for r in read_rows(path, "estimator")] == ["estimator"]
