"""``llmdebate assign RUN_DIR --judges FILE --per-item K``: assign waiting debates to judges.

Prints each new judge's secret link (or writes them to ``--links-out``, readable by its owner
only); tokens are stored hashed, so a link is shown once. Re-running keeps every assignment.
Nothing is committed before the links are out: the links file is written (whole, then moved
into place) or the links are shown inside the transaction, so a file that cannot be written
or an output closed early (``| head``) assigns nothing, and says so in one line.
``--reissue-links JUDGE`` gives judges whose links were lost new ones (the old ones stop
working), recorded in the study's log.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from llmdebate.commands.verbs import VERBS
from llmdebate.errors import UserError

if TYPE_CHECKING:
    from llmdebate.judging.assign import AssignResult


@VERBS.register("assign")
@click.command("assign")
@click.argument("run_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--judges",
    "judges_file",
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
    help="Write the new judges' links here (mode 600) instead of printing them; a judge's "
    "line is replaced when its link is reissued.",
)
@click.option(
    "--reissue-links",
    "reissue_ids",
    multiple=True,
    metavar="JUDGE[,JUDGE...]",
    help="New links for these judges (their links were lost): the old ones stop working. "
    "Repeatable; 'lead' for the progress page. Needs no --judges.",
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
    judges_file: Path | None,
    per_item: int,
    per_story: int | None,
    links_out: Path | None,
    reissue_ids: tuple[str, ...],
    base_url: str,
    db_url: str | None,
) -> None:
    """Assign the debates of RUN_DIR that await a verdict to the judges of a study."""
    from llmdebate.records.rundir import read_run_config

    read_run_config(run_dir)
    from llmdebate.judging import require

    require("sqlalchemy")
    from llmdebate.judging.assign import assign, read_judges, reissue
    from llmdebate.judging.db import connect

    def link(jid: str, tok: str) -> str:
        return f"{jid}\t{base_url.rstrip('/')}/login/{tok}"

    if reissue_ids:
        if judges_file is not None:
            raise UserError("--reissue-links issues links only: run it without --judges")
        ids = [x.strip() for arg in reissue_ids for x in arg.split(",") if x.strip()]
        if not ids:
            raise UserError("--reissue-links: name at least one judge")
        out = _Links(links_out, "nothing was reissued: the old links still work")

        def hand_out(tokens: dict[str, str]) -> None:
            out.deliver([link(j, t) for j, t in tokens.items()], [])

        with out:
            tokens = reissue(connect(run_dir, db_url), list(dict.fromkeys(ids)), hand_out)
        out.after_commit(
            [f"{len(tokens)} links reissued ({', '.join(tokens)}); the old ones no longer "
             "work (recorded in the study log)"]
        )
        return
    if judges_file is None:
        raise UserError("--judges FILE is needed (or --reissue-links JUDGE for lost links)")
    judges = read_judges(judges_file)
    if per_story is None:
        per_story = judges.study.per_story
    out = _Links(links_out, "nothing was assigned")

    def deliver(res: AssignResult) -> None:
        out.deliver([link(j, t) for j, t in res.tokens.items()], _summary(run_dir, res, per_item))

    sessions = connect(run_dir, db_url)
    with out:
        res = assign(sessions, run_dir, judges, per_item, per_story, deliver)
    out.after_commit(_summary(run_dir, res, per_item))


def _summary(run_dir: Path, res: AssignResult, per_item: int) -> list[str]:
    from llmdebate.judging.blinding import STORY_LOG

    lines = [
        f"{run_dir}: {res.waiting} debates awaiting a verdict; {res.added} new assignments "
        f"({res.total} in all)",
        *(f"design: {line}" for line in res.design),
        f"story log: {run_dir / STORY_LOG}",
        *res.unstaffed,
    ]
    if res.short:
        lines.append(
            f"{len(res.short)} debates wait for more judges: each judge sees an item and a "
            "question once and reads a story in full or blind, never both, and each debate "
            f"needs {per_item}; add judges and run assign again"
        )
        need, most = judges_needed(run_dir, per_item)
        lines.append(f"this study needs at least {need} judges ({most} debates of one item, "
                     f"{per_item} judges each)")
    return lines


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


class _Links:
    """Where the new links go: ``path`` (written whole, then moved into place, mode 600;
    a judge's earlier line replaced), else standard output with the summary. ``deliver``
    runs inside the transaction and raises a one-line error if the links cannot be handed
    out (``undone`` says what that left); ``after_commit`` says what was done."""

    def __init__(self, path: Path | None, undone: str) -> None:
        self.path, self.undone = path, undone
        self.count = 0
        self.wrote = False
        self.before: bytes | None = None  # the links file as it was (None: there was none)

    def __enter__(self) -> _Links:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        """The transaction failed after the file was written: put the old file back."""
        if kind is None or not self.wrote or self.path is None:
            return
        with contextlib.suppress(OSError):
            if self.before is None:
                self.path.unlink()
            else:
                tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
                tmp.write_bytes(self.before)
                os.replace(tmp, self.path)

    def deliver(self, lines: list[str], summary: list[str]) -> None:
        self.count = len(lines)
        if self.path is None:
            _echo(
                [*summary, *(["new links (shown once; 'lead' opens the progress page):"]
                             if lines else []), *lines],
                f"standard output closed before the links were shown: {self.undone} "
                "(run again, with --links-out FILE to keep the links in a file)",
            )
        elif lines:
            self.before = self.path.read_bytes() if self.path.is_file() else None
            write_links(self.path, lines, self.undone)
            self.wrote = True

    def after_commit(self, summary: list[str]) -> None:
        if self.path is None:
            return
        if self.count:
            summary = [
                *summary,
                f"{self.count} new links written to {self.path} (lead: the 'lead' line)",
            ]
        _echo(
            summary,
            f"standard output closed; the links are in {self.path} "
            f"({self.count} new) and the study is saved",
        )


def _echo(lines: list[str], closed: str) -> None:
    """Print ``lines`` and flush; a closed output is a one-line error saying ``closed``."""
    try:
        for line in lines:
            click.echo(line)
        sys.stdout.flush()
    except BrokenPipeError:
        _mute_stdout()
        raise UserError(closed) from None


def _mute_stdout() -> None:
    """Point the closed standard output at /dev/null, so that nothing fails again writing to
    it on the way out."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)


def write_links(path: Path, lines: list[str], undone: str) -> None:
    """Write ``lines`` (``judge<TAB>link``) into ``path``: the file's other judges' lines
    kept, a judge's earlier line replaced, written whole to a new file beside it (mode 600)
    and moved into place, so the file holds the old links or the new ones, never half."""
    ids = {line.split("\t", 1)[0] for line in lines}
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        old = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
        kept = [x for x in old if x.strip() and x.split("\t", 1)[0] not in ids]
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write("".join(x + "\n" for x in [*kept, *lines]))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        with contextlib.suppress(OSError):  # the new name on disk too (POSIX)
            dfd = os.open(path.parent, os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)
    except (OSError, UnicodeDecodeError) as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise UserError(f"--links-out {path}: cannot write the links ({why}); {undone}") from None
