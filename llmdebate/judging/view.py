"""What a judge is shown of one waiting debate, per protocol — and nothing else.

Built only from the fields a judge may see, so a page or a terminal screen cannot leak what
is left out: never the gold answer or a claim's truth, which side is honest, model names,
protocol names, debate ids or other judges' verdicts.

* Prover-estimator and naive recursive debate: the leaf claim and the prover's evidence
  (Figure 2, step 3(b)), plus the item's passage where it has one; ``context`` (a study
  setting recorded with each verdict) adds the claims along the recursion path (``path``) or
  every round's claim with its subclaims (``full``).
* Two-sided debate, consultancy, direct: the question, the passage, the two answers in this
  judge's order (drawn from the assignment's recorded seed) and the speeches, speakers named
  neutrally. With the study's stepped reveal (``reveal: stepped``) only the first
  ``revealed`` turns are in the view (at least one), with the total and the stated cost of
  each further turn.

The protocol's name is in the view only when the study says so (``show_protocol``).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import numpy as np

from llmdebate.protocols.interface import RECURSIVE
from llmdebate.protocols.registry import protocol_of
from llmdebate.schemas import Transcript


def flipped(seed: int) -> bool:
    """Whether this judge sees the debate's options (or True / False) in reverse order."""
    return bool(np.random.default_rng(seed).random() < 0.5)


def digest(view: dict[str, Any]) -> str:
    """SHA-256 of exactly what was shown (recorded with the judgment)."""
    return hashlib.sha256(json.dumps(view, sort_keys=True).encode("utf-8")).hexdigest()


def build_view(
    t: Transcript,
    seed: int,
    context: str = "none",
    *,
    reveal: str = "all",
    revealed: int = 0,
    turn_cost: float = 0.0,
    show_protocol: bool = False,
) -> dict[str, Any]:
    """The judge's view of waiting debate ``t`` (a JSON-able mapping); see the module doc."""
    view = _view(t, seed, context, reveal, revealed, turn_cost)
    if show_protocol:
        view["protocol"] = protocol_of(t).title or t.protocol
    return view


def shown_turns(reveal: str, revealed: int, total: int) -> int:
    """How many of ``total`` turns a judge sees: all, or (stepped) ``revealed``, at least one."""
    return total if reveal != "stepped" else min(total, max(1, revealed))


def _view(
    t: Transcript, seed: int, context: str, reveal: str, revealed: int, turn_cost: float
) -> dict[str, Any]:
    item = t.item or {}
    passage = item.get("context") or None
    flip = flipped(seed)
    if protocol_of(t).can(RECURSIVE):
        leaf = t.rounds[-1]
        view: dict[str, Any] = {
            "kind": "leaf",
            "claim": leaf.claim.text,
            "evidence": leaf.evidence.text if leaf.evidence else "",
            "passage": passage,
            "context": context,
            "flipped": flip,
            "path": [],
        }
        above = t.rounds[:-1]
        if context == "path":
            view["path"] = [{"claim": rd.claim.text, "subclaims": []} for rd in above]
        elif context == "full":
            view["path"] = [
                {
                    "claim": rd.claim.text,
                    "subclaims": [
                        {"text": c.text, "followed": i == rd.recurse}
                        for i, c in enumerate(rd.decomposition.subclaims)
                    ]
                    if rd.decomposition
                    else [],
                }
                for rd in above
            ]
        return view
    options = list(t.meta.get("options") or [])
    shown = options[::-1] if flip else options
    labels: dict[str, str] = {}
    turns = []
    for turn in t.turns:
        if turn.role == "judge":
            continue
        label = labels.setdefault(turn.role, f"Speaker {len(labels) + 1}")
        turns.append(
            {"speaker": label, "round": turn.round, "position": turn.position, "text": turn.text}
        )
    view = {
        "kind": "choice",
        "question": item.get("question", ""),
        "passage": passage,
        "answers": shown,
        "flipped": flip,
        "turns": turns,
    }
    if reveal == "stepped" and turns:
        k = shown_turns(reveal, revealed, len(turns))
        view.update(
            turns=turns[:k], stepped=True, turns_total=len(turns), turn_cost=float(turn_cost)
        )
    return view
