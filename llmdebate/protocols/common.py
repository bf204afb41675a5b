"""What every protocol shares: the role-model set, the item's two options, the judge's choice.

Every protocol decides between the same two options of an item: the gold answer and one
distractor drawn with the item's seed (for yes/no items, simply the other answer). The order in
which options are shown, the assigned answers and the claim of the asymmetric protocols are all
drawn from ``item_rng(seed, item id)`` and recorded in ``Transcript.meta``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from llmdebate.agents.recording import attach_recorder
from llmdebate.models.base import GenerateConfig
from llmdebate.prompts import Prompts
from llmdebate.schemas import DebateConfig, ModelCallRecord, Transcript, Turn

LETTERS = "AB"


@dataclass
class RoleModels:
    """The same model per role in every protocol.

    ``debater``: provers, the two debaters, the consultant. ``estimator``: the estimator of
    prover-estimator debate and the challenger of naive recursive debate. ``judge``: every judge.
    """

    debater: Any
    estimator: Any
    judge: Any
    prompts: Prompts = field(default_factory=Prompts)
    decomposer: str = "model"  # asymmetric protocols: "model", or "facts" (see asymmetric.py)
    method: str = "logprobs"
    samples: int = 8
    max_tokens: int = 64
    temperature: float = 0.0

    def __post_init__(self) -> None:
        for m in {id(x): x for x in (self.debater, self.estimator, self.judge)}.values():
            attach_recorder(m)

    def generate_config(self) -> GenerateConfig:
        return GenerateConfig(temperature=self.temperature, max_tokens=self.max_tokens)

    def names(self) -> dict[str, str]:
        return {
            "debater": self.debater.name,
            "estimator": self.estimator.name,
            "judge": self.judge.name,
        }


@dataclass
class ProtocolSettings:
    """Parameters of the protocols (one set for a whole comparison)."""

    debate: DebateConfig = field(default_factory=lambda: DebateConfig(depth=1, width=2))
    rounds: int = 1
    mode: str = "sequential"  # two-sided: "sequential" or "simultaneous"


def item_rng(seed: int, item_id: str) -> np.random.Generator:
    """The generator of every per-item draw of a comparison (seeded by seed and item id)."""
    digest = hashlib.sha256(f"compare:{item_id}".encode()).digest()
    return np.random.default_rng([seed, int.from_bytes(digest[:8], "big")])


@dataclass(frozen=True)
class ItemDraws:
    """The per-item draws, identical for every protocol that sees the item."""

    gold: str
    distractor: str
    shown: tuple[str, str]  # the two options in the order the judge sees them

    def as_meta(self) -> dict[str, Any]:
        return {"gold": self.gold, "distractor": self.distractor, "shown": list(self.shown)}


def draws(item: Any, seed: int) -> ItemDraws:
    """Distractor, shown order and claim answer of ``item`` (an ``Item``) under ``seed``."""
    rng = item_rng(seed, item.id)
    wrong = [c for c in (item.choices or []) if c != item.answer]
    if not wrong:
        raise ValueError(f"item {item.id} has no wrong choice to debate against")
    distractor = wrong[int(rng.integers(len(wrong)))]
    first_gold = bool(rng.integers(2))
    shown = (item.answer, distractor) if first_gold else (distractor, item.answer)
    return ItemDraws(item.answer, distractor, shown)


def options_text(options: tuple[str, str] | list[str]) -> str:
    return "\n".join(f"({LETTERS[i]}) {o}" for i, o in enumerate(options))


def transcript_text(turns: list[Turn]) -> str:
    return "\n\n".join(
        f'{t.role} (round {t.round}, arguing for "{t.position}"):\n{t.text.strip()}' for t in turns
    )


async def judge_choice(
    roles: RoleModels, act: str, options: tuple[str, str], **variables: Any
) -> tuple[str, float, dict[str, Any]]:
    """The judge's pick between two options: P(option A is correct) from the judge model.

    Returns (chosen option, probability of the chosen option, the raw estimate as a dict).
    """
    messages = roles.prompts.render(
        act, options=options_text(options), first=options[0], **variables
    )
    kw: dict[str, Any] = {"role": "judge", "act": act}
    if roles.method == "sampling":
        kw["samples"] = roles.samples
    est = await roles.judge.probability(messages, roles.method, **kw)
    p_a = float(est.value)
    choice = options[0] if p_a >= 0.5 else options[1]
    prob = p_a if p_a >= 0.5 else 1.0 - p_a
    return choice, prob, {"p_first": p_a, "method": est.method}


def item_dict(item: Any) -> dict[str, Any]:
    return item.model_dump() if hasattr(item, "model_dump") else dict(item)


def decided(
    *,
    protocol: str,
    debate_id: str,
    item: Any,
    settings: ProtocolSettings,
    seed: int,
    dr: ItemDraws,
    agents: dict[str, str],
    turns: list[Turn],
    calls: list[ModelCallRecord],
    decision: tuple[str, float, dict[str, Any]],
    variant: str,
    judge_round: int,
    **meta: Any,
) -> Transcript:
    """The transcript of a protocol that ends with the judge's choice between the two options."""
    choice, prob, raw = decision
    judge = Turn(
        role="judge", round=judge_round, text=f"The correct answer is: {choice}", position=choice
    )
    return Transcript(
        id=debate_id,
        protocol=protocol,  # type: ignore[arg-type]
        config=settings.debate,
        seed=seed,
        agents=agents,
        item=item_dict(item),
        turns=[*turns, judge],
        calls=calls,
        meta={
            "item_id": item.id,
            "variant": variant,
            **meta,
            "decision": choice,
            "decision_probability": prob,
            "judge": raw,
            **dr.as_meta(),
        },
    )
