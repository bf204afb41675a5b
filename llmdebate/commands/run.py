"""``llmdebate run --config FILE``: run (or resume) prover-estimator debates over a dataset.

Every field of the run configuration is also a flag: ``--debate-depth 2``,
``--prover-model openai/gpt-4o-mini``, ``--estimator-independent true``,
``--prover-options '{"delay_s": 0.1}'`` (dict and list fields take JSON).
"""

from __future__ import annotations

import json
import typing
from typing import Any

import click

from llmdebate.config import RunConfig, config_fields, load_config, set_dotted, validate_config
from llmdebate.errors import ConfigError

# Flags with their own spelling (the rest are --<dotted-field-with-dashes>).
SPECIAL = {"max_concurrency", "use_cache", "cache_dir", "dataset.limit"}


def _flag(dotted: str) -> str:
    return "--" + dotted.replace(".", "-").replace("_", "-")


def _param(dotted: str) -> str:
    return "cfg__" + dotted.replace(".", "__")


def _is_json(annotation: Any) -> bool:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    return origin in (dict, list) or any(typing.get_origin(a) in (dict, list) for a in args)


def _config_options(func: Any) -> Any:
    for dotted, ann in reversed(config_fields()):
        if dotted in SPECIAL:
            continue
        hint = "JSON" if _is_json(ann) else "VALUE"
        func = click.option(
            _flag(dotted),
            _param(dotted),
            default=None,
            metavar=hint,
            help=f"Set {dotted}.",
        )(func)
    return func


def _value(dotted: str, raw: str, annotation: Any) -> Any:
    if _is_json(annotation):
        try:
            return json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{_flag(dotted)}: not valid JSON ({exc.msg})") from None
    if raw.lower() in ("none", "null") and type(None) in typing.get_args(annotation):
        return None
    return raw


@click.command("run")
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="YAML run configuration (default: all defaults).",
)
@click.option(
    "--run-dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Run directory (resume if it exists).",
)
@click.option("--run-id", default=None, help="Run directory name under runs_dir.")
@click.option("--max-concurrency", type=int, default=None, help="Debates in flight at once.")
@click.option("--no-cache", is_flag=True, help="Do not read or write the response cache.")
@click.option(
    "--cache-dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Response cache and local weights folder.",
)
@click.option("--limit", type=int, default=None, help="Run only the first N items.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
@_config_options
def command(
    config_path: str | None,
    run_dir: str | None,
    run_id: str | None,
    max_concurrency: int | None,
    no_cache: bool,
    cache_dir: str | None,
    limit: int | None,
    quiet: bool,
    **fields: str | None,
) -> None:
    """Run prover-estimator debates over a dataset into a run directory."""
    from llmdebate.runner import run

    annotations = dict(config_fields())
    overrides: dict[str, Any] = {}
    for param, raw in fields.items():
        if raw is None:
            continue
        dotted = param.removeprefix("cfg__").replace("__", ".")
        overrides[dotted] = _value(dotted, raw, annotations[dotted])
    if max_concurrency is not None:
        overrides["max_concurrency"] = max_concurrency
    if no_cache:
        overrides["use_cache"] = False
    if cache_dir is not None:
        overrides["cache_dir"] = cache_dir
    if limit is not None:
        overrides["dataset.limit"] = limit
    if config_path is not None:
        config = load_config(config_path, overrides)
    else:
        data: dict[str, Any] = {}
        for dotted, value in overrides.items():
            set_dotted(data, dotted, value)
        config = validate_config(data, "command line")
    assert isinstance(config, RunConfig)
    result = run(config, run_dir, run_id=run_id, progress=not quiet)
    s = result.summary
    click.echo(
        f"{result.run_dir}: {result.ran} debates run, {result.skipped} already done, "
        f"{s['status'].get('failed', 0)} failed in total; {s['transcripts']} transcripts, "
        f"{s['usage']['calls']} model calls, {result.wall_s:.1f} s"
    )
