"""Quote checks on real articles: time per passage and per quote, and that every sentence
taken from an article verifies (restyled: curly quotes, dashes, line breaks) while the same
sentences with one word changed do not.

Run: ``PYTHONPATH=. .venv/bin/python benchmarks/bench_quotes.py [ARTICLES.jsonl]``.

The articles are the bundled QuALITY example, plus, when given, a JSONL file with a ``text``
per line (e.g. the 15 QuALITY articles of the LEval repackaging, which is GPL-3.0 and so is
not in this repository). With ``--tokenizer tokenizer.json`` (a Hugging Face ``tokenizers``
file) it also prints characters per token against the 3-character estimate of
:mod:`llmdebate.qa.context_fit`.
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import time
from pathlib import Path

import numpy as np

from llmdebate.data.quality import load_quality
from llmdebate.qa.context_fit import estimate_tokens
from llmdebate.qa.quotes import Passage, check_quotes

RESTYLE = str.maketrans({"'": "\u2019", '"': "\u201d", "-": "\u2014"})


def articles(extra: Path | None) -> list[tuple[str, str]]:
    out = [("bundled", load_quality(limit=1)[0].context or "")]
    if extra is not None:
        for n, line in enumerate(extra.read_text(encoding="utf-8").splitlines()):
            out.append((f"{extra.name}:{n + 1}", json.loads(line)["text"]))
    return out


def sentences(text: str, rng: np.random.Generator, n: int) -> list[str]:
    found = [s for s in re.split(r"(?<=[.!?])\s+", text) if len(s.split()) >= 6]
    picks = rng.choice(len(found), size=min(n, len(found)), replace=False)
    return [found[int(i)] for i in picks]


def altered(sentence: str, rng: np.random.Generator) -> str:
    words = sentence.split()
    k = int(rng.integers(len(words)))
    words[k] = "zqx" + words[k]
    return " ".join(words)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("articles", type=Path, nargs="?")
    parser.add_argument("--tokenizer", type=Path)
    parser.add_argument("--quotes", type=int, default=40)
    args = parser.parse_args()
    tok = None
    if args.tokenizer:
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(str(args.tokenizer))
    rng = np.random.default_rng(0)
    print(f"machine: {platform.processor() or platform.machine()}; {args.quotes} quotes each")
    print("article | chars | build ms | µs/quote | true verified | altered verified | chars/token")
    for name, text in articles(args.articles):
        t0 = time.perf_counter()
        passage = Passage(text)
        t1 = time.perf_counter()
        true = [
            s.translate(RESTYLE).replace(" ", "\n", 1) for s in sentences(text, rng, args.quotes)
        ]
        fake = [altered(s, rng) for s in true]
        speech = " ".join(f"<quote>{q}</quote>" for q in true + fake)
        t2 = time.perf_counter()
        checked = check_quotes(speech, passage)
        t3 = time.perf_counter()
        ok = sum(c.verified for c in checked[: len(true)])
        bad = sum(c.verified for c in checked[len(true) :])
        ratio = ""
        if tok is not None:
            n = len(tok.encode(text, add_special_tokens=False).ids)
            ratio = f"{len(text) / n:.2f} (estimate {estimate_tokens(text)} vs {n} tokens)"
        per_quote = (t3 - t2) / max(len(checked), 1) * 1e6
        print(
            f"{name} | {len(text)} | {(t1 - t0) * 1e3:.1f} | {per_quote:.0f} | "
            f"{ok}/{len(true)} | {bad}/{len(fake)} | {ratio}"
        )


if __name__ == "__main__":
    main()
