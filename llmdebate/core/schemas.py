"""Pydantic schemas: claims, decompositions with combination rules, estimates, rounds, transcripts.

Pure data. Every transcript carries :data:`SCHEMA_VERSION`. Rewards are never computed here:
they come from :mod:`llmdebate.core.scoring` and are only stored. The only code this module runs is
validation; a decomposition's rule is checked with :mod:`llmdebate.core.rule_grammar`, which sits
below this module (``rule_grammar <- schemas <- rules <- scoring``: no cycle).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from typing_extensions import Self

from llmdebate.core.rule_grammar import compile_table

SCHEMA_VERSION = 2
"""2: a call record's decision, round, index and prefix are one ``tag`` (1: flat; still read)."""

RuleKind = Literal["and", "or", "at_least", "majority", "expr"]
Variant = Literal["figure2", "marginal", "independent", "commit", "commit-marginal"]
"""How a round of prover-estimator debate hands a probability to the next (docs/protocol.md):

* ``figure2`` (the paper): B states b_i = P(z_i = 1 | z_<i) in order, z_i ~ Bernoulli(b_i);
  A picks j after the draws; p_(k-1) = b_j, the conditional at the *sampled* prefix.
* ``marginal``: as figure2, but p_(k-1) is B's marginal P(z_j = 1) under its own joint.
* ``independent``: B states q probabilities without conditioning; the z_i are independent;
  p_(k-1) = b_j.
* ``commit``: as figure2, but A commits to j (seeing B's marginals) before the draws.
* ``commit-marginal``: A commits to j before the draws and p_(k-1) is B's marginal for y_j.
"""
VARIANTS: tuple[str, ...] = ("figure2", "marginal", "independent", "commit", "commit-marginal")

