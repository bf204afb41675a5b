"""The settings of the agents of each role, as the experiment config holds them.

One section per role (``prover``, ``estimator``, ``judge``); every field is also a flag of
every command that takes a config. The agents of :mod:`llmdebate.agents.factory` are built
from these sections.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

from llmdebate.agents.judge_registry import JUDGES, USES_MODEL
from llmdebate.beliefs import BELIEF_SOURCES
from llmdebate.core.schemas import Ruling
from llmdebate.elicit import METHODS, ProbMethod
from llmdebate.errors import UserError
from llmdebate.models.backends import BACKENDS, MODEL_STRING_HELP, backend_entry, options_model
from llmdebate.models.providers import CHAT_ONE_PROMPT
from llmdebate.models.text_prompt import ChatTemplate, load_chat_template

# Option names that hold a secret: refused in a config, which is written into the run directory.
SECRET_KEY = re.compile(r"(api[_-]?key|token|secret|password|passwd|authorization)", re.I)


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


def _declared(options: type[Any] | None) -> set[str]:
    """The option names a backend's options model declares."""
    if isinstance(options, type) and issubclass(options, BaseModel):
        return set(options.model_fields)
    return set()


def _option_error(key: str, value: Any, message: str) -> ValidationError:
    """An error located at ``options.<key>`` (so that a config error names the key's line)."""
    detail = InitErrorDetails(type=PydanticCustomError("option", message), loc=(key,), input=value)
    return ValidationError.from_exception_data("options", [detail])


def check_options(model: str, options: dict[str, Any]) -> None:
    """The options a backend reads up front (``endpoint``, ``structured``, ``chat_template``
    ...), checked by the one options model of the model string
    (:func:`~llmdebate.models.backends.options_model`: the backend's own, a wrapped
    backend's, the wrapper's): a pydantic error located at the option.
    An option that only other backends declare is refused, naming them."""
    backend = model.partition("/")[0]
    if backend not in BACKENDS:  # an unknown model is reported by its own check
        return
    composed = options_model(model)  # the backend's own options, its inner's, the wrapper's
    own = _declared(composed)
    for key in options:
        others = [e.name for e in BACKENDS.entries() if key in _declared(e.options)]
        if others and key not in own:
            takers = ", ".join(f"{n}/" for n in others)
            raise _option_error(
                key, options[key], f"only {takers} models take {key} (this is {model})"
            )
        if composed is not None and key not in own and composed.model_config.get(
            "extra"
        ) == "forbid":
            raise _option_error(
                key, options[key],
                f"{model} takes no option {key!r}; its options: {', '.join(sorted(own))}",
            )
    if composed is not None:
        composed.model_validate(options)
    chat = backend == "openai" and options.get("endpoint") != "completions"
    if chat and options.get("batch_prompts"):
        raise _option_error("batch_prompts", True, CHAT_ONE_PROMPT)
    source = options.get("chat_template")
    if source is not None:
        if backend == "openai" and options.get("endpoint") != "completions":
            raise _option_error(
                "chat_template", source, "chat_template applies only with endpoint: completions"
            )
        try:
            ChatTemplate(load_chat_template(source))
        except UserError as exc:
            raise _option_error("chat_template", source, str(exc)) from None


def refuse_logprobs(model: str, field: str, method: str) -> None:
    """A backend that returns no logprobs (capability ``no-logprobs``) asked for them:
    refused at the method's field, so that the error names the role's field or flag."""
    name = model.strip().partition("/")[0]
    if method == "logprobs" and name in BACKENDS and BACKENDS.entry(name).can("no-logprobs"):
        raise _option_error(
            field, method, f"{model} returns no logprobs: use sampling or verbalised"
        )


