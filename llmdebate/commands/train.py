"""``llmdebate train --config FILE``: A-leading Stackelberg training of the prover and the
estimator with TRL, and expert iteration of the prover's decompositions (``expert``; needs
the ``train`` extra).

Exit status: 0 when the schedule finished, 2 for a user error (a bad config, a hosted model
that cannot be trained, a missing extra).
"""

from __future__ import annotations

import re
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import click

from llmdebate.commands.verbs import VERBS


@VERBS.register("train")
@click.command("train")
@click.option("--config", "config_path", type=click.Path(exists=True, dir_okay=False),
              required=True, help="YAML training config (configs/train-local.yaml).")
@click.option("--out-dir", type=click.Path(file_okay=False), default=None,
              help="Training folder (default: <out_dir>/<name>-<timestamp>).")
@click.option("--iterations", type=click.IntRange(min=0), default=None,
              help="Override iterations.")
@click.option("--quiet", is_flag=True, help="No progress output.")
def command(config_path: str, out_dir: str | None, iterations: int | None, quiet: bool) -> None:
    """Train the prover and the estimator on their own debates."""
    from llmdebate.experiment.warnings_log import warnings_to_log
    from llmdebate.report.judge_audit import hacking_line
    from llmdebate.training import load_train_config, train
    from llmdebate.training.metrics import AUDIT_PREFIX

    if quiet or not sys.stderr.isatty():
        _no_library_bars()
    overrides = {"iterations": iterations} if iterations is not None else {}
    cfg = load_train_config(config_path, overrides)
    if out_dir is None:
        name = re.sub(r"[^A-Za-z0-9_.-]+", "-", cfg.name).strip("-") or "train"
        out = Path(cfg.out_dir) / f"{name}-{datetime.now().strftime('%Y%m%d-%H%M%S')}"
    else:
        out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    with warnings_to_log(out):  # other packages' warnings (transformers', peft's) to the log
        res = train(cfg, out, progress=not quiet)
    if res.expert is not None:
        held = res.expert["held_out"]
        shares = ", ".join(f"{k} {v['exact_splits']:.0%}" for k, v in held.items())
        click.echo(f"{res.out}: expert iteration, {res.expert['steps']} steps in "
                   f"{res.expert['train_seconds']:.0f} s; exact interval splits on "
                   f"{res.expert['held_out_claims']} held-out claims: {shares or 'not graded'}; "
                   f"adapter {res.out / 'expert' / 'adapter'}")
    if res.estimator_expert is not None:
        e = res.estimator_expert
        held_out: dict[str, Any] = e["held_out"]
        briers = ", ".join(f"{k} {v['brier']:.4f}" for k, v in held_out.items())
        base = next((v["brier_base_rate"] for v in held_out.values()), None)
        click.echo(f"{res.out}: estimator expert iteration, {e['steps']} steps in "
                   f"{e['train_seconds']:.0f} s; Brier on {e['held_out_cases']} held-out "
                   f"cases: {briers or 'not scored'} (base rate {base}); adapter "
                   f"{res.out / 'estimator-expert' / 'adapter'}")
    if res.labeller_reward is not None:
        _labeller_lines(res.out, res.labeller_reward)
    alone = (res.expert, res.estimator_expert, res.labeller_reward)
    if any(x is not None for x in alone) and not res.history:
        return
    last = res.history[-1] if res.history else {}
    click.echo(
        f"{res.out}: {len(res.updates)} updates in {res.seconds:.0f} s; prover {res.prover_model}; "
        f"estimator {res.estimator_model}; A's expected payoff {last.get('expected_payoff')}"
    )
    for side, prefix in AUDIT_PREFIX.items():
        line = hacking_line(res.history, side, prefix)
        if line is not None:
            click.echo(f"{res.out}: {line}")


def _no_library_bars() -> None:
    """No carriage-return bars from transformers (loading weights) where ours are off or
    plain lines."""
    try:
        from transformers.utils import logging
    except ImportError:  # the train extra is missing: said when a model is needed
        return
    logging.disable_progress_bar()  # type: ignore[no-untyped-call]


def _labeller_lines(out: Path, summary: dict[str, Any]) -> None:
    """Per arm: its last round's figures and the judge-hacking line."""
    from llmdebate.training.label_reward import decisions_line, round_line

    click.echo(f"{out}: a policy on labellers' rewards, {summary['train']} training and "
               f"{summary['held_out']} held-out questions, {summary['seconds']:.0f} s; "
               f"{out / 'labeller-reward' / 'table.md'}")
    click.echo(f"{out}: {decisions_line(summary['speech'])}")
    for arm in summary["arms"]:
        last = arm["history"][-1]
        click.echo(f"{out}: {arm['arm']} (seed {arm['seed']}), step {last['step']}: "
                   f"{round_line(last)}")
        click.echo(f"{out}: {arm['arm']} (seed {arm['seed']}): {arm['hacking']}")
