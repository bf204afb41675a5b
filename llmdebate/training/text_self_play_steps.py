"""The steps of :mod:`llmdebate.training.text_self_play`: A's (its decompositions and its
beliefs), B's, and the run in Algorithm 1's order with a round of held-out figures every
``round_every`` A steps."""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from llmdebate.agents.replies import decomposition_schema
from llmdebate.models.grammar_cache import GrammarCache
from llmdebate.prompts import Prompts
from llmdebate.training import text_game as game
from llmdebate.training.self_play import ESTIMATOR, PROVER, TwoSeats, round_entry
from llmdebate.training.text_sample import Completion, greedy, sample, sequence_logprobs
from llmdebate.training.text_self_play import (
    Played,
    TextCase,
    TextPlaySettings,
    Verdicts,
    flat,
    levels_of,
    parsed,
    seat_values,
)


@dataclass
class Decomposer:
    """A's decompositions: its adapter under the decomposition schema's grammar."""

    seats: TwoSeats
    grammar: GrammarCache
    device: str
    max_tokens: int
    prompts: Prompts

    def replies(self, case: TextCase, n: int, temperature: float,
                generator: Any) -> list[Completion]:
        model = self.seats.trainer.model
        model.set_adapter(PROVER)
        schema = decomposition_schema(case.claim.width).schema_json
        return sample(model, self.seats.trainer.tok, self.grammar, schema, case.decompose, n,
                      temperature=temperature, max_tokens=self.max_tokens,
                      generator=generator, device=self.device)

    def greedy(self, cases: Sequence[TextCase]) -> list[Completion]:
        """A's most likely allowed decomposition of each case, decoded together."""
        model = self.seats.trainer.model
        model.set_adapter(PROVER)
        schemas = [decomposition_schema(c.claim.width).schema_json for c in cases]
        return greedy(model, self.seats.trainer.tok, self.grammar, schemas,
                      [c.decompose for c in cases], max_tokens=self.max_tokens,
                      device=self.device)

    def logprobs(self, case: TextCase, comps: Sequence[Completion]) -> Any:
        model = self.seats.trainer.model
        model.set_adapter(PROVER)
        model.train()
        return sequence_logprobs(model, self.seats.trainer.tok, case.decompose, comps,
                                 self.device)


def play_out(d: Decomposer, case: TextCase, comps: Sequence[Completion],
             verdicts: Verdicts) -> list[Played]:
    out = []
    for c in comps:
        g, split = parsed(d.prompts, case.claim, c.text)
        v = verdicts(case, split) if split is not None else None
        out.append(Played(case, g, split if v is not None else None, v, 0.0))
    return out


def _returns(seats: TwoSeats, plays: Sequence[Played], s: TextPlaySettings, *,
             prover_grad: bool, estimator_grad: bool,
             temperature: float | None) -> list[dict[str, Any]]:
    """Each play's terms (:func:`game.split_terms`) and E[r_init], from A's and B's current
    values (with gradient in the seat named)."""
    cases = list({id(p.case): p.case for p in plays}.values())
    index = {id(c): i for i, c in enumerate(cases)}
    xs = [c.prompt for c in cases]
    q_x = seat_values(seats, PROVER, xs, prover_grad)
    p1 = seat_values(seats, ESTIMATOR, xs, estimator_grad)
    valid = [p for p in plays if p.split is not None]
    splits = [p.split for p in valid if p.split is not None]
    b = seat_values(seats, ESTIMATOR, flat(splits), estimator_grad)
    q = seat_values(seats, PROVER, [x for sp in splits for x in sp.prover_prompts], prover_grad)
    out = []
    at_b = at_q = 0
    for p in plays:
        i = index[id(p.case)]
        row: dict[str, Any] = {"r_init": game.init_term(s.ratio, q_x[i], p1[i])}
        if p.split is not None and p.verdicts is not None:
            levels, at_b = levels_of(b, p.split, at_b)
            beliefs = [q[at_q + k] for k in range(len(p.split.subclaims))]
            at_q += len(p.split.subclaims)
            row.update(game.split_terms(s.ratio, q_x[i], p1[i], p.split.table, levels, beliefs,
                                        p.verdicts, epsilon=s.epsilon, temperature=temperature))
        else:
            row.update(r_1=None, r_0=None, invalid=game.invalid_return(s.ratio))
        out.append(row)
    return out


def _ascend(torch: Any, opt: Any, params: list[Any], lr: float) -> float:
    for g in opt.param_groups:
        g["lr"] = lr
    norm = torch.nn.utils.clip_grad_norm_(params, 1.0)
    opt.step()
    return float(norm)


def _return(row: dict[str, Any]) -> float:
    """A play's return to go from the decompose act, r_1 + r_0 (or the invalid return)."""
    if row["r_1"] is None:
        return float(row["invalid"])
    return game.value(row["r_1"]) + game.value(row["r_0"])


