"""Benchmarks of the model layer (prints figures; not a test).

    .venv/bin/python benchmarks/bench_models.py [--skip-cold] [--threads N]

* the embedded local model: cold load (dequantise the GGUF, into a temporary cache) vs warm
  load (from the safetensors cache), and probabilities/second single vs batched (8, 32);
* the HTTP path (real openai SDK) against the fake server with 100 ms injected latency:
  calls/second at concurrency 1, 16 and 64, as a fraction of the ideal concurrency / latency.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fixtures.fake_server import FakeServer

from llmdebate.elicit import estimate, estimates
from llmdebate.models import Model, get_model
from llmdebate.models.hf_backend import HFBackend

QUESTIONS = [
    f"Is {a} + {b} equal to {a + b + (i % 3 == 0)}?"
    for i, (a, b) in enumerate([(x, 2 * x + 1) for x in range(1, 65)])
]


def ask(q: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": q}]


def bench_load(threads: int, cold: bool) -> HFBackend:
    if cold:
        with tempfile.TemporaryDirectory() as tmp:
            backend = HFBackend("local", cache_dir=Path(tmp), threads=threads)
            info = backend.load()
            print(f"local cold load (dequantise GGUF + save safetensors): {info.seconds:6.1f} s")
            del backend
            gc.collect()
            again = HFBackend("local", cache_dir=Path(tmp), threads=threads)
            info = again.load()
            print(f"local warm load (same cache dir, safetensors):        {info.seconds:6.1f} s")
            del again
            gc.collect()
    backend = HFBackend("local", threads=threads)
    info = backend.load()
    state = "cold" if info.cold else "warm"
    print(f"local load from the default cache ({state}):               {info.seconds:6.1f} s")
    return backend


async def bench_local(backend: HFBackend) -> None:
    model = Model(backend, use_cache=False)
    await estimate(model, ask("Warm up?"), "logprobs")
    n = 16
    start = time.perf_counter()
    for q in QUESTIONS[:n]:
        await estimate(model, ask(q), "logprobs")
    single = n / (time.perf_counter() - start)
    print(f"local probabilities/s, single (sequential):  {single:6.2f}")
    for size in (8, 32):
        backend.max_batch = size
        batch = [ask(q) for q in QUESTIONS[:size]]
        rounds = max(1, 32 // size)
        start = time.perf_counter()
        for _ in range(rounds):
            await estimates(model, batch, "logprobs")
        rate = rounds * size / (time.perf_counter() - start)
        print(
            f"local probabilities/s, batch {size:2d}:            {rate:6.2f} ({rate / single:.1f}x)"
        )
    await model.aclose()


async def bench_http() -> None:
    os.environ.setdefault("OPENAI_API_KEY", "sk-bench")
    latency = 0.1
    with FakeServer() as server:
        server.latency = latency
        for conc in (1, 16, 64):
            model = get_model(
                "openai/bench", base_url=server.url, use_cache=False, max_concurrency=conc
            )
            n = max(20, 4 * conc)
            await model.generate(ask("warm"), sample_index=-1)
            server.reset_counts()
            start = time.perf_counter()
            await asyncio.gather(*(model.generate(ask("q"), sample_index=i) for i in range(n)))
            rate = n / (time.perf_counter() - start)
            ideal = conc / latency
            print(
                f"fake server, 100 ms latency, concurrency {conc:2d}: {rate:7.1f} calls/s "
                f"= {rate / ideal:.0%} of ideal {ideal:.0f}/s (peak in flight "
                f"{server.max_in_flight})"
            )
            await model.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-cold", action="store_true", help="skip the ~1 min cold load")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--skip-local", action="store_true")
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} CPU cores; torch threads {args.threads}")
    asyncio.run(bench_http())
    if not args.skip_local:
        backend = bench_load(args.threads, cold=not args.skip_cold)
        asyncio.run(bench_local(backend))


if __name__ == "__main__":
    main()
