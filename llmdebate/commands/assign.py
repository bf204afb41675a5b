"""``llmdebate assign RUN_DIR --judges FILE --per-item K``: assign waiting debates to judges.

Prints each new judge's secret link (or writes them to ``--links-out``, readable by its owner
only); tokens are stored hashed, so a link is shown once. Re-running keeps every assignment.
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from llmdebate.commands.verbs import VERBS
from llmdebate.records.rundir import read_run_config


@VERBS.register("assign")
@click.command("assign")
@click.argument("run_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--judges",
    "judges_file",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="YAML: judges (a list of ids) and an optional study section.",
)
@click.option(
    "--per-item",
    type=click.IntRange(1, 1000),
    default=1,
    show_default=True,
    help="Judges per waiting debate (K).",
)
@click.option(
    "--links-out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the new judges' links here (mode 600) instead of printing them.",
)
@click.option(
    "--base-url",
    default="http://127.0.0.1:8000",
    show_default=True,
    help="Where `llmdebate serve` will be reached, for the links.",
)
@click.option(
    "--per-story",
    type=click.IntRange(1, 1000),
    default=None,
    help="The most questions of one story a judge sees (default: the judges file's "
    "study.per_story, else no bound); recorded with the study.",
)
@click.option("--db", "db_url", help="Database URL (default: judging.db in RUN_DIR).")
def command(
    run_dir: Path,
    judges_file: Path,
    per_item: int,
    per_story: int | None,
    links_out: Path | None,
    base_url: str,
    db_url: str | None,
) -> None:
    """Assign the debates of RUN_DIR that await a verdict to the judges of a study."""
    read_run_config(run_dir)
    from llmdebate.judging import require

    require("sqlalchemy")
    from llmdebate.judging.assign import assign, read_judges
    from llmdebate.judging.blinding import STORY_LOG
    from llmdebate.judging.db import connect

    judges = read_judges(judges_file)
    if per_story is None:
        per_story = judges.study.per_story
    res = assign(connect(run_dir, db_url), run_dir, judges, per_item, per_story)
    click.echo(
        f"{run_dir}: {res.waiting} debates awaiting a verdict; {res.added} new assignments "
        f"({res.total} in all)"
    )
    for line in res.design:
        click.echo(f"design: {line}")
    click.echo(f"story log: {run_dir / STORY_LOG}")
    for line in res.unstaffed:
        click.echo(line)
    if res.short:
        click.echo(
            f"{len(res.short)} debates wait for more judges: each judge sees an item and a "
            "question once and reads a story in full or blind, never both, and each debate "
            f"needs {per_item}; add judges and run assign again"
        )
        need, most = judges_needed(run_dir, per_item)
        click.echo(f"this study needs at least {need} judges ({most} debates of one item, "
                   f"{per_item} judges each)")
    lines = [f"{jid}\t{base_url.rstrip('/')}/login/{tok}" for jid, tok in res.tokens.items()]
    if not lines:
        return
    if links_out is not None:
        fd = os.open(links_out, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with os.fdopen(fd, "a", encoding="utf-8") as fh:
            fh.write("".join(line + "\n" for line in lines))
        click.echo(f"{len(lines)} new links written to {links_out} (lead: the 'lead' line)")
    else:
        click.echo("new links (shown once; 'lead' opens the progress page):")
        for line in lines:
            click.echo(line)


def judges_needed(run_dir: Path, per_item: int) -> tuple[int, int]:
    """(the judges the study of RUN_DIR's waiting debates needs at least, the most debates
    waiting on one item): a judge sees an item once, so each debate of an item needs
    ``per_item`` judges of its own."""
    from collections import Counter

    from llmdebate.judging.assign import waiting_debates
    from llmdebate.report.metrics import item_id

    per = Counter(item_id(t) for t in waiting_debates(run_dir))
    most = max(per.values(), default=0)
    return most * per_item, most
