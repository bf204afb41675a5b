"""Nothing a person needs is lost by ``assign``: its output closed early, its links file that
cannot be written, or the process killed between writing the links and committing the study
leaves every judge able to sign in (after ``--reissue-links`` where links were lost)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from judging_study import REPO, make_run, write_judges
from sqlalchemy import func, select
from starlette.testclient import TestClient

from llmdebate.cli import main
from llmdebate.judging.app import create_app
from llmdebate.judging.db import Assignment, Judge, connect, study_log

CLI = "import sys; from llmdebate.cli import main; sys.exit(main(sys.argv[1:]))"
JUDGES = ["ann", "ben", "cat"]
EVERYONE = {*JUDGES, "lead"}


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO)}


def _assign(
    *args: str | Path, stdout: int | None = subprocess.PIPE
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", CLI, "assign", *map(str, args)],
        env=_env(), stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=300,
    )


def _closed_stdout(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """``assign`` with its standard output a pipe whose reader has gone (``| head`` done)."""
    read, write = os.pipe()
    os.close(read)
    try:
        return _assign(*args, stdout=write)
    finally:
        os.close(write)


def _links(text: str) -> dict[str, str]:
    """The ``judge<TAB>link`` lines of ``text``, by judge (a later line wins)."""
    return dict(line.split("\t", 1) for line in text.splitlines() if "\t" in line)


def _signs_in(run_dir: Path, links: dict[str, str]) -> dict[str, bool]:
    """Whether each link signs its judge in (the server's sign-in, each in a fresh browser)."""
    out: dict[str, bool] = {}
    with TestClient(create_app(run_dir)) as c:
        for judge, link in links.items():
            c.cookies.clear()
            r = c.get(link[link.index("/login/") :], follow_redirects=False)
            out[judge] = r.status_code == 303 and r.headers["location"] == (
                "/lead" if judge == "lead" else "/"
            )
            if out[judge]:
                assert c.get(r.headers["location"]).status_code == 200
    return out


def _assignments(run_dir: Path) -> int:
    with connect(run_dir)() as s:
        return int(s.scalar(select(func.count()).select_from(Assignment)) or 0)


def test_a_closed_output_loses_no_link(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path, ["direct"], limit=4)
    judges = write_judges(tmp_path / "j.yaml", JUDGES)
    links_file = tmp_path / "links.tsv"

    # links to standard output, closed before anything is read: nothing is assigned
    done = _closed_stdout(run_dir, "--judges", judges)
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert line.startswith("error: standard output closed before the links were shown: "
                           "nothing was assigned"), line
    assert _assignments(run_dir) == 0

    # links to a file, the output closed: the file holds every link, the study is saved
    done = _closed_stdout(run_dir, "--judges", judges, "--links-out", links_file)
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert line == (f"error: standard output closed; the links are in {links_file} (4 new) "
                    "and the study is saved")
    assert _assignments(run_dir) == 4
    assert links_file.stat().st_mode & 0o777 == 0o600
    links = _links(links_file.read_text())
    assert set(links) == EVERYONE
    assert all(_signs_in(run_dir, links).values())


def test_links_read_by_head_are_reissued_and_the_old_ones_stop_working(tmp_path: Path) -> None:
    """``assign | head -3`` with the whole output already in the pipe: assign succeeds and the
    links after the third line are lost to the person; ``--reissue-links`` gives them new
    ones, and the old links, wherever they went, no longer sign in."""
    run_dir = make_run(tmp_path, ["direct"], limit=4)
    done = _assign(run_dir, "--judges", write_judges(tmp_path / "j.yaml", JUDGES))
    assert done.returncode == 0, done.stderr
    shown = done.stdout.splitlines()
    seen = _links("\n".join(shown[:3]))  # what head passed on: no link at all
    lost = sorted(EVERYONE - set(seen))
    assert lost == sorted(EVERYONE)
    again = _assign(run_dir, "--judges", tmp_path / "j.yaml")
    assert again.returncode == 0 and "0 new assignments" in again.stdout
    assert not _links(again.stdout)  # a second assign issues no new link: reissue does

    links_file = tmp_path / "links.tsv"
    redo = _assign(run_dir, "--reissue-links", ",".join(lost[:2]), "--reissue-links",
                   *lost[2:3], "--reissue-links", ",".join(lost[3:]), "--links-out", links_file)
    assert redo.returncode == 0, redo.stderr
    assert f"4 links reissued ({', '.join(lost)})" in redo.stdout
    fresh = _links(links_file.read_text())
    assert set(fresh) == EVERYONE
    assert all(_signs_in(run_dir, fresh).values())
    old = _links(done.stdout)
    assert not any(_signs_in(run_dir, old).values())
    with connect(run_dir)() as s:
        log = [(e.event, e.detail) for e in study_log(s)]
    assert log == [
        ("assign", {"added": 4, "links": sorted(EVERYONE)}),
        ("reissue-links", {"judges": lost}),
    ]

    # a second reissue to the same file replaces that judge's line
    assert main(["assign", str(run_dir), "--reissue-links", "ann", "--links-out",
                 str(links_file)]) == 0
    lines = links_file.read_text().splitlines()
    assert len(lines) == 4 and _links("\n".join(lines))["ann"] != fresh["ann"]
    assert all(_signs_in(run_dir, _links(links_file.read_text())).values())


def test_a_signed_in_judge_whose_link_is_reissued_is_signed_out(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path, ["direct"], limit=2)
    links_file = tmp_path / "links.tsv"
    judges = write_judges(tmp_path / "j.yaml", ["ann"])
    assert main(["assign", str(run_dir), "--judges", str(judges), "--links-out",
                 str(links_file)]) == 0
    link = _links(links_file.read_text())["ann"]
    with TestClient(create_app(run_dir)) as c:
        assert c.get(link[link.index("/login/") :], follow_redirects=True).status_code == 200
        assert "Welcome, ann" in c.get("/").text
        assert main(["assign", str(run_dir), "--reissue-links", "ann", "--links-out",
                     str(links_file)]) == 0
        assert "Welcome, ann" not in c.get("/").text


def test_a_links_file_that_cannot_be_written_assigns_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = make_run(tmp_path, ["direct"], limit=2)
    judges = write_judges(tmp_path / "j.yaml", JUDGES)
    nowhere = tmp_path / "no-such-dir" / "links.tsv"
    assert main(["assign", str(run_dir), "--judges", str(judges), "--links-out",
                 str(nowhere)]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line == (f"error: --links-out {nowhere}: cannot write the links (No such file or "
                    "directory); nothing was assigned")
    with connect(run_dir)() as s:
        assert s.scalars(select(Judge)).all() == []  # no judge, no token, no assignment
        assert study_log(s) == []
    assert _assignments(run_dir) == 0
    # a reissue whose file cannot be written leaves the old links working
    links_file = tmp_path / "links.tsv"
    assert main(["assign", str(run_dir), "--judges", str(judges), "--links-out",
                 str(links_file)]) == 0
    before = _links(links_file.read_text())
    capsys.readouterr()
    assert main(["assign", str(run_dir), "--reissue-links", "ann", "--links-out",
                 str(nowhere)]) == 2
    assert "nothing was reissued: the old links still work" in capsys.readouterr().err
    assert all(_signs_in(run_dir, before).values())


def test_bad_reissue_flags_are_one_line_each(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = make_run(tmp_path, ["direct"], limit=2)
    judges = write_judges(tmp_path / "j.yaml", ["ann"])
    cases = [
        (["--reissue-links", "ann"], "error: --reissue-links: no judge 'ann' in this study "
         "(judges: none yet: run assign --judges first)"),
        ([], "error: --judges FILE is needed (or --reissue-links JUDGE for lost links)"),
        (["--reissue-links", "ann", "--judges", str(judges)],
         "error: --reissue-links issues links only: run it without --judges"),
        (["--reissue-links", " , "], "error: --reissue-links: name at least one judge"),
    ]
    for flags, said in cases:
        assert main(["assign", str(run_dir), *flags]) == 2
        assert capsys.readouterr().err.splitlines() == [said]
    assert main(["assign", str(run_dir), "--judges", str(judges), "--links-out",
                 str(tmp_path / "l.tsv")]) == 0
    capsys.readouterr()
    assert main(["assign", str(run_dir), "--reissue-links", "ann,bob"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "error: --reissue-links: no judge 'bob' in this study (judges: ann, lead)"
    ]


KILLED = """
import os, signal, sys
import llmdebate.commands.assign as cmd
from llmdebate.cli import main

write = cmd.write_links

def write_then_die(*args, **kwargs):
    write(*args, **kwargs)  # the links file is in place; the study is not committed yet
    os.kill(os.getpid(), signal.SIGKILL)

cmd.write_links = write_then_die
sys.exit(main(sys.argv[1:]))
"""


def test_assign_killed_between_its_two_writes_loses_nothing(tmp_path: Path) -> None:
    """SIGKILL after the links file is written and before the assignments are committed: the
    study holds nothing of that run, and the next assign writes every judge a working link
    in place of the dead one (one line a judge)."""
    run_dir = make_run(tmp_path, ["direct"], limit=4)
    judges = write_judges(tmp_path / "j.yaml", JUDGES)
    links_file = tmp_path / "links.tsv"
    args = ["assign", str(run_dir), "--judges", str(judges), "--links-out", str(links_file)]
    killed = subprocess.run([sys.executable, "-c", KILLED, *args], env=_env(),
                            capture_output=True, text=True, timeout=300)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    dead = _links(links_file.read_text())
    assert set(dead) == EVERYONE
    assert _assignments(run_dir) == 0
    with connect(run_dir)() as s:
        assert s.scalars(select(Judge)).all() == []
    assert not any(_signs_in(run_dir, dead).values())

    assert main(args) == 0
    lines = links_file.read_text().splitlines()
    assert len(lines) == len(EVERYONE)
    links = _links("\n".join(lines))
    assert set(links) == EVERYONE and all(links[j] != dead[j] for j in EVERYONE)
    assert all(_signs_in(run_dir, links).values())
    assert _assignments(run_dir) == 4
