"""``llmdebate formal``: one formal-engine evaluation, exact or by Monte Carlo."""

from __future__ import annotations

import json
from typing import Any

import click

from llmdebate.commands.help_table import VARIANTS
from llmdebate.commands.verbs import VERBS
from llmdebate.errors import ConfigError


def merge_setting(
    ctx: click.Context, setting: dict[str, Any], recorded: dict[str, Any], source: str
) -> None:
    """Take a strategy file's setting; a flag given on the command line must agree with it."""
    for key, val in recorded.items():
        if key not in setting:
            continue
        src = ctx.get_parameter_source(key)
        explicit = src is not None and src.name == "COMMANDLINE"
        if explicit and setting[key] != val:
            flag = "--" + key.replace("_", "-")
            raise ConfigError(f"{flag} {setting[key]} disagrees with {source}, found for {val}")
        setting[key] = val


@VERBS.register("formal")
@click.command("formal")
@click.option(
    "--problem", default="interval", show_default=True, help="interval, circuit or majority."
)
@click.option(
    "--protocol",
    default="prover-estimator",
    show_default=True,
    help="prover-estimator or naive-recursive.",
)
@click.option(
    "--prover",
    default="honest",
    show_default=True,
    help="honest, dishonest, random, last-index or honest-no-dead-zone.",
)
@click.option(
    "--estimator",
    default="calibrated-ignorant",
    show_default=True,
    help="omniscient, calibrated-ignorant, adversarial or algorithm1 "
    "(naive: the challenger's estimator).",
)
@click.option("--epsilon", type=float, default=0.2, show_default=True, help="ε, 0 < ε < 1/2.")
@click.option("--rho", type=float, default=0.5, show_default=True, help="ρ, 0 < ρ < 1.")
@click.option("--depth", type=int, default=3, show_default=True, help="d >= 0 rounds.")
@click.option("--width", type=int, default=4, show_default=True, help="q >= 1 subclaims per claim.")
@click.option(
    "--instances", type=int, default=50, show_default=True, help="Instances in the distribution."
)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option(
    "--noise",
    type=float,
    default=None,
    help="η: the judge's error (circuit) or the evidence's (majority).",
)
@click.option(
    "--exact",
    is_flag=True,
    help="Enumerate the protocol's randomness exactly (the default without --samples); "
    "an error where the enumeration is too large.",
)
@click.option(
    "--samples", type=int, default=None, help="Monte Carlo with this many debates instead."
)
@click.option(
    "--variant",
    type=click.Choice(list(VARIANTS)),
    default="figure2",
    show_default=True,
    help="Protocol variant (docs/protocol.md); figure2 is the paper's protocol.",
)
@click.option(
    "--stable-only",
    is_flag=True,
    help="Keep only the instances (ε,ρ)-stable at every node (where Lemma A.5 applies).",
)
@click.option(
    "--estimator-file",
    default=None,
    help="Play the estimator in this strategy file (llmdebate attack writes them); the file's "
    "setting (problem, d, q, ε, ρ, variant, instances, seed) is used.",
)
@click.option(
    "--prover-file", default=None, help="Play the prover in this strategy file (as above)."
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.pass_context
def command(
    ctx: click.Context,
    problem: str,
    protocol: str,
    prover: str,
    estimator: str,
    epsilon: float,
    rho: float,
    depth: int,
    width: int,
    instances: int,
    seed: int,
    noise: float | None,
    exact: bool,
    samples: int | None,
    variant: str,
    stable_only: bool,
    estimator_file: str | None,
    prover_file: str | None,
    as_json: bool,
) -> None:
    """Expected payoff of a prover against an estimator on a formal problem family."""
    from llmdebate.formal.evaluate import evaluate
    from llmdebate.formal.strategy_files import read_strategy

    if exact and samples is not None:
        raise ConfigError("--exact and --samples exclude each other: choose one")
    setting: dict[str, Any] = {
        "problem": problem,
        "depth": depth,
        "width": width,
        "instances": instances,
        "seed": seed,
        "noise": noise,
        "variant": variant,
        "epsilon": epsilon,
        "rho": rho,
        "stable_only": stable_only,
    }
    policies = {}
    for kind, path in (("estimator", estimator_file), ("prover", prover_file)):
        if path is not None:
            sf = read_strategy(path, kind, f"--{kind}-file")
            merge_setting(ctx, setting, sf.setting, f"--{kind}-file {path}")
            policies[kind] = sf.policy
    res = evaluate(
        protocol=protocol,
        prover=prover,
        estimator=estimator,
        exact=samples is None,
        samples=samples or 0,
        prover_policy=policies.get("prover"),  # type: ignore[arg-type]
        estimator_policy=policies.get("estimator"),  # type: ignore[arg-type]
        **setting,
    )
    if as_json:
        click.echo(json.dumps(res))
        return
    for line in text_lines(res):
        click.echo(line)


SIGNIFICANT = 6
"""Significant digits of a figure in the text output (``--json`` has them all)."""


def plain(value: Any) -> str:
    """A value of the text output: a float to :data:`SIGNIFICANT` digits, a list joined,
    None as ``none``."""
    if isinstance(value, bool) or value is None:
        return {None: "none", True: "yes", False: "no"}[value]
    if isinstance(value, float):
        return f"{value:.{SIGNIFICANT}g}"
    if isinstance(value, (list, tuple)):
        return ", ".join(plain(v) for v in value) or "none"
    return str(value)


def text_lines(res: dict[str, Any], indent: str = "") -> list[str]:
    """``res`` as aligned ``key  value`` lines; a nested dict as its key, then its own
    lines indented under it."""
    width = max((len(k) for k in res), default=0)
    out: list[str] = []
    for key, val in res.items():
        if isinstance(val, dict) and val:
            out.append(f"{indent}{key}:")
            out.extend(text_lines(val, indent + "  "))
        else:
            out.append(f"{indent}{key:<{width}}  {plain(val)}")
    return out
