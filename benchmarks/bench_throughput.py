"""Debates and model calls per second against a fast fake server in another process.

    PYTHONPATH=. python benchmarks/bench_throughput.py debates --latency 0.05 --in-flight 64,256 \
        --debates 1000
    PYTHONPATH=. python benchmarks/bench_throughput.py calls --latency 0.05 --in-flight 8,64,256,512
    PYTHONPATH=. python benchmarks/bench_throughput.py orchestration --debates 300
    PYTHONPATH=. python benchmarks/bench_throughput.py memory --debates 10000 --in-flight 256
    PYTHONPATH=. python benchmarks/bench_throughput.py debates --in-flight 256 --processes 0,1,2
    PYTHONPATH=. python benchmarks/bench_throughput.py debates --protocol two-sided --rounds 3 \
        --in-flight 64 --debates 400 --against ../before --repeat 4

Every figure is printed with the load average at the time, and every client figure beside
its bound measured in the same run:

* ``bound``: the calls/s of a minimal raw-socket client (pre-built request bytes, keep-alive,
  no parsing beyond ``content-length``) against the same server at the same number of requests
  in flight: min(in-flight / latency, what the server and the machine can take right now);
* ``calls``: the model layer alone (``Model.generate``, real openai SDK, no cache) at that
  number of requests in flight, as a share of the bound;
* ``debates``: prover-estimator debates (default d = 2, q = 3, conditional estimates, the
  item's own decompositions, logprob probabilities, an LLM judge; every role on the fake
  server) through the real runner into a run directory, with ``max_concurrency`` =
  ``model_concurrency`` = requests in flight: debates/s, calls/s and the share of the bound;
  with ``--processes N,M``, rows for N and M local worker processes (``--executor
  processes``; 0: this process) side by side, the client CPU then that of the workers too;
  and the mean number of requests the server held over the debates (the rest of those
  allowed in flight are in the client: replies waiting for the event loop, or requests
  about to go out);
* ``orchestration``: the same debates against the in-process scripted backend (zero latency,
  no HTTP): debates per CPU-second of this process, with and without the transcript file and
  the response cache;
* ``memory``: resident memory of this process sampled through a long run (transcripts go to
  disk as they finish; nothing of a finished debate stays in memory).

The fake server is ``benchmarks/fake_openai_server.py`` (one asyncio process, unlimited
concurrency, a fixed latency per request).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import json
import math
import os
import pstats
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

REPO = Path(__file__).resolve().parents[1]
SERVER = REPO / "benchmarks" / "fake_openai_server.py"


SERVER_PIDS: dict[str, int] = {}  # the fake server's process, by URL


def server_cpu(url: str) -> float:
    """CPU seconds the fake server process at ``url`` has used so far."""
    import psutil

    t = psutil.Process(SERVER_PIDS[url]).cpu_times()
    return float(t.user + t.system)


def server_stats(url: str, reset: bool = False) -> dict[str, Any]:
    """The fake server's counters (``reset``: zero them first and return the zeros)."""
    import urllib.request

    root = url.rsplit("/v1", 1)[0]
    req = urllib.request.Request(f"{root}/stats/reset", method="POST") if reset else None
    if req is not None:
        urllib.request.urlopen(req, timeout=10).read()
    with urllib.request.urlopen(f"{root}/stats", timeout=10) as resp:
        stats: dict[str, Any] = json.loads(resp.read())
    return stats


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.2f}/{five:.2f}"


