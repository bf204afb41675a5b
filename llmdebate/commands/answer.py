"""``llmdebate answer RUN_DIR``: the debaters answer the questions people asked.

A person judging an interactive debate (``judge.interactive`` with a deferred judge) asks on
the web page or in the terminal; the question is stored in the study database. This command
runs, for every waiting question, the debaters' next round with the question as the judge's
turn: a fork of the judge's debate through its protocol's own run (recorded rounds replayed,
the new one live, the run's config and models) within
:func:`llmdebate.protocols.interactive.person_asks`. The continued debate is appended to
``asked.jsonl`` (:mod:`llmdebate.judging.asking`); the judge's page then shows the answer.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from llmdebate.commands.verbs import VERBS
from llmdebate.errors import UserError

if TYPE_CHECKING:
    from llmdebate.core.schemas import Transcript


def answer_questions(run_dir: Path, db_url: str | None = None) -> tuple[int, list[str]]:
    """Answer every waiting question of the study; (answered, failures as one line each)."""
    from llmdebate.judging import require

    require("sqlalchemy")  # the judge extra, named where it is missing
    from llmdebate.judging.asking import append_asked, continuation_id, unanswered
    from llmdebate.judging.complete import waiting_by_id
    from llmdebate.judging.db import connect
    from llmdebate.protocols.interactive import person_asks
    from llmdebate.records.rundir import read_run_config
    from llmdebate.rl.replay import fork, team_for
    from llmdebate.rl.rewards import run_sync

    sessions = connect(run_dir, db_url)
    waiting = waiting_by_id(run_dir)
    with sessions() as s:
        todo = unanswered(s, run_dir, waiting)
    if not todo:
        return 0, []
    team = team_for(read_run_config(run_dir))

    async def one(shown: Transcript, questions: list[str]) -> Transcript:
        with person_asks(questions):
            return await fork(shown, team, len(questions) + 1)

    done, failed = 0, []
    for debate_id, shown, aid, questions in todo:
        try:
            out = run_sync(one(shown, questions))
        except UserError:
            raise
        except Exception as exc:  # a failed debate: one line, the others go on
            failed.append(f"assignment {aid}: {type(exc).__name__}: {exc}")
            continue
        out.id = continuation_id(debate_id, aid, len(questions))
        out.meta["debate_id"] = debate_id
        out.meta["assignment"] = aid
        done += append_asked(run_dir, out)
    return done, failed


@VERBS.register("answer")
@click.command("answer")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--db", "db_url", help="Database URL (default: judging.db in RUN_DIR).")
def command(run_dir: Path, db_url: str | None) -> None:
    """Run the debaters' next round for every question people asked in RUN_DIR's study."""
    done, failed = answer_questions(run_dir, db_url)
    click.echo(f"answered {done} question(s)")
    for line in failed:
        click.echo(f"failed: {line}", err=True)
    if failed:
        sys.exit(1)
