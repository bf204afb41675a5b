"""Fork and replay of naive recursive debate and the speech protocols (two-sided, consultancy,
direct), through the protocols' own code (:data:`llmdebate.protocols.registry.PROTOCOLS`).

The team the protocol runs with replays the recorded decisions before the fork point and asks
the live agents from there on:

* naive recursive debate: the naive prover's decompositions and stated subclaim values and the
  challenger's choices of rounds above the fork are the recorded ones (``ForkPoint`` orders the
  acts of a round: decompose, value, recurse; evidence, verdict at the leaf);
* speech protocols: the debaters' (consultant's) speeches before round ``at`` (and, within round
  ``at``, those of the speakers before ``speaker``) are answered from the transcript's turns by a
  model that stands in front of the prover's model; every later speech and the judge are live.
  A replayed best-of-n speech is asked once and copies all its recorded candidates and their
  scoring calls (a swapped judge does not re-score speeches before the fork point).

The recorded calls of replayed decisions are copied into the new log, so that with the same
agents the replay is the original transcript again, bit for bit. An :class:`Injection` stands
for one live decision: a decomposition, a speech, the leaf evidence, or one subclaim's
probability (``index``) behind a naive prover's values or the challenger's choice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from llmdebate.agents.naive import most_likely_consistent, subclaim_probabilities
from llmdebate.agents.parsing import parse_decomposition
from llmdebate.core.roles import DebateContext
from llmdebate.core.schemas import Claim, Decomposition, Evidence, ModelCallRecord, Transcript
from llmdebate.errors import UserError
from llmdebate.export.credit import SPEAKERS, speech_round
from llmdebate.models.interface import GenerateConfig, ModelOutput
from llmdebate.protocols.registry import protocol_of, recursive
from llmdebate.protocols.spec import ProtocolSettings

ANSWER = "answer"
"""The decision (and act) of an open role's pick of the answer it defends."""


def settings_of(t: Transcript) -> ProtocolSettings:
    """The protocol settings a recorded transcript was run with."""
    return ProtocolSettings.from_config(
        t.config, rounds=t.meta.get("rounds"), mode=t.meta.get("mode")
    )


# ------------------------------------------------------------------ speech protocols
@dataclass(frozen=True)
class SpeechPoint:
    """Speeches before round ``at`` (and, within it, before ``speaker``) are replayed;
    ``speakers``: the protocol's seats in speaking order."""

    at: int
    speaker: str | None = None
    speakers: tuple[str, ...] = SPEAKERS

    def replayed(self, role: str, rnd: int) -> bool:
        if rnd != self.at or self.speaker is None:
            return rnd < self.at
        return self.speakers.index(role) < self.speakers.index(self.speaker)


class ReplayModel:
    """The prover's model, answering the replayed speeches from the transcript's turns (and
    the injected one with the injection); every other call goes to the live model."""

    def __init__(self, live: Any, t: Transcript, point: SpeechPoint, inject: Any) -> None:
        self.live, self.t, self.point, self.inject = live, t, point, inject

    def __getattr__(self, name: str) -> Any:
        return getattr(self.live, name)

    def replays(self, role: str, rnd: int) -> bool:
        """Whether the speech of ``role`` in round ``rnd`` is answered here (replayed or
        injected), not by the live model: the protocol then asks it once, best of n or not."""
        inj = self.inject
        return self.point.replayed(role, rnd) or (
            inj is not None and inj.matches(role, "speech", rnd)
        )

    async def generate(
        self,
        messages: list[dict[str, str]],
        config: GenerateConfig | None = None,
        *,
        sample_index: int = 0,
        role: str = "",
        act: str = "",
        log: list[ModelCallRecord] | None = None,
    ) -> ModelOutput:
        if act == ANSWER:
            answered = self._answered(log)
            if answered is not None:
                return answered
        rnd = speech_round(act)
        if rnd is not None and role in self.point.speakers:
            if self.point.replayed(role, rnd):
                return self._recorded(role, act, rnd, log)
            inj = self.inject
            if inj is not None and inj.matches(role, "speech", rnd):
                if log is not None:
                    log.append(ModelCallRecord(
                        role=role, act=act, model=self.live.name, messages=messages,
                        completion=inj.completion, notes={"injected": True},
                    ))
                return ModelOutput(text=inj.completion, model=self.live.name)
        out: ModelOutput = await self.live.generate(
            messages, config, sample_index=sample_index, role=role, act=act, log=log
        )
        return out

    def _answered(self, log: list[ModelCallRecord] | None) -> ModelOutput | None:
        """The recorded pick of an open role (decision ``answer``, made before the first
        speech, so before every fork point), its calls copied into ``log``; None: none."""
        calls = [c for c in self.t.calls if c.decision == ANSWER]
        done = [c for c in calls if c.error is None and c.completion is not None]
        if not done:
            return None
        if log is not None:
            log.extend(c.model_copy(deep=True) for c in calls)
        call = done[-1]
        return ModelOutput(
            text=str(call.completion), model=call.model,
            tokens_in=call.tokens_in, tokens_out=call.tokens_out,
        )

    def _recorded(
        self, role: str, act: str, rnd: int, log: list[ModelCallRecord] | None
    ) -> ModelOutput:
        turn = next((x for x in self.t.turns if x.role == role and x.round == rnd), None)
        if turn is None:
            raise UserError(f"{self.t.id}: no recorded speech of {role} in round {rnd}")
        own = [c for c in self.t.calls if c.role == role and c.act == act and c.error is None]
        played = [c for c in own if c.notes.get("best_of", {}).get("chosen")]
        call = played[0] if played else (own[0] if own else None)
        if call is not None and log is not None:
            if played:  # best of n: every candidate and the judge's scoring of each
                mine = {id(c) for c in own}
                log.extend(
                    c.model_copy(deep=True) for c in self.t.calls if id(c) in mine or (
                        c.decision == "scoring" and c.round == rnd
                        and c.notes.get("scoring", {}).get("speaker") == role
                    )
                )
            else:
                log.append(call.model_copy(deep=True))
        return ModelOutput(
            text=turn.text,
            model=call.model if call is not None else self.live.name,
            tokens_in=call.tokens_in if call is not None else 0,
            tokens_out=call.tokens_out if call is not None else 0,
        )


