"""The one configuration of an experiment: every protocol, every role, the dataset, the run.

Loaded from YAML and from flags (every field is also a flag: ``--debate-depth 2``,
``--prover-model openai/gpt-4o-mini``; dict and list fields take JSON). A run names its
``protocols``; comparing protocols is a run with several of them plus ``llmdebate report``.
Field descriptions (the attribute docstrings below) are what ``--help`` shows.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from llmdebate.agents.settings import (
    EstimatorSettings,
    JudgeSettings,
    ModelSettings,
    ProverSettings,
)
from llmdebate.protocols.interface import RECURSIVE
from llmdebate.protocols.registry import PROTOCOLS, can
from llmdebate.schemas import DebateConfig


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


class ReportSettings(_Section):
    bootstrap: int = Field(default=2000, ge=10)
    """Bootstrap resamples of the confidence intervals."""
    calibration_bins: int = Field(default=10, ge=2, le=100)
    """Bins of the calibration curves."""
    formal: bool = False
    """Add the formal obfuscation table to the report."""


class ExperimentConfig(_Section):
    """Everything a run needs; saved resolved as ``config.yaml`` in its run directory."""

    name: str = "run"
    """Name of the run (the run directory is <name>-<timestamp> unless --run-id is given)."""
    seed: int = Field(default=0, ge=0)
    """Seed of every draw: answers, shown order, protocol draws, strategies."""
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

    @model_validator(mode="after")
    def _fit(self) -> ExperimentConfig:
        symmetric = [p for p in self.protocols if not can(p, RECURSIVE)]
        if symmetric and self.judge.kind == "oracle":
            raise ValueError(
                f"judge.kind {self.judge.kind!r} rules on leaf claims only; "
                f"{', '.join(symmetric)} need judge.kind llm or human"
            )
        if symmetric and self.judge.method == "generate" and self.judge.kind == "llm":
            raise ValueError(
                f"{', '.join(symmetric)} need the judge's probability: judge.method logprobs, "
                "sampling or verbalised"
            )
        if self.prover.assignment == "choose" and symmetric:
            raise ValueError(
                "prover.assignment 'choose' applies to the asymmetric protocols only; "
                f"remove {', '.join(symmetric)} or choose another assignment"
            )
        return self

    def role_settings(self) -> dict[str, ModelSettings]:
        """The model settings of every role that calls a model in this run."""
        roles: dict[str, ModelSettings] = {"prover": self.prover, "estimator": self.estimator}
        if self.judge.kind in ("llm", "oracle-or-llm"):
            roles["judge"] = self.judge
        return roles


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
