"""An installed plugin package (``tests/plugin_pkg``: a dist-info whose entry points name its
modules) adds a protocol with a new seat, a backend and a CSV export format, and each goes
through the command line as a built-in one does: ``run`` (the critic seat on the plugin's
backend, with its own options and prompt template), ``report``, ``score``, ``export --role
critic`` (as CSV), a fork, and a human-judge study (``assign``, then ``serve`` in a browser's
place). Nothing of the package is touched: every command runs in a fresh interpreter that
finds the plugin only through ``importlib.metadata``, as after ``pip install``."""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import yaml
from judging_study import DIVISORS, SCRIPTED, free_port, write_judges

REPO = Path(__file__).resolve().parents[1]
PLUGIN = Path(__file__).resolve().parent / "plugin_pkg"
NAME = "critiqued-consultancy"
CSRF = re.compile(r'name="csrf" value="([0-9a-f]+)"')
CRITIC = {"model": "parrot/critic-1", "options": {"prefix": "Weakest step:", "words": 4}}
FORK = """
import asyncio, json, sys
from pathlib import Path
from llmdebate.records.rundir import load_transcripts, read_run_config
from llmdebate.rl import fork, team_for
run_dir = Path(sys.argv[1])
team = team_for(read_run_config(run_dir))
out = []
for t in load_transcripts(run_dir):
    for at, speaker in ((1, None), (2, "critic"), (3, None)):
        again = asyncio.run(fork(t, team, at, speaker=speaker))
        out.append({"id": t.id, "at": at, "same": again.model_dump(mode="json",
                    exclude={"calls"}) == t.model_dump(mode="json", exclude={"calls"}),
                    "calls": [[c.role, c.act, c.model] for c in again.calls]})
swapped = team_for(read_run_config(run_dir), swap={"critic": "parrot/critic-2"})
t = load_transcripts(run_dir)[0]
again = asyncio.run(fork(t, swapped, 2, speaker="critic", swapped=("critic",)))
out.append({"critiques": [x.text for x in again.turns if x.role == "critic"],
            "agents": again.agents})
print(json.dumps(out))
"""


