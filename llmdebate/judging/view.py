"""What a judge is shown of one waiting debate, per protocol — and nothing else.

Built only from the fields a judge may see, so a page or a terminal screen cannot leak what
is left out: never the gold answer or a claim's truth, which side is honest, model names,
protocol names, debate ids or other judges' verdicts.

The item's passage is in the view only when the debate's judge setting shows it
(``meta.passage``: ``judge.passage``, or the direct baseline's variant); hidden, the judge
reads the passage only through the speakers' quotes. Every text a speaker wrote (a speech, the
leaf claim and evidence, the claims of the path) comes as ``text`` (what is displayed) and
``segments`` (:meth:`llmdebate.qa.passage.JudgeView.segments`: plain text, and quotes
with their status ``verified`` / ``unverified`` / ``over_budget``, which the page styles
apart). ``passage_setting`` says which view this was.

* Prover-estimator and naive recursive debate: the leaf claim and the prover's evidence
  (Figure 2, step 3(b)), plus the item's passage where it is shown; ``context`` (a study
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

from llmdebate.core.schemas import Transcript
from llmdebate.protocols.common import recorded_view
from llmdebate.protocols.registry import judged_turns, protocol_of, recursive
from llmdebate.qa.passage import JudgeView


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
    pv = recorded_view(t)
    flip = flipped(seed)
    if recursive(t):
        return _leaf_view(t, pv, context, flip)
    options = list(t.meta.get("options") or [])
    shown = options[::-1] if flip else options
    labels: dict[str, str] = {}
    turns = []
    for turn in judged_turns(t):  # never a slot the protocol keeps from its judge
        if turn.role == "judge":  # a person's own question (an interactive debate)
            if turn.text.startswith("Question: "):
                turns.append({"speaker": "Your question", "round": turn.round, "judge": True,
                              **shown_text(pv, turn.text.removeprefix("Question: "))})
            continue
        label = labels.setdefault(turn.role, f"Speaker {len(labels) + 1}")
        turns.append(
            {
                "speaker": label,
                "round": turn.round,
                "position": turn.position,
                **shown_text(pv, turn.text, turn.quotes),
            }
        )
    view: dict[str, Any] = {
        "kind": "choice",
        "question": item.get("question", ""),
        "passage": pv.context(),
        "passage_setting": pv.mode,
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


def shown_text(
    pv: JudgeView, text: str, quotes: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """A speaker's text as a person judging reads it: ``text`` (the segments joined) and
    ``segments`` (quotes with their status)."""
    segs = [
        {k: v for k, v in seg.items() if k in ("kind", "text", "status")}
        for seg in pv.segments(text, quotes)
    ]
    return {"text": "".join(str(seg["text"]) for seg in segs), "segments": segs}


def _leaf_view(t: Transcript, pv: JudgeView, context: str, flip: bool) -> dict[str, Any]:
    leaf = t.rounds[-1]
    ev = leaf.evidence
    quotes = ev.data.get("quotes") if ev is not None else None
    evidence = shown_text(pv, ev.text if ev is not None else "", quotes)
    claim = shown_text(pv, leaf.claim.text)
    view: dict[str, Any] = {
        "kind": "leaf",
        "claim": claim["text"],
        "claim_segments": claim["segments"],
        "evidence": evidence["text"],
        "evidence_segments": evidence["segments"],
        "passage": pv.context(),
        "passage_setting": pv.mode,
        "context": context,
        "flipped": flip,
        "path": [],
    }
    above = t.rounds[:-1]
    if context == "path":
        view["path"] = [{**_claim(pv, rd.claim.text), "subclaims": []} for rd in above]
    elif context == "full":
        view["path"] = [
            {
                **_claim(pv, rd.claim.text),
                "subclaims": [
                    {**_claim(pv, c.text, "text"), "followed": i == rd.recurse}
                    for i, c in enumerate(rd.decomposition.subclaims)
                ]
                if rd.decomposition
                else [],
            }
            for rd in above
        ]
    return view


def _claim(pv: JudgeView, text: str, key: str = "claim") -> dict[str, Any]:
    shown = shown_text(pv, text)
    return {key: shown["text"], "segments": shown["segments"]}
