"""Fork and replay: re-run a recorded debate from its seed through its protocol's own run,
keeping every decision made before the fork point as recorded and letting (possibly swapped)
agents play from there on (the prover and estimator of prover-estimator debate here; the other
protocols' replayed agents in :mod:`llmdebate.rl.replay_protocols`).

The protocol's draws come from the debate's seed, so with the same agents the replay is the
original transcript again, bit for bit (its recorded model calls included: the calls of the
replayed decisions are copied, the rest are made again). With one agent swapped (a new model
string, the oracle judge, a deferred judge for a person) it is a counterfactual continuation
of the same debate. One decision may also be *injected*: a completion for it (e.g. a policy's
sample during online RL) is parsed as the agent's reply, and the debate goes on from there.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from llmdebate.agents.factory import SEAT_ROLES, SECTIONS, Team, build_models, seat_key
from llmdebate.agents.judge_registry import JUDGES, WHOLE_DEBATES
from llmdebate.agents.parsing import ReplyError, parse_decomposition, parse_direction, parse_index
from llmdebate.agents.settings import ModelSettings
from llmdebate.core.roles import (
    AuditedProver,
    BelievingProver,
    DebateContext,
    DirectionChoice,
    Estimator,
    Prover,
)
from llmdebate.core.rules import outcome_index
from llmdebate.core.schemas import (
    Claim,
    Decomposition,
    Estimate,
    Evidence,
    InitRecord,
    ModelCallRecord,
    RoundRecord,
    Transcript,
)
from llmdebate.data.loader import Item
from llmdebate.errors import InvalidOutputError, UserError
from llmdebate.experiment.config import ExperimentConfig
from llmdebate.experiment.loading import validate
from llmdebate.models import Model
from llmdebate.prompts import Prompts
from llmdebate.protocols.families import RecursiveProtocol, SpeechProtocol
from llmdebate.protocols.registry import protocol_of
from llmdebate.protocols.spec import DebateSpec
from llmdebate.records.paths import resolve_path
from llmdebate.rl.replay_protocols import (
    ReplayChallenger,
    ReplayModel,
    ReplayNaiveProver,
    replayed_calls,
    settings_of,
    speech_point,
)
from llmdebate.tournament.roster import record_seats, static_seats


@dataclass(frozen=True)
class Injection:
    """A reply to use for one decision instead of asking the agent.

    ``speaker``: prover or estimator; ``act``: answer, direction, decompose, recurse, evidence
    or estimate; ``round``: the round (None: initialisation); ``index``/``prefix``: which b_i.
    """

    speaker: str
    act: str
    round: int | None
    completion: str
    index: int | None = None
    prefix: tuple[int, ...] | None = None
    value: float | None = None
    """For a probability decision: the probability the completion stands for (read by the
    elicitation method's rule, :func:`llmdebate.rl.rewards.completion_probability`); None:
    read the completion as a stated probability."""

    def probability(self) -> float:
        return self.value if self.value is not None else parse_probability(self.completion)

    def matches(self, speaker: str, act: str, k: int | None, index: int | None = None,
                prefix: tuple[int, ...] | None = None) -> bool:
        if (self.speaker, self.act, self.round) != (speaker, act, k):
            return False
        if self.index is not None and index is not None and index != self.index:
            return False
        return self.prefix is None or prefix is None or tuple(prefix) == tuple(self.prefix)


def parse_probability(text: str) -> float:
    """A probability from a reply: a number in [0, 1], or True / False (1 / 0)."""
    import re

    low = text.strip().lower()
    m = re.search(r"\d*\.?\d+", low)
    if m:
        v = float(m.group())
        if 0.0 <= v <= 1.0:
            return v
        if 1.0 < v <= 100.0 and "%" in low:
            return v / 100.0
    if low.startswith("true") or low.startswith("yes"):
        return 1.0
    if low.startswith("false") or low.startswith("no"):
        return 0.0
    raise ReplyError("reply with a probability in [0, 1], or True / False")


ORDER = {
    "direction": 0, "decompose": 1, "estimate": 2, "value": 2, "recurse": 3, "evidence": 4,
    "verdict": 5,
}
"""The order of the decisions within a round."""


def _rounds(t: Transcript) -> dict[int, RoundRecord]:
    return {rd.k: rd for rd in t.rounds}


def _init(t: Transcript) -> InitRecord:
    if t.init is None:
        raise UserError(f"{t.id}: the debate has no initialisation record to replay")
    return t.init


@dataclass(frozen=True)
class ForkPoint:
    """Decisions before (round ``at``, ``act``) are replayed; this one and later are live."""

    at: int
    act: str = "direction"

    def replayed(self, k: int, act: str) -> bool:
        return k > self.at or (k == self.at and ORDER.get(act, 1) < ORDER[self.act])


class ReplayProver:
    """The recorded prover before round ``at``; the live one (or the injection) from there."""

    def __init__(
        self, live: Prover, t: Transcript, at: ForkPoint, inject: Injection | None
    ) -> None:
        self.live, self.t, self.at, self.inject = live, t, at, inject
        self.rounds = _rounds(t)
        self.name = live.name
        self.audits: list[dict[str, Any]] = []
        """The grading of each decomposition played: as recorded for replayed rounds, the live
        prover's own for the rest (the engine stores it in ``meta["decompositions"]``)."""
        self._recorded_audits: list[dict[str, Any]] = list(t.meta.get("decompositions", []))

    @property
    def beliefs(self) -> dict[str, float]:
        return dict(self.live.beliefs) if isinstance(self.live, BelievingProver) else {}

    def _injected(self, act: str, k: int | None) -> str | None:
        if self.inject is not None and self.inject.matches("prover", act, k):
            return self.inject.completion
        return None

    async def pick_answer(self, item: dict[str, Any], calls: list[ModelCallRecord]) -> str:
        """The answer chosen in the original debate (``assignment: choose``)."""
        return str(self.t.meta.get("claimed_answer", ""))

    async def answer(self, claim: Claim, ctx: DebateContext) -> int:
        return _init(self.t).answer

    async def direction(
        self, claim: Claim, p: float, k: int, ctx: DebateContext
    ) -> DirectionChoice | int:
        if self.at.replayed(k, "direction"):
            if self.t.stop_round == k:
                return DirectionChoice(0, rest_zero=True)
            rd = self.rounds[k]
            assert rd.direction is not None
            return rd.direction
        got = self._injected("direction", k)
        if got is not None:
            return parse_direction(got)
        out: DirectionChoice | int = await self.live.direction(claim, p, k, ctx)
        return out

    async def decompose(self, claim: Claim, k: int, ctx: DebateContext) -> Decomposition:
        if self.at.replayed(k, "decompose"):
            dec = self.rounds[k].decomposition
            assert dec is not None
            done = ctx.config.depth - k  # decompositions played before this one
            if done < len(self._recorded_audits):
                self.audits.append(self._recorded_audits[done])
            return dec
        got = self._injected("decompose", k)
        if got is not None:
            return parse_decomposition(got, claim, ctx.config.width)
        own = self.live.audits if isinstance(self.live, AuditedProver) else None
        before = len(own) if own is not None else 0
        dec = await self.live.decompose(claim, k, ctx)
        if own is not None:
            self.audits.extend(own[before:])
        return dec

    async def choose(
        self, claim: Claim, dec: Decomposition, b: list[float], z: list[int], ctx: DebateContext
    ) -> int:
        k = ctx.rounds[-1].k if z else ctx.config.depth - len(ctx.rounds)
        if self.at.replayed(k, "recurse"):
            j = self.rounds[k].recurse
            assert j is not None
            return j
        got = self._injected("recurse", k)
        if got is not None:
            return parse_index(got, dec.width)
        return int(await self.live.choose(claim, dec, b, z, ctx))

    async def evidence(self, claim: Claim, ctx: DebateContext) -> Evidence:
        got = self._injected("evidence", 0)
        if got is not None:
            return Evidence(text=got.strip())
        out: Evidence = await self.live.evidence(claim, ctx)
        return out


class ReplayEstimator:
    """The recorded estimator before round ``at``; the live one (or the injection) from there."""

    def __init__(
        self, live: Estimator, t: Transcript, at: ForkPoint, inject: Injection | None
    ) -> None:
        self.live, self.t, self.at, self.inject = live, t, at, inject
        self.rounds = _rounds(t)
        self.name = live.name

    async def estimate(self, claim: Claim, ctx: DebateContext) -> Estimate:
        if self.inject is not None and self.inject.matches("estimator", "estimate", None):
            return Estimate(value=self.inject.probability(), method="injected")
        return _init(self.t).estimate

    async def conditional(
        self, claim: Claim, dec: Decomposition, i: int, prefix: tuple[int, ...],
        ctx: DebateContext,
    ) -> Estimate:
        k = ctx.config.depth - len(ctx.rounds)
        if self.at.replayed(k, "estimate"):
            rd = self.rounds[k]
            on_path = list(prefix) == rd.z[:i] or not prefix
            if on_path and i < len(rd.estimates):
                return rd.estimates[i]
            if rd.table is None:
                raise UserError(f"round {k} of {self.t.id} recorded no b_{i + 1} at {prefix}")
            method = rd.estimates[0].method if rd.estimates else "recorded"
            return Estimate(value=rd.table[i][outcome_index(list(prefix))], method=method)
        if self.inject is not None and self.inject.matches(
            "estimator", "estimate", k, i, tuple(prefix)
        ):
            return Estimate(value=self.inject.probability(), method="injected")
        out: Estimate = await self.live.conditional(claim, dec, i, prefix, ctx)
        return out


def spec_of(t: Transcript) -> DebateSpec:
    """The debate specification a recorded transcript was run from."""
    m = t.meta
    if t.item is None or "gold" not in m:
        raise UserError(f"{t.id}: the transcript was not written by a run (no item or gold)")
    return DebateSpec(
        debate_id=t.id,
        protocol=t.protocol,
        variant=str(m.get("variant", "")),
        item=Item.model_validate(t.item),
        index=int(m.get("item_index", 0)),
        seed=t.seed,
        gold=str(m["gold"]),
        distractor=str(m.get("distractor", "")),
        shown=tuple(m.get("shown") or ("", "")),
        answer=m.get("assigned"),
    )


def swap_settings(role: str, model: str | dict[str, Any] | ModelSettings) -> ModelSettings:
    """What ``swap`` gives ``role``: a model string, or a model as a config spells one
    (``{"model": "scripted", "options": {"replies": [...]}}``); a field that cannot be is one
    line naming the role and the field."""
    if isinstance(model, ModelSettings):
        return model
    data = {"model": model} if isinstance(model, str) else model
    try:
        return ModelSettings.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(part) for part in err["loc"]) or "model"
        raise UserError(f"swap {role}: {where}: {err['msg']}") from None


