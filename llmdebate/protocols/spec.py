"""What every protocol takes: one debate's specification, the team of a run, the settings.

Every protocol is a coroutine ``run(spec, team, settings, log) -> Transcript``. ``spec`` says
which debate this is (item, assigned answers, seed, id), ``team`` makes fresh agents for it,
``settings`` holds the protocol parameters, and ``log`` is the debate's call log: every model
call made for the debate is appended to it, so that a debate that fails part-way still keeps
its calls. The experiment layer (:mod:`llmdebate.experiment`) builds specs from a dataset and
writes the transcripts.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from llmdebate.agents.factory import Team
from llmdebate.core.schemas import DebateConfig, ModelCallRecord, Transcript
from llmdebate.data.loader import Item


@dataclass(frozen=True)
class DebateSpec:
    """One debate: the item, the answers it is about, its variant, id and seed.

    ``gold`` and ``distractor`` are the two answers every protocol decides between, ``shown``
    the order in which a judge sees them, and ``answer`` the answer the prover (or consultant)
    is assigned to defend (None: the prover chooses, or the protocol assigns none).
    """

    debate_id: str
    protocol: str
    variant: str
    item: Item
    index: int
    seed: int
    gold: str
    distractor: str
    shown: tuple[str, str]
    answer: str | None = None

    @property
    def item_dict(self) -> dict[str, Any]:
        return self.item.model_dump(mode="json")

    def meta(self) -> dict[str, Any]:
        """What every transcript of this debate records about it (``Transcript.meta``)."""
        return {
            "item_id": self.item.id,
            "item_index": self.index,
            "variant": self.variant,
            "gold": self.gold,
            "distractor": self.distractor,
            "shown": list(self.shown),
            "assigned": self.answer,
        }


@dataclass(frozen=True)
class ProtocolSettings:
    """Parameters of the protocols: the recursive debate's, and the speech protocols' rounds."""

    debate: DebateConfig = field(default_factory=DebateConfig)
    rounds: int = 1
    mode: str = "sequential"

    @classmethod
    def from_config(
        cls,
        debate: DebateConfig,
        *,
        seed: int | None = None,
        rounds: Any = None,
        mode: Any = None,
    ) -> ProtocolSettings:
        """The settings of a run's config (``seed``: the run's, which the debate config takes)
        or of a recorded transcript (``rounds`` and ``mode`` as its meta holds them: absent
        ones take the defaults)."""
        return cls(
            debate=debate if seed is None else debate.model_copy(update={"seed": seed}),
            rounds=int(rounds or 1),
            mode=str(mode or "sequential"),
        )


Log = list[ModelCallRecord]
ProtocolRun = Callable[[DebateSpec, Team, ProtocolSettings, Log], Awaitable[Transcript]]
