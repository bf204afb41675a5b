"""Reading an experiment config from YAML and flags, with errors that name their source.

A bad value is reported on one line with where it came from: the flag
(``--debate-epsilon: epsilon must satisfy 0 < epsilon < 1/2 (got 0.7)``) or the file, line and
column of the key (``configs/x.yaml:7:3: debate.epsilon: ...``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from llmdebate.agents.settings import ModelSettings
from llmdebate.errors import ConfigError, FieldError
from llmdebate.experiment.config import RESUMABLE_FIELDS, ExperimentConfig
from llmdebate.models.backends import BACKENDS
from llmdebate.prompts import Prompts
from llmdebate.protocols.registry import PROTOCOLS
from llmdebate.protocols.topology import FromTopology, template_problems
from llmdebate.records.paths import anchored, missing_path_message, resolve_path


def flag_name(dotted: str) -> str:
    """The command-line flag of a dotted field: ``debate.depth`` -> ``--debate-depth``."""
    return "--" + dotted.replace(".", "-").replace("_", "-")


def read_yaml(path: str | Path) -> dict[str, Any]:
    """The mapping of a YAML file (errors name the file, line and column)."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: no such config file")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    try:
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        raise ConfigError(f"{where}: not valid YAML ({exc.problem or exc.context})") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML ({str(exc).splitlines()[0]})") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping")
    mapping: dict[str, Any] = _unshare(data)
    return mapping