MAX_DEBATE_WIDTH = 16
"""A round may ask B for 2^q - 1 conditional probabilities and record the 2^q-entry table."""
MIN_NORMALIZER = 1e-300
"""r^(d+1) must stay a normal float: payoffs are reported in its units (and divided by it)."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")

    @classmethod
    def trusted(cls, **values: Any) -> Self:
        """An instance built from values of this package's own making, without validation.

        For records made on every model call: pydantic's ``model_construct`` inspects the
        signature of every default factory on every call (about 20 us a record, more than
        validating); this copies precomputed defaults (about 2 us). Unknown or missing
        required fields are still refused (``TypeError``)."""
        spec = _TRUSTED.get(cls) or _trusted_spec(cls)
        names, required, static, factories = spec
        if not values.keys() <= names or not required <= values.keys():
            unknown = sorted(values.keys() - names)
            missing = sorted(required - values.keys())
            raise TypeError(f"{cls.__name__}.trusted: unknown {unknown}, missing {missing}")
        data = dict(static)
        data.update(values)
        for name, factory in factories:
            if name not in values:
                data[name] = factory()
        m = cls.__new__(cls)
        object.__setattr__(m, "__dict__", data)
        object.__setattr__(m, "__pydantic_fields_set__", set(values))
        object.__setattr__(m, "__pydantic_extra__", None)
        object.__setattr__(m, "__pydantic_private__", None)
        return m


_TrustedSpec = tuple[
    frozenset[str], frozenset[str], dict[str, Any], tuple[tuple[str, Callable[[], Any]], ...]
]
_TRUSTED: dict[type, _TrustedSpec] = {}


def _trusted_spec(cls: type[_Model]) -> _TrustedSpec:
    """Field names (in order, as the keys of ``static``), required names, plain defaults and
    default factories of ``cls``, for :meth:`_Model.trusted`."""
    if cls.__pydantic_post_init__ or cls.__pydantic_root_model__:
        raise TypeError(f"{cls.__name__} needs model_construct")
    static: dict[str, Any] = {}
    factories: list[tuple[str, Callable[[], Any]]] = []
    required: set[str] = set()
    for name, field in cls.__pydantic_fields__.items():
        static[name] = None  # keeps the fields' order in the instance's __dict__
        if field.is_required():
            required.add(name)
        elif field.default_factory is not None:
            factories.append((name, field.default_factory))  # type: ignore[arg-type]
        else:
            static[name] = field.default
    spec = (frozenset(static), frozenset(required), static, tuple(factories))
    _TRUSTED[cls] = spec
    return spec


class Claim(_Model):
    """A statement whose truth is debated.

    ``data`` holds a machine-readable payload for formal problems (e.g. an interval);
    ``truth`` is the gold value where known. Neither is shown to language-model agents.
    """

    text: str
    id: str = "x"
    data: dict[str, Any] = Field(default_factory=dict)
    truth: int | None = None

    @field_validator("truth")
    @classmethod
    def _bit(cls, v: int | None) -> int | None:
        if v is not None and v not in (0, 1):
            raise ValueError(f"truth must be 0 or 1 (got {v})")
        return v


class CombinationRule(_Model):
    """How the truth of a claim follows from the truths z_1..z_q of its subclaims.

    ``and`` / ``or`` / ``majority`` need nothing else; ``at_least`` needs ``k``; ``expr`` needs a
    boolean expression over ``y1..yq`` in the grammar of :mod:`llmdebate.core.rules`.
    """

    kind: RuleKind
    k: int | None = None
    expr: str | None = None

    @model_validator(mode="after")
    def _fields(self) -> CombinationRule:
        if self.kind == "at_least" and (self.k is None or self.k < 0):
            raise ValueError("an 'at_least' rule needs k >= 0")
        if self.kind == "expr" and not (self.expr and self.expr.strip()):
            raise ValueError("an 'expr' rule needs a non-empty expression")
        return self

    def describe(self) -> str:
        if self.kind == "at_least":
            return f"at least {self.k} true"
        if self.kind == "expr":
            return str(self.expr)
        return self.kind.upper()


class Decomposition(_Model):
    """Subclaims y_1..y_q and the rule M_D such that the parent is true iff M_D(z) = 1."""

    subclaims: list[Claim] = Field(min_length=1)
    rule: CombinationRule
    rationale: str | None = None

    @model_validator(mode="after")
    def _rule_fits(self) -> Decomposition:
        # raises RuleError with a one-line message (the transcript reader adds file and line)
        compile_table(self.rule.kind, self.rule.k, self.rule.expr, len(self.subclaims))
        return self

    @property
    def width(self) -> int:
        return len(self.subclaims)


class Estimate(_Model):
    """A probability that a claim is true, with how it was obtained and the raw evidence."""

    value: float = Field(ge=0.0, le=1.0)
    method: str  # a probability method's name (llmdebate.elicit), "strategy" or "oracle"
    evidence: dict[str, Any] = Field(default_factory=dict)


class Evidence(_Model):
    """What the prover supplies for the leaf claim, written in a fresh context."""

    text: str = ""
    data: dict[str, Any] = Field(default_factory=dict)


Ruling = Literal["argmax", "sample"]
"""How a model judge turns its probability P[O = 1] into its verdict O (docs/protocol.md):
``argmax`` rules O = 1[P >= 1/2], a deterministic judge, so its expected leaf reward uses O;
``sample`` draws O = 1[u < P] with u the first draw of the debate's verdict stream
(:func:`llmdebate.core.scoring.verdict_draw`), so its expected leaf reward uses P."""


class Verdict(_Model):
    """The judge's ruling O on the leaf claim; ``probability`` is P[O = 1] where known.

    ``ruling`` (:data:`Ruling`) says how a model judge chose O from P, and ``u`` is the
    uniform draw of a sampling judge; both None for a verdict recorded without them (a
    person, the oracle, a transcript written before they were recorded)."""

    value: int
    probability: float | None = Field(default=None, ge=0.0, le=1.0)
    judge: str = ""
    rationale: str | None = None
    ruling: Ruling | None = None
    u: float | None = Field(default=None, ge=0.0, lt=1.0)

    @field_validator("value")
    @classmethod
    def _bit(cls, v: int) -> int:
        if v not in (0, 1):
            raise ValueError(f"a verdict is 0 or 1 (got {v})")
        return v

    @model_validator(mode="after")
    def _drawn(self) -> Self:
        if self.ruling == "sample" and (self.u is None or self.probability is None):
            raise ValueError("a sampled verdict records its probability and its draw u")
        return self


class DebateConfig(_Model):
    """Protocol parameters, validated: 0 < ε < 1/2, 0 < ρ < 1, depth ≥ 0, 1 ≤ width ≤ 16,
    and r^(d+1) >= 1e-300 with r = ε(1-ρ)/4 (payoffs are reported in units of r^(d+1)).

    ``variant`` selects the protocol variant (:data:`Variant`); Figure 2 is the default.
    """

    epsilon: float = 0.2
    rho: float = 0.5
    depth: int = 2
    width: int = 3
    seed: int = 0
    expected_rewards: bool = True
    early_stop: bool = True
    variant: Variant = "figure2"

    @field_validator("epsilon")
    @classmethod
    def _eps(cls, v: float) -> float:
        if not 0.0 < v < 0.5:
            raise ValueError(f"epsilon must satisfy 0 < epsilon < 1/2 (got {v})")
        return v

    @field_validator("rho")
    @classmethod
    def _rho(cls, v: float) -> float:
        if not 0.0 < v < 1.0:
            raise ValueError(f"rho must satisfy 0 < rho < 1 (got {v})")
        return v

    @field_validator("depth")
    @classmethod
    def _depth(cls, v: int) -> int:
        if v < 0:
            raise ValueError(f"depth must be >= 0 (got {v})")
        return v

    @field_validator("width")
    @classmethod
    def _width(cls, v: int) -> int:
        if v < 1:
            raise ValueError(f"width must be >= 1 (got {v})")
        if v > MAX_DEBATE_WIDTH:
            raise ValueError(
                f"width must be <= {MAX_DEBATE_WIDTH} (got {v}): a round's probability table "
                "has 2^width entries"
            )
        return v

    @field_validator("seed")
    @classmethod
    def _seed(cls, v: int) -> int:
        if v < 0:
            raise ValueError(f"seed must be >= 0 (got {v})")
        return v

    @model_validator(mode="after")
    def _representable(self) -> DebateConfig:
        # r = ε(1-ρ)/4 as in scoring.reward_ratio (tests/test_scoring.py checks they agree)
        log_r = math.log(self.epsilon * (1.0 - self.rho) / 4.0)
        if (self.depth + 1) * log_r < math.log(MIN_NORMALIZER):
            most = max(int(math.log(MIN_NORMALIZER) / log_r) - 1, 0)
            raise ValueError(
                f"depth must be <= {most} at epsilon={self.epsilon:g}, rho={self.rho:g} "
                f"(got {self.depth}): r^(depth+1) would underflow below {MIN_NORMALIZER:g}"
            )
        return self


class DecisionTag(_Model):
    """The protocol decision a model call served, stated by the protocol before the call
    (:func:`llmdebate.core.decisions.deciding`) and recorded with the call when it is made."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    decision: str
    """answer, estimate, direction, decompose, recurse, evidence, verdict, value (the protocol's
    decisions); ``scoring`` for the calls that score a best-of-n candidate."""
    round: int | None = None
    """The round k the decision belongs to (None: initialisation)."""
    index: int | None = None
    """For an estimator's b_i: the subclaim index i (0-based)."""
    prefix: list[int] | None = None
    """For an estimator's b_i: the earlier outcomes z_<i it was asked under."""