# ----------------------------------------------------------------------------- the server
@contextlib.contextmanager
def fake_server(latency: float, workers: int = 1) -> Iterator[str]:
    """Start ``fake_openai_server.py`` in its own process; yield its ``/v1`` URL."""
    proc = subprocess.Popen(
        [sys.executable, str(SERVER), "--port", "0", "--latency", str(latency),
         "--workers", str(workers)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        if not line.startswith("listening "):
            raise RuntimeError(f"the fake server did not start: {line!r}")
        url = line.split(" ", 1)[1]
        SERVER_PIDS[url] = proc.pid
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def probe_body(i: int, model: str = "fake") -> bytes:
    """A request like an estimator's probability probe (about 1.3 kB)."""
    text = (
        "Claim: 10007 has no divisor d with 2 <= d < 101. Subclaims: 10007 has no divisor d "
        f"with 2 <= d < 35; with 35 <= d < 68; with 68 <= d < 101. Outcome {i}. " * 6
    )
    body = {
        "model": model,
        "messages": [
            {"role": "system", "content": "You estimate probabilities of claims."},
            {"role": "user", "content": text + "\nIs the statement true? Answer True or False."},
        ],
        "temperature": 1.0,
        "max_tokens": 1,
        "logprobs": True,
        "top_logprobs": 5,
    }
    return json.dumps(body).encode()


async def raw_bound(
    url: str, in_flight: int, seconds: float, bodies: list[bytes] | None = None
) -> float:
    """Calls/s of a minimal client keeping ``in_flight`` requests open for ``seconds``."""
    u = urlparse(url)
    host, port, path = u.hostname or "127.0.0.1", u.port or 80, u.path + "/chat/completions"
    bodies = bodies or [probe_body(i) for i in range(16)]
    requests = [
        (
            f"POST {path} HTTP/1.1\r\nhost: {host}:{port}\r\ncontent-type: application/json\r\n"
            f"content-length: {len(b)}\r\n\r\n"
        ).encode()
        + b
        for b in bodies
    ]
    done = 0
    stop = time.perf_counter() + seconds

    async def one(k: int) -> None:
        # connection k sends bodies k, k + in_flight, k + 2 in_flight, ...: each in turn
        nonlocal done
        reader, writer = await asyncio.open_connection(host, port)
        i = k
        while time.perf_counter() < stop:
            writer.write(requests[i % len(requests)])
            i += in_flight
            head = await reader.readuntil(b"\r\n\r\n")
            length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
            await reader.readexactly(length)
            done += 1
        writer.close()

    start = time.perf_counter()
    await asyncio.gather(*(one(k) for k in range(in_flight)))
    return done / (time.perf_counter() - start)


# ----------------------------------------------------------------------------- model layer
async def model_calls(url: str, in_flight: int, n: int) -> tuple[float, float, float]:
    """``Model.generate`` (real SDK, no cache) for ``n`` calls started at once, ``in_flight``
    requests open: (calls/s over the whole run, seconds until the first ``in_flight`` replies,
    calls/s after those)."""
    from llmdebate.models import GenerateConfig, get_model

    model = get_model("openai/fake", base_url=url, use_cache=False, max_concurrency=in_flight)
    cfg = GenerateConfig(temperature=1.0, max_tokens=1, top_logprobs=5)
    msgs = [json.loads(probe_body(i))["messages"] for i in range(16)]
    await model.generate(msgs[0], cfg)
    done = 0
    first = 0.0

    async def one(i: int) -> None:
        nonlocal done, first
        await model.generate(msgs[i % 16], cfg)
        done += 1
        if done == in_flight:
            first = time.perf_counter() - start

    start = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(n)))
    wall = time.perf_counter() - start
    await model.aclose()
    return n / wall, first, (n - in_flight) / (wall - first)


# ----------------------------------------------------------------------------- debates
def divisor_items(n_items: int) -> list[dict[str, Any]]:
    """``n_items`` distinct divisor problems (the bundled file has only 30)."""
    from math import isqrt

    from llmdebate.data.generate import divisor_item

    return [
        divisor_item(n, f"div-{n}", 2, isqrt(n) + 1)
        for n in range(10_003, 10_003 + 2 * n_items, 2)
    ]


