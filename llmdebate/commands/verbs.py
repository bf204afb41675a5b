"""The verbs of the ``llmdebate`` command line: a registry like every other extension point.

Each built-in verb is a module of :mod:`llmdebate.commands` whose click command registers
itself (``@VERBS.register("score")`` above ``@click.command("score")``). A package adds a verb
through the entry-point group ``llmdebate.commands``, naming a module whose import registers
its command (docs/extending.md)::

    [project.entry-points."llmdebate.commands"]
    my-verb = "my_package.my_verb"
"""

from __future__ import annotations

import click

from llmdebate.registry import Registry

VERBS: Registry[click.Command] = Registry(
    "command",
    group="llmdebate.commands",
    builtins=tuple(
        f"llmdebate.commands.{name}"
        for name in (
            "score",
            "formal",
            "reproduce",
            "attack",
            "run",
            "compare",
            "report",
            "export",
            "train",
            "assign",
            "serve",
            "answer",
            "fork",
            "judge",
        )
    ),
)

ARGV: list[str] | None = None
"""The arguments of the command line being run (set by :func:`llmdebate.cli.main`): a run
stopped by Ctrl-C says the command that resumes it."""
