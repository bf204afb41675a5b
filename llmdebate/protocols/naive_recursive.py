"""Naive recursive debate: the prover states subclaim values, an LLM challenger picks one;
the payoff is ±1 by the judge's verdict on the leaf claim."""

from __future__ import annotations

from llmdebate.agents.factory import Team
from llmdebate.core import scoring
from llmdebate.core.engine import run_naive_recursive
from llmdebate.core.schemas import Transcript
from llmdebate.protocols.asymmetric import chosen_claim, recorded
from llmdebate.protocols.families import RecursiveProtocol
from llmdebate.protocols.interface import DecisionRow
from llmdebate.protocols.registry import register
from llmdebate.protocols.spec import DebateSpec, Log, ProtocolSettings

INJECTABLE = {"prover": ("decompose", "value", "evidence"), "challenger": ("recurse",)}


@register("naive-recursive")
class NaiveRecursive(RecursiveProtocol):
    """Naive recursive debate with the spec's assigned (or the chosen) answer."""

    title = "Naive recursive debate"
    rank = 3
    reward_scheme = scoring.PLUS_MINUS_ONE

    async def run(
        self, spec: DebateSpec, team: Team, settings: ProtocolSettings, log: Log
    ) -> Transcript:
        prover = team.make_prover()
        claim = await chosen_claim(spec, prover, team, log)
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
        return recorded(t, self.name, spec, team, claim)

    def injectable(self, d: DecisionRow) -> bool:
        """A debater's decomposition, subclaim probability or evidence; the challenger's pick."""
        return d.act in INJECTABLE.get(d.speaker, ())
