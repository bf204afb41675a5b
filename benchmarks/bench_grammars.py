"""Grammar libraries for constrained decoding, on the embedded model's tokenizer.

    python benchmarks/bench_grammars.py --libs xgrammar,llguidance

For each library that imports, on Gemma 3's 262,144-token vocabulary: the one-off tokenizer
setup, the compile time of the width-2 decomposition schema (``llmdebate.agents.replies``),
and the time per token to compute the allowed-token mask and apply it to a logits row while
walking a valid 53-token decomposition, checking that every token of it is allowed. Only
xgrammar is a dependency (extra ``local``); install the others by hand to compare.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from llmdebate.agents.replies import decomposition_schema  # noqa: E402
from llmdebate.models import create_backend  # noqa: E402

TARGET = json.dumps(
    {
        "subclaims": [
            "7 has no divisor d with 2 <= d < 4.",
            "7 has no divisor d with 4 <= d < 6.",
        ],
        "rule": {"kind": "and", "k": None, "expr": None},
    },
    separators=(", ", ": "),
)


def xgrammar_walk(tok: Any, vocab: int, schema: str) -> tuple[float, float, Callable[[int], bool]]:
    import torch
    import xgrammar as xgr

    t0 = time.perf_counter()
    info = xgr.TokenizerInfo.from_huggingface(tok, vocab_size=vocab)
    t1 = time.perf_counter()
    compiled = xgr.GrammarCompiler(info, max_threads=1).compile_json_schema(
        schema, any_whitespace=False
    )
    t2 = time.perf_counter()
    matcher = xgr.GrammarMatcher(compiled)
    mask = xgr.allocate_token_bitmask(1, vocab)

    def step(token: int) -> bool:
        matcher.fill_next_token_bitmask(mask)
        logits = torch.zeros(1, vocab)
        xgr.apply_token_bitmask_inplace(logits, mask)
        allowed = bool(logits[0, token] > -1e30)
        return allowed and bool(matcher.accept_token(token))

    return t1 - t0, t2 - t1, step


def llguidance_walk(
    tok: Any, vocab: int, schema: str
) -> tuple[float, float, Callable[[int], bool]]:
    import llguidance
    import llguidance.hf
    import llguidance.torch as lt
    import torch

    t0 = time.perf_counter()
    ltok = llguidance.hf.from_tokenizer(tok, n_vocab=vocab)
    t1 = time.perf_counter()
    grammar = llguidance.LLMatcher.grammar_from_json_schema(
        json.loads(schema),
        defaults={"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "},
    )
    matcher = llguidance.LLMatcher(ltok, grammar)
    t2 = time.perf_counter()
    mask = lt.allocate_token_bitmask(1, vocab)

    def step(token: int) -> bool:
        lt.fill_next_token_bitmask(matcher, mask, 0)
        logits = torch.zeros(1, vocab)
        lt.apply_token_bitmask_inplace(logits, mask)
        allowed = bool(logits[0, token] > -1e30)
        return allowed and bool(matcher.consume_token(token))

    return t1 - t0, t2 - t1, step


def lmfe_walk(tok: Any, vocab: int, schema: str) -> tuple[float, float, Callable[[int], bool]]:
    from lmformatenforcer import JsonSchemaParser, TokenEnforcer
    from lmformatenforcer.integrations.transformers import (
        build_token_enforcer_tokenizer_data,
    )

    t0 = time.perf_counter()
    data = build_token_enforcer_tokenizer_data(tok, vocab_size=vocab)
    t1 = time.perf_counter()
    enforcer = TokenEnforcer(data, JsonSchemaParser(json.loads(schema)))
    t2 = time.perf_counter()
    seq = [int(tok.bos_token_id)]

    def step(token: int) -> bool:
        allowed = enforcer.get_allowed_tokens(seq)
        allowed = getattr(allowed, "allowed_tokens", allowed)
        seq.append(token)
        return token in set(allowed)

    return t1 - t0, t2 - t1, step


def outlines_walk(tok: Any, vocab: int, schema: str) -> tuple[float, float, Callable[[int], bool]]:
    from outlines_core import Guide, Index, Vocabulary
    from outlines_core.json_schema import build_regex_from_schema

    t0 = time.perf_counter()
    vocabulary = Vocabulary.from_pretrained(tok.name_or_path)
    t1 = time.perf_counter()
    guide = Guide(Index(build_regex_from_schema(schema), vocabulary))
    t2 = time.perf_counter()

    def step(token: int) -> bool:
        allowed = token in set(guide.get_tokens())
        guide.advance(token)
        return allowed

    return t1 - t0, t2 - t1, step


WALKS = {
    "xgrammar": xgrammar_walk,
    "llguidance": llguidance_walk,
    "lm-format-enforcer": lmfe_walk,
    "outlines-core": outlines_walk,
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--libs", default=",".join(WALKS))
    args = ap.parse_args()
    backend: Any = create_backend("local")
    backend.load()
    tok = backend.tokenizer
    vocab = int(backend.model.get_output_embeddings().weight.shape[0])
    schema = decomposition_schema(2).schema_json
    ids = tok.encode(TARGET, add_special_tokens=False)
    for lib in args.libs.split(","):
        try:
            setup, compile_s, step = WALKS[lib](tok, vocab, schema)
            start = time.perf_counter()
            ok = all(step(int(i)) for i in ids)
            per = (time.perf_counter() - start) / len(ids)
            row: dict[str, Any] = {
                "library": lib,
                "tokenizer_setup_s": round(setup, 2),
                "compile_s": round(compile_s, 3),
                "ms_per_token": round(per * 1000, 2),
                "all_tokens_allowed": ok,
            }
        except Exception as exc:  # a library that is missing or does not run here
            row = {"library": lib, "error": f"{type(exc).__name__}: {str(exc)[:160]}"}
        print(json.dumps(row))


if __name__ == "__main__":
    main()
