"""One debate per dataset item: the assigned or chosen answer, the top claim, the engine call.

Every debate of a run has an index, an id ``<index>-<item id>``, and a seed
``debate_seed(run seed, index)``, so a resumed run replays exactly the debates it lacks.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from llmdebate.agents.factory import Agents
from llmdebate.agents.recording import debate_log, item_scope, recording
from llmdebate.config import RunConfig
from llmdebate.data.loader import Item
from llmdebate.data.problems import claim_truth
from llmdebate.engine import debate_seed, run_prover_estimator
from llmdebate.errors import InvalidOutputError, ProtocolViolation, RuleError
from llmdebate.prompts import Prompts
from llmdebate.schemas import Claim, ModelCallRecord, Transcript

# Errors that end one debate (recorded as failed); anything else stops the run.
DEBATE_ERRORS: tuple[type[BaseException], ...] = (
    InvalidOutputError,
    ProtocolViolation,
    RuleError,
)


@dataclass
class Job:
    index: int
    item: Item
    debate_id: str
    seed: int
    assignment: str


def make_jobs(items: list[Item], config: RunConfig) -> list[Job]:
    jobs = []
    for i, item in enumerate(items):
        mode = config.prover.assignment
        if mode == "alternate":
            mode = "honest" if i % 2 == 0 else "dishonest"
        jobs.append(Job(i, item, f"{i:05d}-{item.id}", debate_seed(config.seed, i), mode))
    return jobs


def _same_answer(a: str, b: str) -> bool:
    return a.strip().lower() == b.strip().lower()


def wrong_answer(item: Item, rng: np.random.Generator) -> str:
    """An incorrect answer: a wrong choice, or for a numeric free-form answer a nearby number."""
    wrong = item.wrong_choices
    if wrong:
        return str(wrong[int(rng.integers(len(wrong)))])
    try:
        gold = float(item.answer.replace(",", ""))
    except ValueError:
        raise InvalidOutputError(
            f"item {item.id}: no incorrect answer to assign (free-form, non-numeric)"
        ) from None
    delta = max(1, round(abs(gold) * 0.2)) * int(rng.choice([-1, 1])) * int(rng.integers(1, 4))
    value = gold + delta
    return str(int(value)) if value == int(value) else f"{value:g}"


def claim_for(item: Item, answer: str, prompts: Prompts) -> Claim:
    """The top claim "the answer to Q is X" (or the item's own statement for that answer)."""
    claims = item.meta.get("claims")
    if isinstance(claims, dict) and isinstance(claims.get(answer), str):
        text = claims[answer]
    else:
        text = prompts.text(
            "claim",
            question=item.question,
            answer=answer,
            choices=item.choices,
            context=item.context,
        )
    return Claim(id="x", text=text, truth=int(_same_answer(answer, item.answer)))


def annotate_truth(t: Transcript, meta: dict[str, Any]) -> None:
    """Set the gold truth of every round claim and subclaim whose truth the problem knows."""
    for rd in t.rounds:
        claims = [rd.claim, *(rd.decomposition.subclaims if rd.decomposition else [])]
        for c in claims:
            if c.truth is None:
                c.truth = claim_truth(c.text, meta)


async def run_debate(job: Job, agents: Agents, config: RunConfig, prompts: Prompts) -> Transcript:
    """One debate on one item; a debate-level failure becomes a ``failed`` transcript."""
    item = job.item.model_dump(mode="json")
    debate_cfg = config.debate.model_copy(update={"seed": config.seed})
    pre_calls: list[ModelCallRecord] = []
    every: list[ModelCallRecord] = []
    meta: dict[str, Any] = {
        "assignment": job.assignment,
        "gold_answer": job.item.answer,
        "index": job.index,
    }
    start = time.perf_counter()
    try:
        with item_scope(item), debate_log(every):
            if job.assignment == "choose":
                with recording(pre_calls):
                    answer = await agents.prover.pick_answer(item, pre_calls)
            elif job.assignment == "dishonest":
                answer = wrong_answer(job.item, np.random.default_rng([job.seed, 1]))
            else:
                answer = job.item.answer
            meta["claimed_answer"] = answer
            claim = claim_for(job.item, answer, prompts)
            t = await run_prover_estimator(
                claim,
                agents.prover,
                agents.estimator,
                agents.judge,
                debate_cfg,
                seed=job.seed,
                debate_id=job.debate_id,
                item=item,
            )
        t.calls = [*pre_calls, *t.calls]
        annotate_truth(t, job.item.meta)
    except DEBATE_ERRORS as exc:
        t = Transcript(
            id=job.debate_id,
            config=debate_cfg,
            seed=job.seed,
            agents={
                "prover": agents.prover.name,
                "estimator": agents.estimator.name,
                "judge": agents.judge.name,
            },
            item=item,
            status="failed",
            failure=f"{type(exc).__name__}: {exc}",
            calls=every,
        )
    finally:
        beliefs = agents.prover.pop_beliefs(job.debate_id)
        forget = getattr(agents.estimator, "forget", None)
        if callable(forget):
            forget(job.debate_id)
    meta["prover_beliefs"] = beliefs
    meta["wall_s"] = round(time.perf_counter() - start, 4)
    t.meta.update(meta)
    return t
