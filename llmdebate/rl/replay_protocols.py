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

from dataclasses import dataclass, field
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
    """Speeches before round ``at`` (and, within it, before its speech number ``step``,
    counted from 0 in speaking order) are replayed; ``speakers``: the protocol's seats;
    ``order``: who spoke each recorded round's speeches, in step order (a seat may speak
    more than once in a round)."""

    at: int
    step: int | None = None
    speakers: tuple[str, ...] = SPEAKERS
    order: dict[int, tuple[str, ...]] = field(default_factory=dict)

    def place(self, role: str, rnd: int, n: int) -> int | None:
        """The step of the ``n``-th speech (from 0) of ``role`` in round ``rnd`` as
        recorded; None: the recording has no such speech."""
        steps = [i for i, r in enumerate(self.order.get(rnd, ())) if r == role]
        return steps[n] if n < len(steps) else None

    def replayed(self, role: str, rnd: int, n: int = 0) -> bool:
        """Whether the ``n``-th speech of ``role`` in round ``rnd`` is the recorded one."""
        if rnd != self.at or self.step is None:
            return rnd < self.at
        step = self.place(role, rnd, n)
        return step is not None and step < self.step

    def first_live(self, role: str, rnd: int) -> int:
        """How many speeches of ``role`` in round ``rnd`` are replayed before its first live
        one."""
        if rnd < self.at:
            return len([r for r in self.order.get(rnd, ()) if r == role])
        if rnd > self.at or self.step is None:
            return 0
        return len([r for r in self.order.get(rnd, ())[: self.step] if r == role])


class ReplayModel:
    """The prover's model, answering the replayed speeches from the transcript's turns (and
    the injected one with the injection); every other call goes to the live model.

    The speeches of a seat in a round are counted as it is asked for them: its ``n``-th
    speech of round ``r`` is its ``n``-th recorded turn of round ``r``, so a seat that speaks
    more than once a round replays each of its turns in step order."""

    def __init__(self, live: Any, t: Transcript, point: SpeechPoint, inject: Any) -> None:
        self.live, self.t, self.point, self.inject = live, t, point, inject
        self.asked: dict[tuple[str, int], int] = {}
        """(seat, round) -> its speeches asked for so far."""

    def __getattr__(self, name: str) -> Any:
        return getattr(self.live, name)

    def _injects(self, role: str, rnd: int, n: int) -> bool:
        """Whether the ``n``-th speech of ``role`` in round ``rnd`` is the injected one: its
        first live speech of the round (or the one the injection's ``index`` numbers)."""
        inj = self.inject
        if inj is None or not inj.matches(role, "speech", rnd):
            return False
        if self.point.replayed(role, rnd, n):
            return False
        want = inj.index if inj.index is not None else self.point.first_live(role, rnd)
        return bool(n == want)

    def replays(self, role: str, rnd: int) -> bool:
        """Whether the next speech of ``role`` in round ``rnd`` is answered here (replayed or
        injected), not by the live model: the protocol then asks it once, best of n or not."""
        n = self.asked.get((role, rnd), 0)
        return self.point.replayed(role, rnd, n) or self._injects(role, rnd, n)

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
            n = self.asked.get((role, rnd), 0)
            self.asked[(role, rnd)] = n + 1
            if self.point.replayed(role, rnd, n):
                return self._recorded(role, act, rnd, n, log)
            if self._injects(role, rnd, n):
                if log is not None:
                    log.append(ModelCallRecord(
                        role=role, act=act, model=self.live.name, messages=messages,
                        completion=self.inject.completion, notes={"injected": True},
                    ))
                return ModelOutput(text=self.inject.completion, model=self.live.name)
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
        self, role: str, act: str, rnd: int, n: int, log: list[ModelCallRecord] | None
    ) -> ModelOutput:
        """The ``n``-th recorded speech of ``role`` in round ``rnd``, its calls copied into
        ``log`` (best of n: every candidate and the judge's scoring of each)."""
        turns = [x for x in self.t.turns if x.role == role and x.round == rnd]
        if n >= len(turns):
            raise UserError(
                f"{self.t.id}: no recorded speech {n + 1} of {role} in round {rnd} "
                f"({len(turns)} recorded)"
            )
        turn = turns[n]
        groups = speech_calls(self.t.calls, role, act, rnd)
        mine = groups[n] if n < len(groups) else []
        own = [c for c in mine if c.role == role and c.act == act]
        played = [c for c in own if c.notes.get("best_of", {}).get("chosen")]
        call = played[0] if played else (own[0] if own else None)
        if log is not None:
            log.extend(c.model_copy(deep=True) for c in (mine if played else own[:1]))
        return ModelOutput(
            text=turn.text,
            model=call.model if call is not None else self.live.name,
            tokens_in=call.tokens_in if call is not None else 0,
            tokens_out=call.tokens_out if call is not None else 0,
        )


def speech_calls(
    calls: list[ModelCallRecord], role: str, act: str, rnd: int
) -> list[list[ModelCallRecord]]:
    """The recorded calls of each speech ``role`` made with ``act`` in round ``rnd``, in
    speaking order: one call a speech; with best of n, every candidate's call (candidate 0
    starts a speech) and the judge's scoring of the candidates that follows them."""
    out: list[list[ModelCallRecord]] = []
    for c in calls:
        if c.role == role and c.act == act and c.error is None:
            mark = c.notes.get("best_of")
            if not out or mark is None or int(mark.get("candidate", 0)) == 0:
                out.append([])
            out[-1].append(c)
        elif out and c.decision == "scoring" and c.round == rnd and (
            c.notes.get("scoring", {}).get("speaker") == role
        ):
            out[-1].append(c)
    return out


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


def speech_point(
    t: Transcript, at: int, speaker: str | None, step: int | None = None
) -> SpeechPoint:
    """The fork point of a speech debate: round ``at``, from the first speech of ``speaker``
    in it or from its speech number ``step`` (from 1, in speaking order; neither: the whole
    round is live)."""
    rounds = settings_of(t).rounds
    if not 1 <= at <= rounds + 1:
        raise UserError(f"fork round of a {t.protocol} debate must be in 1..{rounds + 1} "
                        f"(got {at}; {rounds + 1}: only the judge plays again)")
    speakers = tuple(protocol_of(t).seats or SPEAKERS)
    order: dict[int, tuple[str, ...]] = {}
    for x in t.turns:
        if x.role in speakers:
            order[x.round] = (*order.get(x.round, ()), x.role)
    here = order.get(at, ())
    if speaker is not None and step is not None:
        raise UserError("fork: give the speaker or the step within the round, not both")
    if speaker is not None:
        if speaker not in speakers:
            raise UserError(
                f"fork speaker must be one of {', '.join(speakers)} (got {speaker!r})"
            )
        first = here.index(speaker) if speaker in here else len(here)
        return SpeechPoint(at, first, speakers, order)
    if step is not None:
        if not 1 <= step <= max(len(here), 1):
            raise UserError(
                f"fork step of round {at} of {t.id} must be in 1..{max(len(here), 1)} "
                f"(got {step}; its recorded speeches: {', '.join(here) or 'none'})"
            )
        return SpeechPoint(at, step - 1, speakers, order)
    return SpeechPoint(at, None, speakers, order)
