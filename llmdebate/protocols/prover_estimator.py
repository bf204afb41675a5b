"""Prover-estimator debate (Figure 2): the prover defends the claim "the answer to Q is X"
against an estimator's probabilities, round by round, down to a leaf the judge rules on.

Rewards come from the engine, i.e. from :mod:`llmdebate.core.scoring`.
"""

from __future__ import annotations

from llmdebate.agents.factory import Team
from llmdebate.core import scoring
from llmdebate.core.engine import run_prover_estimator
from llmdebate.core.schemas import Transcript
from llmdebate.protocols.asymmetric import chosen_claim, recorded
from llmdebate.protocols.families import RecursiveProtocol
from llmdebate.protocols.interface import Capabilities, DecisionRow
from llmdebate.protocols.registry import register
from llmdebate.protocols.spec import DebateSpec, Log, ProtocolSettings

INJECTABLE_ACTS = ("direction", "decompose", "recurse", "evidence", "estimate")


@register("prover-estimator")
class ProverEstimator(RecursiveProtocol):
    """Prover-estimator debate with the spec's assigned (or the chosen) answer."""

    can = Capabilities(assigned=True, open_roles=True, estimator_rewards=True)
    title = "Prover-estimator debate"
    rank = 4
    opens_in_report = True
    reward_scheme = scoring.DISCOUNTED

    async def run(
        self, spec: DebateSpec, team: Team, settings: ProtocolSettings, log: Log
    ) -> Transcript:
        prover = team.make_prover()
        claim = await chosen_claim(spec, prover, team, log)
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
        return recorded(t, self.name, spec, team, claim, prover_beliefs=dict(prover.beliefs))

    def expected_payoff(self, t: Transcript) -> float | None:
        return scoring.normalized_total(t, expected=True, scheme=self.reward_scheme)

    def calibration_point(self, t: Transcript) -> tuple[str, float, int] | None:
        if t.init is None or t.init.claim.truth is None:
            return None
        return (t.init.claim.text, float(t.init.estimate.value), int(t.init.claim.truth))

    def injectable(self, d: DecisionRow) -> bool:
        """A decision of the prover or the estimator (not a belief probe feeding a rule, not
        an assigned answer)."""
        return (
            d.role in ("prover", "estimator")
            and d.act in INJECTABLE_ACTS
            and d.call_act != "belief"
            and d.source != "assigned"
        )
