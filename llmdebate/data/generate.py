"""Write the project's own small datasets into ``datasets/`` (common JSONL schema).

Each item is a natural-language form of a formal problem whose truth is known at every node
(see :mod:`llmdebate.data.problems`); ``meta`` carries the machine-readable problem, and
``meta["claims"]`` maps each choice to the declarative claim a prover defends for it.

    python -m llmdebate.data.generate            # writes datasets/divisors.jsonl, circuits.jsonl
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from llmdebate.data.problems import (
    OPS,
    circuit_description,
    divisor_statement,
    evaluate_circuit,
    prime_top,
    wire_statement,
)

DEFAULT_SEED = 20250601


def primes_in(lo: int, hi: int) -> list[int]:
    """The primes in [lo, hi), ascending."""
    return [n for n in range(max(lo, 2), hi) if all(n % d for d in range(2, int(n**0.5) + 1))]


def divisor_items(n_items: int = 30, seed: int = DEFAULT_SEED) -> list[dict[str, Any]]:
    """Half primes, half semiprimes p·p' with both factors at least 7 (so no small divisor)."""
    rng = np.random.default_rng(seed)
    small = primes_in(7, 60)
    primes = primes_in(100, 3000)
    numbers: list[int] = []
    while len(numbers) < n_items:
        if len(numbers) % 2 == 0:
            n = int(rng.choice(primes))
        else:
            a, b = (int(x) for x in rng.choice(small, size=2))
            n = a * b
        if n not in numbers and n >= 100:
            numbers.append(n)
    return [divisor_item(n, f"divisors-{i:03d}", *prime_top(n)) for i, n in enumerate(numbers)]


def divisor_item(n: int, item_id: str, lo: int, hi: int) -> dict[str, Any]:
    """The item "is ``n`` free of divisors in [lo, hi)?" (prime when [lo, hi) reaches √n)."""
    prime = all(n % d for d in range(lo, hi))
    return {
        "id": item_id,
        "dataset": "divisors",
        "question": f"Is {n} a prime number, that is, does {n} have no divisor d "
        f"with {lo} <= d < {hi}?",
        "choices": ["yes", "no"],
        "answer": "yes" if prime else "no",
        "answer_index": 0 if prime else 1,
        "context": None,
        "decomposition": None,
        "facts": None,
        "meta": {
            "problem": "divisors",
            "n": n,
            "lo": lo,
            "hi": hi,
            "claims": {
                "yes": divisor_statement(n, lo, hi, none=True),
                "no": divisor_statement(n, lo, hi, none=False),
            },
        },
    }


def random_circuit(rng: np.random.Generator, n_inputs: int, n_gates: int) -> dict[str, Any]:
    inputs = {f"x{i + 1}": int(rng.integers(0, 2)) for i in range(n_inputs)}
    wires = list(inputs)
    gates = []
    for j in range(n_gates):
        op = str(rng.choice(OPS, p=[0.3, 0.3, 0.25, 0.15]))
        # the last gate uses the previous gate, so the output depends on a chain of gates
        first = wires[-1] if j == n_gates - 1 else str(rng.choice(wires))
        args = (
            [first] if op == "NOT" else [first, str(rng.choice([w for w in wires if w != first]))]
        )
        out = f"g{j + 1}"
        gates.append({"out": out, "op": op, "args": args})
        wires.append(out)
    return {"problem": "circuit", "inputs": inputs, "gates": gates, "output": wires[-1]}


def circuit_items(n_items: int = 24, seed: int = DEFAULT_SEED) -> list[dict[str, Any]]:
    """Circuits of 3 inputs and 4-6 gates; the question asks for the last gate's value."""
    rng = np.random.default_rng(seed + 1)
    items = []
    for i in range(n_items):
        meta = random_circuit(rng, 3, int(rng.integers(4, 7)))
        out = meta["output"]
        value = evaluate_circuit(meta)[out]
        meta["claims"] = {"yes": wire_statement(meta, out, 1), "no": wire_statement(meta, out, 0)}
        items.append(
            {
                "id": f"circuits-{i:03d}",
                "dataset": "circuits",
                "question": f"In the circuit [{circuit_description(meta)}], "
                f"does wire {out} have value 1?",
                "choices": ["yes", "no"],
                "answer": "yes" if value else "no",
                "answer_index": 0 if value else 1,
                "context": None,
                "decomposition": None,
                "facts": None,
                "meta": meta,
            }
        )
    return items


def write_jsonl(path: Path, items: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for it in items:
            fh.write(json.dumps(it, ensure_ascii=False) + "\n")


def main(argv: list[str] | None = None) -> int:
    out = Path(argv[0] if argv else "datasets")
    write_jsonl(out / "divisors.jsonl", divisor_items())
    write_jsonl(out / "circuits.jsonl", circuit_items())
    print(f"wrote {out / 'divisors.jsonl'} and {out / 'circuits.jsonl'}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))
