"""The judge server under a QuALITY-sized study: 20 judges polling while their questions wait,
then verdicts posted, against one tree of the code or two side by side.

    .venv/bin/python benchmarks/bench_judge_server.py [--old-tree DIR] [--seconds 30]

The study is built here (scripted debaters, no model): consultancy debates of an interactive
human judge on items with a long passage, 20 judges with 2 assignments each; every judge
asks a question on the first (it waits: the page polls ``/a/ID/wait`` every 2 s) and decides
the second. ``asked.jsonl`` gets ``--continuations`` continued debates and ``judged.jsonl``
``--judged`` judged ones, each line padded to ``--line-kb`` kB (a QuALITY continuation line
is about 181 kB: the passage sits in the item and in every prompt). These lines belong to
other assignments: they are what a server that reads the whole file on every request reads.

Each tree (this one; ``--old-tree``, e.g. ``git archive`` of an older commit unpacked in a
folder, run with this virtualenv) serves its own copy of the study (``llmdebate serve``, one
process). Then: ``--judges`` clients poll for ``--seconds`` seconds, each posting to
``/wait`` 2 s after its previous reply (the page's interval), and the latency of every poll
is kept; then ``--verdicts`` judges post their verdict on their second assignment, one after
another. Printed: polls/s (the page needs judges / 2 s), poll latency p50/p90/max, verdict
latency median/max, the server process's CPU time per poll and per verdict (what a request
costs, whatever else the machine runs), the load average, and the lines of the files.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import yaml

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "tests" / "fixtures" / "llm_fixtures.py"
CLI = "import sys; from llmdebate.cli import main; sys.exit(main(sys.argv[1:]))"
CSRF = re.compile(r'name="csrf" value="([0-9a-f]+)"')
POLL_S = 2.0


def passage(kb: int) -> str:
    words = ("the", "ship", "turned", "slowly", "toward", "the", "red", "planet", "while",
             "the", "crew", "argued")
    out: list[str] = []
    size = 0
    i = 0
    while size < kb * 1000:
        w = words[i % len(words)]
        out.append(w)
        size += len(w) + 1
        i += 1
    return " ".join(out)


def build_study(tmp: Path, judges: int, passage_kb: int) -> tuple[Path, dict[str, str]]:
    """The run directory (waiting debates, assignments, one question per judge) and the
    judges' links."""
    from llmdebate.cli import main

    items = [
        {
            "id": f"q{i}",
            "question": f"What does the crew decide in story {i}?",
            "choices": ["to land", "to turn back"],
            "answer": "to land",
            "context": passage(passage_kb),
        }
        for i in range(judges)
    ]
    data = tmp / "items.jsonl"
    data.write_text("".join(json.dumps(it) + "\n" for it in items))
    scripted = {
        "model": "scripted",
        "options": {
            "responder": f"{FIXTURE}:responder",
            "probabilities": f"{FIXTURE}:probabilities",
        },
    }
    cfg = {
        "name": "study",
        "dataset": {"path": str(data), "limit": judges},
        "protocols": ["consultancy"],
        "rounds": 3,
        "prover": scripted,
        "estimator": scripted,
        "judge": {"kind": "human", "interactive": True, "turn_cost": 0.05, "log_base": 2},
    }
    (tmp / "study.yaml").write_text(yaml.safe_dump(cfg))
    run_dir = tmp / "study"
    assert main(["run", "--config", str(tmp / "study.yaml"), "--run-dir", str(run_dir),
                 "--quiet"]) == 0
    (tmp / "judges.yaml").write_text(
        yaml.safe_dump({"study": {}, "judges": [f"j{i:02d}" for i in range(judges)]})
    )
    links_file = tmp / "links.tsv"
    assert main(["assign", str(run_dir), "--judges", str(tmp / "judges.yaml"),
                 "--per-item", "1", "--links-out", str(links_file)]) == 0
    links = dict(line.split("\t") for line in links_file.read_text().splitlines())
    return run_dir, {j: link[link.index("/login/"):] for j, link in links.items()
                     if j.startswith("j")}


