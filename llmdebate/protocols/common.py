"""What the speech protocols share: the options text, the transcript text, the judge's choice.

Two-sided debate, consultancy and the direct judge all end with the judge choosing between
the item's gold answer and its distractor, shown in the order ``spec.shown``.
"""

from __future__ import annotations

from typing import Any

from llmdebate.agents.factory import Team
from llmdebate.elicit import estimate
from llmdebate.protocols.base import DebateSpec, Log, ProtocolSettings
from llmdebate.schemas import Transcript, Turn

LETTERS = "AB"


def options_text(options: tuple[str, str] | list[str]) -> str:
    return "\n".join(f"({LETTERS[i]}) {o}" for i, o in enumerate(options))


def transcript_text(turns: list[Turn]) -> str:
    return "\n\n".join(
        f'{t.role} (round {t.round}, arguing for "{t.position}"):\n{t.text.strip()}' for t in turns
    )


async def judge_choice(
    team: Team, act: str, options: tuple[str, str], log: Log, **variables: Any
) -> tuple[str, float, dict[str, Any]]:
    """The judge's pick between two options: P(option A is correct) from the judge model.

    Returns (chosen option, probability of the chosen option, the raw estimate as a dict).
    """
    messages = team.prompts.render(
        act, options=options_text(options), first=options[0], **variables
    )
    j = team.judge
    method = j.method if j.method != "generate" else "logprobs"
    est = await estimate(
        team.models["judge"],
        messages,
        method,
        samples=j.samples,
        temperature=j.temperature,
        role="judge",
        act=act,
        log=log,
    )
    p_a = float(est.value)
    choice = options[0] if p_a >= 0.5 else options[1]
    prob = p_a if p_a >= 0.5 else 1.0 - p_a
    return choice, prob, {"p_first": p_a, "method": est.method}


def decided(
    spec: DebateSpec,
    settings: ProtocolSettings,
    *,
    agents: dict[str, str],
    turns: list[Turn],
    log: Log,
    decision: tuple[str, float, dict[str, Any]],
    judge_round: int,
    **meta: Any,
) -> Transcript:
    """The transcript of a protocol that ends with the judge's choice between the two options."""
    choice, prob, raw = decision
    judge = Turn(
        role="judge", round=judge_round, text=f"The correct answer is: {choice}", position=choice
    )
    return Transcript(
        id=spec.debate_id,
        protocol=spec.protocol,  # type: ignore[arg-type]
        config=settings.debate,
        seed=spec.seed,
        agents=agents,
        item=spec.item_dict,
        turns=[*turns, judge],
        calls=log,
        meta={**meta, "decision": choice, "decision_probability": prob, "judge": raw},
    )
