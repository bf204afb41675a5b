"""The plugin package of docs/extending.md, written from the page alone (its ``<!-- file -->``
blocks) and installed with pip, adds a protocol with a new seat, a backend and a CSV export
format, and each goes through the command line as a built-in one does: ``run`` (the critic
seat on the plugin's backend, with its own options and prompt template, an interactive judge
asking in its debates and in consultancy's), ``report``, ``score``, ``export --role critic``
(as CSV), forks (the API and ``llmdebate fork``), and a human-judge study (``assign``, then
``serve`` in a browser's place). Every command runs in a fresh interpreter that finds the
plugin only through what pip installed."""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from judging_study import free_port
from test_doc_commands import PROGRAM, command_line, doc_files, installed, write_files

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "extending.md"
NAME = "critiqued-consultancy"
CSRF = re.compile(r'name="csrf" value="([0-9a-f]+)"')
FORK = """
import asyncio, json, sys
from pathlib import Path
from llmdebate.authoring.protocol import fork, team_for
from llmdebate.records.rundir import load_transcripts, read_run_config
run_dir = Path(sys.argv[1])
team = team_for(read_run_config(run_dir))
out = []
mine = [t for t in load_transcripts(run_dir) if t.protocol == "critiqued-consultancy"]
for t in mine:
    for at, speaker in ((1, None), (2, "critic"), (3, None)):
        again = asyncio.run(fork(t, team, at, speaker=speaker))
        out.append({"id": t.id, "at": at, "same": again.model_dump(mode="json",
                    exclude={"calls"}) == t.model_dump(mode="json", exclude={"calls"}),
                    "calls": [[c.role, c.act, c.model] for c in again.calls]})
swapped = team_for(read_run_config(run_dir), swap={"critic": "parrot/critic-2"})
again = asyncio.run(fork(mine[0], swapped, 2, speaker="critic", swapped=("critic",)))
out.append({"critiques": [x.text for x in again.turns if x.role == "critic"],
            "agents": again.agents, "seats": again.meta["seats"]})
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def pkg(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding the page's files, its package pip-installed into ``site``."""
    folder = tmp_path_factory.mktemp("plugin")
    files = doc_files(DOC)
    assert "llmdebate-critic/llmdebate_critic/protocol.py" in files
    write_files(files, folder)
    (folder / "datasets").symlink_to(REPO / "datasets")
    res = subprocess.run(command_line(("pip", "install", "./llmdebate-critic"), folder),
                         cwd=folder, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    assert (folder / "site" / "llmdebate_critic" / "prompts" / "critique.j2").is_file()
    return folder


def llmdebate(
    folder: Path, *args: str, code: str | None = None
) -> subprocess.CompletedProcess[str]:
    """A command in a fresh interpreter that finds the installed plugin."""
    return subprocess.run(
        [sys.executable, "-c", code or PROGRAM, *args], cwd=folder, env=installed(folder),
        capture_output=True, text=True, timeout=300,
    )


def test_the_page_holds_the_whole_package() -> None:
    files = doc_files(DOC)
    lines = len(files["llmdebate-critic/llmdebate_critic/protocol.py"].splitlines())
    assert lines < 120, lines  # the critic protocol as written on the page
    assert "package-data" in files["llmdebate-critic/pyproject.toml"]


def test_a_misspelt_option_of_the_plugin_backend_is_one_located_line(pkg: Path) -> None:
    text = (pkg / "critic.yaml").read_text()
    bad = pkg / "typo.yaml"
    bad.write_text(text.replace('{prefix: "Weakest step:"', '{prefx: "Weakest step:"'))
    res = llmdebate(pkg, "run", "--config", "typo.yaml", "--run-dir", "typo")
    line = next(x for x in bad.read_text().splitlines() if "prefx" in x)
    where = f"typo.yaml:{bad.read_text().splitlines().index(line) + 1}:{line.index('prefx') + 1}"
    assert res.returncode == 2 and f"{where}: seats.critic.options.prefx" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert "critic.yaml:12:15: seats.critic.options.prefx" in DOC.read_text()  # as the page says
    assert where.replace("typo", "critic") == "critic.yaml:12:15"


def _transcripts(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def test_the_plugin_runs_reports_scores_exports_and_forks(pkg: Path) -> None:
    res = llmdebate(pkg, "run", "--config", "critic.yaml", "--run-dir", "runs/critic", "--quiet")
    assert res.returncode == 0, res.stderr
    run_dir = pkg / "runs" / "critic"
    ts = _transcripts(run_dir / "transcripts.jsonl")
    assert sorted({t["protocol"] for t in ts}) == ["consultancy", NAME] and len(ts) == 8
    for t in ts:  # the interactive judge asks after round 1 in both protocols
        assert t["status"] == "complete" and t["meta"]["judge_turns"]["asked"] == 1
    for t in (t for t in ts if t["protocol"] == NAME):
        critiques = [x for x in t["turns"] if x["role"] == "critic"]
        assert [x["round"] for x in critiques] == [1, 2]
        # the critic's own model (the plugin backend, its options) and its own template
        assert all(x["text"].startswith("Weakest step: Question:") for x in critiques)
        assert all(x["text"].endswith("(critic-1)") for x in critiques)
        assert t["agents"]["critic"] == "parrot/critic-1"
        assert t["meta"]["seats"]["critic"]["model"] == "parrot/critic-1"
        asked = [c for c in t["calls"] if c["role"] == "critic"]
        assert "You are a critic" in asked[0]["messages"][0]["content"]
        question = next(x for x in t["turns"] if x["role"] == "judge" and x["round"] == 1)
        assert question["text"] == "Question: Which step is weakest?"

    res = llmdebate(pkg, "report", "runs/critic", "--quiet")
    assert res.returncode == 0, res.stderr
    assert NAME in (run_dir / "report.html").read_text()
    res = llmdebate(pkg, "score", "runs/critic/transcripts.jsonl")
    assert res.returncode == 0 and "0 mismatches" in res.stdout, res.stdout + res.stderr

    argv = ["export", "runs/critic", "--role", "critic", "--format", "critic-sheet"]
    res = llmdebate(pkg, *argv, "--out", "critic.csv")
    assert res.returncode == 0, res.stderr
    with (pkg / "critic.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 8 and {r["role"] for r in rows} == {"critic"}
    assert {r["round"] for r in rows} == {"1", "2"}
    assert all(r["reply"].startswith("Weakest step:") for r in rows)
    res = llmdebate(pkg, *argv, "--out", "critic.jsonl")
    assert res.returncode == 2 and "writes csv, not jsonl" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr

    # forks through the API: from round 1, from round 2's critic, the judge alone (round 3)
    res = llmdebate(pkg, str(run_dir), code=FORK)
    assert res.returncode == 0, res.stderr
    *forks, swapped = json.loads(res.stdout)
    assert len(forks) == 12 and all(f["same"] for f in forks), forks
    assert all(["critic", "argue round 2", "parrot/critic-1"] in f["calls"] for f in forks)
    # the critic swapped from round 2: its first critique replayed, the second its new model's
    first, second = swapped["critiques"]
    assert first.endswith("(critic-1)") and second.endswith("(critic-2)")
    assert swapped["agents"]["critic"] == "parrot/critic-2"
    assert swapped["seats"]["critic"]["model"] == "parrot/critic-2"
    assert swapped["seats"]["consultant"]["model"] == "parrot/consultant"

    # and through the command
    res = llmdebate(pkg, "fork", "runs/critic", "--at", "2", "--speaker", "critic",
                    "--protocol", NAME, "--swap", "critic=parrot/critic-2", "--out", "f.jsonl")
    assert res.returncode == 0, res.stderr
    forked = _transcripts(pkg / "f.jsonl")
    assert len(forked) == 4 and all(t["protocol"] == NAME for t in forked)
    for t in forked:
        assert t["meta"]["forked"]["swapped"] == ["critic"]
        assert t["meta"]["seats"]["critic"]["model"] == "parrot/critic-2"
        assert t["turns"][1]["text"].endswith("(critic-1)")  # round 1's critique, replayed
    res = llmdebate(pkg, "fork", "runs/critic", "--at", "2", "--swap", "critic")
    assert res.returncode == 2 and "write ROLE=MODEL" in res.stderr


def test_people_judge_the_plugin_protocol(pkg: Path) -> None:
    res = llmdebate(pkg, "run", "--config", "critic-people.yaml", "--run-dir", "runs/people",
                    "--quiet")
    assert res.returncode == 0, res.stderr
    run_dir = pkg / "runs" / "people"
    ts = _transcripts(run_dir / "transcripts.jsonl")
    assert len(ts) == 4 and all(t["status"] == "awaiting_verdict" for t in ts)
    assert all(t["meta"]["person_asks"]["heard"] == 1 for t in ts)  # the person may ask
    res = llmdebate(pkg, "assign", "runs/people", "--judges", "judges.yaml", "--per-item", "1",
                    "--links-out", "links.tsv")
    assert res.returncode == 0, res.stderr
    link = dict(x.split("\t") for x in (pkg / "links.tsv").read_text().splitlines())["ann"]
    judged = _serve_and_judge(pkg, run_dir, link)
    assert judged >= 1
    done = _transcripts(run_dir / "judged.jsonl")
    assert len(done) == judged and all(t["status"] == "complete" for t in done)
    res = llmdebate(pkg, "score", "runs/people/judged.jsonl")
    assert res.returncode == 0 and "0 mismatches" in res.stdout, res.stdout + res.stderr


def _serve_and_judge(folder: Path, run_dir: Path, link: str) -> int:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-c", PROGRAM, "serve", str(run_dir), "--port", str(port)],
        cwd=folder, env={**installed(folder), **{"PYTHONUNBUFFERED": "1"}},
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(base_url=base, timeout=60) as c:
            for _ in range(900):
                assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
                try:
                    c.get("/")
                    break
                except httpx.TransportError:
                    time.sleep(0.1)
            assert c.get(link[link.index("/login/"):], follow_redirects=True).status_code == 200
            judged = 0
            for n in range(10):
                r = c.get("/next", follow_redirects=True)
                if "/a/" not in str(r.url):
                    break
                assert "Weakest step:" in r.text and "critic" in r.text.lower()
                csrf = CSRF.search(r.text)
                assert csrf, r.text[:400]
                form = {"csrf": csrf.group(1), "p": str(60 + n), "explanation": f"why {n}"}
                sent = c.post(str(r.url.path), data=form, follow_redirects=False)
                assert sent.status_code == 303, sent.text[:400]
                judged += 1
            return judged
    finally:
        proc.terminate()
        proc.wait(10)

