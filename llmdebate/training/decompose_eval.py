"""The prover's decomposition act on interval claims, graded as a debate run grades it.

The prompt is the one the prover renders for the decompose act (``prompts/decompose.j2``
through :class:`llmdebate.prompts.Prompts`, as plain text the way the local backend sends it),
the reply is decoded greedily under the decomposition schema with the prover's token budget,
and the reply is graded by :func:`llmdebate.agents.audit.audit_decomposition`, the grading
behind a run's ``summary.json`` "decompositions".
"""

from __future__ import annotations

from typing import Any

from llmdebate.agents.audit import audit_decomposition
from llmdebate.agents.llm import decompose_tokens
from llmdebate.agents.parsing import ReplyError, parse_decomposition
from llmdebate.agents.replies import decomposition_schema
from llmdebate.core.schemas import Claim
from llmdebate.models.interface import GenerateConfig
from llmdebate.models.text_prompt import format_prompt
from llmdebate.prompts import Prompts
from llmdebate.training.claims import IntervalClaim


def decompose_prompt(prompts: Prompts, claim: IntervalClaim) -> str:
    """The text the local backend sends for the prover's decompose act on ``claim``."""
    messages = prompts.render(
        "decompose", claim=claim.text, width=claim.width, k=1, depth=2,
        top_claim=claim.text, context=None,
    )
    return format_prompt(messages)


def grade(claim: IntervalClaim, reply: str) -> dict[str, Any]:
    """One reply graded: valid (parses), exact interval split, rule right."""
    parent = Claim(id="c", text=claim.text)
    row: dict[str, Any] = {"claim": claim.text, "reply": reply, "valid": True}
    try:
        dec = parse_decomposition(reply, parent, claim.width, check_repeats=False)
    except ReplyError as exc:
        return {**row, "valid": False, "error": str(exc), "exact_split": False,
                "rule_right": False}
    audit = audit_decomposition(parent, dec, {"problem": "divisors", "n": claim.n})
    return {**row, "exact_split": bool(audit["exact_split"]),
            "rule_right": bool(audit["rule_right"])}


def evaluate(backend: Any, prompts: Prompts, claims: list[IntervalClaim],
             batch: int = 8) -> dict[str, Any]:
    """Greedy constrained decompositions of ``claims`` by an :class:`HFBackend`, graded."""
    rows: list[dict[str, Any]] = []
    for start in range(0, len(claims), batch):
        part = claims[start : start + batch]
        calls = [
            (decompose_prompt(prompts, c),
             GenerateConfig(temperature=0.0, max_tokens=decompose_tokens(c.width),
                            json_schema=decomposition_schema(c.width)),
             0)
            for c in part
        ]
        for c, out in zip(part, backend.run_batch(calls), strict=True):
            rows.append(grade(c, out.text))
    n = len(rows)
    return {
        "claims": n,
        "exact_splits": sum(r["exact_split"] for r in rows) / n if n else None,
        "rule_right": sum(r["rule_right"] for r in rows) / n if n else None,
        "valid": sum(r["valid"] for r in rows) / n if n else None,
        "rows": rows,
    }
