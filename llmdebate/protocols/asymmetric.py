"""What the recursive protocols share: the top claim, gold truths, the deferred verdict.

Prover-estimator debate (:mod:`.prover_estimator`) and naive recursive debate
(:mod:`.naive_recursive`) on QA items.

The prover defends (a = 1) the claim "the answer to Q is X": the item's own statement for X
when it has one (``meta.claims``), else ``prompts/claim.j2``. X is the answer the spec assigns
(gold for the ``honest`` variant, the distractor for ``dishonest``) or, with
``prover.assignment: choose``, the prover model's own answer. The claim's gold truth is
recorded in ``Claim.truth``; every round claim and subclaim whose truth the item's problem
knows is annotated too. Rewards come from the engine, i.e. from :mod:`llmdebate.core.scoring`.
"""

from __future__ import annotations

from typing import Any

from llmdebate.agents.factory import Team
from llmdebate.agents.llm import LLMProver
from llmdebate.core.schemas import Claim, Transcript
from llmdebate.data.problems import claim_truth
from llmdebate.prompts import Prompts
from llmdebate.protocols.common import with_quote_penalty
from llmdebate.protocols.spec import DebateSpec, Log
from llmdebate.qa.passage import JudgeView


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


def leaf_view(spec: DebateSpec, team: Team) -> JudgeView:
    """The leaf judge's view of the passage (``judge.passage``; the prover and the
    estimator always read it): with it hidden, the judge reads the claim and the prover's
    evidence, whose checked quotes are all it sees of the passage."""
    return JudgeView.of({"context": spec.item.context}, team.judge.passage)


def record_view(t: Transcript, view: JudgeView) -> None:
    """Record the leaf judge's view of the passage (``meta.passage``) of an item that has one."""
    if view.mode is not None:
        t.meta["passage"] = view.mode


async def chosen_claim(spec: DebateSpec, prover: LLMProver, team: Team, log: Log) -> Claim:
    answer = spec.answer
    if answer is None:  # assignment "choose": the prover answers the question itself
        answer = await prover.pick_answer(spec.item_dict, log)
    return top_claim(spec, answer, team.prompts)


def recorded(
    t: Transcript, protocol: str, spec: DebateSpec, team: Team, claim: Claim, **meta: Any
) -> Transcript:
    """A recursive debate's transcript as ``protocol`` records it: under its own name (a
    protocol built on another records its own), the truth of every claim the problem knows,
    the judge's view of the passage, the claimed answer and ``meta``, the quote penalty."""
    t.protocol = protocol
    annotate_truth(t, spec.item.meta)
    record_view(t, leaf_view(spec, team))
    t.meta.update(claimed_answer=claim.data["answer"], **meta)
    return with_quote_penalty(t, team)