_FLAT_TAG = ("decision", "round", "index", "prefix")
"""The tag's fields as schema version 1 kept them, flat on the record."""


class ModelCallRecord(_Model):
    """One call to a model, as recorded in a transcript (never with an API key).

    The transport fields say what was sent and what came back; ``tag`` says which protocol
    decision the call served (None for calls outside a recursive debate). ``decision``,
    ``round``, ``index`` and ``prefix`` read the tag's fields. Records of schema version 1,
    which kept those four fields flat on the record, load into ``tag``.
    """

    role: str
    act: str = ""
    model: str
    messages: list[dict[str, Any]] = Field(default_factory=list)
    completion: str | None = None
    logprobs: list[dict[str, Any]] | None = None
    samples: list[str] | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float = 0.0
    cached: bool = False
    latency_s: float = 0.0
    error: str | None = None
    retries: int = 0
    constrained: bool | None = None
    """Whether the backend enforced the reply's schema (None: no schema was asked for)."""
    invalid: str | None = None
    """Why the reply failed validation (structured acts; None: valid or not checked)."""
    batch_size: int | None = None
    """Prompts in the request that answered this call, when more than one."""
    notes: dict[str, Any] = Field(default_factory=dict)
    """Extra facts about the call (e.g. a best-of-n candidate's expected reward)."""
    tag: DecisionTag | None = None
    """The protocol decision the call served, set when the call was made."""

    @model_validator(mode="before")
    @classmethod
    def _fold_flat_tag(cls, data: Any) -> Any:
        """``decision``, ``round``, ``index``, ``prefix`` given flat (schema version 1, or a
        caller's keywords) become the ``tag``."""
        if not isinstance(data, dict) or not any(k in data for k in _FLAT_TAG):
            return data
        data = dict(data)
        flat = {k: data.pop(k) for k in _FLAT_TAG if k in data}
        if data.get("tag") is not None:
            raise ValueError(f"{', '.join(flat)} given beside the tag that holds them")
        if flat.get("decision") is None:
            stray = sorted(k for k, v in flat.items() if v is not None)
            if stray:
                raise ValueError(f"{', '.join(stray)} given without the decision it belongs to")
            return data
        data["tag"] = flat
        return data

    @property
    def decision(self) -> str | None:
        """The decision the call served (the tag's), None outside a recursive debate."""
        return None if self.tag is None else self.tag.decision

    @property
    def round(self) -> int | None:
        """The round of the decision the call served (None: initialisation, or no tag)."""
        return None if self.tag is None else self.tag.round

    @property
    def index(self) -> int | None:
        """For an estimator's b_i: the subclaim index i."""
        return None if self.tag is None else self.tag.index

    @property
    def prefix(self) -> list[int] | None:
        """For an estimator's b_i: the earlier outcomes z_<i it was asked under."""
        return None if self.tag is None else self.tag.prefix