def prover_step(d: Decomposer, opt: Any, batch: Sequence[TextCase], s: TextPlaySettings,
                lr: float, verdicts: Verdicts, generator: Any) -> tuple[dict[str, float],
                                                                       list[Played]]:
    """One A step: ``group`` decompositions per claim, their policy gradient in the
    decompose act's frame, and A's beliefs' mixed-direction expected payoff at both levels."""
    seats, torch = d.seats, d.seats.torch
    opt.zero_grad()
    plays: list[Played] = []
    groups = []
    for case in batch:
        comps = d.replies(case, s.group, 1.0, generator)
        mine = play_out(d, case, comps, verdicts)
        played = _returns(seats, mine, s, prover_grad=False, estimator_grad=False,
                          temperature=None)
        values = [_return(r) for r in played]
        for p, v in zip(mine, values, strict=True):
            p.value = v
        frame = game.decision_frame(s.ratio, math.fsum(values) / len(values))
        adv = game.group_advantages([frame(v) for v in values])
        groups.append((case, comps, adv))
        plays += mine
    for case, comps, adv in groups:
        lp = d.logprobs(case, comps)
        a = torch.tensor(adv, dtype=lp.dtype, device=lp.device)
        (-(a * lp).mean() / len(groups)).backward()
    valid = [p for p in plays if p.split is not None]
    belief: Any = 0.0
    if valid:
        rows = _returns(seats, valid, s, prover_grad=True, estimator_grad=False,
                        temperature=s.temperature)
        belief = sum((r["r_1"] + r["r_0"] for r in rows), 0.0) / len(rows)
        seats.trainer.model.set_adapter(PROVER)  # as in estimator_step
        (-belief).backward()
    norm = _ascend(torch, opt, seats.params(PROVER), lr)
    n = len(plays)
    return ({"prover_return": math.fsum(p.value for p in plays) / n,
             "valid": sum(bool(p.grade["valid"]) for p in plays) / n,
             "exact_split": sum(bool(p.grade["exact_split"]) for p in plays) / n,
             "judged": len(valid) / n, "belief_objective": game.value(belief),
             "reply_tokens": math.fsum(len(c.tokens) for _, cs, _ in groups for c in cs) / n,
             "prover_grad_norm": norm}, plays)


def estimator_step(seats: TwoSeats, opt: Any, plays: Sequence[Played], s: TextPlaySettings,
                   lr: float) -> dict[str, float]:
    """One B step on −R_A of ``plays`` against A's current beliefs' played directions."""
    torch = seats.torch
    opt.zero_grad()
    rows = _returns(seats, plays, s, prover_grad=False, estimator_grad=True, temperature=None)
    total = [r["r_init"] + (r["r_1"] + r["r_0"] if r["r_1"] is not None else r["invalid"])
             for r in rows]
    payoff: Any = -sum(total, 0.0) / len(total)
    # peft's set_adapter turns off requires_grad of the other adapter, and a leaf that
    # does not require grad at backward time gets none: B's adapter active again
    seats.trainer.model.set_adapter(ESTIMATOR)
    (-payoff).backward()  # the optimiser descends: B ascends its payoff
    norm = _ascend(torch, opt, seats.params(ESTIMATOR), lr)
    return {"estimator_objective": float(payoff.detach()), "estimator_grad_norm": norm}


def lr_at(s: TextPlaySettings, step: int, total: int) -> float:
    return s.learning_rate * (1 - step / max(1, total))


def play(d: Decomposer, train: Sequence[TextCase], held: Sequence[TextCase],
         s: TextPlaySettings, *, seed: int, verdicts: Verdicts,
         figures: Callable[[], dict[str, Any]],
         on_log: Callable[[dict[str, Any]], None] | None = None,
         stop: Callable[[], bool] = lambda: False) -> list[dict[str, Any]]:
    """Both seats from the base model (fresh adapters from ``seed``), Algorithm 1's order;
    one entry of ``figures()`` per round (round 0: the base model in both seats). ``stop``:
    asked after every round; true ends the run there (after round 0: before any step)."""
    seats, torch = d.seats, d.seats.torch
    seats.reset(PROVER, seed)
    seats.reset(ESTIMATOR, seed + 1)
    opt_a = torch.optim.AdamW(seats.params(PROVER), lr=s.learning_rate, weight_decay=0.0)
    opt_b = torch.optim.AdamW(seats.params(ESTIMATOR), lr=s.learning_rate, weight_decay=0.0)
    rng = random.Random(seed)
    generator = torch.Generator().manual_seed(seed)
    history: list[dict[str, Any]] = []
    since: list[dict[str, float]] = []
    t0 = time.perf_counter()

    def record(step: int) -> None:
        entry = round_entry(len(history), step, s.estimator_steps if s.train_estimator else 0,
                            figures(), since, t0)
        history.append(entry)
        since.clear()
        if on_log is not None:
            on_log(entry)

    record(0)
    if stop():
        return history
    for step in range(s.prover_steps):
        t1 = time.perf_counter()
        batch = rng.sample(list(train), min(s.batch_size, len(train)))
        stats, plays = prover_step(d, opt_a, batch, s, lr_at(s, step, s.prover_steps),
                                   verdicts, generator)
        stats["prover_step_s"] = time.perf_counter() - t1
        since.append(stats)
        if s.train_estimator:
            for j in range(s.estimator_steps):
                since.append(estimator_step(
                    seats, opt_b, plays, s,
                    lr_at(s, step * s.estimator_steps + j, s.prover_steps * s.estimator_steps)))
        if (step + 1) % s.round_every == 0 or step + 1 == s.prover_steps:
            record(step + 1)
            if stop():
                break
    return history
