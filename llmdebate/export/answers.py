"""The export format ``answers``: a named policy's answers to a dataset's questions, as the
answers file of a labelling run (``docs/labelling.md``).

The policy answers through a run of the ``direct`` protocol whose judge is the policy
(``--judge-model MODEL``): the option it chose is its answer to the question.
``llmdebate export RUN --format answers -o answers.jsonl`` writes one line per question:

* ``answer``: the option the policy chose (``meta.decision``);
* ``checker``: ``problem`` where the item is a bundled formal problem that states each
  option's claim (``meta.problem`` and ``meta.claims``: divisors, circuits), else ``exact``
  with the item's gold answer as the ``reference``;
* ``meta``: the item's, with ``policy`` (the model that answered) and
  ``policy_probability`` (its probability of the option it chose).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from llmdebate.core.schemas import Transcript
from llmdebate.errors import UserError
from llmdebate.export.format_registry import FORMATS, WHOLE_RUN
from llmdebate.records.rundir import load_transcripts

PROTOCOL = "direct"


def answer_line(t: Transcript) -> dict[str, Any] | None:
    """The answers line of one direct judgment (None: not one, or no choice recorded)."""
    item = t.item or {}
    decision = t.meta.get("decision")
    if t.protocol != PROTOCOL or t.status != "complete" or decision is None:
        return None
    meta = dict(item.get("meta") or {})
    if "labelling" in meta:
        raise UserError(
            f"item {item.get('id')}: a labelling run's item; the answers format "
            "reads a run of direct judgment on the questions themselves"
        )
    claims = meta.get("claims")
    formal = bool(meta.get("problem")) and isinstance(claims, dict) and decision in claims
    meta.update(policy=t.agents.get("judge"), policy_probability=t.meta.get("decision_probability"))
    return {
        "id": str(item.get("id") or t.id),
        "question": str(item.get("question", "")),
        "answer": str(decision),
        "checker": "problem" if formal else "exact",
        "reference": None if formal else item.get("answer"),
        "choices": item.get("choices"),
        "meta": {k: v for k, v in meta.items() if k not in ("choice_order", "shuffle_seed")},
    }


def answers_of_run(run_dir: Path) -> list[dict[str, Any]]:
    """Every question's answer in ``run_dir`` (the first direct judgment of each item)."""
    out: dict[str, dict[str, Any]] = {}
    for t in load_transcripts(run_dir):
        line = answer_line(t)
        if line is not None:
            out.setdefault(line["id"], line)
    if not out:
        raise UserError(
            f"{run_dir}: no completed direct judgment to read answers from "
            "(run the protocol direct with the policy as the judge)"
        )
    return list(out.values())


@FORMATS.register("answers", capabilities={WHOLE_RUN})
def answers_file(run_dir: Path, out: Path) -> str:
    """The policy's answers (the direct judge's choices) as an answers file (.jsonl)."""
    lines = answers_of_run(run_dir)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    models = sorted({str(x["meta"].get("policy")) for x in lines})
    return f"{len(lines)} answers of {', '.join(models)} to {out}"
