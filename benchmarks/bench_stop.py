"""How long a run on the embedded model takes to end after Ctrl-C (SIGINT) or SIGTERM.

    .venv/bin/python benchmarks/bench_stop.py [--signal INT|TERM] [--after 20] [--loaders 0]
        [--from debates|load|start] [--fresh-grammars]

Starts ``llmdebate run`` on the embedded model (12 prover-estimator debates of depth 2, the
prover writing its decompositions, 4 at a time), waits until it says what it will run (the
weights are loaded) and then ``--after`` seconds, so that model calls are in flight, and
sends the signal. ``--from load`` counts ``--after`` from the line that says the weights are
being loaded, ``--from start`` from the command's start (imports, the config). With
``--fresh-grammars`` the run's cache holds the weights but no compiled grammar: its first
structured call compiles the decomposition's grammar (tens of seconds on 2 cores).
``--loaders N`` starts N busy processes (``yes > /dev/null``, at the priority this script runs
at) a few seconds before the signal and stops them when the run has ended: the load of a busy
shared machine at the moment a person presses Ctrl-C. Printed: the seconds from the signal to
the run's exit, its exit code, the run's last line (the summary written, the command that
resumes), the load average and the threads running or ready to run at the signal
(``/proc/loadavg``'s fourth field). With ``--dump S`` every thread's stack is printed each S
seconds while the run has not ended (what it waits for).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
CODE = (
    "import faulthandler, signal, sys; faulthandler.register(signal.SIGUSR1, all_threads=True);"
    "signal.signal(signal.SIGINT, signal.default_int_handler);"  # as in a terminal
    "from llmdebate.cli import main; sys.exit(main())"
)


def config(folder: Path) -> Path:
    cfg = {
        "name": "stop",
        "dataset": {"path": str(REPO / "datasets" / "divisors.jsonl"), "limit": 6},
        "debate": {"depth": 2, "width": 2},
        "protocols": ["prover-estimator"],
        "prover": {"model": "local", "max_tokens": 200},
        "estimator": {"model": "local"},
        "judge": {"kind": "llm", "model": "local"},
        "max_concurrency": 4,
        "use_cache": False,
        "report": {"bootstrap": 10},
    }
    path = folder / "stop.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


MARKS = {"debates": " to run ", "load": "preparing ", "start": ""}


def fresh_grammars(folder: Path, cache: Path | None) -> Path:
    """A cache dir beside ``folder`` with the weights of ``cache`` (default: the user's) and
    no compiled grammar."""
    source = cache or Path(os.environ.get("LLMDEBATE_CACHE_DIR", Path.home() / ".cache/llmdebate"))
    out = folder / "cache"
    out.mkdir()
    for name in ("weights", "gguf"):
        if (source / name).exists():
            (out / name).symlink_to((source / name).resolve())
    return out


def running() -> str:
    """The threads running or ready to run now, of all there are (``/proc/loadavg``)."""
    try:
        return Path("/proc/loadavg").read_text().split()[3]
    except (OSError, IndexError):
        return "?"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--signal", choices=["INT", "TERM"], default="INT")
    ap.add_argument("--after", type=float, default=20.0, help="seconds after --from's point")
    ap.add_argument(
        "--from",
        dest="mark",
        choices=list(MARKS),
        default="debates",
        help="debates: the run says what it will run; load: it loads the weights; "
        "start: the command starts",
    )
    ap.add_argument("--loaders", type=int, default=0, help="busy processes around the stop")
    ap.add_argument("--dump", type=float, default=0.0, help="print the stacks every S s")
    ap.add_argument("--cache-dir", type=Path, help="LLMDEBATE_CACHE_DIR (the weights' copy)")
    ap.add_argument(
        "--fresh-grammars",
        action="store_true",
        help="no compiled grammar in the run's cache (the first call compiles it)",
    )
    args = ap.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-stop-"))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    cache = fresh_grammars(folder, args.cache_dir) if args.fresh_grammars else args.cache_dir
    if cache:
        env["LLMDEBATE_CACHE_DIR"] = str(cache)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            CODE,
            "run",
            "--config",
            str(config(folder)),
            "--run-dir",
            str(folder / "run"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    lines: list[str] = []
    began = threading.Event()
    mark = MARKS[args.mark]
    if not mark:
        began.set()

    def read(stream: object) -> None:
        for line in stream:  # type: ignore[attr-defined]
            lines.append(line.rstrip())
            if mark and mark in line:
                began.set()

    for stream in (proc.stdout, proc.stderr):
        threading.Thread(target=read, args=(stream,), daemon=True).start()
    start = time.monotonic()
    if not began.wait(1800):
        proc.kill()
        sys.exit(f"the run did not reach {args.mark!r} in 30 minutes")
    reached = time.monotonic() - start
    time.sleep(max(0.0, args.after - 3.0))
    loaders = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(args.loaders)]
    time.sleep(min(3.0, args.after))
    ready = running()
    proc.send_signal(getattr(signal, f"SIG{args.signal}"))
    took = wait(proc, args.dump, lines)
    load = os.getloadavg()[0]
    for p in loaders:
        p.kill()
        p.wait()
    time.sleep(0.3)
    if args.dump:
        print("\n".join(x for x in lines if "it/s" not in x))
    print(
        f"SIG{args.signal} {args.after:g} s after {args.mark} ({args.loaders} loaders; "
        f"reached in {reached:.0f} s): exit {proc.returncode} after {took:.2f} s; "
        f"load average {load:.1f}; running at the signal {ready}"
    )
    print("last line:", lines[-1] if lines else None)
    shutil.rmtree(folder, ignore_errors=True)


def wait(proc: subprocess.Popen[str], dump: float, lines: list[str]) -> float:
    """Seconds until ``proc`` ends, its stacks asked for each ``dump`` s (0: never)."""
    sent = time.monotonic()
    dumps = 0
    while proc.poll() is None:
        time.sleep(0.01)
        if dump and (time.monotonic() - sent) >= dump * (dumps + 1):
            dumps += 1
            lines.append(f"--- stacks {time.monotonic() - sent:.1f} s after the signal")
            proc.send_signal(signal.SIGUSR1)
    return time.monotonic() - sent


if __name__ == "__main__":
    main()
