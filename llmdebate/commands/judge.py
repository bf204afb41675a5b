"""``llmdebate judge RUN_DIR --judge-id J``: judge one's assigned debates in the terminal."""

from __future__ import annotations

from pathlib import Path

import click

from llmdebate.rundir import read_run_config


@click.command("judge")
@click.argument("run_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("--judge-id", required=True, help="Your judge id (from the judges file).")
@click.option("--db", "db_url", help="Database URL (default: judging.db in RUN_DIR).")
def command(run_dir: Path, judge_id: str, db_url: str | None) -> None:
    """Work through JUDGE_ID's open items of RUN_DIR's study in the terminal."""
    read_run_config(run_dir)
    from llmdebate.judging import require

    require("sqlalchemy", "rich")
    from llmdebate.judging.terminal import run_terminal

    run_terminal(run_dir, judge_id, db_url)