def team_for(
    config: ExperimentConfig | dict[str, Any],
    swap: Mapping[str, str | dict[str, Any] | ModelSettings] | None = None,
    models: dict[str, Model] | None = None,
) -> Team:
    """The team of a run's config, with the models of ``swap`` ({role or seat: a model
    string, or a model with its settings as a config spells one, see :func:`swap_settings`};
    a seat, ``debater B`` or a protocol's ``critic``, gets the model as its own, a role
    section the model's fields given, its other options dropped);
    ``swap={"judge": <a judge kind>}`` (``oracle``, ``deferred``, a plugin's) changes the
    judge's kind instead."""
    cfg = config if isinstance(config, ExperimentConfig) else validate(
        {k: v for k, v in config.items() if k != "servers"}
    )
    update: dict[str, Any] = {}
    seats = dict(cfg.seats)
    for role, model in (swap or {}).items():
        if role not in SECTIONS and role in SEAT_ROLES:  # a seat: its own model
            seats[seat_key(role)] = swap_settings(role, model)
            update["seats"] = seats
            continue
        if role not in SECTIONS:
            raise UserError(
                f"swap: unknown role {role!r} ({', '.join(SECTIONS)}, or a seat: "
                f"{', '.join(s for s in SEAT_ROLES if s not in SECTIONS)})"
            )
        section = getattr(cfg, role)
        if role == "judge" and isinstance(model, str) and model in JUDGES:  # a judge kind
            update[role] = section.model_copy(update={"kind": model})
        else:
            given = swap_settings(role, model)
            fields = given.model_dump(include=given.model_fields_set)
            update[role] = section.model_copy(update={"options": {}, **fields})
    cfg = cfg.model_copy(update=update)
    if models is None:
        models = build_models(
            cfg.role_settings(), cache_dir=cfg.cache_dir, use_cache=cfg.use_cache,
            model_concurrency=cfg.model_concurrency, max_retries=cfg.max_retries,
        )
        preload(models)
    prompts = Prompts(resolve_path(cfg.prompts_dir) if cfg.prompts_dir else None)
    return Team(models, prompts, cfg.prover, cfg.estimator, cfg.judge, static_seats(cfg.seats))


