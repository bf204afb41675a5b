"""A model judge and the oracle over a study's waiting debates, beside the people.

``llmdebate judge RUN_DIR --model SPEC`` and ``--oracle`` rule on every debate of the run that
awaits a verdict, with no assignment (people's assignments are untouched), and record each
ruling as a judgment of kind ``llm`` or ``oracle`` through :func:`.complete.record_machine`:
the same completion, scoring and ``judged.jsonl`` as a person's verdict, so the report can
put people, the model and the oracle side by side on the same debates.

* The model judge is the run's own judge agent: :class:`~llmdebate.judging.model_judges.LLMJudge` on
  a leaf claim and its evidence (in a fresh context), the protocol's judge prompt through
  :func:`~llmdebate.protocols.common.model_choice` on a speech protocol. Its calls are kept
  with the judgment and in the judged transcript.
* The oracle: a leaf claim's truth where it is known or computable
  (:class:`~llmdebate.judging.model_judges.OracleJudge`), a speech protocol's gold answer. Debates
  whose truth is unknown are skipped and counted.

Re-running judges only the debates this judge has not ruled on.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from llmdebate.core.roles import DebateContext
from llmdebate.core.schemas import ModelCallRecord, Transcript
from llmdebate.errors import InvalidOutputError, ModelError
from llmdebate.judging.complete import Conflict, record_machine, sync, waiting_by_id
from llmdebate.judging.db import Judgment, connect
from llmdebate.judging.model_judges import JudgeMethod, LLMJudge, OracleJudge
from llmdebate.judging.view import digest
from llmdebate.models import Model
from llmdebate.prompts import Prompts
from llmdebate.protocols.common import model_choice
from llmdebate.protocols.registry import recursive, waiting_choice_prompt

ORACLE_ID = "oracle"


def llm_judge_id(model: Model) -> str:
    """The judge id of a model judge in the study (at most 64 characters)."""
    return f"llm:{model.name}"[:64]


@dataclass
class MachineResult:
    judge_id: str
    judged: int = 0
    already: int = 0
    unknown: list[str] = field(default_factory=list)  # debates whose truth is not known
    failed: list[tuple[str, str]] = field(default_factory=list)  # (debate, why)


def _pending(
    sessions: sessionmaker[Session], judge_id: str, waiting: dict[str, Transcript]
) -> tuple[list[Transcript], int]:
    with sessions() as s:
        done = set(s.scalars(select(Judgment.debate_id).where(Judgment.judge_id == judge_id)))
    todo = [t for tid, t in sorted(waiting.items()) if tid not in done]
    return todo, len(waiting) - len(todo)


def _shown(calls: list[ModelCallRecord]) -> str:
    return digest({"messages": [c.messages for c in calls]})


async def _model_ruling(
    t: Transcript,
    model: Model,
    prompts: Prompts,
    method: JudgeMethod,
    samples: int,
    temperature: float,
) -> tuple[dict[str, Any], list[ModelCallRecord]]:
    calls: list[ModelCallRecord] = []
    if recursive(t):
        leaf = t.rounds[-1]
        judge = LLMJudge(
            model, prompts, method=method, samples=samples, temperature=temperature,
            passage=str(t.meta.get("passage") or "hidden"),  # the debate's view of the passage
        )
        ctx = DebateContext(
            config=t.config,
            rng=np.random.default_rng(t.seed),
            debate_id=t.id,
            item=t.item,
            calls=calls,
            seed=t.seed,
        )
        if leaf.evidence is None:
            raise InvalidOutputError("the leaf has no evidence")
        v = await judge.verdict(leaf.claim, leaf.evidence, ctx)
        return {"verdict": v.value, "probability": v.probability}, calls
    act, variables = waiting_choice_prompt(t)
    _, _, raw = await model_choice(
        model,
        prompts,
        act,
        list(t.meta["options"]),
        calls,
        method=method,
        samples=samples,
        temperature=temperature,
        **variables,
    )
    return {"p_first": float(raw["p_first"]), "method": raw["method"]}, calls


def judge_with_model(
    run_dir: Path,
    model: Model,
    *,
    method: JudgeMethod = "logprobs",
    samples: int = 8,
    temperature: float = 1.0,
    prompts: Prompts | None = None,
    db_url: str | None = None,
    concurrency: int = 8,
) -> MachineResult:
    """A model judge's ruling on every waiting debate it has not ruled on; see the module doc."""
    sessions = connect(run_dir, db_url)
    waiting = waiting_by_id(run_dir)
    sync(sessions, run_dir, waiting)
    judge_id = llm_judge_id(model)
    todo, already = _pending(sessions, judge_id, waiting)
    res = MachineResult(judge_id, already=already)
    prompts = prompts or Prompts()
    gate = asyncio.Semaphore(concurrency)

    async def one(t: Transcript) -> tuple[Transcript, Any, float]:
        async with gate:
            start = time.monotonic()
            try:
                out = await _model_ruling(t, model, prompts, method, samples, temperature)
            except ModelError as exc:
                return t, exc, 0.0
            return t, out, time.monotonic() - start

    async def every() -> list[tuple[Transcript, Any, float]]:
        return list(await asyncio.gather(*(one(t) for t in todo)))

    for t, out, secs in asyncio.run(every()):
        if isinstance(out, Exception):
            res.failed.append((t.id, str(out)))
            continue
        ruling, calls = out
        settings = {
            "kind": "llm",
            "model": model.name,
            "method": ruling.pop("method", method),
            "samples": samples,
            "temperature": temperature,
        }
        if recursive(t):  # its verdict is O = 1[P >= 1/2], and the expectation takes O
            settings["ruling"] = "argmax"
        try:
            record_machine(
                sessions,
                run_dir,
                t,
                kind="llm",
                judge_id=judge_id,
                shown_digest=_shown(calls),
                settings=settings,
                calls=calls,
                active_s=round(secs, 3),
                **ruling,
            )
            res.judged += 1
        except Conflict:
            res.already += 1
    return res


