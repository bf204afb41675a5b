"""The study database on a real PostgreSQL server (pgserver: a server binary from PyPI)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from judging_study import make_run, write_judges
from sqlalchemy import select

from llmdebate.cli import main
from llmdebate.commands.score import score_file
from llmdebate.judging.complete import Conflict, Submission, submit, waiting_by_id
from llmdebate.judging.db import Assignment, Judgment, connect
from llmdebate.judging.view import build_view
from llmdebate.records.rundir import JUDGED_FILE, load_transcripts


@pytest.fixture
def pg_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))  # pgserver reads it on import
    import pgserver

    srv = pgserver.get_server(tmp_path / "pg", cleanup_mode="stop")
    try:
        uri = srv.get_uri()  # postgresql://user:@/db?host=/socket/dir
        yield uri.replace("postgresql://", "postgresql+psycopg://", 1)
    finally:
        srv.cleanup()


def test_a_study_on_postgresql(tmp_path: Path, pg_url: str) -> None:
    run_dir = make_run(tmp_path, ["prover-estimator", "two-sided"], limit=2)
    judges = write_judges(tmp_path / "j.yaml", ["a", "b"])
    links = tmp_path / "links.tsv"
    args = ["assign", str(run_dir), "--judges", str(judges), "--per-item", "1"]
    assert main([*args, "--db", pg_url, "--links-out", str(links)]) == 0
    assert not (run_dir / "judging.db").exists()  # everything is on the server
    sessions, waiting = connect(run_dir, pg_url), waiting_by_id(run_dir)
    assert sessions.kw["bind"].dialect.name == "postgresql"
    with sessions() as s:
        rows = list(s.scalars(select(Assignment)))
    assert len(rows) == 4
    for a in rows:
        view = build_view(waiting[a.debate_id], a.order_seed, a.context)
        sub = (
            Submission(verdict=1, probability=0.8)
            if view["kind"] == "leaf"
            else Submission(p_shown_first=0.3, explanation="why")
        )
        submit(sessions, run_dir, waiting, a.judge_id, a.id, sub)
    with pytest.raises(Conflict):  # the server's unique constraint: a clean conflict
        submit(sessions, run_dir, waiting, rows[0].judge_id, rows[0].id, Submission(verdict=0))
    assert main(["judge", str(run_dir), "--oracle", "--db", pg_url]) == 0
    with connect(run_dir, pg_url)() as s:
        kinds = sorted(j.kind for j in s.scalars(select(Judgment)))
    assert kinds.count("human") == 4 and kinds.count("oracle") >= 4
    judged = load_transcripts(run_dir, judged=True)
    assert len(judged) == len(kinds)
    res = score_file(run_dir / JUDGED_FILE)
    assert res.ok and res.scored == len(kinds)
