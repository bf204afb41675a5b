"""``llmdebate judge RUN_DIR``: judge waiting debates in the terminal, or by a model or oracle.

``--judge-id J``: a person works through J's assigned debates in the terminal.
``--model SPEC``: a model judge rules on every waiting debate (no assignments taken);
``--oracle``: the gold truth does, where it is known. Both are recorded beside the people's
verdicts in the study database and ``judged.jsonl``, for the report to compare.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from llmdebate.commands.choices import LateHelpOption, live
from llmdebate.commands.help_table import MODEL_STRINGS
from llmdebate.commands.verbs import VERBS
from llmdebate.errors import UserError


def _model_strings() -> str:
    """The model strings --model takes: the built-in backends' stored unless a plugin could
    add one."""
    if not live(("llmdebate.backends",), "llmdebate.models.backends"):
        return MODEL_STRINGS
    from llmdebate.models.backends import model_strings_help

    return model_strings_help()


def _options(raw: str | None) -> dict[str, Any]:
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise UserError(
            f"--model-options: not valid JSON ({exc.msg} at column {exc.colno})"
        ) from None
    if not isinstance(value, dict):
        raise UserError("--model-options: expected a JSON object")
    return value


@VERBS.register("judge")
@click.command("judge")
@click.argument("run_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("--judge-id", help="Your judge id (from the judges file): judge in the terminal.")
@click.option(
    "--model",
    "model_spec",
    cls=LateHelpOption,
    late_help=_model_strings,
    help="A model judge (a model string) rules on every waiting debate.",
)
@click.option(
    "--oracle", is_flag=True, help="The gold truth rules on every waiting debate where known."
)
@click.option("--model-options", help="Backend options of --model as JSON (never secrets).")
@click.option("--base-url", help="Server URL of --model (OpenAI-compatible or Anthropic).")
@click.option("--api-key-env", help="Environment variable holding --model's API key.")
@click.option(
    "--method",
    type=click.Choice(["logprobs", "sampling", "verbalised", "generate"]),
    default="logprobs",
    show_default=True,
    help="How the model judge's probability is elicited.",
)
@click.option("--samples", type=click.IntRange(1, 1000), default=8, show_default=True)
@click.option("--temperature", type=click.FloatRange(0.0, 5.0), default=1.0, show_default=True)
@click.option("--db", "db_url", help="Database URL (default: judging.db in RUN_DIR).")
def command(
    run_dir: Path,
    judge_id: str | None,
    model_spec: str | None,
    oracle: bool,
    model_options: str | None,
    base_url: str | None,
    api_key_env: str | None,
    method: str,
    samples: int,
    temperature: float,
    db_url: str | None,
) -> None:
    """Judge RUN_DIR's waiting debates: a person (--judge-id), a model (--model), the oracle."""
    chosen = [
        f
        for f, on in (("--judge-id", judge_id), ("--model", model_spec), ("--oracle", oracle))
        if on
    ]
    if len(chosen) != 1:
        raise UserError("give exactly one of --judge-id, --model and --oracle")
    from llmdebate.records.rundir import read_run_config

    info = read_run_config(run_dir)
    from llmdebate.judging import require

    if judge_id is not None:
        require("sqlalchemy", "rich")
        from llmdebate.judging.terminal import run_terminal

        run_terminal(run_dir, judge_id, db_url)
        return
    require("sqlalchemy")
    from llmdebate.judging import machine

    if oracle:
        res = machine.judge_with_oracle(run_dir, db_url=db_url)
    else:
        from llmdebate.agents.factory import build_models
        from llmdebate.agents.settings import ModelSettings

        assert model_spec is not None
        try:
            settings = ModelSettings(
                model=model_spec,
                base_url=base_url,
                api_key_env=api_key_env,
                options=_options(model_options),
            )
        except ValueError as exc:
            raise UserError(f"--model-options: {exc}") from None
        from llmdebate.experiment.warnings_log import warnings_to_log

        cache = info.get("cache_dir") if isinstance(info.get("cache_dir"), str) else None
        with warnings_to_log(run_dir):  # other packages' warnings (transformers') to the log
            model = build_models({"judge": settings}, cache_dir=cache)["judge"]
            res = machine.judge_with_model(
                run_dir,
                model,
                method=method,
                samples=samples,
                temperature=temperature,
                db_url=db_url,
            )
    click.echo(
        f"{run_dir}: {res.judge_id} judged {res.judged} waiting debates "
        f"({res.already} already judged, {len(res.unknown)} with unknown truth, "
        f"{len(res.failed)} failed)"
    )
    for tid, why in res.failed:
        click.echo(f"failed: {tid}: {why}", err=True)
