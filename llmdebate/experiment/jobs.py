"""The debates of a run: every (item, protocol, variant), with its answers, id and seed.

Everything a debate is about is drawn here, once, from the run seed and the item id alone:
the wrong answer (the distractor the item names in ``meta["distractor"]``, e.g. QuALITY's best
distractor; else a distractor choice, or a nearby number for a free-form numeric answer),
the order in which a judge sees the two answers, and the debate seed. So the same item and
seed give the same claim, the same assigned answers and the same debate whichever protocols
the run holds, whatever else is in the dataset, and whichever command ran it.

Debate ids are ``<protocol>/<item id>/<variant>``; variants: ``honest`` / ``dishonest`` (the
prover or consultant defends the gold answer / the distractor), ``chosen`` (the prover picks),
``order-0`` / ``order-1`` (two-sided: which answer debater A defends), ``direct`` (or, on an
item with a passage, ``blind`` / ``expert``: the judge without and with the passage); each
protocol says which (:meth:`llmdebate.protocols.interface.Protocol.variants`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from llmdebate.core.engine import debate_seed
from llmdebate.data.loader import Item, item_key
from llmdebate.experiment.config import ExperimentConfig
from llmdebate.protocols.families import needs_wrong_answer
from llmdebate.protocols.interface import assigned_answer
from llmdebate.protocols.registry import get_protocol
from llmdebate.protocols.spec import DebateSpec


def item_rng(seed: int, item_id: str) -> np.random.Generator:
    """The generator of an item's draws (distractor, shown order) under the run seed."""
    return np.random.default_rng([seed, item_key(item_id), 0])


@dataclass(frozen=True)
class ItemDraws:
    """The answers every protocol decides between, the order shown to a judge, or why none."""

    gold: str
    distractor: str
    shown: tuple[str, str]
    problem: str | None = None


def named_distractor(item: Item) -> str | None:
    """The distractor the item names (``meta["distractor"]``, e.g. QuALITY's best
    distractor) when it is one of its wrong choices."""
    named = item.meta.get("distractor")
    if isinstance(named, str) and named != item.answer and named in (item.choices or []):
        return named
    return None


def wrong_answer(item: Item, rng: np.random.Generator) -> str | None:
    """The item's named distractor; else a wrong choice drawn from ``rng``, or for a numeric
    free-form answer a nearby number; None if none of these."""
    wrong = [c for c in (item.choices or []) if c != item.answer]
    named = named_distractor(item)
    if named is not None:
        rng.integers(max(len(wrong), 1))  # the same draws follow as for a drawn distractor
        return named
    if wrong:
        return str(wrong[int(rng.integers(len(wrong)))])
    if item.choices:
        return None
    try:
        gold = float(item.answer.replace(",", ""))
    except ValueError:
        return None
    delta = max(1, round(abs(gold) * 0.2)) * int(rng.choice([-1, 1])) * int(rng.integers(1, 4))
    value = gold + delta
    return str(int(value)) if value == int(value) else f"{value:g}"


def draws(item: Item, seed: int) -> ItemDraws:
    rng = item_rng(seed, item.id)
    distractor = wrong_answer(item, rng)
    if distractor is None:
        return ItemDraws(
            item.answer,
            "",
            (item.answer, ""),
            problem=f"item {item.id} has no wrong answer to debate against "
            "(free-form and not a number)",
        )
    gold_first = bool(rng.integers(2))
    shown = (item.answer, distractor) if gold_first else (distractor, item.answer)
    return ItemDraws(item.answer, distractor, shown)


def variants(protocol: str, assignment: str, index: int) -> tuple[str, ...]:
    """The debates a protocol runs on item number ``index`` under a prover assignment
    (:meth:`llmdebate.protocols.interface.Protocol.variants`)."""
    return get_protocol(protocol).variants(assignment, index)


@dataclass(frozen=True)
class Job:
    """A debate to run, or (``problem`` set) one that can only be recorded as failed."""

    spec: DebateSpec
    problem: str | None = None
    seats: tuple[tuple[str, str], ...] = ()
    """(seat, model key) of the seats that hold their own model (a roster's or ``seats``'s;
    :class:`llmdebate.experiment.plan.Plan` fills them)."""

    def seated(self, seats: Mapping[str, str], suffix: str | None = None) -> Job:
        """This debate with ``seats`` (seat -> model key) and, with ``suffix``, its id
        extended by ``/<suffix>``."""
        spec = self.spec
        if suffix is not None:
            spec = dataclasses.replace(spec, debate_id=f"{spec.debate_id}/{suffix}")
        merged = {**dict(self.seats), **seats}
        return Job(spec, self.problem, tuple(sorted(merged.items())))


def make_jobs(items: list[Item], config: ExperimentConfig) -> list[Job]:
    """Every debate of the run, item by item, protocol by protocol, in a stable order."""
    jobs: list[Job] = []
    for index, item in enumerate(items):
        dr = draws(item, config.seed)
        seed = debate_seed(config.seed, item_key(item.id))
        for protocol in config.protocols:
            proto = get_protocol(protocol, where="protocols")
            views = config.judge.direct_passage if item.context and item.context.strip() else None
            for variant in proto.variants(config.prover.assignment, index, views):
                answer = assigned_answer(variant, dr.gold, dr.distractor)
                spec = DebateSpec(
                    debate_id=f"{protocol}/{item.id}/{variant}",
                    protocol=protocol,
                    variant=variant,
                    item=item,
                    index=index,
                    seed=seed,
                    gold=dr.gold,
                    distractor=dr.distractor,
                    shown=dr.shown,
                    answer=answer,
                )
                problem = dr.problem if needs_wrong_answer(proto, variant) else None
                jobs.append(Job(spec, problem))
    return jobs
