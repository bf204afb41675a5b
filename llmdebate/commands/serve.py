"""``llmdebate serve RUN_DIR``: the judges' web app (127.0.0.1 unless --host says otherwise).

Judges' links carry secret tokens: beyond the machine itself, serve over TLS
(``--ssl-certfile``/``--ssl-keyfile``) or behind a TLS reverse proxy (``--trusted-proxy``);
docs/judging.md shows both.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path

import click

from llmdebate.commands.verbs import VERBS


def loopback(host: str) -> bool:
    """Whether ``host`` names this machine only (127.0.0.0/8, ::1, localhost)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@VERBS.register("serve")
@click.command("serve")
@click.argument("run_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on (0.0.0.0: every interface; then use TLS, see docs/judging.md).",
)
@click.option("--port", type=click.IntRange(1, 65535), default=8000, show_default=True)
@click.option("--db", "db_url", help="Database URL (default: judging.db in RUN_DIR).")
@click.option(
    "--login-limit",
    type=click.IntRange(1, 100000),
    default=10,
    show_default=True,
    help="Failed sign-ins (wrong links or cookies) allowed per client address per minute.",
)
@click.option(
    "--ssl-certfile",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="TLS certificate (PEM) to serve HTTPS directly; needs --ssl-keyfile.",
)
@click.option(
    "--ssl-keyfile",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="TLS private key (PEM) of --ssl-certfile.",
)
@click.option(
    "--trusted-proxy",
    "trusted_proxies",
    multiple=True,
    help="Address of a reverse proxy whose X-Forwarded-For/-Proto are believed (repeatable; "
    "by default no address is).",
)
def command(
    run_dir: Path,
    host: str,
    port: int,
    db_url: str | None,
    login_limit: int,
    ssl_certfile: Path | None,
    ssl_keyfile: Path | None,
    trusted_proxies: tuple[str, ...],
) -> None:
    """Serve the judging pages of RUN_DIR's study until interrupted."""
    if (ssl_certfile is None) != (ssl_keyfile is None):
        raise click.UsageError("--ssl-certfile and --ssl-keyfile go together")
    for proxy in trusted_proxies:
        try:
            ipaddress.ip_address(proxy)
        except ValueError:
            raise click.BadParameter(
                f"{proxy!r} is not an IP address", param_hint="--trusted-proxy"
            ) from None
    from llmdebate.records.rundir import read_run_config

    read_run_config(run_dir)
    from llmdebate.judging import require

    require()
    import uvicorn

    from llmdebate.judging.app import create_app

    app = create_app(run_dir, db_url, login_limit=login_limit, trusted_proxies=trusted_proxies)
    scheme = "https" if ssl_certfile else "http"
    if not ssl_certfile and not loopback(host):
        click.echo(
            f"warning: serving {host} without TLS: judges' links and cookies cross the network "
            "in clear; pass --ssl-certfile/--ssl-keyfile or put a TLS proxy in front "
            "(docs/judging.md)",
            err=True,
        )
    click.echo(f"judging {run_dir} on {scheme}://{host}:{port}/ (Ctrl+C stops)", err=True)
    # no access log: a judge's first request carries their token in its path; the app reads
    # forwarded headers itself, from --trusted-proxy addresses only
    uvicorn.run(
        app,
        host=host,
        port=port,
        access_log=False,
        log_level="warning",
        proxy_headers=False,
        ssl_certfile=str(ssl_certfile) if ssl_certfile else None,
        ssl_keyfile=str(ssl_keyfile) if ssl_keyfile else None,
    )