class InitRecord(_Model):
    """Initialisation: A's answer a, B's p_d, the draw ẑ ~ Bernoulli(p_d), and r_init."""

    claim: Claim
    answer: int
    estimate: Estimate
    u: float
    zhat: int
    reward: float
    expected_reward: float


class RoundRecord(_Model):
    """One round k of a debate (k = depth … 0).

    Prover-estimator debate fills ``p``, ``direction``, ``b``, ``u``, ``z``, ``m``, ``reward``.
    Naive recursive debate fills ``claimed`` (the prover's value for the current claim),
    ``claimed_subclaims`` and ``recurse`` (the opponent's challenge).
    ``table`` holds B's conditional probabilities at every prefix (level i has 2^i entries,
    prefix z_1..z_i read as a binary number with z_1 most significant), when requested.
    """

    k: int
    claim: Claim
    p: float | None = None
    direction: int | None = None
    decomposition: Decomposition | None = None
    estimates: list[Estimate] = Field(default_factory=list)
    b: list[float] = Field(default_factory=list)
    u: list[float] = Field(default_factory=list)
    z: list[int] = Field(default_factory=list)
    m: int | None = None
    table: list[list[float]] | None = None
    expected_m: float | None = None
    recurse: int | None = None
    claimed: int | None = None
    claimed_subclaims: list[int] | None = None
    evidence: Evidence | None = None
    verdict: Verdict | None = None
    reward: float | None = None
    expected_reward: float | None = None

    @field_validator("direction")
    @classmethod
    def _dir(cls, v: int | None) -> int | None:
        if v is not None and v not in (-1, 0, 1):
            raise ValueError(f"a direction is -1, 0 or +1 (got {v})")
        return v


class Turn(_Model):
    """One speech in a free-text protocol (two-sided debate, consultancy, direct judge)."""

    role: str
    round: int = 0
    text: str
    """What the judge and the other speakers read: the argument, quote markup kept."""
    position: str | None = None
    thinking: str | None = None
    """The speaker's private scratchpad (``<thinking>``): never shown to a judge or opponent."""
    quotes: list[dict[str, Any]] | None = None
    """Each quote of ``text`` checked against the item's passage: text, status, spans."""
    rules: dict[str, Any] | None = None
    """The speech rules applied: word-limit decisions (one per attempt) and the quote budget."""


Status = Literal["complete", "awaiting_verdict", "failed"]


class Transcript(_Model):
    """One debate, complete enough to replay and to re-score."""

    schema_version: int = SCHEMA_VERSION
    id: str
    protocol: str = "prover-estimator"
    """A name in :data:`llmdebate.protocols.registry.PROTOCOLS` (checked where a config is read)."""
    config: DebateConfig
    seed: int
    agents: dict[str, str] = Field(default_factory=dict)
    item: dict[str, Any] | None = None
    init: InitRecord | None = None
    rounds: list[RoundRecord] = Field(default_factory=list)
    turns: list[Turn] = Field(default_factory=list)
    status: Status = "complete"
    stopped_early: bool = False
    stop_round: int | None = None
    total: float | None = None
    expected_total: float | None = None
    prover_won: bool | None = None
    calls: list[ModelCallRecord] = Field(default_factory=list)
    failure: str | None = None
    meta: dict[str, Any] = Field(default_factory=dict)

    @field_validator("schema_version")
    @classmethod
    def _version(cls, v: int) -> int:
        if v > SCHEMA_VERSION:
            raise ValueError(
                f"transcript schema version {v} is newer than this llmdebate ({SCHEMA_VERSION})"
            )
        return v
