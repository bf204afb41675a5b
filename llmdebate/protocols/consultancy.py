"""Consultancy: one consultant argues for an assigned answer for n rounds; the judge decides.

Paired design: every item is run twice, once with the consultant assigned the gold answer
(variant ``correct``) and once the distractor (``incorrect``), so the consultant argues for the
correct answer in exactly half of the debates.
"""

from __future__ import annotations

from typing import Any

from llmdebate.agents.recording import debate_log
from llmdebate.protocols.common import (
    ProtocolSettings,
    RoleModels,
    decided,
    draws,
    judge_choice,
    options_text,
    transcript_text,
)
from llmdebate.schemas import ModelCallRecord, Transcript, Turn

VARIANTS = ("correct", "incorrect")


async def run_consultancy(
    item: Any,
    roles: RoleModels,
    settings: ProtocolSettings,
    *,
    variant: str = "correct",
    seed: int = 0,
    debate_id: str = "consultancy-0",
) -> Transcript:
    if variant not in VARIANTS:
        raise ValueError(f"consultancy variant is one of {VARIANTS} (got {variant!r})")
    dr = draws(item, seed)
    position = dr.gold if variant == "correct" else dr.distractor
    calls: list[ModelCallRecord] = []
    turns: list[Turn] = []
    with debate_log(calls):
        for rnd in range(1, settings.rounds + 1):
            msgs = roles.prompts.render(
                "consultancy_consultant",
                question=item.question,
                context=item.context,
                options=options_text(dr.shown),
                position=position,
                round=rnd,
                rounds=settings.rounds,
                transcript=transcript_text(turns),
            )
            out = await roles.debater.generate(
                msgs, roles.generate_config(), role="consultant", act=f"argue round {rnd}"
            )
            turns.append(Turn(role="consultant", round=rnd, text=out.text, position=position))
        decision = await judge_choice(
            roles,
            "consultancy_judge",
            dr.shown,
            question=item.question,
            context=item.context,
            transcript=transcript_text(turns),
        )
    return decided(
        protocol="consultancy",
        debate_id=debate_id,
        item=item,
        settings=settings,
        seed=seed,
        dr=dr,
        agents={"consultant": roles.debater.name, "judge": roles.judge.name},
        turns=turns,
        calls=calls,
        decision=decision,
        variant=variant,
        judge_round=settings.rounds + 1,
        assigned=position,
        rounds=settings.rounds,
    )