def debate_config(
    tmp: Path, debates: int, in_flight: int, url: str | None, *, depth: int, width: int,
    independent: bool, cache: bool, debates_in_flight: int | None = None,
    model: str = "openai/fake", endpoint: str = "chat", protocol: str = "prover-estimator",
    rounds: int = 2,
) -> Any:
    from llmdebate.experiment.loading import validate

    data = tmp / f"items-{debates}.jsonl"
    if not data.exists():
        lines = [json.dumps(it) for it in divisor_items((debates + 1) // 2)]
        data.write_text("\n".join(lines) + "\n")
    role: dict[str, Any] = {"model": model, "base_url": url} if url else {"model": "scripted"}
    if url and endpoint != "chat":  # text completions: concurrent prompts batched per request
        role["options"] = {"endpoint": endpoint}
    raw = {
        "name": "bench",
        "protocols": [protocol],
        "rounds": rounds,  # a speech protocol's
        "dataset": {"path": str(data), "limit": (debates + 1) // 2},
        "debate": {"depth": depth, "width": width, "expected_rewards": True},
        "prover": {**role, "decomposer": "formal", "max_tokens": 24},
        "estimator": {**role, "independent": independent},
        "judge": {"kind": "llm", **role},
        "max_concurrency": debates_in_flight or in_flight,
        "model_concurrency": in_flight,
        "use_cache": cache,
        "cache_dir": str(tmp / "cache"),
        "runs_dir": str(tmp / "runs"),
        "report": {"bootstrap": 10},
    }
    if protocol != "prover-estimator":  # a speech is the reply as written (the server's is
        raw["prover"]["scratchpad"] = False  # untagged: no re-ask for a missing <argument>)
    return validate(raw)


class RSSSampler:
    """Resident memory of this process every ``every`` seconds, in a thread."""

    def __init__(self, every: float = 0.5) -> None:
        import psutil

        self.proc = psutil.Process()
        self.every = every
        self.samples: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

        self.began = time.perf_counter()

    def _run(self) -> None:
        while not self._stop.is_set():
            now = time.perf_counter() - self.began
            self.samples.append((now, self.proc.memory_info().rss / 2**20))
            self._stop.wait(self.every)

    def __enter__(self) -> RSSSampler:
        self.began = time.perf_counter()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def run_debates(
    url: str | None, debates: int, in_flight: int, *, depth: int = 2, width: int = 3,
    independent: bool = False, cache: bool = False, profile: str | None = None,
    models: dict[str, Any] | None = None, memory: bool = False, tmp: Path,
    debates_in_flight: int | None = None, model: str = "openai/fake",
    ray_workers: int | None = None, endpoint: str = "chat", processes: int | None = None,
    protocol: str = "prover-estimator", rounds: int = 2,
) -> dict[str, Any]:
    from llmdebate.experiment import runner
    from llmdebate.models import http1

    # HTTP requests sent by the raw HTTP/1.1 fast path (batched prompts: fewer than calls)
    sent = [0]
    # every request goes out through HTTP1Pool.send (in a tree before it existed: post)
    way = "send" if hasattr(http1.HTTP1Pool, "send") else "post"
    send = getattr(http1.HTTP1Pool, way)

    def counted_send(self: Any, *a: Any, **kw: Any) -> Any:
        sent[0] += 1
        return send(self, *a, **kw)

    summary_at = [0.0, 0.0]  # when the summary began and ended, on the sampler's clock
    write_summary = runner.write_summary

    def timed_summary(*a: Any, **kw: Any) -> Any:
        summary_at[0] = time.perf_counter() - rss.began
        try:
            return write_summary(*a, **kw)
        finally:
            summary_at[1] = time.perf_counter() - rss.began

    cfg = debate_config(
        tmp, debates, in_flight, url, depth=depth, width=width, independent=independent,
        cache=cache, debates_in_flight=debates_in_flight, model=model, endpoint=endpoint,
        protocol=protocol, rounds=rounds,
    )
    run_dir = tmp / "runs" / f"r-{time.monotonic_ns()}"
    if url in SERVER_PIDS:
        server_stats(url, reset=True)
    prof = cProfile.Profile() if profile else None
    cpu0 = time.process_time()
    reaped0 = sum(os.times()[2:4])  # the CPU of worker processes, once they are joined
    with RSSSampler() as rss:
        if prof:
            prof.enable()
        extra: dict[str, Any] = {}
        if ray_workers:
            from llmdebate.experiment.executors import ExecutorOptions

            extra["executor"] = ExecutorOptions("ray", workers=ray_workers)
        if processes:
            from llmdebate.experiment.executors import ExecutorOptions

            extra["executor"] = ExecutorOptions("processes", workers=processes)
        runner.write_summary = timed_summary
        setattr(http1.HTTP1Pool, way, counted_send)
        try:
            res = runner.run(cfg, run_dir, models=models, progress=False, **extra)
        finally:
            runner.write_summary = write_summary
            setattr(http1.HTTP1Pool, way, send)
        if prof:
            prof.disable()
    driver_cpu = time.process_time() - cpu0
    cpu = driver_cpu + sum(os.times()[2:4]) - reaped0
    if prof and profile:
        prof.dump_stats(profile)
        pstats.Stats(prof).sort_stats("tottime").print_stats(25)
    inv = res.summary["last_invocation"]
    s = res.summary
    n = s["transcripts"]
    phase = float(inv.get("debates_s") or res.wall_s)
    out = {
        "tokens_in": s["usage"]["tokens_in"],
        "debates": n,
        "failed": s["status"].get("failed", 0),
        "calls": s["usage"]["calls"],
        "calls_per_debate": s["usage"]["calls_per_debate"],
        "debates_s": phase,
        "wall_s": res.wall_s,
        "debates_per_s": n / phase,
        "calls_per_s": s["usage"]["calls"] / phase,
        # counted in this process only: none for debates on worker processes or Ray
        "fast_path_requests": None if processes or ray_workers else sent[0],
        "requests_per_s": None if processes or ray_workers else sent[0] / phase,
        "cpu_s": cpu,
        "driver_cpu_s": driver_cpu,  # this process alone (with --processes: the driver)
        "transcripts_mb": (run_dir / "transcripts.jsonl").stat().st_size / 2**20,
        "run_dir": str(run_dir),
    }
    if url in SERVER_PIDS:  # requests in flight at the server, on average over the debates
        out["server_in_flight"] = round(server_stats(url)["in_flight_s"] / phase, 1)
    if memory:
        samples = rss.samples
        k = len(samples)
        out["rss_mb"] = {
            f"{int(100 * q)}%": round(samples[min(k - 1, int(q * (k - 1)))][1], 1)
            for q in (0.1, 0.25, 0.5, 0.75, 1.0)
        }
        out["rss_peak_mb"] = round(max(v for _, v in samples), 1)
        during = [v for t, v in samples if summary_at[0] <= t <= summary_at[1]]
        out["summary_rss_peak_mb"] = round(max(during or [samples[-1][1]]), 1)
        out["summary_s"] = round(summary_at[1] - summary_at[0], 1)
    return out


# ----------------------------------------------------------------------------- commands
def ideal_rate(in_flight: int, latency: float) -> float:
    """Requests per second ``in_flight`` requests of ``latency`` s each allow (no latency: no
    limit, the bound alone counts)."""
    return in_flight / latency if latency > 0 else math.inf


def shown(rate: float) -> float | None:
    """A rate for the JSON rows (None: no limit)."""
    return round(rate, 1) if math.isfinite(rate) else None


def cmd_calls(args: argparse.Namespace) -> list[dict[str, Any]]:
    rows = []
    with fake_server(args.latency) as url:
        for c in args.in_flight:
            bound = asyncio.run(raw_bound(url, c, args.seconds))
            ideal = ideal_rate(c, args.latency)
            n = max(200, int(args.seconds * (ideal if math.isfinite(ideal) else bound)))
            rate, first, after = asyncio.run(model_calls(url, c, n))
            row = {
                "what": "calls", "latency_s": args.latency, "in_flight": c, "calls": n,
                "calls_per_s": round(rate, 1), "first_replies_s": round(first, 3),
                "calls_per_s_after_first": round(after, 1), "bound_per_s": round(bound, 1),
                "ideal_per_s": shown(ideal), "ratio": round(rate / min(bound, ideal), 3),
                "load": load(),
            }
            print(
                f"model layer, {args.latency * 1000:.0f} ms, {c:3d} in flight: {rate:7.1f} calls/s"
                f" = {rate / min(bound, ideal):.0%} of bound {min(bound, ideal):.0f}/s (raw client"
                f" {bound:.0f}/s, ideal {ideal:.0f}/s); all {n} calls start at once: the first"
                f" {c} replies after {1000 * first:.0f} ms, then {after:.0f} calls/s"
                f" [{row['load']}]", flush=True,
            )
            rows.append(row)
    return rows


def debates_in(tree: str, url: str, c: int, args: argparse.Namespace) -> dict[str, Any]:
    """:func:`run_debates` in a fresh process that imports llmdebate from ``tree`` (another
    checkout: the side-by-side comparison of ``--against``)."""
    cmd = [
        sys.executable, __file__, "one", "--url", url, "--in-flight", str(c),
        "--debates", str(args.debates), "--depth", str(args.depth), "--width", str(args.width),
        "--debate-factor", str(args.debate_factor), "--endpoint", args.endpoint,
        "--protocol", args.protocol, "--rounds", str(args.rounds),
    ]
    cmd += ["--independent"] if args.independent else []
    cmd += ["--processes", str(args.processes[0])] if args.processes else []
    env = {**os.environ, "PYTHONPATH": tree}
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{tree}: {done.stderr[-2000:]}")
    row: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return row


def cmd_one(args: argparse.Namespace) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory() as tmp:
        r = run_debates(
            args.url, args.debates, args.in_flight[0], depth=args.depth, width=args.width,
            independent=args.independent, tmp=Path(tmp),
            debates_in_flight=args.debate_factor * args.in_flight[0], endpoint=args.endpoint,
            processes=args.processes[0] if args.processes else None, protocol=args.protocol,
            rounds=args.rounds,
        )
    print(json.dumps(r), flush=True)
    return []


def cmd_debates(args: argparse.Namespace) -> list[dict[str, Any]]:
    rows = []
    with fake_server(args.latency) as url, tempfile.TemporaryDirectory() as tmp:
        for c in args.in_flight:
            bound = asyncio.run(raw_bound(url, c, args.seconds))
            if args.against:
                rows += side_by_side(url, c, bound, args)
                continue
            nan = float("nan")  # HTTP requests made in worker processes are not counted
            for k, procs in enumerate(args.processes or [None]):  # side by side: one server
                if k:  # each row beside a bound measured just before it (the load drifts)
                    bound = asyncio.run(raw_bound(url, c, args.seconds))
                r = run_debates(
                    url, args.debates, c, depth=args.depth, width=args.width,
                    independent=args.independent, cache=args.cache, profile=args.profile,
                    memory=args.memory, tmp=Path(tmp), debates_in_flight=args.debate_factor * c,
                    ray_workers=args.workers, endpoint=args.endpoint, processes=procs,
                    protocol=args.protocol, rounds=args.rounds,
                )
                ideal = ideal_rate(c, args.latency)
                b = min(bound, ideal)
                row = {
                    "what": "debates", "protocol": args.protocol, "latency_s": args.latency,
                    "in_flight": c, "depth": args.depth, "width": args.width, "processes": procs,
                    **r,
                    "bound_per_s": round(bound, 1), "ideal_per_s": shown(ideal),
                    "ratio": round(r["calls_per_s"] / b, 3), "load": load(),
                }
                where = f" (ray, {args.workers} workers)" if args.workers else ""
                where = f" ({procs} processes)" if procs else where
                print(
                    f"debates{where} d={args.depth} q={args.width}, {args.latency * 1000:.0f} ms, "
                    f"{c:3d} in flight: {r['debates']} debates ({r['failed']} failed) in "
                    f"{r['debates_s']:.1f} s = {r['debates_per_s']:.1f} debates/s, "
                    f"{r['calls_per_s']:.0f} calls/s "
                    f"({r['calls_per_debate']:.1f}/debate), "
                    f"{nan if r['requests_per_s'] is None else r['requests_per_s']:.0f} "
                    "HTTP requests/s on the fast path = "
                    f"{r['calls_per_s'] / b:.0%} of bound "
                    f"{b:.0f}/s (raw client {bound:.0f}/s); "
                    f"{r.get('server_in_flight', nan):.0f} in flight at the server; client CPU "
                    f"{1000 * r['cpu_s'] / max(1, r['calls']):.2f} ms/call [{row['load']}]",
                    flush=True,
                )
                if args.memory:
                    print(
                        f"  rss MB by share of the run: {r['rss_mb']}, peak {r['rss_peak_mb']} "
                        f"(whole run, summary included; while the summary was written: "
                        f"{r['summary_rss_peak_mb']}, {r['summary_s']} s after the debates)"
                    )
                rows.append(row)
    return rows


def side_by_side(
    url: str, c: int, bound: float, args: argparse.Namespace
) -> list[dict[str, Any]]:
    """The same debates from ``--against`` (before) and this tree (after), alternately,
    ``--repeat`` times each, against one server, beside one bound."""
    trees = [("before", str(Path(args.against).resolve())), ("after", str(REPO))]
    b = min(bound, ideal_rate(c, args.latency))
    rows = []
    for k in range(args.repeat):
        for label, tree in trees if k % 2 == 0 else trees[::-1]:
            cpu0 = server_cpu(url)
            server_stats(url, reset=True)
            r = debates_in(tree, url, c, args)
            requests = r["fast_path_requests"] or r["calls"]  # worker processes: not counted
            r["server_cpu_ms_per_request"] = round(
                1000 * (server_cpu(url) - cpu0) / max(1, requests), 3
            )
            r["server_in_flight"] = round(server_stats(url)["in_flight_s"] / r["debates_s"], 1)
            row = {
                "what": "debates", "protocol": args.protocol, "tree": label, "path": tree,
                "latency_s": args.latency,
                "in_flight": c, "depth": args.depth, "width": args.width,
                "endpoint": args.endpoint, "processes": args.processes[0] if args.processes
                else None, **r, "bound_per_s": round(bound, 1),
                "ratio": round(r["calls_per_s"] / b, 3), "load": load(),
            }
            print(
                f"{label:6s} {args.protocol}, {args.latency * 1000:.0f} ms, {c:3d} in flight: "
                f"{r['debates']} "
                f"debates ({r['failed']} failed) = {r['debates_per_s']:.1f} debates/s, "
                f"{r['calls_per_s']:.0f} calls/s = {r['calls_per_s'] / b:.0%} of bound {b:.0f}/s,"
                f" {r['server_in_flight']:.0f} in flight at the server;"
                f" client CPU {1000 * r['cpu_s'] / max(1, r['calls']):.2f} ms/call, server CPU "
                f"{r['server_cpu_ms_per_request']:.2f} ms/request [{row['load']}]",
                flush=True,
            )
            rows.append(row)
    return rows


def orchestration_once(
    tmp: Path, debates: int, *, depth: int, width: int, independent: bool, cache: str,
    write: bool, profile: str | None,
) -> dict[str, Any]:
    """CPU of ``debates`` debates against the scripted backend (no HTTP, zero latency)."""
    from llmdebate.agents.factory import Team
    from llmdebate.data import load_items
    from llmdebate.experiment.debate import run_one
    from llmdebate.experiment.executors.local import LocalExecutor
    from llmdebate.experiment.jobs import make_jobs
    from llmdebate.experiment.runner import drive
    from llmdebate.experiment.runtime import lean_gc, protocol_settings
    from llmdebate.models import get_model
    from llmdebate.models.cache import ResponseCache
    from llmdebate.prompts import Prompts

    sys.path.insert(0, str(REPO / "tests"))
    from fixtures.llm_fixtures import responder  # type: ignore[import-not-found]

    cfg = debate_config(
        tmp, debates, 64, None, depth=depth, width=width, independent=independent, cache=False
    )
    jobs = make_jobs(load_items(Path(cfg.dataset.path), limit=cfg.dataset.limit), cfg)[:debates]
    m = get_model("scripted", responder=responder, default_probability=0.7, use_cache=False)
    if cache != "off":
        m.cache = ResponseCache(tmp / f"cache-{depth}-{width}-{debates}.sqlite")
    team = Team({"prover": m, "estimator": m, "judge": m}, Prompts(), cfg.prover, cfg.estimator,
                cfg.judge)
    settings = protocol_settings(cfg)
    servers: dict[str, str | None] = {"prover": None, "estimator": None, "judge": None}
    out = tmp / f"t-{time.monotonic_ns()}.jsonl"
    calls = 0

    async def plain() -> None:
        nonlocal calls
        sem = asyncio.Semaphore(64)

        async def one(job: Any) -> None:
            nonlocal calls
            async with sem:
                t, _ = await run_one(job, team, settings)
                calls += len(t.calls)

        await asyncio.gather(*(one(j) for j in jobs))

    def count(f: Any) -> None:
        nonlocal calls
        calls += f.calls

    async def written() -> None:
        ex = LocalExecutor(team, settings, servers, 64)
        await drive(ex, jobs, out, max_consecutive_failures=10**9, on_done=count)

    prof = cProfile.Profile() if profile else None
    cpu0, wall0 = time.process_time(), time.perf_counter()
    if prof:
        prof.enable()
    with lean_gc():  # as the runner runs debates
        asyncio.run(written() if write else plain())
    if prof:
        prof.disable()
        prof.dump_stats(profile)  # type: ignore[arg-type]
        pstats.Stats(prof).sort_stats("tottime").print_stats(20)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    return {"debates": len(jobs), "calls": calls, "cpu_s": cpu, "wall_s": wall}


def cmd_orchestration(args: argparse.Namespace) -> list[dict[str, Any]]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        variants = (
            ("off", False), ("off", True), ("cold", True), ("warm", True),
        )
        for cache, write in variants:
            if cache == "warm":  # the same debates again: every call a cache hit
                pass
            r = orchestration_once(
                Path(tmp), args.debates, depth=args.depth, width=args.width,
                independent=args.independent, cache=cache, write=write, profile=args.profile,
            )
            per_cpu = r["debates"] / r["cpu_s"]
            row = {
                "what": "orchestration", "transcripts": write, "cache": cache, **r,
                "debates_per_cpu_s": round(per_cpu, 1), "load": load(),
            }
            print(
                f"orchestration d={args.depth} q={args.width} (scripted backend, no HTTP): "
                f"transcripts {'on ' if write else 'off'}, cache {cache:4s}: {per_cpu:6.1f} "
                f"debates per CPU-second, {1000 * r['cpu_s'] / max(1, r['calls']):.3f} ms "
                f"CPU/call ({r['calls'] / r['debates']:.1f} calls/debate) [{row['load']}]",
                flush=True,
            )
            rows.append(row)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("what", choices=["calls", "debates", "orchestration", "memory", "one"])
    ap.add_argument("--latency", type=float, default=0.05, help="server latency, s")
    ap.add_argument(
        "--in-flight", type=lambda s: [int(x) for x in s.split(",")], default=[64, 256],
        help="requests in flight, comma-separated",
    )
    ap.add_argument("--debates", type=int, default=1000)
    ap.add_argument(
        "--debate-factor", type=int, default=2,
        help="debates in flight per request in flight (so that requests wait for a slot)",
    )
    ap.add_argument("--depth", type=int, default=2)
    ap.add_argument("--width", type=int, default=3)
    ap.add_argument("--independent", action="store_true", help="independent b_i (fewer calls)")
    ap.add_argument("--cache", action="store_true", help="use the response cache (debates)")
    ap.add_argument(
        "--workers", type=int, default=None,
        help="debates: run them on a local Ray instance (--executor ray) with this many "
        "worker processes",
    )
    ap.add_argument(
        "--processes", type=lambda s: [int(x) for x in s.split(",")], default=None,
        help="debates: run them on this many local worker processes (--executor processes); "
        "comma-separated for rows side by side against one server and bound, 0: in this process",
    )
    ap.add_argument("--seconds", type=float, default=3.0, help="duration of a bound measurement")
    ap.add_argument("--profile", default=None, help="write a cProfile of the runs to this file")
    ap.add_argument("--json", default=None, help="append the rows to this JSONL file")
    ap.add_argument(
        "--against", default=None,
        help="debates: also run them with llmdebate imported from this other checkout "
        "(before), alternately with this one (after), each in a fresh process",
    )
    ap.add_argument("--repeat", type=int, default=1, help="--against: runs of each tree")
    ap.add_argument(
        "--endpoint", choices=["chat", "completions"], default="chat",
        help="the OpenAI endpoint every role uses (completions: batched prompts)",
    )
    ap.add_argument(
        "--protocol", default="prover-estimator",
        help="debates: the protocol every debate runs (a speech protocol's speeches are the "
        "server's replies as written)",
    )
    ap.add_argument("--rounds", type=int, default=2, help="debates: a speech protocol's rounds")
    ap.add_argument("--url", default=None, help=argparse.SUPPRESS)  # `one`: the server
    args = ap.parse_args()
    args.memory = args.what == "memory"
    if args.what != "one":
        print(f"{os.cpu_count()} CPU cores, python {sys.version.split()[0]}, {load()}", flush=True)
    if args.what == "calls":
        rows = cmd_calls(args)
    elif args.what in ("debates", "memory"):
        rows = cmd_debates(args)
    elif args.what == "one":
        rows = cmd_one(args)
    else:
        rows = cmd_orchestration(args)
    if args.json:
        with open(args.json, "a", encoding="utf-8") as fh:
            for row in rows:
                fh.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
