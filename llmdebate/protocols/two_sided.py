"""Two-sided debate (Khan et al. 2024; Michael et al. 2023).

Debaters A and B are assigned opposite answers and argue for ``rounds`` rounds, either
``sequential`` (B sees A's speech of the same round) or ``simultaneous`` (each sees only earlier
rounds); the judge then picks. Paired design: every item is run twice with the answers' order
swapped (variant ``order-0``: A defends the first shown option, which the judge also sees
first; ``order-1``: the option order and the assignment are both swapped), so position bias
cancels across the pair.
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

VARIANTS = ("order-0", "order-1")
MODES = ("sequential", "simultaneous")


async def _speech(
    roles: RoleModels,
    item: Any,
    options: tuple[str, str],
    who: str,
    position: str,
    opponent: str,
    rnd: int,
    rounds: int,
    seen: list[Turn],
) -> Turn:
    msgs = roles.prompts.render(
        "two_sided_debater",
        question=item.question,
        context=item.context,
        options=options_text(options),
        position=position,
        opponent_position=opponent,
        round=rnd,
        rounds=rounds,
        transcript=transcript_text(seen),
    )
    out = await roles.debater.generate(
        msgs, roles.generate_config(), role=who, act=f"argue round {rnd}"
    )
    return Turn(role=who, round=rnd, text=out.text, position=position)


async def run_two_sided(
    item: Any,
    roles: RoleModels,
    settings: ProtocolSettings,
    *,
    variant: str = "order-0",
    seed: int = 0,
    debate_id: str = "two-sided-0",
) -> Transcript:
    if variant not in VARIANTS:
        raise ValueError(f"two-sided variant is one of {VARIANTS} (got {variant!r})")
    if settings.mode not in MODES:
        raise ValueError(f"two-sided mode is one of {MODES} (got {settings.mode!r})")
    dr = draws(item, seed)
    shown = dr.shown if variant == "order-0" else (dr.shown[1], dr.shown[0])
    pos_a, pos_b = shown
    calls: list[ModelCallRecord] = []
    turns: list[Turn] = []
    with debate_log(calls):
        for rnd in range(1, settings.rounds + 1):
            before = list(turns)
            a = await _speech(
                roles, item, shown, "debater A", pos_a, pos_b, rnd, settings.rounds, before
            )
            seen_b = [*before, a] if settings.mode == "sequential" else before
            b = await _speech(
                roles, item, shown, "debater B", pos_b, pos_a, rnd, settings.rounds, seen_b
            )
            turns += [a, b]
        decision = await judge_choice(
            roles,
            "two_sided_judge",
            shown,
            question=item.question,
            context=item.context,
            transcript=transcript_text(turns),
        )
    return decided(
        protocol="two-sided",
        debate_id=debate_id,
        item=item,
        settings=settings,
        seed=seed,
        dr=dr,
        agents={
            "debater A": roles.debater.name,
            "debater B": roles.debater.name,
            "judge": roles.judge.name,
        },
        turns=turns,
        calls=calls,
        decision=decision,
        variant=variant,
        judge_round=settings.rounds + 1,
        order=list(shown),
        rounds=settings.rounds,
        mode=settings.mode,
    )
