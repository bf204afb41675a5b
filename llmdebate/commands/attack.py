"""``llmdebate attack``: search for the estimator (or prover) that breaks a guarantee."""

from __future__ import annotations

import json
from pathlib import Path

import click

from llmdebate.commands.formal import text_lines
from llmdebate.commands.help_table import ATTACK_ANSWERS, ATTACK_TARGETS, VARIANTS
from llmdebate.commands.verbs import VERBS


@VERBS.register("attack")
@click.command("attack")
@click.option(
    "--target",
    type=click.Choice(list(ATTACK_TARGETS)),
    default="completeness",
    show_default=True,
    help="completeness: the estimator minimising --prover's payoff; soundness: the prover "
    "maximising a dishonest payoff against --estimator.",
)
@click.option(
    "--problem", default="majority", show_default=True, help="interval, circuit or majority."
)
@click.option("--variant", type=click.Choice(list(VARIANTS)), default="figure2", show_default=True)
@click.option("--depth", type=int, default=1, show_default=True, help="d >= 0 rounds.")
@click.option("--width", type=int, default=5, show_default=True, help="q subclaims per claim.")
@click.option("--epsilon", type=float, default=0.2, show_default=True)
@click.option("--rho", type=float, default=0.5, show_default=True)
@click.option("--instances", type=int, default=40, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True, help="The problem's seed.")
@click.option("--noise", type=float, default=None, help="η (circuit judge / majority evidence).")
@click.option(
    "--stable-only/--all-instances",
    default=None,
    help="Keep only instances stable at every node (default: yes for completeness, no for "
    "soundness).",
)
@click.option(
    "--prover",
    default=None,
    help="completeness: the prover attacked (default honest); soundness: the prover "
    "Algorithm 1's estimator is built against (default dishonest).",
)
@click.option(
    "--estimator",
    default="algorithm1",
    show_default=True,
    help="soundness: the fixed estimator: algorithm1, omniscient, calibrated-ignorant "
    "or adversarial.",
)
@click.option(
    "--estimator-file",
    default=None,
    help="soundness: attack the estimator in this strategy file instead (its setting is used).",
)
@click.option(
    "--answer", type=click.Choice(list(ATTACK_ANSWERS)), default="wrong", show_default=True
)
@click.option(
    "--uninformed",
    is_flag=True,
    help="soundness: the prover does not know the instance (one decision table for all).",
)
@click.option("--delta", type=float, default=5e-4, show_default=True, help="Algorithm 1's δ.")
@click.option(
    "--budget", type=int, default=1024, show_default=True, help="Candidate tables per state."
)
@click.option("--population", type=int, default=64, show_default=True)
@click.option("--search-seed", type=int, default=0, show_default=True)
@click.option(
    "--out", default="attack.json", show_default=True, help="Where the strategy file goes."
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option("--quiet", is_flag=True, help="No progress output (on standard error).")
def command(
    target: str,
    problem: str,
    variant: str,
    depth: int,
    width: int,
    epsilon: float,
    rho: float,
    instances: int,
    seed: int,
    noise: float | None,
    stable_only: bool | None,
    prover: str | None,
    estimator: str,
    estimator_file: str | None,
    answer: str,
    uninformed: bool,
    delta: float,
    budget: int,
    population: int,
    search_seed: int,
    out: str,
    as_json: bool,
    quiet: bool,
) -> None:
    """Search for the strategy that breaks completeness or soundness; write it to --out."""
    from llmdebate.formal.attack import AttackSpec, run_attack
    from llmdebate.formal.attack_estimator import SearchBudget
    from llmdebate.formal.strategy_files import read_strategy

    spec = AttackSpec(
        target=target,
        problem=problem,
        variant=variant,
        depth=depth,
        width=width,
        epsilon=epsilon,
        rho=rho,
        instances=instances,
        seed=seed,
        noise=noise,
        stable_only=stable_only,
        prover=prover,
        estimator=estimator,
        answer=answer,
        uninformed=uninformed,
        delta=delta,
        budget=SearchBudget(evaluations=budget, population=population, seed=search_seed),
    )
    given = None
    if estimator_file is not None:
        sf = read_strategy(estimator_file, "estimator", "--estimator-file")
        st = sf.setting
        spec.problem, spec.depth, spec.width = st["problem"], st["depth"], st["width"]
        spec.instances, spec.seed, spec.noise = st["instances"], st["seed"], st["noise"]
        spec.variant, spec.epsilon, spec.rho = st["variant"], st["epsilon"], st["rho"]
        spec.stable_only = bool(st.get("stable_only", False))
        given = sf.policy
    from llmdebate.experiment.progress import Steps

    unit = "instance" if spec.target == "completeness" else "round"
    shown = Steps("attack", 0, not quiet, unit=unit)

    def on_step(done: int, total: int) -> None:
        shown.update(done, total=total)

    try:
        res = run_attack(spec, Path(out), given, on_step)  # type: ignore[arg-type]
    finally:
        shown.close()
    if as_json:
        click.echo(json.dumps(res))
        return
    for line in text_lines(res):
        click.echo(line)
    kind = "estimator" if spec.target == "completeness" else "prover"
    click.echo(f"wrote the {kind}'s strategy: {Path(out).resolve()}")
