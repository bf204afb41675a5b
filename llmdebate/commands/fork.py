"""``llmdebate fork RUN_DIR --at N``: every debate of a run again from round N, as recorded
before it, with the run's agents (or swapped ones) from there on.

A fork replays the debate's own protocol from its seed (:func:`llmdebate.rl.fork`): the
decisions before the fork point are the recorded ones, the rest are asked again, so with no
swap a fork is the recorded debate bit for bit. ``--swap ROLE=MODEL`` gives a role (prover,
estimator, judge: a model string, or a judge kind) or a seat (``debater B``, a protocol's
``critic``) another model from the fork point on; MODEL may be a YAML mapping, a model with
its settings as a config spells one (``critic={model: scripted, options: {replies: [C1]}}``).
The forked debates go to ``--out`` (one transcript a line; ``meta.forked`` says where each
came from, ``meta.seats`` who sat where).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from llmdebate.commands.verbs import VERBS
from llmdebate.errors import UserError

if TYPE_CHECKING:  # the modules of a fork are imported when it runs: --help stays quick
    from llmdebate.agents.settings import ModelSettings
    from llmdebate.core.schemas import Transcript


def swaps(pairs: tuple[str, ...]) -> dict[str, str | ModelSettings]:
    """``ROLE=MODEL`` pairs as a dict. MODEL is a model string, or a model with its settings
    as a config spells one, a YAML mapping (``critic={model: scripted, options: {replies:
    [C1, C2]}}``); a pair without ``=``, or a mapping that is not a model, is a one-line
    error naming the pair."""
    out: dict[str, str | ModelSettings] = {}
    for pair in pairs:
        role, sep, model = (part.strip() for part in pair.partition("="))
        if not sep or not role or not model:
            raise UserError(f"--swap {pair!r}: write ROLE=MODEL (e.g. critic=parrot/critic-2, "
                            "or critic={model: scripted, options: {replies: [C1]}})")
        if not model.startswith("{"):
            out[role] = model
            continue
        import yaml  # only when a mapping is given: --help stays quick

        from llmdebate.rl.replay import swap_settings

        try:
            data = yaml.safe_load(model)
        except yaml.YAMLError as exc:
            raise UserError(f"--swap {role}: not a YAML mapping: {str(exc).splitlines()[0]}") \
                from None
        if not isinstance(data, dict):
            raise UserError(f"--swap {role}: not a YAML mapping: {model}")
        try:
            out[role] = swap_settings(role, data)
        except UserError as exc:
            raise UserError(f"--{exc}") from None
    return out


def fork_run(
    run_dir: Path,
    at: int,
    *,
    act: str = "direction",
    speaker: str | None = None,
    step: int | None = None,
    swap: dict[str, str | ModelSettings] | None = None,
    debates: tuple[str, ...] = (),
    protocols: tuple[str, ...] = (),
) -> tuple[list[Transcript], list[str]]:
    """Every debate of ``run_dir`` that did not fail (or those ``debates`` names, of
    ``protocols`` where given), forked at
    round ``at`` (``act`` within a recursive debate's round, ``speaker`` or ``step`` within
    a speech round) with ``swap``'s models; (the forks, a line for every debate whose fork
    failed)."""
    from llmdebate.records.rundir import load_transcripts, read_run_config
    from llmdebate.rl.replay import fork, team_for
    from llmdebate.rl.rewards import run_sync

    ts = [t for t in load_transcripts(run_dir) if t.status != "failed"]
    if debates:
        unknown = sorted(set(debates) - {t.id for t in ts})
        if unknown:
            raise UserError(f"--debate: no debate {unknown[0]!r} in {run_dir}")
        ts = [t for t in ts if t.id in debates]
    if protocols:
        ts = [t for t in ts if t.protocol in protocols]
    team = team_for(read_run_config(run_dir), swap=swap)
    swapped = tuple(swap or ())
    forked: list[Transcript] = []
    failed: list[str] = []
    for t in ts:
        try:
            forked.append(run_sync(fork(
                t, team, at, act=act, speaker=speaker, step=step, swapped=swapped
            )))
        except UserError:
            raise
        except Exception as exc:  # this debate's fork failed: one line, the others go on
            failed.append(f"{t.id}: {type(exc).__name__}: {exc}")
    return forked, failed


@VERBS.register("fork")
@click.command("fork")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--at", type=int, required=True,
              help="The round the fork starts at (a speech protocol: 1..rounds+1; a recursive "
              "one: 0..depth).")
@click.option("--act", default="direction", show_default=True,
              help="Recursive debates: the decision of round --at the fork starts at.")
@click.option("--speaker", default=None,
              help="Speech debates: the seat of round --at the fork starts at (default: the "
              "whole round is played again).")
@click.option("--step", type=click.IntRange(min=1), default=None,
              help="Speech debates: the speech of round --at the fork starts at, counted from "
              "1 in speaking order (a seat that speaks twice a round has two steps).")
@click.option("--swap", "swap_pairs", multiple=True, metavar="ROLE=MODEL",
              help="Another model for a role or seat from the fork point on (repeatable): a "
              "model string, or a YAML mapping as a config spells a model, e.g. "
              "'critic={model: scripted, options: {replies: [C1, C2]}}'.")
@click.option("--debate", "debates", multiple=True, metavar="ID",
              help="Fork only this debate (repeatable; default: every one that did not fail).")
@click.option("--protocol", "protocols", multiple=True, metavar="NAME",
              help="Fork only the debates of this protocol (repeatable).")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Where the forked transcripts go (default: RUN_DIR/forks.jsonl).")
def command(
    run_dir: Path, at: int, act: str, speaker: str | None, step: int | None,
    swap_pairs: tuple[str, ...],
    debates: tuple[str, ...], protocols: tuple[str, ...], out: Path | None,
) -> None:
    """Play RUN_DIR's debates again from round --at, replaying what came before."""
    from llmdebate.records.transcripts import transcript_line

    forked, failed = fork_run(
        run_dir, at, act=act, speaker=speaker, step=step, swap=swaps(swap_pairs),
        debates=debates,
        protocols=protocols,
    )
    path = out or run_dir / "forks.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(transcript_line(t) for t in forked))
    click.echo(f"forked {len(forked)} debate(s) at round {at} into {path}")
    for line in failed:
        click.echo(f"failed: {line}", err=True)
    if failed:
        sys.exit(1)
