"""The asymmetric protocols on QA items: prover-estimator debate and naive recursive debate.

The prover defends (a = 1) the claim "the answer to Q is X" (``prompts/claim.j2``). Each item
is run twice against the same estimator (or challenger) and judge: the *honest* prover defends
the claim with the gold answer X (a true claim), the *dishonest* prover the claim with the
item's distractor (a false claim). The claim's gold truth is recorded in ``Claim.truth``.
Rewards come from the engine, i.e. from :mod:`llmdebate.scoring`.

``decomposer="facts"`` (for weak models that cannot write JSON): the top claim is decomposed
by rule AND into y1 = "all of the item's gold facts hold" and y2 = "given those facts, the
answer to Q is X"; deeper claims are decomposed by the model.
"""

from __future__ import annotations

from typing import Any

from llmdebate.agents.recording import debate_log, item_scope
from llmdebate.engine import run_naive_recursive, run_prover_estimator
from llmdebate.protocols.common import ItemDraws, ProtocolSettings, RoleModels, draws, item_dict
from llmdebate.protocols.naive_llm import LLMChallenger, LLMNaiveProver
from llmdebate.schemas import Claim, CombinationRule, Decomposition, ModelCallRecord, Transcript

VARIANTS = ("honest", "dishonest")


def facts_decomposition(claim: Claim, item: Any, width: int) -> Decomposition | None:
    """AND(gold facts hold, given them the claimed answer follows), for the top claim only."""
    facts = [f.strip() for f in (item.facts or []) if f.strip()]
    if claim.id != "x" or not facts or width < 2:
        return None
    answer = claim.data.get("answer", "")
    y1 = Claim(text="All of these are true: " + " ".join(facts), id="x.1", truth=1)
    y2 = Claim(
        text=f'Given that {" ".join(facts)} the answer to the question "{item.question}" '
        f'is "{answer}".',
        id="x.2",
        truth=claim.truth,
    )
    return Decomposition(
        subclaims=[y1, y2],
        rule=CombinationRule(kind="and"),
        rationale="gold facts of the item, then the inference from them",
    )


def llm_agents(roles: RoleModels, item: Any) -> tuple[Any, Any, Any]:
    """The orchestrator's prompted prover, estimator and judge for this role-model set."""
    from llmdebate.agents.judges import LLMJudge
    from llmdebate.agents.llm import LLMEstimator, LLMProver

    formal = None
    if roles.decomposer == "facts":

        def formal(claim: Claim, _meta: dict[str, Any], width: int) -> Decomposition | None:
            return facts_decomposition(claim, item, width)

    prover = LLMProver(
        roles.debater,
        roles.prompts,
        belief_method=roles.method,  # type: ignore[arg-type]
        samples=roles.samples,
        max_tokens=roles.max_tokens,
        decomposer="formal" if formal else "model",
        formal=formal,
    )
    estimator = LLMEstimator(
        roles.estimator,
        roles.prompts,
        method=roles.method,  # type: ignore[arg-type]
        samples=roles.samples,
    )
    judge = LLMJudge(roles.judge, roles.prompts, method=roles.method, samples=roles.samples)  # type: ignore[arg-type]
    return prover, estimator, judge


AGENT_FACTORY = llm_agents


def top_claim(item: Any, roles: RoleModels, seed: int, variant: str) -> tuple[Claim, ItemDraws]:
    if variant not in VARIANTS:
        raise ValueError(f"variant is one of {VARIANTS} (got {variant!r})")
    dr = draws(item, seed)
    answer = dr.gold if variant == "honest" else dr.distractor
    text = roles.prompts.text(
        "claim",
        question=item.question,
        answer=answer,
        choices=item.choices,
        context=item.context,
    )
    return Claim(text=text, id="x", truth=int(answer == dr.gold), data={"answer": answer}), dr


async def run_pe(
    item: Any,
    roles: RoleModels,
    settings: ProtocolSettings,
    *,
    variant: str = "honest",
    seed: int = 0,
    debate_id: str = "prover-estimator-0",
) -> Transcript:
    """Prover-estimator debate (Figure 2) with an honest or a dishonest prover."""
    claim, dr = top_claim(item, roles, seed, variant)
    prover, estimator, judge = AGENT_FACTORY(roles, item)
    calls: list[ModelCallRecord] = []
    with debate_log(calls), item_scope(item_dict(item)):
        t = await run_prover_estimator(
            claim,
            prover,
            estimator,
            judge,
            settings.debate,
            seed=seed,
            debate_id=debate_id,
            item=item_dict(item),
        )
    return _finish(t, calls, item, variant, dr)


async def run_naive(
    item: Any,
    roles: RoleModels,
    settings: ProtocolSettings,
    *,
    variant: str = "honest",
    seed: int = 0,
    debate_id: str = "naive-recursive-0",
) -> Transcript:
    """Naive recursive debate with an honest or a dishonest prover and an LLM challenger."""
    claim, dr = top_claim(item, roles, seed, variant)
    prover, _, judge = AGENT_FACTORY(roles, item)
    naive = LLMNaiveProver(prover, roles.debater, roles.prompts, answer=1, method=roles.method)
    challenger = LLMChallenger(roles.estimator, roles.prompts, method=roles.method)
    calls: list[ModelCallRecord] = []
    with debate_log(calls), item_scope(item_dict(item)):
        t = await run_naive_recursive(
            claim,
            naive,
            challenger,
            judge,
            settings.debate,
            seed=seed,
            debate_id=debate_id,
            item=item_dict(item),
        )
    return _finish(t, calls, item, variant, dr)


def _finish(
    t: Transcript, calls: list[ModelCallRecord], item: Any, variant: str, dr: ItemDraws
) -> Transcript:
    if calls:  # every call of the debate, whichever agent made it (no duplicates)
        t.calls = calls
    t.meta.update({"item_id": item.id, "variant": variant, **dr.as_meta()})
    return t
