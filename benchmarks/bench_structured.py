"""Structured decompositions on the embedded model, and HTTP requests per debate with batching.

    python benchmarks/bench_structured.py                 # both parts
    python benchmarks/bench_structured.py --skip-local    # HTTP part only (seconds)

Part 1 (embedded Gemma 3 270M): the prover decomposes ``--claims`` claims of
``datasets/divisors.jsonl`` (the top claim of each item, both polarities) at width 2, once
unconstrained (the same prompt, the reply parsed) and once under the schema (xgrammar), all
claims in one batched pass each way. It prints the share of replies that are schema-valid at
the first attempt (the reply parses into the decomposition schema), the share also accepted
(no subclaim repeats its claim or another subclaim), the time per decomposition (the pass's
wall time divided by the claims; the grammar compile, once per schema, on its own line), and
for the constrained replies the share that split the interval exactly.

Part 2 (fake OpenAI-compatible server on 127.0.0.1, real openai SDK): one prover-estimator
debate at d = 2, q = 3 with expected rewards (B's 2^q - 1 = 7 conditional probabilities per
round) on the text-completions endpoint, without and with batched prompts, and on the chat
endpoint; it prints the HTTP requests per debate.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from llmdebate.agents.audit import exact_split  # noqa: E402
from llmdebate.agents.llm import LLMEstimator, LLMProver, decompose_tokens  # noqa: E402
from llmdebate.agents.parsing import ReplyError, parse_decomposition  # noqa: E402
from llmdebate.agents.replies import decomposition_schema  # noqa: E402
from llmdebate.core.engine import run_prover_estimator  # noqa: E402
from llmdebate.core.schemas import Claim, DebateConfig  # noqa: E402
from llmdebate.data.problems import formal_decomposition  # noqa: E402
from llmdebate.judging.model_judges import LLMJudge  # noqa: E402
from llmdebate.models import GenerateConfig, Model, create_backend, get_model  # noqa: E402
from llmdebate.prompts import Prompts  # noqa: E402
from tests.fixtures.fake_server import FakeServer  # noqa: E402


def claims(n: int) -> list[str]:
    items = [json.loads(line) for line in (REPO / "datasets" / "divisors.jsonl").open()]
    out = []
    for i, item in enumerate(items[:n]):
        out.append(item["meta"]["claims"]["yes" if i % 2 == 0 else "no"])
    return out


async def decompose_all(model: Model, texts: list[str], constrained: bool) -> dict[str, Any]:
    prompts = Prompts()
    schema = decomposition_schema(2) if constrained else None
    cfg = GenerateConfig(temperature=0.0, max_tokens=decompose_tokens(2), json_schema=schema)
    batch = [
        prompts.render("decompose", claim=t, width=2, k=2, depth=2, top_claim=t, context=None)
        for t in texts
    ]
    start = time.perf_counter()
    outs = await model.generate_many(batch, cfg)
    wall = time.perf_counter() - start
    well_formed = valid = exact = 0
    for text, out in zip(texts, outs, strict=True):
        parent = Claim(text=text)
        try:
            dec = parse_decomposition(out.text, parent, 2, check_repeats=False)
        except ReplyError:
            continue
        well_formed += 1
        exact += bool(exact_split(parent, dec))
        try:
            parse_decomposition(out.text, parent, 2)
        except ReplyError:
            continue
        valid += 1
    return {
        "constrained": constrained,
        "claims": len(texts),
        "schema_valid_first_attempt": well_formed / len(texts),
        "valid_first_attempt": valid / len(texts),
        "exact_splits": exact / len(texts),
        "s_per_decomposition": wall / len(texts),
        "tokens_out_mean": sum(o.tokens_out for o in outs) / len(outs),
        "all_constrained": all(o.constrained for o in outs),
        "example": outs[0].text[:200],
    }


async def local_part(n: int) -> list[dict[str, Any]]:
    texts = claims(n)
    rows = []
    plain = Model(create_backend("local", structured="none"), use_cache=False)
    rows.append(await decompose_all(plain, texts, constrained=False))
    backend = create_backend("local")
    model = Model(backend, use_cache=False)
    # compile the grammar once, outside the timings
    start = time.perf_counter()
    await model.generate(
        [{"role": "user", "content": "x"}],
        GenerateConfig(max_tokens=1, json_schema=decomposition_schema(2)),
    )
    compile_s = time.perf_counter() - start
    row = await decompose_all(model, texts, constrained=True)
    row["grammar_compile_s"] = compile_s
    rows.append(row)
    return rows


def fake_responder(body: dict[str, Any]) -> str:
    text = body.get("prompt") or body["messages"][-1]["content"]
    if "break a claim" in str(text) or "break a claim" in json.dumps(body.get("messages", "")):
        claim = re.findall(r"^Claim: (.*)$", str(text), re.MULTILINE)[-1]
        dec = formal_decomposition(Claim(text=claim), {"problem": "divisors"}, 3)
        assert dec is not None
        rule = {"kind": dec.rule.kind, "k": None, "expr": None}
        return json.dumps({"subclaims": [s.text for s in dec.subclaims], "rule": rule})
    if "evidence" in str(text):
        return "Checking each candidate divisor settles it."
    return "True"


async def one_debate(server: FakeServer, **options: Any) -> int:
    server.reset_counts()
    # the fake replies in the schema: taken at its word, so no probe request enters the count
    options = {"enforcement": "enforced", **options}
    model = get_model("openai/fake", base_url=server.url, use_cache=False, **options)
    claim = Claim(text=claims(1)[0], id="x")
    cfg = DebateConfig(depth=2, width=3, expected_rewards=True)
    ctx_item = {"meta": {"problem": "divisors"}}
    t = await run_prover_estimator(
        claim,
        LLMProver(model),
        LLMEstimator(model),
        LLMJudge(model),
        cfg,
        seed=3,
        item=ctx_item,
    )
    assert t.status == "complete", t.failure
    return server.requests


async def http_part() -> list[dict[str, Any]]:
    rows = []
    with FakeServer() as server:
        server.responder = fake_responder
        # B is unsure of everything (P(True) = 0.5), so no round stops early
        server.top_logprobs = {" True": -0.6931, " False": -0.6931}
        for label, options in (
            ("chat endpoint (concurrent requests)", {}),
            (
                "completions, one prompt per request",
                {"endpoint": "completions", "batch_prompts": False},
            ),
            ("completions, batched prompts", {"endpoint": "completions"}),
        ):
            rows.append(
                {"setup": label, "http_requests_per_debate": await one_debate(server, **options)}
            )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--claims", type=int, default=10)
    ap.add_argument("--skip-local", action="store_true")
    args = ap.parse_args()
    os.environ.setdefault("LLMDEBATE_CACHE_DIR", str(Path.home() / ".cache" / "llmdebate"))
    with tempfile.TemporaryDirectory():
        if not args.skip_local:
            for row in asyncio.run(local_part(args.claims)):
                print(json.dumps(row))
        for row in asyncio.run(http_part()):
            print(json.dumps(row))


if __name__ == "__main__":
    main()
