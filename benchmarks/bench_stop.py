"""How long a run on the embedded model takes to end after Ctrl-C (SIGINT) or SIGTERM.

    .venv/bin/python benchmarks/bench_stop.py [--signal INT|TERM] [--after 20] [--loaders 0]

Starts ``llmdebate run`` on the embedded model (12 prover-estimator debates of depth 2, the
prover writing its decompositions, 4 at a time), waits until it says what it will run (the
weights are loaded) and then ``--after`` seconds, so that model calls are in flight, and
sends the signal. ``--loaders N`` starts N busy processes (``yes > /dev/null``, at the
ordinary priority) a few seconds before the signal and stops them when the run has ended:
the load of a busy shared machine at the moment a person presses Ctrl-C. Printed: the
seconds from the signal to the run's exit, its exit code, the run's last line (the summary
written, the command that resumes) and the load average. With ``--dump S`` every thread's
stack is printed each S seconds while the run has not ended (what it waits for).
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--signal", choices=["INT", "TERM"], default="INT")
    ap.add_argument("--after", type=float, default=20.0, help="seconds into the debates")
    ap.add_argument("--loaders", type=int, default=0, help="busy processes around the stop")
    ap.add_argument("--dump", type=float, default=0.0, help="print the stacks every S s")
    ap.add_argument("--cache-dir", type=Path, help="LLMDEBATE_CACHE_DIR (the weights' copy)")
    args = ap.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-stop-"))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    if args.cache_dir:
        env["LLMDEBATE_CACHE_DIR"] = str(args.cache_dir)
    proc = subprocess.Popen(
        [sys.executable, "-c", CODE, "run", "--config", str(config(folder)), "--run-dir",
         str(folder / "run")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )
    lines: list[str] = []
    began = threading.Event()

    def read(stream: object) -> None:
        for line in stream:  # type: ignore[attr-defined]
            lines.append(line.rstrip())
            if " to run " in line:
                began.set()

    for stream in (proc.stdout, proc.stderr):
        threading.Thread(target=read, args=(stream,), daemon=True).start()
    start = time.monotonic()
    if not began.wait(1800):
        proc.kill()
        sys.exit("the run did not start its debates in 30 minutes")
    loaded = time.monotonic() - start
    time.sleep(max(0.0, args.after - 3.0))
    loaders = [
        subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(args.loaders)
    ]
    time.sleep(min(3.0, args.after))
    proc.send_signal(getattr(signal, f"SIG{args.signal}"))
    sent = time.monotonic()
    dumps = 0
    while proc.poll() is None:
        time.sleep(0.01)
        if args.dump and (time.monotonic() - sent) >= args.dump * (dumps + 1):
            dumps += 1
            lines.append(f"--- stacks {time.monotonic() - sent:.1f} s after the signal")
            proc.send_signal(signal.SIGUSR1)
    took = time.monotonic() - sent
    load = os.getloadavg()[0]
    for p in loaders:
        p.kill()
        p.wait()
    time.sleep(0.3)
    if args.dump:
        print("\n".join(x for x in lines if "it/s" not in x))
    print(
        f"SIG{args.signal} {args.after:g} s into the debates ({args.loaders} loaders; weights "
        f"loaded in {loaded:.0f} s): exit {proc.returncode} after {took:.2f} s; "
        f"load average {load:.1f}"
    )
    print("last line:", lines[-1] if lines else None)
    shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
