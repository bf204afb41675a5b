"""``llmdebate compare``: a run of every registered protocol by default, then its report."""

from __future__ import annotations

from typing import Any

import click

from llmdebate.commands.run import run_from_flags, run_options
from llmdebate.commands.verbs import VERBS


@VERBS.register("compare")
@click.command("compare")
@run_options
def command(
    config_path: str | None,
    run_dir: str | None,
    run_id: str | None,
    limit: int | None,
    no_cache: bool,
    quiet: bool,
    allow_server_change: bool,
    **fields: Any,
) -> int:
    """Run several protocols on the same items and write the report (protocols: every
    registered one unless the config or --protocols names them). The same as `llmdebate
    run` followed by `llmdebate report RUN_DIR`."""
    from llmdebate.experiment.loading import read_yaml
    from llmdebate.protocols.registry import PROTOCOLS
    from llmdebate.report.build import build_report

    extra: dict[str, Any] = {}
    named = config_path is not None and "protocols" in read_yaml(config_path)
    if not named and fields.get("cfg__protocols") is None:
        extra["protocols"] = list(PROTOCOLS.names())
    result = run_from_flags(
        config_path, run_dir, run_id, limit, no_cache, quiet, allow_server_change, fields, extra
    )
    path = build_report(result.run_dir, progress=not quiet)
    click.echo(f"report: {path}")
    return int(result.exit_code)
