"""The one configuration of an experiment: every protocol, every role, the dataset, the run.

Loaded from YAML and from flags (every field is also a flag: ``--debate-depth 2``,
``--prover-model openai/gpt-4o-mini``; dict and list fields take JSON). A run names its
``protocols``; comparing protocols is a run with several of them plus ``llmdebate report``.
Field descriptions (the attribute docstrings below) are what ``--help`` shows.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from llmdebate.agents.factory import SEAT_ROLES, seat_key
from llmdebate.agents.judge_registry import ASKS, JUDGES, USES_MODEL, WHOLE_DEBATES
from llmdebate.agents.settings import (
    EstimatorSettings,
    JudgeSettings,
    ModelSettings,
    ProverSettings,
)
from llmdebate.core.schemas import DebateConfig
from llmdebate.data.quality import FILTERS as QUALITY_FILTERS
from llmdebate.errors import FieldError
from llmdebate.protocols.families import RecursiveProtocol, SpeechProtocol
from llmdebate.protocols.registry import PROTOCOLS, get_protocol, named_where
from llmdebate.protocols.topology import Topology, register_topology
from llmdebate.tournament.roster import (
    TournamentSettings,
    check_roster,
    check_seats,
    rostered,
    seat_models,
)


def __getattr__(name: str) -> Any:
    """``PROTOCOL_NAMES``: every registered protocol (read from the registry when asked)."""
    if name == "PROTOCOL_NAMES":
        return PROTOCOLS.names()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class DatasetSettings(_Section):
    path: str = "datasets/divisors.jsonl"
    """A JSONL file in the common schema, GPQA's encrypted .zip, a parquet file or arrow
    folder, or hf:<hub name> (relative paths: the current folder, then the repository)."""
    split: str | None = None
    """Split of a Hugging Face dataset."""
    subset: str | None = None
    """Subset (configuration) of a Hugging Face dataset."""
    fields: dict[str, str] | None = None
    """Hugging Face columns to the common schema, as JSON: {"question": "query", ...}."""
    shuffle_seed: int = Field(default=0, ge=0)
    """Seed of the item order and of every item's choice order."""
    limit: int | None = Field(default=None, ge=1)
    """Use only the first N items."""
    ids: list[str] | None = None
    """Use only these item ids (JSON list)."""
    password: str | None = None
    """Password of an encrypted zip (default for GPQA: the one its authors publish)."""
    format: Literal["auto", "common", "quality", "answers"] = "auto"
    """How the file is read: quality (QuALITY's own files or its questions in the common
    schema: filters, best distractors), answers (a policy's answers with a checker: a
    labelling run, docs/labelling.md), common, or auto (quality when the first record is in
    QuALITY's format or names dataset quality, answers when it names a checker)."""
    filters: str = "all"
    """QuALITY: the questions kept (all, hard, answerable, khan2024, michael2023)."""
    distractor: Literal["best", "random"] = "best"
    """QuALITY: the dishonest answer: best (the option most validators named the best
    distractor) or random (a wrong option drawn from the seed)."""
    pair: bool = False
    """QuALITY: cut every question's choices to the gold answer and its distractor."""
    passage_chars: int | None = Field(default=None, ge=200)
    """Keep only the start of every passage, at most this many characters, cut at a paragraph
    or sentence end (quick runs of a small model; the published studies use whole stories)."""

    @field_validator("filters")
    @classmethod
    def _filters(cls, v: str) -> str:
        if v not in QUALITY_FILTERS:
            raise ValueError(f"{v!r} is not one of {', '.join(QUALITY_FILTERS)}")
        return v


class ReportSettings(_Section):
    bootstrap: int = Field(default=2000, ge=10)
    """Bootstrap resamples of the confidence intervals."""
    calibration_bins: int = Field(default=10, ge=2, le=100)
    """Bins of the calibration curves."""
    formal: bool = False
    """Add the formal obfuscation table to the report."""


def _either(names: tuple[str, ...]) -> str:
    """``a, b or c``."""
    return " or ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else list(names))


