"""``llmdebate serve RUN_DIR``: the judges' web app (127.0.0.1 unless --host says otherwise)."""

from __future__ import annotations

from pathlib import Path

import click

from llmdebate.rundir import read_run_config


@click.command("serve")
@click.argument("run_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on (0.0.0.0: every interface, e.g. a lab network).",
)
@click.option("--port", type=click.IntRange(1, 65535), default=8000, show_default=True)
@click.option("--db", "db_url", help="Database URL (default: judging.db in RUN_DIR).")
@click.option(
    "--login-limit",
    type=click.IntRange(1, 100000),
    default=10,
    show_default=True,
    help="Failed logins allowed per client address per minute (then 429).",
)
def command(run_dir: Path, host: str, port: int, db_url: str | None, login_limit: int) -> None:
    """Serve the judging pages of RUN_DIR's study until interrupted."""
    read_run_config(run_dir)
    from llmdebate.judging import require

    require()
    import uvicorn

    from llmdebate.judging.app import create_app

    app = create_app(run_dir, db_url, login_limit=login_limit)
    click.echo(f"judging {run_dir} on http://{host}:{port}/ (Ctrl+C stops)", err=True)
    # no access log: a judge's first request carries their token in its path
    uvicorn.run(app, host=host, port=port, access_log=False, log_level="warning")