def assignments(run_dir: Path) -> dict[str, list[int]]:
    from sqlalchemy import select

    from llmdebate.judging.db import Assignment, connect

    out: dict[str, list[int]] = {}
    with connect(run_dir)() as s:
        for a in s.scalars(select(Assignment).order_by(Assignment.id)):
            out.setdefault(a.judge_id, []).append(a.id)
    return out


def ask_first(run_dir: Path, mine: dict[str, list[int]]) -> None:
    from llmdebate.judging.complete import ask, waiting_by_id
    from llmdebate.judging.db import connect

    sessions, waiting = connect(run_dir), waiting_by_id(run_dir)
    for judge, aids in mine.items():
        ask(sessions, run_dir, waiting, judge, aids[0], f"why, asks {judge}?")


def padded_lines(run_dir: Path, n: int, line_kb: int, make_id: Any, status: str) -> bytes:
    """``n`` transcript lines of about ``line_kb`` kB each, ids from ``make_id(i)``."""
    from llmdebate.records.transcripts import iter_transcripts

    template = next(iter(iter_transcripts(run_dir / "transcripts.jsonl")))
    base = template.model_dump(mode="json")
    size = len(json.dumps(base))
    pad = max(0, line_kb * 1000 - size)
    out = bytearray()
    for i in range(n):
        row = {**base, "id": make_id(i), "status": status,
               "meta": {**base["meta"], "bench_pad": "p" * pad}}
        out += json.dumps(row, separators=(",", ":")).encode() + b"\n"
    return bytes(out)


