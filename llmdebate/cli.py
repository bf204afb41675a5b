"""The ``llmdebate`` command line: the verbs registered in
:data:`~llmdebate.commands.verbs.VERBS` (built-ins and the ``llmdebate.commands`` entry points)."""

from __future__ import annotations

import os
import sys

import click

from llmdebate import __version__
from llmdebate.commands import verbs
from llmdebate.commands.verbs import VERBS
from llmdebate.errors import UserError


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="llmdebate")
def cli() -> None:
    """Prover-estimator debate between language models."""


def _register() -> None:
    for entry in VERBS.entries():
        cli.add_command(entry.value)


_register()


def main(argv: list[str] | None = None) -> int:
    """Entry point: user errors print one line and exit 2; no traceback."""
    verbs.ARGV = list(sys.argv[1:] if argv is None else argv)
    try:
        code = cli.main(args=argv, prog_name="llmdebate", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        return 130
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except UserError as exc:
        click.echo(f"error: {exc}", err=True)
        return 2
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        return 130
    code = code if isinstance(code, int) else 0
    if argv is None and code in (130, 143):
        # a run that stopped on Ctrl-C or SIGTERM has written and closed everything, and a
        # person or the system waits for it to end: skip the interpreter's teardown (seconds
        # with torch and a model loaded)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