def preload(models: dict[str, Model]) -> None:
    """Load every local model's weights now, one after another, as the experiment runner
    does, so that the debates a reward function plays at once never load lazily together."""
    seen: set[int] = set()
    for m in models.values():
        if id(m) in seen or not m.backend.profile.load:
            continue
        seen.add(id(m))
        m.backend.load()


def _seed_beliefs(prover: Prover, t: Transcript, at: ForkPoint) -> None:
    """Give an unswapped prover the beliefs it had formed in the replayed rounds, so that it
    asks again exactly what it asked in the original (a cache of its own answers)."""
    if not isinstance(prover, BelievingProver):
        return
    beliefs = prover.beliefs
    known = t.meta.get("prover_beliefs") or {}
    for rd in t.rounds:
        if at.replayed(rd.k, "direction"):
            subs = rd.decomposition.subclaims if rd.decomposition else []
            texts = [rd.claim.text, *(s.text for s in subs)]
            for text in texts:
                if text in known:
                    beliefs[text] = float(known[text])


class ReplayTeam(Team):
    """The team a fork runs the protocol with: each agent replays ``t`` up to the fork point
    and is the live one (``team``'s, or the injection) from there."""

    def __init__(
        self, team: Team, t: Transcript, point: Any, inject: Injection | None,
        swapped: tuple[str, ...] = (),
    ) -> None:
        models = dict(team.models)
        protocol = protocol_of(t)
        if isinstance(protocol, SpeechProtocol):  # every seat's model answers its replayed speeches
            for key in {team.key_of(seat) for seat in protocol.seats} | {"prover"}:
                if key in team.models:
                    models[key] = ReplayModel(team.models[key], t, point, inject)  # type: ignore[assignment]
        super().__init__(
            models, team.prompts, team.prover, team.estimator, team.judge, team.seats
        )
        self.base, self.t, self.point, self.inject = team, t, point, inject
        self.swapped = swapped

    def make_prover(self) -> Any:
        live = self.base.make_prover()
        if "prover" not in self.swapped and isinstance(self.point, ForkPoint):
            _seed_beliefs(live, self.t, self.point)
        return ReplayProver(live, self.t, self.point, self.inject)

    def make_estimator(self) -> Any:
        return ReplayEstimator(self.base.make_estimator(), self.t, self.point, self.inject)

    def make_naive_prover(self, answer: int) -> Any:
        live = self.base.make_naive_prover(answer)
        return ReplayNaiveProver(live, self.t, self.point, self.inject)

    def make_challenger(self) -> Any:
        return ReplayChallenger(self.base.make_challenger(), self.t, self.point, self.inject)


