"""The configuration of a run: a pydantic model loaded from YAML, every field also a CLI flag.

Sections: ``dataset``, ``debate`` (the protocol parameters of
:class:`~llmdebate.schemas.DebateConfig`), ``prover``, ``estimator``, ``judge``, and run-level
fields. A validation error names the file and the field (``config.yaml: debate.epsilon: ...``).
On the command line a nested field is ``--<section>-<field>`` (``--debate-depth 2``,
``--prover-model openai/gpt-4o-mini``); dict fields take JSON (``--prover-options '{...}'``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from llmdebate.errors import ConfigError
from llmdebate.jsonl import first_error
from llmdebate.schemas import DebateConfig

ProbMethod = Literal["logprobs", "sampling", "verbalised"]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ModelSettings(_Section):
    """Which model plays a role, and how it is reached."""

    model: str = "local"
    base_url: str | None = None
    api_key_env: str | None = None
    options: dict[str, Any] = Field(default_factory=dict)
    """Backend options (``scripted``: ``responder``/``probabilities`` may be "module:attr")."""


class DatasetSettings(_Section):
    path: str = "datasets/divisors.jsonl"
    """A JSONL file in the common schema (relative paths: the current folder, then the repo),
    or GPQA's encrypted ``.zip``."""
    shuffle_seed: int = 0
    limit: int | None = None
    ids: list[str] | None = None
    password: str | None = None

    @field_validator("limit")
    @classmethod
    def _limit(cls, v: int | None) -> int | None:
        if v is not None and v < 1:
            raise ValueError(f"limit must be >= 1 (got {v})")
        return v


class ProverSettings(ModelSettings):
    assignment: Literal["honest", "dishonest", "alternate", "choose"] = "alternate"
    """honest: defend the gold answer; dishonest: a wrong one; alternate: honest on even
    debates, dishonest on odd; choose: the model answers the question itself."""
    direction: Literal["belief", "model"] = "belief"
    recursion: Literal["belief", "model"] = "belief"
    decomposer: Literal["model", "formal"] = "model"
    belief_method: ProbMethod = "logprobs"
    samples: int = Field(default=8, ge=1)
    temperature: float = Field(default=0.0, ge=0.0)
    max_tokens: int = Field(default=400, ge=1)
    max_attempts: int = Field(default=3, ge=1)


class EstimatorSettings(ModelSettings):
    method: ProbMethod = "logprobs"
    samples: int = Field(default=8, ge=1)
    temperature: float = Field(default=1.0, ge=0.0)
    independent: bool = False


class JudgeSettings(ModelSettings):
    kind: Literal["llm", "oracle", "oracle-or-llm", "deferred"] = "llm"
    """llm: a model rules; oracle: the gold truth (fails where unknown); oracle-or-llm: the
    gold truth where known, else the model; deferred: no verdict (awaiting_verdict)."""
    method: Literal["logprobs", "sampling", "verbalised", "generate"] = "logprobs"
    samples: int = Field(default=8, ge=1)
    temperature: float = Field(default=1.0, ge=0.0)


class RunConfig(_Section):
    """Everything a run needs; saved resolved as ``config.yaml`` in the run directory."""

    name: str = "run"
    seed: int = Field(default=0, ge=0)
    dataset: DatasetSettings = Field(default_factory=DatasetSettings)
    debate: DebateConfig = Field(default_factory=DebateConfig)
    prover: ProverSettings = Field(default_factory=ProverSettings)
    estimator: EstimatorSettings = Field(default_factory=EstimatorSettings)
    judge: JudgeSettings = Field(default_factory=JudgeSettings)
    max_concurrency: int = Field(default=4, ge=1)
    """Debates in flight at once."""
    model_concurrency: int | None = Field(default=None, ge=1)
    """Requests in flight per model (None: the backend's default)."""
    max_retries: int = Field(default=4, ge=0)
    use_cache: bool = True
    cache_dir: str | None = None
    prompts_dir: str | None = None
    runs_dir: str = "runs"


# Fields that may change between the first run and a resume without changing any debate.
RESUMABLE_FIELDS = {
    "max_concurrency",
    "model_concurrency",
    "max_retries",
    "use_cache",
    "cache_dir",
    "runs_dir",
    "dataset.limit",
}


def validate_config(data: dict[str, Any], source: str = "config") -> RunConfig:
    """A :class:`RunConfig` from a dict, or one :class:`ConfigError` naming source and field."""
    try:
        return RunConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{source}: {first_error(exc, 'config')}") from None


def read_config_file(path: str | Path) -> dict[str, Any]:
    """The raw mapping of a YAML config file (errors name the file)."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: no such config file")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML ({str(exc).splitlines()[0]})") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping")
    return _unshare(data)


def _unshare(value: Any) -> Any:
    """A copy in which YAML aliases (&a / *a) no longer share one mutable object."""
    if isinstance(value, dict):
        return {k: _unshare(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_unshare(v) for v in value]
    return value


def load_config(path: str | Path, overrides: dict[str, Any] | None = None) -> RunConfig:
    """Read ``path`` and apply dotted ``overrides`` ({"debate.depth": 2, ...})."""
    data = read_config_file(path)
    for dotted, value in (overrides or {}).items():
        set_dotted(data, dotted, value)
    return validate_config(data, str(path))


def set_dotted(data: dict[str, Any], dotted: str, value: Any) -> None:
    keys = dotted.split(".")
    node = data
    for key in keys[:-1]:
        nxt = node.get(key)
        if not isinstance(nxt, dict):
            nxt = {}
            node[key] = nxt
        node = nxt
    node[keys[-1]] = value


def config_fields(model: type[BaseModel] = RunConfig, prefix: str = "") -> list[tuple[str, Any]]:
    """(dotted name, annotation) of every leaf field, for building CLI flags."""
    out: list[tuple[str, Any]] = []
    for name, field in model.model_fields.items():
        ann = field.annotation
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            out.extend(config_fields(ann, f"{prefix}{name}."))
        else:
            out.append((f"{prefix}{name}", ann))
    return out


def dump_config(config: RunConfig) -> str:
    return yaml.safe_dump(config.model_dump(mode="json"), sort_keys=False)


def config_differences(a: RunConfig, b: RunConfig) -> list[str]:
    """Dotted fields that differ between two configs, ignoring :data:`RESUMABLE_FIELDS`."""
    fa, fb = _flat(a.model_dump(mode="json")), _flat(b.model_dump(mode="json"))
    keys = sorted(set(fa) | set(fb))
    return [k for k in keys if k not in RESUMABLE_FIELDS and fa.get(k) != fb.get(k)]


def _flat(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in data.items():
        if isinstance(v, dict) and k != "options":
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out
