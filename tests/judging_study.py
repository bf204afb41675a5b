"""Shared by the human-judge tests: a scripted run waiting for people, judges, a live server."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import yaml

from llmdebate.cli import main

REPO = Path(__file__).resolve().parents[1]
FIXTURE = str(REPO / "tests" / "fixtures" / "llm_fixtures.py")
SCRIPTED = {
    "model": "scripted",
    "options": {"responder": f"{FIXTURE}:responder", "probabilities": f"{FIXTURE}:probabilities"},
}
DIVISORS = REPO / "datasets" / "divisors.jsonl"
RLO = "\u202e"  # RIGHT-TO-LEFT OVERRIDE
HOSTILE = "<script>alert('x')</script> {{ 7*7 }} {% if 1 %}J{% endif %}"


def make_run(
    tmp: Path,
    protocols: list[str],
    *,
    limit: int = 4,
    dataset: Path = DIVISORS,
    depth: int = 1,
    name: str = "study",
    **extra: Any,
) -> Path:
    """A scripted run whose every protocol stops where a person must decide (``extra``: more
    config fields, e.g. ``rounds``)."""
    cfg = {
        "name": name,
        "dataset": {"path": str(dataset), "limit": limit},
        "debate": {"depth": depth, "width": 2, "early_stop": False},
        "protocols": protocols,
        "prover": {**SCRIPTED, "decomposer": "formal"},
        "estimator": SCRIPTED,
        "judge": {"kind": "human"},
        **extra,
    }
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    run_dir = tmp / name
    assert main(["run", "--config", str(path), "--run-dir", str(run_dir), "--quiet"]) == 0
    return run_dir


def hostile_dataset(tmp: Path, n: int = 3) -> Path:
    """Items whose question and answers carry markup and template syntax."""
    path = tmp / "hostile.jsonl"
    rows = [
        {
            "id": f"h{i}",
            "question": f"Q{i} {HOSTILE}?",
            "choices": [f"yes {HOSTILE}", "no"],
            "answer": f"yes {HOSTILE}",
            "context": f"Passage {HOSTILE}",
        }
        for i in range(n)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def rlo_dataset(tmp: Path, n: int = 3) -> Path:
    """Items whose passage, question and answers each carry an unclosed RIGHT-TO-LEFT OVERRIDE
    (and one a stray POP DIRECTIONAL ISOLATE, which would close an isolate it sits in)."""
    path = tmp / "rlo.jsonl"
    rows = [
        {
            "id": f"r{i}",
            "question": f"Is {RLO}this question\u2069 reversed {i}?",
            "choices": [f"yes {RLO}indeed", "no"],
            "answer": f"yes {RLO}indeed",
            "context": f"A passage {RLO}that overrides the page",
        }
        for i in range(n)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def write_judges(path: Path, ids: list[str], **study: Any) -> Path:
    path.write_text(yaml.safe_dump({"study": study, "judges": ids}))
    return path


def assign(run_dir: Path, judges: Path, k: int) -> dict[str, str]:
    """Run `llmdebate assign`; the new links by judge id."""
    links = run_dir.parent / f"links-{judges.stem}.tsv"
    args = ["assign", str(run_dir), "--judges", str(judges), "--per-item", str(k)]
    assert main([*args, "--links-out", str(links)]) == 0
    out = dict(line.split("\t") for line in links.read_text().splitlines())
    links.unlink()
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(run_dir: Path, port: int) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    code = "import sys; from llmdebate.cli import main; sys.exit(main(sys.argv[1:]))"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "serve", str(run_dir), "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
        try:
            httpx.get(f"http://127.0.0.1:{port}/", timeout=1)
            return proc
        except httpx.TransportError:
            time.sleep(0.1)
    proc.kill()
    raise AssertionError("the server did not start in 90 s")


@contextmanager
def server(run_dir: Path) -> Iterator[str]:
    port = free_port()
    proc = start_server(run_dir, port)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(10)


def with_base(link: str, base: str) -> str:
    """A printed link (default base URL) pointed at the test server."""
    return base + link[link.index("/login/") :]