class ModelSettings(_Section):
    """Which model plays a role, and how it is reached."""

    model: Annotated[str, MODEL_STRING_HELP] = "local"
    """Model string: <backend>/<model id>, or a backend's bare name (local, scripted)."""
    base_url: str | list[str] | None = None
    """Server URL of an OpenAI-compatible or Anthropic endpoint (default: the provider's); a
    list of several: replicas of one model, each request to the least loaded."""
    api_key_env: str | None = None
    """Environment variable holding the API key (default: the provider's usual one)."""
    options: dict[str, Any] = Field(default_factory=dict)
    """Backend options as JSON (e.g. {"requests_per_minute": 500}); never secrets."""
    context_length: int | None = Field(default=None, ge=1)
    """The model's context window in tokens: a prompt that cannot fit fails its debate before
    it is sent (default: what the backend reports, if it does; else no check)."""

    @field_validator("model")
    @classmethod
    def _known_model(cls, v: str) -> str:
        try:  # refused here, so that the error names the flag or file:line:field
            backend_entry(v.strip())
        except UserError as exc:
            raise ValueError(str(exc)) from None
        return v

    @field_validator("base_url")
    @classmethod
    def _urls(cls, v: str | list[str] | None) -> str | list[str] | None:
        if isinstance(v, list):
            if not v:
                raise ValueError("give at least one URL")
            if len(set(v)) != len(v):
                raise ValueError("a URL is listed twice")
            return v[0] if len(v) == 1 else v
        return v

    @field_validator("options")
    @classmethod
    def _no_secrets(cls, v: dict[str, Any]) -> dict[str, Any]:
        for key in v:
            if SECRET_KEY.search(str(key)):
                raise ValueError(
                    f"option {key!r} looks like a secret, and the configuration is saved in the "
                    "run directory: put it in an environment variable and name that variable "
                    "in api_key_env"
                )
        return v

    @field_validator("options")
    @classmethod
    def _known_options(cls, v: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        model = info.data.get("model")
        if isinstance(model, str):
            check_options(model.strip(), v)
        return v


BestOfAct = Literal["decompose", "direction", "speech"]


def _decompose_only() -> list[BestOfAct]:
    return ["decompose"]


def _belief_source(name: str) -> str:
    if name not in BELIEF_SOURCES:
        raise ValueError(BELIEF_SOURCES.unknown(name))
    return name


BeliefSourceName = Annotated[str, AfterValidator(_belief_source), BELIEF_SOURCES]
"""A registered prover belief source (:data:`~llmdebate.beliefs.BELIEF_SOURCES`)."""


class BeliefSettings(_Section):
    """Where the prover's own beliefs (its direction and recursion with ``belief``) come
    from (:mod:`llmdebate.beliefs`)."""

    source: BeliefSourceName = "model"
    """model: the prover's model, by belief_method; table: a bounded prover, P(the leaf
    judge says True | a feature of the claim) estimated on other claims (table names it);
    oracle: an omniscient prover, each claim's exact truth."""
    table: str | None = None
    """The table of a table source: a shipped table's name (divisors-polarity-width) or a
    JSON file written by llmdebate.beliefs.build_table."""
    shift: float = Field(default=0.0, ge=-1.0, le=1.0)
    """A known bias added to every belief of a table or oracle source (clipped to [0, 1])."""
    shuffle_seed: int | None = None
    """A table source's beliefs shuffled across claims: each claim gets the belief of a cell
    drawn at random (by this seed and the claim's text) with the cells' frequencies."""


class ProverSettings(ModelSettings):
    assignment: Literal["paired", "honest", "dishonest", "alternate", "choose"] = "paired"
    """Which answer the prover (the consultant) defends: paired runs every item twice, once
    for the gold answer and once for a wrong one; alternate takes gold on even items; choose
    lets the model answer (asymmetric protocols only)."""
    direction: Literal["belief", "model"] = "belief"
    """belief: eq. 13 on the prover's own probability; model: the model picks."""
    recursion: Literal["belief", "model"] = "belief"
    """belief: the subclaim where B is furthest from the prover's own view; model: it picks."""
    decomposer: Literal["model", "formal"] = "model"
    """model: the model writes decompositions; formal: the item's own (problem structure or
    gold facts) where it has one, else the model."""
    belief_method: ProbMethod = "logprobs"
    """How the prover's own probabilities are elicited (with beliefs.source model)."""
    beliefs: BeliefSettings = Field(default_factory=BeliefSettings)
    """Where the prover's own beliefs come from: its model (default), a bounded table, or
    the oracle (llmdebate.beliefs)."""
    samples: int = Field(default=8, ge=1)
    """Samples per probability with the sampling method."""
    temperature: float = Field(default=0.0, ge=0.0)
    """Temperature of the prover's and debaters' generations."""
    max_tokens: int = Field(default=400, ge=1)
    """Tokens per generation (decompositions, evidence, speeches)."""
    max_attempts: int = Field(default=3, ge=1)
    """Attempts at a valid structured reply before the debate fails."""
    best_of: int = Field(default=1, ge=1, le=64)
    """Decompositions the prover writes at each round: each is scored by its exact expected
    reward over the estimator's draws and the best is played (the others are kept in the
    call log as preference pairs for export)."""
    keep_invalid: bool = False
    """When every attempt at a decomposition fails only a check the schema cannot express (a
    subclaim repeating its claim), play the last one, marked invalid, instead of failing."""
    max_words: int | None = Field(default=None, ge=1)
    """Words per speech (two-sided debate, consultancy): one re-ask when over, then a cut at a
    sentence end with a visible marker (None: no limit)."""
    min_words: int | None = Field(default=None, ge=0)
    """Fewest words per speech: one re-ask when under, then kept as it is (None: no minimum)."""
    quote_words: int | None = Field(default=None, ge=0)
    """Quoted words per speech: one re-ask when over, then the quotes past the budget are left
    out of what the judge reads (None: no budget)."""
    quote_penalty: float = Field(default=0.0, ge=0.0)
    """Weight of the optional training term that penalises quotes not found in the passage:
    -weight per unverified quote, recorded per speaker in meta.quote_penalty (0: off)."""
    scratchpad: bool = True
    """Speeches may open with a private <thinking> scratchpad that no judge or opponent sees
    (kept in the transcript); only the <argument> is shown."""
    best_of_acts: list[BestOfAct] = Field(default_factory=_decompose_only)
    """The decisions best_of applies to: decompose, and direction (with direction: model; each
    sampled direction scored by its exact expected reward for the round's decomposition), and
    speech (two-sided debate, consultancy: each speech scored by the judge's probability of the
    debater's answer after it)."""


class EstimatorSettings(ModelSettings):
    method: ProbMethod = "logprobs"
    """How the estimator's (and naive debate's challenger's) probabilities are elicited."""
    samples: int = Field(default=8, ge=1)
    """Samples per probability with the sampling method."""
    temperature: float = Field(default=1.0, ge=0.0)
    """Sampling temperature."""
    independent: bool = False
    """Ask all b_i of a round in one batch, ignoring z_<i (cheaper; not the paper's protocol)."""

    @model_validator(mode="after")
    def _by_logprobs(self) -> EstimatorSettings:
        refuse_logprobs(self.model, "method", self.method)
        return self


PassageView = Literal["hidden", "shown"]


def _both_views() -> list[PassageView]:
    return ["hidden", "shown"]


def _judge_method(name: str) -> str:
    if name != "generate" and name not in METHODS:
        names = ", ".join((*METHODS.names(), "generate"))
        raise ValueError(f"unknown judge method {name!r}: choose from {names}")
    return name


def _judge_kind(name: str) -> str:
    if name not in JUDGES:
        raise ValueError(JUDGES.unknown(name))
    return name


JudgeKind = Annotated[str, AfterValidator(_judge_kind)]
"""A registered judge kind (:data:`~llmdebate.agents.judge_registry.JUDGES`)."""

JudgeMethod = Annotated[str, AfterValidator(_judge_method)]
"""A registered probability method (:data:`~llmdebate.elicit.ProbMethod`) or ``generate``."""


class JudgeSettings(ModelSettings):
    kind: JudgeKind = "llm"
    """A registered judge kind (:data:`~llmdebate.agents.judge_registry.JUDGES`). Built in —
    llm: a model rules; oracle: the gold truth of the leaf; oracle-or-llm: gold where known,
    else the model; deferred or human: no verdict, the debate waits for a person (every
    protocol stops where the judge would decide; see llmdebate assign / serve / judge)."""
    method: JudgeMethod = "logprobs"
    """How the judge's probability is elicited: a registered probability method, or generate
    (a True/False word, no probability)."""
    ruling: Ruling = "argmax"
    """How a model judge rules the leaf from its probability P[O = 1] (one judge for the paid
    and the expected payoff): argmax, O = 1[P >= 1/2], a deterministic judge as the paper's
    oracle O, so the expected payoff uses O; sample, O = 1[u < P] with u drawn from the
    debate's recorded seed, a random judge, so the expected payoff uses P. sample needs a
    probability method (not generate)."""
    samples: int = Field(default=8, ge=1)
    """Samples per probability with the sampling method."""
    temperature: float = Field(default=1.0, ge=0.0)
    """Sampling temperature."""
    interactive: bool = False
    """Protocols with the capability asks_questions (two-sided debate, consultancy): after
    every round the model judge may ask the debaters a question (answered in the next
    round) or end the debate and decide (a judge_turn reply); the rounds setting is then the
    most it may hear."""
    turn_cost: float = Field(default=0.05, ge=0.0)
    """Interactive judge: what each round it asks for costs in its score, log_b(p) - cost x
    rounds asked (Michael et al. 2023: 0.05 in bits)."""
    log_base: float = Field(default=2.0, gt=1.0)
    """Interactive judge: base of its log score (2: bits)."""
    passage: PassageView = "hidden"
    """What the judge sees of an item's passage: hidden (only the debaters' quotes, marked
    verified or unverified) or shown (the whole passage). Debaters, consultant, prover and
    estimator always see it."""
    direct_passage: list[PassageView] = Field(default_factory=_both_views)
    """The direct protocol on items with a passage: one debate per entry, variant blind
    (hidden: the judge answers from the question alone) and expert (shown)."""

    @field_validator("ruling")
    @classmethod
    def _ruling_needs_probability(cls, v: str, info: ValidationInfo) -> str:
        if v == "sample" and info.data.get("method") == "generate":
            raise ValueError(
                "sample draws the verdict from the judge's probability, and method generate "
                "gives none: use method logprobs, sampling or verbalised, or ruling argmax"
            )
        return v

    @model_validator(mode="after")
    def _by_logprobs(self) -> JudgeSettings:
        if JUDGES.entry(self.kind).can(USES_MODEL):  # the kinds that ask a model
            refuse_logprobs(self.model, "method", self.method)
        return self
