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

SUMMARIES: dict[str, str] = {
    "score": "Re-score every transcript in FILE (a run's transcripts.jsonl, or an Inspect eval "
    "log, .eval or .json) and report mismatches, bad lines and duplicate ids.",
    "formal": "Expected payoff of a prover against an estimator on a formal problem family.",
    "reproduce": "Recompute completeness, obfuscation, soundness, attack, proof-audit and "
    "stability checks.",
    "attack": "Search for the strategy that breaks completeness or soundness; write it to --out.",
    "run": "Run the debates of an experiment (any protocols) into a run directory.",
    "compare": "Run several protocols on the same items and write the report (protocols: every "
    "registered one unless the config or --protocols names them).",
    "report": "Write comparison.json, comparison.md, plots/ and report.html into RUN_DIR, "
    "reading its config.yaml and transcripts.jsonl only (no debate is run).",
    "export": "Write RUN_DIR's decisions of one player as training rows (or, with a whole-run "
    "format such as inspect-log, the whole run as one file).",
    "train": "Train the prover and the estimator on their own debates.",
    "assign": "Assign the debates of RUN_DIR that await a verdict to the judges of a study.",
    "serve": "Serve the judging pages of RUN_DIR's study until interrupted.",
    "answer": "Run the debaters' next round for every question people asked in RUN_DIR's study.",
    "fork": "Play RUN_DIR's debates again from round --at, replaying what came before.",
    "judge": "Judge RUN_DIR's waiting debates: a person (--judge-id), a model (--model), the "
    "oracle.",
}
"""The built-in verbs, each the module of :mod:`llmdebate.commands` of its name, with the
first line of its help: ``llmdebate --help`` lists them without importing any (a test holds
each to its command's own help), and a verb's module is imported when that verb runs."""

VERBS: Registry[click.Command] = Registry(
    "command",
    group="llmdebate.commands",
    builtins=tuple(f"llmdebate.commands.{name}" for name in SUMMARIES),
)

ARGV: list[str] | None = None
"""The arguments of the command line being run (set by :func:`llmdebate.cli.main`): a run
stopped by Ctrl-C says the command that resumes it."""