def llmdebate(*args: str, code: str | None = None) -> subprocess.CompletedProcess[str]:
    """A command in a fresh interpreter with the plugin installed (its folder on the path)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(PLUGIN), str(REPO)])}
    program = code or "import sys; from llmdebate.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run(
        [sys.executable, "-c", program, *args], env=env, capture_output=True, text=True,
        timeout=300,
    )


def _config(tmp_path: Path, critic: dict[str, Any]) -> Path:
    data = {
        "name": "critic",
        "dataset": {"path": str(DIVISORS), "limit": 2},
        "protocols": [NAME],
        "rounds": 2,
        "prover": SCRIPTED,
        "estimator": SCRIPTED,
        "judge": {"kind": "human"},
        "seats": {"critic": critic},
    }
    path = tmp_path / "critic.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_a_misspelt_option_of_the_plugin_backend_is_one_located_line(tmp_path: Path) -> None:
    path = _config(tmp_path, {**CRITIC, "options": {"prefx": "x"}})
    res = llmdebate("run", "--config", str(path), "--run-dir", str(tmp_path / "r"))
    line = next(x for x in path.read_text().splitlines() if "prefx" in x)
    where = f"{path}:{path.read_text().splitlines().index(line) + 1}:{line.index('prefx') + 1}"
    assert res.returncode == 2 and f"{where}: seats.critic.options.prefx" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr


def _runs(tmp_path: Path) -> Path:
    run_dir = tmp_path / "run"
    res = llmdebate("run", "--config", str(_config(tmp_path, CRITIC)), "--run-dir",
                    str(run_dir), "--quiet")
    assert res.returncode == 0, res.stderr
    return run_dir


def _transcripts(run_dir: Path, name: str = "transcripts.jsonl") -> list[dict[str, Any]]:
    return [json.loads(x) for x in (run_dir / name).read_text().splitlines()]


def test_an_installed_plugin_runs_reports_scores_exports_forks_and_is_judged(
    tmp_path: Path,
) -> None:
    run_dir = _runs(tmp_path)
    ts = _transcripts(run_dir)
    assert len(ts) == 4 and {t["protocol"] for t in ts} == {NAME}  # honest, dishonest x 2
    for t in ts:
        assert t["status"] == "awaiting_verdict" and t["meta"]["rounds"] == 2
        critiques = [x for x in t["turns"] if x["role"] == "critic"]
        assert [x["round"] for x in critiques] == [1, 2]
        # the critic's own model (the plugin backend, its options) and its own template
        assert all(x["text"].startswith("Weakest step: Question:") for x in critiques)
        assert all(x["text"].endswith("(critic-1)") for x in critiques)
        assert t["agents"]["critic"] == "parrot/critic-1"
        assert t["agents"]["consultant"] == "scripted"
        asked = [c for c in t["calls"] if c["role"] == "critic"]
        assert "You are a critic" in asked[0]["messages"][0]["content"]

    res = llmdebate("report", str(run_dir), "--quiet")
    assert res.returncode == 0, res.stderr
    assert NAME in (run_dir / "report.html").read_text()

    res = llmdebate("score", str(run_dir / "transcripts.jsonl"))
    assert res.returncode == 0 and "0 mismatches" in res.stdout, res.stdout + res.stderr

    # export: the critic's decisions, as CSV (the format writes only CSV)
    out = tmp_path / "critic.csv"
    argv = ["export", str(run_dir), "--role", "critic", "--format", "critic-sheet",
            "--include-pending"]
    res = llmdebate(*argv, "--out", str(out))
    assert res.returncode == 0, res.stderr
    with out.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 8 and {r["role"] for r in rows} == {"critic"}
    assert {r["round"] for r in rows} == {"1", "2"}
    assert all(r["reply"].startswith("Weakest step:") for r in rows)
    res = llmdebate(*argv, "--out", str(tmp_path / "critic.jsonl"))
    assert res.returncode == 2 and "writes csv, not jsonl" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr

    # a fork: from the first round, from round 2's critic, and the judge alone (round 3)
    res = llmdebate(str(run_dir), code=FORK)
    assert res.returncode == 0, res.stderr
    *forks, swapped = json.loads(res.stdout)
    assert len(forks) == 12 and all(f["same"] for f in forks), forks
    assert all(["critic", "argue round 2", "parrot/critic-1"] in f["calls"] for f in forks)
    # the critic swapped from round 2: its first critique replayed, the second its new model's
    first, second = swapped["critiques"]
    assert first.endswith("(critic-1)") and second.endswith("(critic-2)")
    assert swapped["agents"]["critic"] == "parrot/critic-2"

    # a study: assign, then the judging server shows the critic's turns and takes a verdict
    links = tmp_path / "links.tsv"
    res = llmdebate("assign", str(run_dir), "--judges",
                    str(write_judges(tmp_path / "judges.yaml", ["ann"])), "--per-item", "1",
                    "--links-out", str(links))
    assert res.returncode == 0, res.stderr
    link = dict(x.split("\t") for x in links.read_text().splitlines())["ann"]
    judged = _serve_and_judge(run_dir, link)
    assert judged >= 1
    done = _transcripts(run_dir, "judged.jsonl")
    assert len(done) == judged and all(t["status"] == "complete" for t in done)
    res = llmdebate("score", str(run_dir / "judged.jsonl"))
    assert res.returncode == 0 and "0 mismatches" in res.stdout, res.stdout + res.stderr


def _serve_and_judge(run_dir: Path, link: str) -> int:
    port = free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(PLUGIN), str(REPO)])}
    code = "import sys; from llmdebate.cli import main; sys.exit(main(sys.argv[1:]))"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "serve", str(run_dir), "--port", str(port)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
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

