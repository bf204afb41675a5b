"""The models of a run and the agents of each debate, built from the role settings.

:func:`build_models` makes one :class:`~llmdebate.models.Model` per role (roles with the same
settings share one). A :class:`Team` holds the models, prompts and settings of a run and makes
fresh agents for every debate, so no agent carries state from one debate into another.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from llmdebate.agents.best_of_n import BestOfNProver
from llmdebate.agents.judge_registry import DEFERS, JUDGES
from llmdebate.agents.llm import LLMEstimator, LLMProver
from llmdebate.agents.naive import LLMChallenger, LLMNaiveProver
from llmdebate.agents.settings import (
    EstimatorSettings,
    JudgeSettings,
    ModelSettings,
    ProverSettings,
)
from llmdebate.agents.text_prompts import TextPrompts, wants_text_prompts
from llmdebate.beliefs import make_source
from llmdebate.core.roles import Judge
from llmdebate.core.schemas import Claim, CombinationRule, Decomposition
from llmdebate.data.problems import formal_decomposition
from llmdebate.errors import ConfigError, MissingAPIKeyError
from llmdebate.models import GenerateConfig, Model, get_model
from llmdebate.prompts import Prompts
from llmdebate.records.paths import resolve_path


def _import_ref(ref: str) -> Any:
    """The object named by ``"package.module:attr"`` or ``"path/to/file.py:attr"``."""
    module, _, attr = ref.rpartition(":")
    try:
        if module.endswith(".py"):
            path = resolve_path(module)
            spec = importlib.util.spec_from_file_location(f"_llmdebate_ref_{path.stem}", path)
            if spec is None or spec.loader is None or not path.is_file():
                raise ImportError(f"no such file {path}")
            obj: Any = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(obj)
        else:
            obj = importlib.import_module(module)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError, OSError) as exc:
        raise ConfigError(f"cannot import {ref!r} ({exc})") from None
    return obj


def _model_options(settings: ModelSettings) -> dict[str, Any]:
    opts = dict(settings.options)
    if settings.model == "scripted":
        for key in ("responder", "probabilities"):
            if isinstance(opts.get(key), str) and ":" in opts[key]:
                opts[key] = _import_ref(opts[key])
    return opts


def role_field(role: str) -> str:
    """The config section of a role's model key: ``prover``, ``seats.debater_a``,
    ``tournament.roster.<name>``."""
    kind, _, name = role.partition("/")
    sections = {"seat": f"seats.{name}", "roster": f"tournament.roster.{name}"}
    return sections.get(kind, role) if name else role


def build_models(
    roles: dict[str, ModelSettings],
    *,
    cache_dir: str | None = None,
    use_cache: bool = True,
    model_concurrency: int | None = None,
    max_retries: int = 4,
) -> dict[str, Model]:
    """One :class:`Model` per role; roles with identical settings share one instance."""
    shared: dict[str, Model] = {}
    out: dict[str, Model] = {}
    folder = Path(cache_dir).expanduser() if cache_dir else None
    for role, s in roles.items():
        key = json.dumps(
            [s.model, s.base_url, s.api_key_env, s.options, s.context_length], sort_keys=True
        )
        if key not in shared:
            try:
                shared[key] = get_model(
                    s.model,
                    base_url=s.base_url,
                    api_key_env=s.api_key_env,
                    cache_dir=folder,
                    use_cache=use_cache,
                    max_concurrency=model_concurrency,
                    max_retries=max_retries,
                    **_model_options(s),
                )
            except MissingAPIKeyError as exc:
                raise MissingAPIKeyError(
                    exc.variable,
                    f"the {role}'s model {s.model}",
                    named=exc.named,
                    field=role_field(role),
                ) from None
            if s.context_length is not None:
                shared[key].context_length = s.context_length
        out[role] = shared[key]
    return out


def facts_decomposition(claim: Claim, item: dict[str, Any], width: int) -> Decomposition | None:
    """AND(the item's gold facts hold, given them the claimed answer follows): top claim only.

    The facts are the item's ``facts``, else its gold ``decomposition`` when that is a list of
    statements (a proof chain, as in ProntoQA), not of sub-questions (as in GSM8K).
    """
    steps = item.get("facts") or item.get("decomposition") or []
    if any(str(s).strip().endswith("?") for s in steps):
        steps = []
    facts = [str(f).strip() for f in steps if str(f).strip()]
    if claim.id != "x" or not facts or width < 2:
        return None
    answer = claim.data.get("answer", "")
    y1 = Claim(text="All of these are true: " + " ".join(facts), id="x.1", truth=1)
    y2 = Claim(
        text=f'Given that {" ".join(facts)} the answer to the question "{item["question"]}" '
        f'is "{answer}".',
        id="x.2",
        truth=claim.truth,
    )
    return Decomposition(
        subclaims=[y1, y2],
        rule=CombinationRule(kind="and"),
        rationale="gold facts of the item, then the inference from them",
    )


def item_decomposition(claim: Claim, item: dict[str, Any], width: int) -> Decomposition | None:
    """The item's own decomposition of ``claim``: its problem's structure, else its gold facts."""
    dec = formal_decomposition(claim, item.get("meta") or {}, width)
    return dec if dec is not None else facts_decomposition(claim, item, width)


SEAT_ROLES: dict[str, str] = {
    "debater A": "prover",
    "debater B": "prover",
    "consultant": "prover",
    "prover": "prover",
    "estimator": "estimator",
    "judge": "judge",
}
"""Every seat of a debate (a role of its transcript) and the role section whose settings it
plays with (method, temperature, max_tokens): debaters and consultants speak as the prover.
A protocol's new seats are added when it registers (:func:`add_seat`)."""

SECTIONS = ("prover", "estimator", "judge")


def add_seat(seat: str, role: str | None) -> None:
    """Declare ``seat`` of a protocol, played with the settings (and, unless the config
    gives the seat its own, the model) of role section ``role``; a seat the package knows
    keeps its role, and a new one must name its section."""
    if seat in SEAT_ROLES and role in (None, SEAT_ROLES[seat]):
        return
    if seat in SEAT_ROLES:
        raise ValueError(f"seat {seat!r} plays as {SEAT_ROLES[seat]}, not {role}")
    if role not in SECTIONS[:2]:
        raise ValueError(
            f"new seat {seat!r}: name the role section it plays as in adds.seats "
            f"(prover or estimator), got {role!r}"
        )
    SEAT_ROLES[seat] = role


def seat_key(seat: str) -> str:
    """The config key of a seat: ``debater A`` -> ``debater_a``."""
    return seat.lower().replace(" ", "_")


@dataclass
class Team:
    """The models, prompts and role settings of a run; fresh agents for every debate.

    ``seats`` maps a seat (``debater A``, ``consultant``, ``prover``, ``estimator``) to the key
    of its model in ``models``; a seat not in it plays its role's model (:data:`SEAT_ROLES`).
    """

    models: dict[str, Model]
    prompts: Prompts
    prover: ProverSettings
    estimator: EstimatorSettings
    judge: JudgeSettings
    seats: Mapping[str, str] = field(default_factory=dict)

    def model_for(self, seat: str) -> Model:
        """The model that holds ``seat`` in this debate."""
        key = self.key_of(seat)
        model = self.models.get(key)
        if model is None:
            raise ConfigError(
                f"seat {seat!r} has no model: give it one (seats: {{{seat_key(seat)}: "
                f"{{model: ...}}}}) or declare the role section it plays as (adds.seats)"
            )
        return model

    def key_of(self, seat: str) -> str:
        """The key in ``models`` of the model that holds ``seat``."""
        return self.seats.get(seat, SEAT_ROLES.get(seat, seat))

    def seated(self, seats: Mapping[str, str]) -> Team:
        """This team with ``seats`` (seat -> model key) taken over its own."""
        if not seats:
            return self
        return replace(self, seats={**self.seats, **seats})

    def prompts_for(self, role: str, method: str | None = None) -> Prompts:
        """The prompts of ``role``: plain-text templates (``prompts/text/<act>.j2``) for a
        model that reads plain text, cued for the role's probability ``method``."""
        model = self.models.get(self.key_of(role))
        if model is not None and wants_text_prompts(model.backend):
            return TextPrompts(self.prompts, method)
        return self.prompts

    def make_prover(self) -> LLMProver:
        p = self.prover
        prover = self._llm_prover()
        if p.best_of > 1:
            return BestOfNProver(prover, p.best_of, self.make_estimator, tuple(p.best_of_acts))
        return prover

    def make_answerer(self, seat: str) -> LLMProver:
        """A prover on ``seat``'s model that picks the answer the seat defends (an open role:
        ``prover.assignment: choose``)."""
        return self._llm_prover(seat)

    def _llm_prover(self, seat: str = "prover") -> LLMProver:
        p = self.prover
        return LLMProver(
            self.model_for(seat),
            self.prompts_for(seat, p.belief_method),
            direction=p.direction,
            recursion=p.recursion,
            belief_method=p.belief_method,
            samples=p.samples,
            temperature=p.temperature,
            max_tokens=p.max_tokens,
            max_attempts=p.max_attempts,
            decomposer=p.decomposer,
            formal=item_decomposition,
            keep_invalid=p.keep_invalid,
            beliefs=make_source(p.beliefs),
        )

    def make_estimator(self) -> LLMEstimator:
        e = self.estimator
        return LLMEstimator(
            self.model_for("estimator"),
            self.prompts_for("estimator", e.method),
            method=e.method,
            samples=e.samples,
            temperature=e.temperature,
            independent=e.independent,
        )

    def make_judge(self) -> Judge:
        """The leaf judge of one debate, made by the registered ``judge.kind``."""
        judge: Judge = JUDGES.get(self.judge.kind, where="judge.kind")(self)
        return judge

    @property
    def judge_defers(self) -> bool:
        """True when a person gives every verdict later (a judge kind that defers)."""
        return JUDGES.entry(self.judge.kind).can(DEFERS)

    def judge_name(self) -> str:
        """The judge's name in a transcript: its model, or the kind of a deferred judge."""
        return self.judge.kind if self.judge_defers else self.model_for("judge").name

    def make_naive_prover(self, answer: int) -> LLMNaiveProver:
        return LLMNaiveProver(
            self._llm_prover(),
            self.model_for("prover"),
            self.prompts_for("prover", self.prover.belief_method),
            answer=answer,
            method=self.prover.belief_method,
        )

    def make_challenger(self) -> LLMChallenger:
        return LLMChallenger(
            self.model_for("estimator"),
            self.prompts_for("estimator", self.estimator.method),
            method=self.estimator.method,
        )

    def speech_config(self) -> GenerateConfig:
        """Generation settings of debaters' and consultants' speeches."""
        return GenerateConfig(
            temperature=self.prover.temperature, max_tokens=self.prover.max_tokens
        )