def fill(run_dir: Path, continuations: int, judged: int, line_kb: int) -> None:
    from llmdebate.judging.asking import continuation_id

    (run_dir / "asked.jsonl").write_bytes(padded_lines(
        run_dir, continuations, line_kb,
        lambda i: continuation_id(f"other-{i}", 100000 + i, 1), "awaiting_verdict"))
    (run_dir / "judged.jsonl").write_bytes(padded_lines(
        run_dir, judged, line_kb, lambda i: f"other-{i}#{100000 + i}", "complete"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve(tree: Path, run_dir: Path, port: int) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    proc = subprocess.Popen(
        [sys.executable, "-c", CLI, "serve", str(run_dir), "--port", str(port),
         "--login-limit", "100000"],
        env=env, cwd=tree, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(proc.stderr.read().decode() if proc.stderr else "exited")
        try:
            httpx.get(f"http://127.0.0.1:{port}/", timeout=1)
            return proc
        except httpx.TransportError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError("the server did not start in 120 s")


async def signed_in(base: str, link: str, aid: int) -> tuple[httpx.AsyncClient, str]:
    client = httpx.AsyncClient(base_url=base, timeout=120)
    await client.get(link)
    page = await client.get(f"/a/{aid}")
    m = CSRF.search(page.text)
    if m is None:
        raise RuntimeError(f"no form token on /a/{aid}: {page.status_code} {page.text[:300]}")
    return client, m.group(1)


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def measure(base: str, links: dict[str, str], mine: dict[str, list[int]], seconds: float,
                  verdicts: int, pid: int) -> dict[str, Any]:
    judges = sorted(links)
    clients = [await signed_in(base, links[j], mine[j][0]) for j in judges]
    polls: list[float] = []
    stop = time.monotonic() + seconds

    async def poll(client: httpx.AsyncClient, csrf: str, aid: int, k: int) -> None:
        await asyncio.sleep(POLL_S * k / len(judges))  # pages opened at different times
        active = 0.0
        while time.monotonic() < stop:
            t0 = time.perf_counter()
            r = await client.post(f"/a/{aid}/wait", data={"csrf": csrf, "active_s": f"{active}"})
            polls.append(time.perf_counter() - t0)
            if r.status_code != 200 or r.json() != {"pending": True}:
                raise RuntimeError(f"poll: {r.status_code} {r.text[:200]}")
            active += POLL_S
            await asyncio.sleep(POLL_S)

    began, cpu0 = time.monotonic(), cpu_s(pid)
    await asyncio.gather(*(poll(c, csrf, mine[j][0], k)
                           for k, (j, (c, csrf)) in enumerate(zip(judges, clients, strict=True))))
    span, poll_cpu = time.monotonic() - began, cpu_s(pid) - cpu0
    posts: list[float] = []
    post_cpu = 0.0
    for j, (client, _) in list(zip(judges, clients, strict=True))[:verdicts]:
        aid = mine[j][1]
        page = await client.get(f"/a/{aid}?decide=1")
        m = CSRF.search(page.text)
        assert m is not None, page.text[:300]
        t0, c0 = time.perf_counter(), cpu_s(pid)
        r = await client.post(f"/a/{aid}", data={"csrf": m.group(1), "p": "70",
                                                 "explanation": "the passage says so",
                                                 "active_s": "5"})
        posts.append(time.perf_counter() - t0)
        post_cpu += cpu_s(pid) - c0
        if r.status_code not in (200, 303):
            raise RuntimeError(f"verdict: {r.status_code} {r.text[:300]}")
    for client, _ in clients:
        await client.aclose()
    polls.sort()
    return {
        "polls": len(polls),
        "polls_per_s": len(polls) / span,
        "needed_per_s": len(judges) / POLL_S,
        "p50_ms": 1000 * statistics.median(polls),
        "p90_ms": 1000 * polls[int(0.9 * (len(polls) - 1))],
        "max_ms": 1000 * polls[-1],
        "poll_cpu_ms": 1000 * poll_cpu / len(polls),
        "verdict_cpu_ms": 1000 * post_cpu / len(posts) if posts else None,
        "verdict_median_ms": 1000 * statistics.median(posts) if posts else None,
        "verdict_max_ms": 1000 * max(posts) if posts else None,
    }


def lines(path: Path) -> int:
    with path.open("rb") as fh:
        return sum(1 for _ in fh)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--old-tree", type=Path, help="Another tree of the code, measured first.")
    ap.add_argument("--judges", type=int, default=20)
    ap.add_argument("--continuations", type=int, default=500)
    ap.add_argument("--judged", type=int, default=600)
    ap.add_argument("--line-kb", type=int, default=181)
    ap.add_argument("--passage-kb", type=int, default=30)
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--verdicts", type=int, default=10)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-judge-") as tmp_name:
        tmp = Path(tmp_name)
        t0 = time.perf_counter()
        run_dir, links = build_study(tmp, args.judges, args.passage_kb)
        mine = assignments(run_dir)
        ask_first(run_dir, mine)
        fill(run_dir, args.continuations, args.judged, args.line_kb)
        print(f"study built in {time.perf_counter() - t0:.1f} s: "
              f"asked.jsonl {lines(run_dir / 'asked.jsonl')} lines "
              f"({(run_dir / 'asked.jsonl').stat().st_size / 1e6:.0f} MB), judged.jsonl "
              f"{lines(run_dir / 'judged.jsonl')} lines "
              f"({(run_dir / 'judged.jsonl').stat().st_size / 1e6:.0f} MB)", flush=True)
        trees = [("before", args.old_tree)] if args.old_tree else []
        trees.append(("this tree", REPO))
        for label, tree in trees:
            copy = tmp / f"serve-{label.replace(' ', '-')}"
            shutil.copytree(run_dir, copy)
            port = free_port()
            proc = serve(tree.resolve(), copy, port)
            try:
                res = asyncio.run(measure(f"http://127.0.0.1:{port}", links, mine,
                                          args.seconds, args.verdicts, proc.pid))
            finally:
                proc.terminate()
                proc.wait(30)
            judged_now = lines(copy / "judged.jsonl")
            print(f"{label} ({tree}): {res['polls']} polls, {res['polls_per_s']:.1f} polls/s "
                  f"(the pages need {res['needed_per_s']:.0f}/s); poll p50 "
                  f"{res['p50_ms']:.0f} ms, p90 {res['p90_ms']:.0f} ms, max "
                  f"{res['max_ms']:.0f} ms; verdict post median "
                  f"{res['verdict_median_ms']:.0f} ms, max {res['verdict_max_ms']:.0f} ms "
                  f"(judged.jsonl then {judged_now} lines); server CPU per poll "
                  f"{res['poll_cpu_ms']:.1f} ms, per verdict {res['verdict_cpu_ms']:.1f} ms; "
                  f"load average {os.getloadavg()[0]:.1f}", flush=True)
            shutil.rmtree(copy)


if __name__ == "__main__":
    main()