class ExperimentConfig(_Section):
    """Everything a run needs; saved resolved as ``config.yaml`` in its run directory."""

    name: str = "run"
    """Name of the run (the run directory is <name>-<timestamp> unless --run-id is given)."""
    seed: int = Field(default=0, ge=0)
    """Seed of every draw: answers, shown order, protocol draws, strategies."""
    topologies: dict[str, Topology] = Field(default_factory=dict)
    """Speech protocols described as data, by name (turns, speakers, the slot each writes and
    who reads it: docs/extending.md, "A speech protocol as data"); each is registered when
    the config is read, so ``protocols`` may name it."""
    protocols: Annotated[list[str], PROTOCOLS] = Field(default_factory=lambda: ["prover-estimator"])
    """Protocols to run on every item (JSON list of registered protocol names; an unknown name
    is refused with the list)."""
    dataset: DatasetSettings = Field(default_factory=DatasetSettings)
    debate: DebateConfig = Field(default_factory=DebateConfig)
    rounds: int = Field(default=1, ge=1, le=20)
    """Speeches per debater in two-sided debate and consultancy."""
    mode: Literal["sequential", "simultaneous"] = "sequential"
    """Two-sided debate: does debater B see A's speech of the same round."""
    prover: ProverSettings = Field(default_factory=ProverSettings)
    estimator: EstimatorSettings = Field(default_factory=EstimatorSettings)
    judge: JudgeSettings = Field(default_factory=JudgeSettings)
    seats: dict[str, ModelSettings] = Field(default_factory=dict)
    """A model per debater seat, as JSON: {"debater_b": {"model": "openai/gpt-4o"}} (seats:
    debater_a, debater_b, consultant, prover, estimator; a seat plays with its role's
    settings, debaters and consultants the prover's)."""
    tournament: TournamentSettings = Field(default_factory=TournamentSettings)
    max_concurrency: int = Field(default=4, ge=1, le=100_000)
    """Debates in flight at once."""
    model_concurrency: int | None = Field(default=None, ge=1)
    """Requests in flight per model (default: the backend's)."""
    max_retries: int = Field(default=4, ge=0, le=100)
    """Re-sends of a request after a transient failure (429, 5xx, timeout)."""
    max_consecutive_failures: int = Field(default=10, ge=1)
    """Stop the run after this many debates in a row failed on the server (circuit breaker)."""
    use_cache: bool = True
    """Read and write the response cache."""
    cache_dir: str | None = None
    """Response cache and local weights folder (default: ~/.cache/llmdebate)."""
    prompts_dir: str | None = None
    """A folder of prompt templates overriding the shipped ones."""
    runs_dir: str = "runs"
    """Where run directories are created."""
    report: ReportSettings = Field(default_factory=ReportSettings)

    @field_validator("topologies")
    @classmethod
    def _topologies(cls, v: dict[str, Topology]) -> dict[str, Topology]:
        for name, topology in v.items():
            try:
                register_topology(name, topology)
            except (ValueError, TypeError) as exc:
                raise FieldError((name,), str(exc)) from None
        return v

    @field_validator("protocols")
    @classmethod
    def _protocols(cls, v: list[str]) -> list[str]:
        if not v:
            raise ValueError("name at least one protocol")
        if len(set(v)) != len(v):
            raise ValueError("a protocol is listed twice")
        for name in v:
            if name not in PROTOCOLS:
                raise ValueError(PROTOCOLS.unknown(name))
        return v

    @field_validator("seats")
    @classmethod
    def _seats(cls, v: dict[str, ModelSettings], info: ValidationInfo) -> dict[str, ModelSettings]:
        if "protocols" in info.data:
            check_seats(info.data["protocols"], v)
        return v

    @field_validator("tournament")
    @classmethod
    def _tournament(cls, v: TournamentSettings, info: ValidationInfo) -> TournamentSettings:
        if "protocols" in info.data:
            check_roster(info.data["protocols"], info.data.get("seats") or {}, v)
        return v

    @model_validator(mode="after")
    def _fit(self) -> ExperimentConfig:
        symmetric = [
            p for p in self.protocols if not isinstance(get_protocol(p), RecursiveProtocol)
        ]
        judge = JUDGES.entry(self.judge.kind)
        if symmetric and not judge.can(WHOLE_DEBATES):
            raise ValueError(
                f"judge.kind {self.judge.kind!r} rules on leaf claims only; "
                f"{', '.join(symmetric)} need judge.kind "
                f"{_either(JUDGES.with_capability(WHOLE_DEBATES))} (a judge of whole debates)"
            )
        if symmetric and self.judge.method == "generate" and judge.can(USES_MODEL):
            raise ValueError(
                f"{', '.join(symmetric)} need the judge's probability: judge.method logprobs, "
                "sampling or verbalised"
            )
        if self.prover.assignment == "choose":
            self._open_roles()
        if self.judge.interactive:
            self._interactive()
        return self

    def _open_roles(self) -> None:
        fixed = [
            p for p in self.protocols
            if get_protocol(p).seats and not get_protocol(p).can.open_roles
        ]
        if fixed:
            raise ValueError(
                f"prover.assignment 'choose': {', '.join(fixed)} do not let a debater pick "
                f"its answer (open_roles is False): remove them or choose another "
                "assignment"
            )
        t = self.tournament
        paired = [p for p in self.protocols if get_protocol(p).can.pairs]
        if t.active and t.schedule == "swiss" and paired:
            raise ValueError(
                f"prover.assignment 'choose' with tournament.schedule 'swiss': an open debate "
                f"of {', '.join(paired)} (capability pairs) is rated apart from the assigned one "
                "the Swiss rounds pair by; use schedule round-robin"
            )

    def _interactive(self) -> None:
        if not JUDGES.entry(self.judge.kind).can(ASKS):
            raise ValueError(
                f"judge.interactive needs judge.kind {_either(JUDGES.with_capability(ASKS))} "
                f"(got {self.judge.kind}): this judge asks no questions of the debaters"
            )
        speaking = [p for p in self.protocols if isinstance(get_protocol(p), SpeechProtocol)]
        mute = [p for p in speaking if not get_protocol(p).can.asks_questions]
        if mute:
            raise ValueError(
                f"judge.interactive: {', '.join(mute)} lack the capability asks_questions (its "
                "judge cannot ask after a round): remove them or judge.interactive"
            )
        if not speaking:
            asking = named_where(lambda p: p.can.asks_questions)
            raise ValueError(
                "judge.interactive needs a protocol with the capability asks_questions "
                f"({', '.join(asking)}); the run has {', '.join(self.protocols)}"
            )

    def used_roles(self) -> set[str]:
        """``prover`` / ``estimator`` where some debate of the run plays that role's own model:
        a seat of one of its protocols that neither ``seats`` nor a tournament's roster fills
        (``estimator`` also for a best-of-n prover, which asks it)."""
        static = {seat_key(s) for s in self.seats}
        used: set[str] = set()
        for name in self.protocols:
            if not (self.tournament.active and rostered(name)):
                used |= protocol_roles(name, filled=static)
        if "prover" in used and self.prover.best_of > 1:
            used.add("estimator")
        return used

    def role_settings(self) -> dict[str, ModelSettings]:
        """The model settings of every role that calls a model in this run (nothing is made,
        or loaded, for a role its protocols do not play)."""
        used = self.used_roles()
        roles: dict[str, ModelSettings] = {
            r: s for r, s in (("prover", self.prover), ("estimator", self.estimator)) if r in used
        }
        if JUDGES.entry(self.judge.kind).can(USES_MODEL):
            roles["judge"] = self.judge
        roles.update(seat_models(self.seats, self.tournament))
        return roles


def protocol_roles(protocol: str, filled: Collection[str] = ()) -> set[str]:
    """The role sections (``prover``, ``estimator``) whose models a debate of ``protocol``
    asks for: the roles of its seats but those ``filled`` (seat keys with a model of their
    own), and what the protocol declares beyond them (:attr:`Additions.models`; both when
    it does not say)."""
    p = get_protocol(protocol)
    roles = {SEAT_ROLES.get(s, s) for s in p.seats if seat_key(s) not in filled}
    asked = p.adds.models
    return roles | set(asked if asked is not None else ("prover", "estimator"))


# Fields that may change between a first run and its resume without changing any debate.
RESUMABLE_FIELDS = frozenset(
    {
        "name",
        "max_concurrency",
        "model_concurrency",
        "max_retries",
        "max_consecutive_failures",
        "use_cache",
        "cache_dir",
        "runs_dir",
        "dataset.limit",
        "dataset.ids",
        "protocols",
        "report.bootstrap",
        "report.calibration_bins",
        "report.formal",
        # a server URL may change only with --allow-server-change (checked on the effective URL)
        "prover.base_url",
        "estimator.base_url",
        "judge.base_url",
    }
)
