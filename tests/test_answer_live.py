"""Commands that call a model more than once hold one real HTTP connection across calls: a
study whose debaters are served by the fake OpenAI-compatible server (a separate process,
``benchmarks/fake_openai_server.py``). ``llmdebate answer`` answers every waiting question in
one call, and ``fork`` runs any number of times on one team (each call its own event loop, as
``run_sync`` gives it): no call meets a connection of a closed loop."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from judging_study import REPO, assign, make_run, write_judges
from sqlalchemy import select

from llmdebate.cli import main
from llmdebate.judging.asking import load_asked
from llmdebate.judging.complete import ask, waiting_by_id
from llmdebate.judging.db import Assignment, connect
from llmdebate.records.rundir import read_run_config
from llmdebate.rl.replay import fork, team_for
from llmdebate.rl.rewards import run_sync

JUDGE = {"kind": "human", "interactive": True, "turn_cost": 0.05, "log_base": 2}


@pytest.fixture(scope="module")
def fake_server() -> Iterator[str]:
    proc = subprocess.Popen(
        [sys.executable, str(REPO / "benchmarks" / "fake_openai_server.py"), "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("listening "), line
        yield line.split()[1].strip()
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture(autouse=True)
def _env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLMDEBATE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    for var in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)


def live_study(tmp_path: Path, url: str, limit: int) -> Path:
    served = {"model": "openai/fake", "base_url": url, "options": {"timeout": 20}}
    return make_run(
        tmp_path,
        ["consultancy"],
        limit=limit,
        rounds=2,
        judge=JUDGE,
        prover={**served, "decomposer": "formal"},
        estimator=served,
        use_cache=False,
    )


def test_answer_answers_every_waiting_question_over_one_connection(
    tmp_path: Path, fake_server: str, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = live_study(tmp_path, fake_server, limit=3)
    assign(run_dir, write_judges(tmp_path / "j.yaml", list("abcdef")), 1)
    sessions, waiting = connect(run_dir), waiting_by_id(run_dir)
    with sessions() as s:
        mine = [(a.judge_id, a.id) for a in s.scalars(select(Assignment))]
    assert len(mine) == 6
    for judge, aid in mine:
        assert ask(sessions, run_dir, waiting, judge, aid, f"why, says {judge}?") == 1
    capsys.readouterr()
    rc = main(["answer", str(run_dir)])
    out = capsys.readouterr()
    assert rc == 0, out.err
    assert "answered 6 question(s)" in out.out and "failed" not in out.err
    assert len(load_asked(run_dir)) == 6


def test_fork_runs_twice_on_one_team_over_one_connection(tmp_path: Path, fake_server: str) -> None:
    from llmdebate.records.transcripts import iter_transcripts

    run_dir = live_study(tmp_path, fake_server, limit=1)
    team = team_for(read_run_config(run_dir))
    (shown,) = list(iter_transcripts(run_dir / "transcripts.jsonl"))[:1]
    # round 1 live: every speech a request to the server, each fork on its own event loop
    first = run_sync(fork(shown, team, 1))
    second = run_sync(fork(shown, team, 1))
    assert first.status == second.status == shown.status
    assert [t.text for t in second.turns] == [t.text for t in first.turns]
    assert any(t.role != "judge" for t in second.turns)