# ------------------------------------------------------------------ naive recursive debate
def _with_injected(probs: list[float], inject: Any, width: int) -> list[float]:
    i = inject.index if inject.index is not None else 0
    if not 0 <= i < width:
        raise UserError(f"injected probability for subclaim {i}: the round has {width}")
    out = list(probs)
    out[i] = float(inject.probability())
    return out


class ReplayNaiveProver:
    """The recorded naive prover above the fork point; the live one (or the injection) below."""

    def __init__(self, live: Any, t: Transcript, point: Any, inject: Any) -> None:
        self.live, self.t, self.point, self.inject = live, t, point, inject
        self.rounds = {rd.k: rd for rd in t.rounds}
        self.name = live.name

    def _inj(self, act: str, k: int) -> Any:
        inj = self.inject
        return inj if inj is not None and inj.matches("prover", act, k) else None

    async def answer(self, claim: Claim, ctx: DebateContext) -> int:
        return int(await self.live.answer(claim, ctx))

    async def decompose(self, claim: Claim, k: int, ctx: DebateContext) -> Decomposition:
        if self.point.replayed(k, "decompose"):
            dec = self.rounds[k].decomposition
            assert dec is not None
            return dec
        inj = self._inj("decompose", k)
        if inj is not None:
            return parse_decomposition(inj.completion, claim, ctx.config.width)
        out: Decomposition = await self.live.decompose(claim, k, ctx)
        return out

    async def claim_values(
        self, claim: Claim, claimed: int, dec: Decomposition, ctx: DebateContext
    ) -> list[int]:
        k = ctx.config.depth - len(ctx.rounds)
        if self.point.replayed(k, "value"):
            return list(self.rounds[k].claimed_subclaims or [])
        inj = self._inj("value", k)
        if inj is None:
            return list(await self.live.claim_values(claim, claimed, dec, ctx))
        probs = await subclaim_probabilities(
            self.live.model, self.live.prompts, self.live.method, claim, dec, ctx, "prover"
        )
        return most_likely_consistent(_with_injected(probs, inj, dec.width), dec, claimed)

    async def evidence(self, claim: Claim, ctx: DebateContext) -> Evidence:
        if self.point.replayed(0, "evidence"):
            ev = self.rounds[0].evidence
            assert ev is not None
            return ev
        inj = self._inj("evidence", 0)
        if inj is not None:
            return Evidence(text=inj.completion.strip())
        out: Evidence = await self.live.evidence(claim, ctx)
        return out


class ReplayChallenger:
    """The recorded challenger above the fork point; the live one (or the injection) below."""

    def __init__(self, live: Any, t: Transcript, point: Any, inject: Any) -> None:
        self.live, self.t, self.point, self.inject = live, t, point, inject
        self.rounds = {rd.k: rd for rd in t.rounds}
        self.name = live.name

    async def challenge(
        self, claim: Claim, dec: Decomposition, claimed: list[int], ctx: DebateContext
    ) -> int:
        k = ctx.rounds[-1].k
        if self.point.replayed(k, "recurse"):
            j = self.rounds[k].recurse
            assert j is not None
            return j
        inj = self.inject
        if inj is None or not inj.matches("challenger", "recurse", k):
            return int(await self.live.challenge(claim, dec, claimed, ctx))
        probs = await subclaim_probabilities(
            self.live.model, self.live.prompts, self.live.method, claim, dec, ctx, "challenger"
        )
        probs = _with_injected(probs, inj, dec.width)
        doubt = [abs(p - v) for p, v in zip(probs, claimed, strict=True)]
        return max(range(len(doubt)), key=lambda i: (doubt[i], -i))


def replayed_calls(t: Transcript, point: Any) -> list[ModelCallRecord]:
    """Copies of the recorded calls of a naive debate's replayed decisions (the speech
    protocols' are copied by :class:`ReplayModel` as the protocol asks for them)."""
    if not recursive(t):
        return []
    return [
        c.model_copy(deep=True)
        for c in t.calls
        if c.decision is not None and (c.round is None or point.replayed(c.round, c.decision))
    ]


def speech_point(t: Transcript, at: int, speaker: str | None) -> SpeechPoint:
    rounds = settings_of(t).rounds
    if not 1 <= at <= rounds + 1:
        raise UserError(f"fork round of a {t.protocol} debate must be in 1..{rounds + 1} "
                        f"(got {at}; {rounds + 1}: only the judge plays again)")
    speakers = protocol_of(t).seats or SPEAKERS
    if speaker is not None and speaker not in speakers:
        raise UserError(f"fork speaker must be one of {', '.join(speakers)} (got {speaker!r})")
    return SpeechPoint(at, speaker, tuple(speakers))