def oracle_ruling(t: Transcript) -> dict[str, Any] | None:
    """The oracle's ruling on waiting debate ``t``: the leaf claim's truth, or the gold answer's
    place among the options (None: unknown)."""
    if recursive(t):
        leaf = t.rounds[-1]
        oracle = OracleJudge()
        ctx = DebateContext(config=t.config, rng=np.random.default_rng(0), item=t.item)
        try:
            assert leaf.evidence is not None
            v = asyncio.run(oracle.verdict(leaf.claim, leaf.evidence, ctx))
        except InvalidOutputError:
            return None
        assert v is not None
        return {"verdict": v.value, "probability": v.probability}
    options, gold = t.meta.get("options") or [], t.meta.get("gold")
    if gold is None or len(options) != 2:
        return None
    norm = [str(o).strip().lower() for o in options]
    g = str(gold).strip().lower()
    if g not in norm:
        return None
    return {"p_first": 1.0 if norm[0] == g else 0.0}


def judge_with_oracle(run_dir: Path, *, db_url: str | None = None) -> MachineResult:
    """The oracle's ruling on every waiting debate whose truth is known; see the module doc."""
    sessions = connect(run_dir, db_url)
    waiting = waiting_by_id(run_dir)
    sync(sessions, run_dir, waiting)
    todo, already = _pending(sessions, ORACLE_ID, waiting)
    res = MachineResult(ORACLE_ID, already=already)
    for t in todo:
        ruling = oracle_ruling(t)
        if ruling is None:
            res.unknown.append(t.id)
            continue
        shown = digest({"oracle": json.dumps(ruling, sort_keys=True), "debate": t.id})
        try:
            record_machine(
                sessions,
                run_dir,
                t,
                kind="oracle",
                judge_id=ORACLE_ID,
                shown_digest=shown,
                settings={"kind": "oracle"},
                **ruling,
            )
            res.judged += 1
        except Conflict:
            res.already += 1
    return res
