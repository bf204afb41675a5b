"""Wall time of a debater tournament through the real runner against the fake server.

    python benchmarks/bench_tournament.py                     # 3 models, 20 items, 200 ms
    python benchmarks/bench_tournament.py --items 20 --latency 0.2 --concurrency 32

Three debater models on the fake OpenAI server (``tests/fixtures/fake_server.py``, every
request answered after ``--latency`` seconds): ``strong`` argues with the item's facts,
``random`` for a random answer, ``concede`` concedes (``tests/fixtures/tournament_players.py``);
the judge is a model on the same server that states its probability (verbalised) from the
checked facts. Two-sided debate round-robin (every ordered pair on every item) and
consultancy (every model on both sides of every item), one round each, then the report with
its ratings. Prints the debates, model calls, the run's wall time, the report's, and the
ratings.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from llmdebate.experiment.loading import validate  # noqa: E402
from llmdebate.experiment.runner import run  # noqa: E402
from llmdebate.report.build import build_report  # noqa: E402
from tests.fixtures import tournament_players as players  # noqa: E402
from tests.fixtures.fake_server import FakeServer  # noqa: E402

PLAYERS = ("strong", "random", "concede")


def responder(body: dict[str, Any]) -> str:
    """The debaters' speeches by model name; the judge's probability (verbalised)."""
    messages = body["messages"]
    name = str(body.get("model"))
    if name == "judge":
        return f"{players.judge(messages):.4f}"
    play = {"strong": players.strong, "random": players.random, "concede": players.concede}
    return play[name](messages)


def config(url: str, items: int, concurrency: int, cache: str) -> dict[str, Any]:
    def model(name: str) -> dict[str, Any]:
        return {"model": f"openai/{name}", "base_url": url}

    return {
        "name": "bench-tournament",
        "protocols": ["two-sided", "consultancy"],
        "dataset": {"path": str(REPO / "datasets" / "divisors.jsonl"), "limit": items},
        "prover": {"model": "scripted"},
        "estimator": {"model": "scripted"},
        "judge": {**model("judge"), "kind": "llm", "method": "verbalised"},
        "tournament": {"roster": {n: model(n) for n in PLAYERS}},
        "max_concurrency": concurrency,
        "use_cache": False,
        "cache_dir": cache,
        "report": {"bootstrap": 200},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=20)
    ap.add_argument("--latency", type=float, default=0.2, help="seconds per request")
    ap.add_argument("--concurrency", type=int, default=32, help="debates in flight")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp, FakeServer() as server:
        server.latency = args.latency
        server.responder = responder
        cfg = validate(config(server.url, args.items, args.concurrency, tmp))
        began = time.perf_counter()
        res = run(cfg, Path(tmp) / "run", progress=False)
        wall = time.perf_counter() - began
        began = time.perf_counter()
        build_report(Path(tmp) / "run")
        report_s = time.perf_counter() - began
        m = json.loads((Path(tmp) / "run" / "comparison.json").read_text())
        calls = server.requests
    print(f"{res.summary['transcripts']} debates ({res.summary['status']}), {calls} model calls, "
          f"{args.items} items, 3 models, latency {args.latency * 1000:.0f} ms, "
          f"{args.concurrency} debates in flight")
    print(f"run: {wall:.2f} s wall; report with ratings: {report_s:.2f} s")
    for proto, table in m["tournament"]["ratings"].items():
        overall = [r for r in table["ratings"] if r["side"] == "overall"]
        shown = ", ".join(
            f"{r['model']} {r['value']:.2f} [{r['ci95'][0]:.2f}, {r['ci95'][1]:.2f}]"
            for r in sorted(overall, key=lambda r: -r["value"])
        )
        print(f"  {proto}: {shown}")


if __name__ == "__main__":
    main()