def _unshare(value: Any) -> Any:
    """A copy in which YAML aliases (&a / *a) no longer share one mutable object."""
    if isinstance(value, dict):
        return {k: _unshare(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_unshare(v) for v in value]
    return value


def _key_marks(path: Path) -> dict[str, tuple[int, int]]:
    """(line, column) of every mapping key in a YAML file, by dotted path (1-based)."""
    marks: dict[str, tuple[int, int]] = {}
    try:
        root = yaml.compose(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, OSError, UnicodeDecodeError):
        return marks

    def walk(node: Any, prefix: str) -> None:
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                dotted = f"{prefix}{key.value}"
                marks[dotted] = (key.start_mark.line + 1, key.start_mark.column + 1)
                walk(value, dotted + ".")
        elif isinstance(node, yaml.SequenceNode):
            for i, value in enumerate(node.value):
                marks[f"{prefix}{i}"] = (value.start_mark.line + 1, value.start_mark.column + 1)
                walk(value, f"{prefix}{i}.")

    walk(root, "")
    return marks


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


def _message(err: Any) -> str:
    msg = str(err.get("msg", "invalid value")).removeprefix("Value error, ")
    kind = err.get("type", "")
    if kind == "extra_forbidden":
        return "unknown field"
    if kind == "literal_error":
        ctx = err.get("ctx") or {}
        return f"must be one of {ctx.get('expected', '')} (got {err.get('input')!r})"
    if kind.endswith(("_parsing", "_type")) or kind in ("greater_than_equal", "less_than_equal"):
        return f"{msg} (got {err.get('input')!r})"
    return msg


def validate(
    data: dict[str, Any],
    *,
    file: Path | None = None,
    overrides: dict[str, Any] | None = None,
) -> ExperimentConfig:
    """An :class:`ExperimentConfig`, or one :class:`ConfigError` naming field and source."""
    try:
        return ExperimentConfig.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = [str(x) for x in err["loc"]]
        inner = (err.get("ctx") or {}).get("error")
        if isinstance(inner, FieldError):  # a field inside the value: its own path and line
            loc += [str(x) for x in inner.path]
            err = {**err, "msg": str(inner)}
        dotted = ".".join(loc)
        for n in range(len(loc), 0, -1):  # the flag that set this field or a parent of it
            if ".".join(loc[:n]) in (overrides or {}):
                inner = ".".join(loc[n:])  # the field inside the flag's JSON value, if any
                where = flag_name(".".join(loc[:n])) + (f": {inner}" if inner else "")
                raise ConfigError(f"{where}: {_message(err)}") from None
        if file is not None:
            marks = _key_marks(file)
            for n in range(len(loc), 0, -1):
                mark = marks.get(".".join(loc[:n]))
                if mark:
                    where = f"{file}:{mark[0]}:{mark[1]}"
                    raise ConfigError(f"{where}: {dotted or 'config'}: {_message(err)}") from None
            raise ConfigError(f"{file}: {dotted or 'config'}: {_message(err)}") from None
        raise ConfigError(f"{dotted or 'config'}: {_message(err)}") from None


# The fields of a role's section that belong to the model it names: a flag that names another
# model starts from that model's backend defaults rather than keep them.
MODEL_BOUND = ("options", "base_url", "api_key_env", "context_length")
DEFAULT_MODEL = ModelSettings.model_fields["model"].default


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def rebind_models(
    data: dict[str, Any],
    overrides: dict[str, Any],
    say: Callable[[str], None] = _say,
) -> None:
    """Drop from ``data`` the model-bound fields (:data:`MODEL_BOUND`) of every section whose
    model a flag changes, unless a flag sets them too; one line says what was dropped."""
    for dotted, value in overrides.items():
        section, _, leaf = dotted.rpartition(".")
        if leaf != "model" or not section:
            continue
        node: Any = data
        for key in section.split("."):
            node = node.get(key) if isinstance(node, dict) else None
        if not isinstance(node, dict) or node.get("model", DEFAULT_MODEL) == value:
            continue
        if str(value).partition("/")[0] not in BACKENDS:  # reported as an unknown model
            continue
        dropped = [
            f"{section}.{f}"
            for f in MODEL_BOUND
            if node.get(f) not in (None, {}, []) and f"{section}.{f}" not in overrides
        ]
        for field in dropped:
            del node[field.rpartition(".")[2]]
        if dropped:
            say(
                f"{flag_name(dotted)} {value}: starting from its backend's defaults "
                f"(dropped {', '.join(dropped)}, written for "
                f"{node.get('model', DEFAULT_MODEL)}; set them "
                "with their own flags to keep them)"
            )


def load(
    path: str | Path | None,
    overrides: dict[str, Any] | None = None,
    say: Callable[[str], None] = _say,
) -> ExperimentConfig:
    """The config in ``path`` (None: all defaults) with dotted ``overrides`` applied; a flag
    that names another model for a role drops the options written for the old one
    (:func:`rebind_models`)."""
    data = read_yaml(path) if path is not None else {}
    notes: list[str] = []
    rebind_models(data, overrides or {}, notes.append)
    for dotted, value in (overrides or {}).items():
        set_dotted(data, dotted, value)
    file = Path(path) if path is not None else None
    config = validate(data, file=file, overrides=overrides)
    config = anchor_paths(config, file, overrides or {})
    check_templates(config, file, overrides)
    for note in notes:  # said once the config is valid: an error stays the only line
        say(note)
    return config


PATH_FIELDS = ("prompts_dir", "dataset.path")
"""The fields of a config that name a file or folder to read."""


def where(file: Path | None, dotted: str, overrides: dict[str, Any] | None = None) -> str:
    """Where a field was set, for a one-line error: its flag, or ``file:line:column: field``
    (``field`` alone with no file)."""
    if dotted in (overrides or {}):
        return flag_name(dotted)
    if file is None:
        return dotted
    mark = _key_marks(file).get(dotted)
    return f"{file}:{mark[0]}:{mark[1]}: {dotted}" if mark else f"{file}: {dotted}"


def anchor_paths(
    config: ExperimentConfig, file: Path | None, overrides: dict[str, Any]
) -> ExperimentConfig:
    """``config`` with the relative paths of :data:`PATH_FIELDS` made absolute where they
    exist: one written in ``file`` is read against ``file``'s folder first, then the current
    folder and the repository (a flag's against the current folder). A ``prompts_dir``
    found nowhere is one :class:`ConfigError` naming every folder tried."""
    folder = file.parent if file is not None else None
    found: dict[str, str] = {}
    given = {"prompts_dir": config.prompts_dir, "dataset.path": config.dataset.path}
    for dotted, value in given.items():
        if not value or value.startswith("hf:"):
            continue
        base = None if dotted in overrides else folder
        path = anchored(value, base)
        if path is not None:
            found[dotted] = str(path)
        elif dotted == "prompts_dir":
            raise ConfigError(
                f"{where(file, dotted, overrides)}: "
                f"{missing_path_message(value, 'folder', base)}"
            )
    update: dict[str, Any] = {}
    if "prompts_dir" in found:
        update["prompts_dir"] = found["prompts_dir"]
    if "dataset.path" in found:
        update["dataset"] = config.dataset.model_copy(update={"path": found["dataset.path"]})
    return config.model_copy(update=update)


def check_templates(
    config: ExperimentConfig, file: Path | None = None,
    overrides: dict[str, Any] | None = None,
) -> None:
    """Every template the run's topologies render exists, parses and reads only what it is
    given (:func:`~llmdebate.protocols.topology.template_problems`), else one
    :class:`ConfigError` naming the field (``file:line:column: topologies.<name>.turns.1.act``;
    a shipped topology's template that the run's ``prompts_dir`` breaks: ``prompts_dir``)."""
    prompts = Prompts(resolve_path(config.prompts_dir) if config.prompts_dir else None)
    for name in config.protocols:
        protocol = PROTOCOLS.get(name) if name in PROTOCOLS else None
        if not isinstance(protocol, FromTopology):
            continue
        for field, problem in template_problems(protocol.topology, prompts):
            dotted = f"topologies.{name}.{field}" if name in config.topologies else "prompts_dir"
            raise ConfigError(f"{where(file, dotted, overrides)}: {problem}")


def dump(config: ExperimentConfig) -> dict[str, Any]:
    """The config as a plain mapping for ``config.yaml`` (a dataset password is not written)."""
    data = config.model_dump(mode="json")
    if data["dataset"].get("password"):
        data["dataset"]["password"] = "***"
    return data


def differences(a: ExperimentConfig, b: ExperimentConfig) -> list[str]:
    """Dotted fields that differ between two configs, ignoring :data:`RESUMABLE_FIELDS`."""
    fa, fb = _flat(dump(a)), _flat(dump(b))
    keys = sorted(set(fa) | set(fb))
    return [k for k in keys if k not in RESUMABLE_FIELDS and fa.get(k) != fb.get(k)]


def _flat(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in data.items():
        if isinstance(v, dict) and k not in ("options", "fields"):
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out
