"""The ``llmdebate`` command line: the verbs registered in
:data:`~llmdebate.commands.verbs.VERBS` (built-ins and the ``llmdebate.commands`` entry points)."""

from __future__ import annotations

import importlib
import os
import sys

import click

from llmdebate import __version__
from llmdebate.commands import verbs
from llmdebate.commands.verbs import SUMMARIES, VERBS
from llmdebate.errors import UserError


class VerbGroup(click.Group):
    """The verbs of :data:`VERBS`, each built-in's module imported when that verb is asked
    for (``--help`` lists them from :data:`~llmdebate.commands.verbs.SUMMARIES`); the
    plugins' verbs are read from their entry points whenever the verbs are listed or one is
    looked up."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        VERBS.load_plugins()
        names = set(SUMMARIES) | set(VERBS.registered_names()) | set(self.commands)
        return sorted(names)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.commands:
            return self.commands[cmd_name]
        VERBS.load_plugins()
        entry = VERBS.registered(cmd_name)
        if entry is None and cmd_name in SUMMARIES:
            importlib.import_module(f"llmdebate.commands.{cmd_name}")
            entry = VERBS.registered(cmd_name)
        if entry is None:
            return None
        self.commands[cmd_name] = entry.value
        return entry.value

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            entry = VERBS.registered(name)
            if entry is not None:
                summary = entry.value.get_short_help_str(formatter.width)
            else:
                summary = SUMMARIES[name]
            rows.append((name, summary))
        if rows:
            limit = formatter.width - 6 - max(len(name) for name, _ in rows)
            with formatter.section("Commands"):
                formatter.write_dl([(n, _shortened(h, limit)) for n, h in rows])


def _shortened(text: str, limit: int) -> str:
    """``text`` cut at a word before ``limit`` characters with ``...``, as click shortens a
    command's help."""
    return click.Command("x", help=text).get_short_help_str(limit)


@click.group(cls=VerbGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="llmdebate")
def cli() -> None:
    """Prover-estimator debate between language models."""


def main(argv: list[str] | None = None) -> int:
    """Entry point: user errors print one line and exit 2; no traceback."""
    verbs.ARGV = list(sys.argv[1:] if argv is None else argv)
    try:
        code = cli.main(args=argv, prog_name="llmdebate", standalone_mode=False)
    except click.exceptions.Abort as exc:  # Ctrl-C, or SIGTERM, before a run said what it kept
        click.echo("aborted", err=True)
        return _stopped_exit(exc.__cause__)
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except UserError as exc:
        click.echo(f"error: {exc}", err=True)
        return 2
    except KeyboardInterrupt as exc:
        click.echo("interrupted", err=True)
        return _stopped_exit(exc)
    code = code if isinstance(code, int) else 0
    if argv is None and code in (130, 143):
        # a run that stopped on Ctrl-C or SIGTERM has written and closed everything, and a
        # person or the system waits for it to end: skip the interpreter's teardown (seconds
        # with torch and a model loaded)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


def _stopped_exit(exc: BaseException | None) -> int:
    """The exit code of a command that ``exc`` stopped: 143 after SIGTERM, else 130."""
    from llmdebate.experiment.interrupts import CTRL_C_EXIT, SIGTERM_EXIT, Terminated

    return SIGTERM_EXIT if isinstance(exc, Terminated) else CTRL_C_EXIT


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