async def fork(
    t: Transcript,
    team: Team,
    at: int,
    *,
    act: str = "direction",
    swapped: tuple[str, ...] = (),
    inject: Injection | None = None,
    speaker: str | None = None,
    step: int | None = None,
) -> Transcript:
    """Replay ``t`` with every decision before the fork point as recorded and ``team``'s
    agents from there on, through the protocol's own run with a :class:`ReplayTeam`.

    A protocol with rounds of claims (``recursive``: prover-estimator and naive recursive
    debate): the fork point is round ``at`` (0 <= at <= depth) and, within it, ``act`` (the
    decisions of a round in order: direction, decompose, estimate/value, recurse; evidence,
    verdict at the leaf). A protocol with speeches (two-sided debate, consultancy): speeches
    of rounds before ``at`` (1 <= at <= rounds + 1) are replayed, and within round ``at``
    those before the first speech of ``speaker``, or before its speech number ``step`` (from
    1, in speaking order; neither: the whole round is live). Every recorded turn replays as
    itself, in step order, a seat that speaks more than once a round included. Any other
    protocol (direct judge): only the judge plays (``at`` is ignored). Which applies is read
    from the protocol's family (:class:`~llmdebate.protocols.families.RecursiveProtocol`,
    :class:`~llmdebate.protocols.families.SpeechProtocol`).
    """
    protocol = protocol_of(t)
    kind = team.judge.kind
    if not isinstance(protocol, RecursiveProtocol) and not JUDGES.entry(kind).can(WHOLE_DEBATES):
        raise UserError(
            f"a {t.protocol} debate ends with the judge's choice between two answers: judge "
            f"kind {kind!r} rules on leaf claims only (swap the judge to "
            f"{' or '.join(JUDGES.with_capability(WHOLE_DEBATES))})"
        )
    point: Any
    if isinstance(protocol, RecursiveProtocol):
        d = t.config.depth
        if not 0 <= at <= d:
            raise UserError(f"fork round must be in 0..{d} (got {at})")
        if act not in ORDER:
            raise UserError(f"fork act must be one of {', '.join(ORDER)} (got {act!r})")
        point = ForkPoint(at, act)
    elif isinstance(protocol, SpeechProtocol):
        point = speech_point(t, at, speaker, step)
    else:  # only the judge plays
        point = None
    spec = spec_of(t)
    log = replayed_calls(t, point)
    replay = ReplayTeam(team, t, point, inject, swapped)
    try:
        out = await protocol.run(spec, replay, settings_of(t), log)
    except ReplyError as exc:
        raise InvalidOutputError(f"injected reply: {exc}") from exc
    out.meta.update(spec.meta())
    _finish(t, out, at, swapped, inject)
    if "seats" not in out.meta:  # who held every seat in the fork (a swapped one: its model)
        record_seats(out, team, spec.gold, spec.distractor)
    return out


def _finish(
    t: Transcript, out: Transcript, at: int, swapped: tuple[str, ...], inject: Injection | None
) -> None:
    """The run's own meta of a replayed debate: as recorded when nothing changed, else where
    it was forked from."""
    same = not swapped and inject is None
    for key in ("wall_s", "retries", "servers", "seats") if same else ("servers",):
        if key in t.meta:
            out.meta[key] = t.meta[key]
    if not same:
        out.meta["forked"] = {
            "from": t.id, "at": at, "swapped": list(swapped), "injected": inject is not None
        }
        out.meta["retries"] = sum(c.retries for c in out.calls)
