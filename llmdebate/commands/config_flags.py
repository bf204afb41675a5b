"""Every field of the experiment config as a flag, for every command that takes a config.

A nested field is ``--<section>-<field>`` (``--debate-depth 2``, ``--prover-model
openai/gpt-4o-mini``); dict fields take JSON, list fields JSON or a comma-separated list.
``--help`` shows each field's description, allowed values and default.
"""

from __future__ import annotations

import json
import typing
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from llmdebate.commands.choices import live
from llmdebate.commands.help_table import CONFIG_FLAGS
from llmdebate.errors import ConfigError
from llmdebate.registry import LateHelp, Registry

if TYPE_CHECKING:
    from pydantic import BaseModel

    from llmdebate.experiment.config import ExperimentConfig

PREFIX = "cfg__"

FlagRow = tuple[str, str, bool, str, str, tuple[str, ...]]
"""A config field's flag as ``--help`` shows it: dotted name, kind (``dict``, ``list``,
``scalar``), whether it takes none, metavar, help with the built-in names, and the
entry-point groups whose plugins could add to that help."""


def flag_name(dotted: str) -> str:
    """The command-line flag of a dotted field: ``debate.depth`` -> ``--debate-depth``
    (:func:`llmdebate.experiment.loading.flag_name`'s rule, without importing the config)."""
    return "--" + dotted.replace(".", "-").replace("_", "-")


def config_fields(
    model: type[BaseModel] | None = None, prefix: str = ""
) -> list[tuple[str, Any, Any, str]]:
    """(dotted name, annotation, default, description) of every leaf field."""
    from pydantic import BaseModel
    from pydantic_core import PydanticUndefined

    if model is None:
        from llmdebate.experiment.config import ExperimentConfig

        model = ExperimentConfig
    out: list[tuple[str, Any, Any, str]] = []
    for name, field in model.model_fields.items():
        ann: Any = field.annotation
        registries = [m for m in field.metadata if isinstance(m, Registry)]
        if registries:  # a name of a registry (elicit.ProbMethod): --help lists its names
            ann = typing.Annotated[ann, registries[0]]
        late = [m for m in field.metadata if isinstance(m, LateHelp)]
        if late:  # more help, written when shown (a model string: the backends)
            ann = typing.Annotated[ann, late[0]]
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            out.extend(config_fields(ann, f"{prefix}{name}."))
            continue
        default = field.default
        if default is PydanticUndefined and field.default_factory is not None:
            default = field.default_factory()  # type: ignore[call-arg]
        out.append((f"{prefix}{name}", ann, default, " ".join((field.description or "").split())))
    return out


def _literal_values(annotation: Any) -> tuple[Any, ...]:
    if isinstance(annotation, Registry):  # Annotated[str, ..., REGISTRY]: its names
        return annotation.names()
    if typing.get_origin(annotation) is typing.Literal:
        return typing.get_args(annotation)
    values: tuple[Any, ...] = ()
    for arg in typing.get_args(annotation):
        values += _literal_values(arg)
    return values


def _kind(annotation: Any) -> str:
    """``dict``, ``list`` or ``scalar``."""
    origin = typing.get_origin(annotation)
    if origin is dict:
        return "dict"
    if origin is list:
        return "list"
    for arg in typing.get_args(annotation):
        k = _kind(arg)
        if k != "scalar":
            return k
    return "scalar"


def _help(annotation: Any, default: Any, description: str) -> str:
    parts = [description.rstrip(".") + "." if description else ""]
    values = _literal_values(annotation)
    if values:
        parts.append("One of: " + ", ".join(str(v) for v in values) + ".")
    parts += [a.text() for a in typing.get_args(annotation) if isinstance(a, LateHelp)]
    if default is not None and default != {} and default != []:
        shown = json.dumps(default) if isinstance(default, list | dict) else str(default)
        parts.append(f"[default: {shown}]")
    return " ".join(p for p in parts if p)


def flag_rows() -> tuple[FlagRow, ...]:
    """Every config field's flag, read from the config's fields (what
    :data:`~llmdebate.commands.help_table.CONFIG_FLAGS` stores, so that ``--help`` needs
    neither the config nor the registries)."""
    rows: list[FlagRow] = []
    for dotted, ann, default, description in config_fields():
        kind = _kind(ann)
        metavar = {"dict": "JSON", "list": "LIST"}.get(kind, "VALUE")
        if any(isinstance(a, Registry) for a in typing.get_args(ann)):
            metavar = "NAME" if kind == "scalar" else metavar  # the names: in the help
        elif kind == "scalar" and (values := _literal_values(ann)):
            metavar = "[" + "|".join(str(v) for v in values) + "]"
        groups = tuple(a.group for a in typing.get_args(ann)
                       if isinstance(a, Registry | LateHelp) and a.group)
        nullable = type(None) in typing.get_args(ann)
        rows.append((dotted, kind, nullable, metavar, _help(ann, default, description), groups))
    return tuple(rows)


class ConfigOption(click.Option):
    """A config field's flag. Its help is the stored one unless plugins could add to it: a
    field naming entries of a registry (``protocols``) then lists the names registered by
    then, plugins' included."""

    def __init__(self, *args: Any, row: FlagRow, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.row = row

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        dotted, *_, stored, groups = self.row
        self.help = stored
        if live(groups, "llmdebate.experiment.config"):
            self.help = next(r[4] for r in flag_rows() if r[0] == dotted)
        return super().get_help_record(ctx)


def config_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate a click command with one option per config field."""
    for row in reversed(CONFIG_FLAGS):
        dotted, metavar = row[0], row[3]
        func = click.option(
            flag_name(dotted),
            PREFIX + dotted.replace(".", "__"),
            cls=ConfigOption,
            row=row,
            default=None,
            metavar=metavar,
        )(func)
    return func


def _value(dotted: str, raw: str, kind: str, nullable: bool) -> Any:
    if raw.lower() in ("none", "null") and nullable:
        return None
    if kind == "dict" or (kind == "list" and raw.lstrip().startswith("[")):
        try:
            return json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ConfigError(
                f"{flag_name(dotted)}: not valid JSON ({exc.msg} at column {exc.colno})"
            ) from None
    if kind == "list":
        return [p.strip() for p in raw.split(",") if p.strip()]
    return raw


def overrides_from(fields: dict[str, Any]) -> dict[str, Any]:
    """The dotted overrides given by the config flags of a command's keyword arguments."""
    rows = {r[0]: r for r in CONFIG_FLAGS}
    out: dict[str, Any] = {}
    for param, raw in fields.items():
        if not param.startswith(PREFIX) or raw is None:
            continue
        dotted = param.removeprefix(PREFIX).replace("__", ".")
        out[dotted] = _value(dotted, raw, rows[dotted][1], rows[dotted][2])
    return out


def config_from(
    config_path: str | None, fields: dict[str, Any], extra: dict[str, Any] | None = None
) -> ExperimentConfig:
    """The config of a command: the file (or defaults), the flags, then ``extra`` overrides."""
    from llmdebate.experiment.loading import load

    overrides = overrides_from(fields)
    overrides.update(extra or {})
    return load(config_path, overrides)
