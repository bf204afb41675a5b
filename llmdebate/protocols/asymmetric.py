"""The asymmetric protocols on QA items: prover-estimator debate and naive recursive debate.

The prover defends (a = 1) the claim "the answer to Q is X": the item's own statement for X
when it has one (``meta.claims``), else ``prompts/claim.j2``. X is the answer the spec assigns
(gold for the ``honest`` variant, the distractor for ``dishonest``) or, with
``prover.assignment: choose``, the prover model's own answer. The claim's gold truth is
recorded in ``Claim.truth``; every round claim and subclaim whose truth the item's problem
knows is annotated too. Rewards come from the engine, i.e. from :mod:`llmdebate.scoring`.
"""

from __future__ import annotations

from typing import Any

from llmdebate.agents.factory import Team
from llmdebate.agents.llm import LLMProver
from llmdebate.data.problems import claim_truth
from llmdebate.engine import run_naive_recursive, run_prover_estimator
from llmdebate.prompts import Prompts
from llmdebate.protocols.base import DebateSpec, Log, ProtocolSettings
from llmdebate.schemas import Claim, Transcript


def same_answer(a: str, b: str) -> bool:
    return a.strip().lower() == b.strip().lower()


def top_claim(spec: DebateSpec, answer: str, prompts: Prompts) -> Claim:
    """The claim "the answer to Q is ``answer``" (or the item's own statement for it)."""
    item = spec.item
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
    truth = int(same_answer(answer, spec.gold))
    return Claim(id="x", text=text, truth=truth, data={"answer": answer})


def annotate_truth(t: Transcript, meta: dict[str, Any]) -> None:
    """Set the gold truth of every round claim and subclaim whose truth the problem knows."""
    for rd in t.rounds:
        claims = [rd.claim, *(rd.decomposition.subclaims if rd.decomposition else [])]
        for c in claims:
            if c.truth is None:
                c.truth = claim_truth(c.text, meta)


async def _claim(spec: DebateSpec, prover: LLMProver, team: Team, log: Log) -> Claim:
    answer = spec.answer
    if answer is None:  # assignment "choose": the prover answers the question itself
        answer = await prover.pick_answer(spec.item_dict, log)
    return top_claim(spec, answer, team.prompts)


async def run_pe(spec: DebateSpec, team: Team, settings: ProtocolSettings, log: Log) -> Transcript:
    """Prover-estimator debate (Figure 2) with the spec's assigned (or the chosen) answer."""
    prover = team.make_prover()
    claim = await _claim(spec, prover, team, log)
    t = await run_prover_estimator(
        claim,
        prover,
        team.make_estimator(),
        team.make_judge(),
        settings.debate,
        seed=spec.seed,
        debate_id=spec.debate_id,
        item=spec.item_dict,
        calls=log,
    )
    annotate_truth(t, spec.item.meta)
    t.meta.update(claimed_answer=claim.data["answer"], prover_beliefs=dict(prover.beliefs))
    return t


async def run_naive(
    spec: DebateSpec, team: Team, settings: ProtocolSettings, log: Log
) -> Transcript:
    """Naive recursive debate: the prover states subclaim values, an LLM challenger picks one."""
    prover = team.make_prover()
    claim = await _claim(spec, prover, team, log)
    t = await run_naive_recursive(
        claim,
        team.make_naive_prover(answer=1),
        team.make_challenger(),
        team.make_judge(),
        settings.debate,
        seed=spec.seed,
        debate_id=spec.debate_id,
        item=spec.item_dict,
        calls=log,
    )
    annotate_truth(t, spec.item.meta)
    t.meta.update(claimed_answer=claim.data["answer"])
    return t
