"""The ``llmdebate`` command line. Each verb lives in a module of :mod:`llmdebate.commands`."""

from __future__ import annotations

import importlib
import sys

import click

from llmdebate import __version__
from llmdebate.errors import UserError

# Each module defines one click command named ``command``; add a verb by adding its module here.
COMMAND_MODULES = [
    "llmdebate.commands.score",
    "llmdebate.commands.formal",
    "llmdebate.commands.reproduce",
    "llmdebate.commands.attack",
    "llmdebate.commands.run",
    "llmdebate.commands.compare",
    "llmdebate.commands.report",
    "llmdebate.commands.export",
    "llmdebate.commands.train",
    "llmdebate.commands.assign",
    "llmdebate.commands.serve",
    "llmdebate.commands.answer",
    "llmdebate.commands.judge",
]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="llmdebate")
def cli() -> None:
    """Prover-estimator debate between language models."""


def _register() -> None:
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:  # that verb is not part of this build
                continue
            raise
        cli.add_command(module.command)


_register()


def main(argv: list[str] | None = None) -> int:
    """Entry point: user errors print one line and exit 2; no traceback."""
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
    return code if isinstance(code, int) else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
