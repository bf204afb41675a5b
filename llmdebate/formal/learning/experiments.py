"""The four learning experiments of docs/training-dynamics.md, at full size or tiny.

(a) ``figure2``: learned A and learned B on stable majority instances (Theorem 6.2);
(b) naive recursive debate on the interval problem: a learned A that must lie, against a
    challenger that cannot factor (calibrated-ignorant) and, as a control, one that can
    (omniscient);
(c) the eq.-(13) honest A against a learned B under every variant (the marginal ones and
    ``commit`` against ``figure2``), and, under ``marginal`` and ``figure2``, with B's top
    number held just outside A's dead zone (the first move of the searched attack), so that
    B's tables are what it learns (with a decaying step size: the attack sits at a cliff);
(d) a learned A that must lie against a learned B (``figure2`` and ``marginal`` on stable
    majority instances, ``figure2`` on the interval problem), and against the
    calibrated-ignorant B that cannot factor (interval problem: the soundness gap).

Where B learns, ``refine`` more B-only steps after training measure how far B's inner loop
was from a best response to the final A.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from llmdebate.formal.learning.es import ESConfig
from llmdebate.formal.learning.naive_train import NaiveRun
from llmdebate.formal.learning.stackelberg import Run
from llmdebate.formal.problems.circuit import make_circuit
from llmdebate.formal.problems.interval import make_interval
from llmdebate.formal.problems.majority import make_majority
from llmdebate.formal.problems.problem import TreeProblem
from llmdebate.formal.stable import stable_problem

EPSILON, RHO = 0.2, 0.5
EXPERIMENTS = ("a", "b", "c", "d", "e", "f", "g", "h", "i")
C_VARIANTS = ("figure2", "marginal", "commit", "commit-marginal")
F_VARIANTS = ("marginal", "commit", "commit-marginal", "independent")


@dataclass
class Size:
    """How big: problem sizes and steps (``full`` for the docs, ``tiny`` for the tests)."""

    kappa: int = 5
    instances: int = 64
    interval_depth: int = 4
    outer: int = 80
    inner: int = 4
    naive_outer: int = 40
    c_outer: int = 100
    hint_outer: int = 1200
    refine: int = 100
    pairs: int = 8
    d_inner: int = 8  # (d), interval arms: B's steps per A step
    obs_instances: int = 16  # (e), (f): players that must compute
    obs_outer: int = 60
    obs_inner: int = 2
    obs_pairs: int = 4
    obs_refine: int = 30
    debates: int = 1024  # (e) sampled: A's debates per step, B's per member
    member_debates: int = 128


FULL = Size()
TINY = Size(kappa=5, instances=12, interval_depth=2, outer=6, inner=2, naive_outer=6,
            c_outer=6, hint_outer=6, refine=2, pairs=3, d_inner=2, obs_instances=6,
            obs_outer=3, obs_inner=1, obs_pairs=2, obs_refine=2, debates=64, member_debates=16)


@dataclass
class Arm:
    """One line of a figure: a label and one run per training seed."""

    label: str
    runs: list[Run | NaiveRun] = field(default_factory=list)


def majority(size: Size) -> TreeProblem:
    return stable_problem(make_majority(1, size.kappa, size.instances, 0), EPSILON, RHO)


def observed_settings(size: Size) -> dict[str, TreeProblem]:
    """The families of (e) and (f): majority (d = 1: κ = 5, the stable instances; d = 2:
    κ = 3, every instance, none stable) and circuits of fan-in 3 (AND, then OR)."""
    n = size.obs_instances
    return {
        "majority d=1": stable_problem(make_majority(1, size.kappa, 2 * n, 0), EPSILON, RHO),
        "circuit d=1": make_circuit(1, 3, n, 0),
        "majority d=2": make_majority(2, 3, n, 0),
        "circuit d=2": make_circuit(2, 3, n, 0),
    }


def _observed(prob: TreeProblem, size: Size, variant: str, seeds: list[int],
              sampled: bool = False, sight_a: int | None = None,
              sight_b: int | None = None) -> list[Run | NaiveRun]:
    es = ESConfig(pairs=size.obs_pairs)
    if variant == "naive":
        return [NaiveRun(prob, challenger="observed", prover="observed", lie=False,
                         outer=size.obs_outer, inner=size.obs_inner, seed=s, es=es,
                         init_scale=0.5) for s in seeds]
    debates, member = (size.debates, size.member_debates) if sampled else (0, 256)
    return [Run(prob, variant=variant, prover="observed", estimator="observed",
                outer=size.obs_outer, inner=size.obs_inner, seed=s, es=es, init_scale=0.5,
                refine=size.obs_refine, debates=debates, member_debates=member,
                sight_a=sight_a, sight_b=sight_b) for s in seeds]


def arms(name: str, size: Size, seeds: list[int]) -> list[Arm]:
    """The arms of experiment ``name`` (one of :data:`EXPERIMENTS`)."""
    es = ESConfig(pairs=size.pairs)
    b_es = ESConfig(pairs=size.pairs, sigma=0.05, lr=0.05)
    if name == "a":
        prob = majority(size)
        return [Arm("figure2, learned A vs learned B", [
            Run(prob, prover="learned", outer=size.outer, inner=size.inner, seed=s, es=es,
                refine=size.refine) for s in seeds])]
    if name == "b":
        prob = make_interval(size.interval_depth, 2, size.instances, 0)
        return [Arm(f"challenger: {ch}", [
            NaiveRun(prob, challenger=ch, outer=size.naive_outer, seed=s, es=es)
            for s in seeds]) for ch in ("calibrated-ignorant", "omniscient")]
    if name == "c":
        prob = majority(size)
        out = [Arm(f"{v}, learned B", [
            Run(prob, variant=v, prover="honest", outer=size.c_outer, inner=size.inner,
                seed=s, es=es, es_estimator=b_es) for s in seeds]) for v in C_VARIANTS]
        hint = ESConfig(pairs=size.pairs, sigma=0.1, lr=0.05, clip=20.0, halflife=200.0)
        for v in ("marginal", "figure2"):
            out.append(Arm(f"{v}, learned B, p_d held at 0.21 from the truth", [
                Run(prob, variant=v, prover="honest", outer=size.hint_outer, inner=1,
                    seed=s, es=es, es_estimator=hint, estimator_top=0.21) for s in seeds]))
        return out
    if name == "d":
        prob = majority(size)
        out = [Arm(f"{v}, learned lying A vs learned B", [
            Run(prob, variant=v, prover="learned-liar", outer=size.outer, inner=size.inner,
                seed=s, es=es, refine=size.refine) for s in seeds])
            for v in ("figure2", "marginal")]
        interval = make_interval(1, 2, size.instances, 0)
        for est in ("learned", "calibrated-ignorant"):
            out.append(Arm(f"interval d=1 q=2, figure2, learned lying A vs {est} B", [
                Run(interval, prover="learned-liar", estimator=est, outer=size.outer,
                    inner=size.d_inner, seed=s, es=es, refine=size.refine) for s in seeds]))
        return out
    if name == "e":
        out = []
        for label, prob in observed_settings(size).items():
            out.append(Arm(f"{label}, figure2, exact", _observed(prob, size, "figure2", seeds)))
            out.append(Arm(f"{label}, figure2, sampled",
                           _observed(prob, size, "figure2", seeds, sampled=True)))
        return out
    if name == "g":  # (e)'s d = 1 figure2 arms with (a)'s budget: 8 pairs, 4 B steps, 80 steps
        big = Size(**{**size.__dict__, "obs_pairs": size.pairs, "obs_inner": size.inner,
                      "obs_outer": size.outer})
        settings = observed_settings(size)
        return [Arm(f"{label}, figure2, exact, (a)'s budget",
                    _observed(settings[label], big, "figure2", seeds))
                for label in ("majority d=1", "circuit d=1")]
    if name == "h":  # (g)'s circuit d = 1 arm with one player inspecting 2 of the 3 leaves
        big = Size(**{**size.__dict__, "obs_pairs": size.pairs, "obs_inner": size.inner,
                      "obs_outer": size.outer})
        prob = observed_settings(size)["circuit d=1"]
        return [Arm(f"circuit d=1, figure2, exact, (a)'s budget, {who} inspects 2 of 3 leaves",
                    _observed(prob, big, "figure2", seeds, sight_a=2 if who == "A" else None,
                              sight_b=2 if who == "B" else None))
                for who in ("A", "B")]
    if name == "i":  # (f)'s prover-estimator arms from sampled debates
        settings = observed_settings(size)
        return [Arm(f"{label}, {v}, sampled",
                    _observed(settings[label], size, v, seeds, sampled=True))
                for label in ("majority d=1", "circuit d=2") for v in F_VARIANTS]
    if name == "f":
        settings = observed_settings(size)
        out = []
        for label in ("majority d=1", "circuit d=2"):
            for v in (*F_VARIANTS, "naive"):
                out.append(Arm(f"{label}, {v}, exact", _observed(settings[label], size, v, seeds)))
        return out
    raise ValueError(f"experiment must be one of {', '.join(EXPERIMENTS)} (got {name!r})")
