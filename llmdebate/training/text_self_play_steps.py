"""The steps of :mod:`llmdebate.training.text_self_play`: A's (its decompositions and its
beliefs), B's, and the run in Algorithm 1's order with a round of held-out figures every
``round_every`` A steps."""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from llmdebate.agents.replies import decomposition_schema
from llmdebate.models.grammar_cache import GrammarCache
from llmdebate.prompts import Prompts
from llmdebate.training import text_game as game
from llmdebate.training.frozen_prefix import FrozenPrefix
from llmdebate.training.precision import Head
from llmdebate.training.self_play import ESTIMATOR, PROVER, TwoSeats, round_entry
from llmdebate.training.text_decode import decode
from llmdebate.training.text_logprob import group_logprobs
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
    """A's decompositions: its adapter under the decomposition schema's grammar, decoded by
    ``decoder``: ``batched`` (:mod:`llmdebate.training.text_decode`: every claim's group in
    one batch, the policy gradient's log-probabilities in one pass from the frozen layers'
    outputs, :mod:`llmdebate.training.text_logprob`) or ``one-row`` (the reference:
    :func:`~llmdebate.training.text_sample.sample` per claim, a full forward pass per claim
    for the gradient). ``head``: the output projection in the run's precision (default: the
    model's own, in float32)."""

    seats: TwoSeats
    grammar: GrammarCache
    device: str
    max_tokens: int
    prompts: Prompts
    decoder: str = "batched"
    head: Head | None = None
    step_claim: bool = False
    """Each split with its step as a claim (:attr:`TextPlaySettings.step_claim`)."""
    prefix: FrozenPrefix = field(default_factory=FrozenPrefix)
    """The frozen layers' part of the last decoded prompts' shared beginning, replayed by
    the next decoding (:mod:`llmdebate.training.frozen_prefix`)."""

    def _head(self) -> Head:
        if self.head is None:
            self.head = Head(self.seats.trainer.model, "float32")
        return self.head

    def replies(self, case: TextCase, n: int, temperature: float,
                generator: Any) -> list[Completion]:
        return self.groups([case], n, temperature, generator)[0]

    def groups(self, cases: Sequence[TextCase], n: int, temperature: float,
               generator: Any) -> list[list[Completion]]:
        """``n`` sampled decompositions of each case."""
        model = self.seats.trainer.model
        model.set_adapter(PROVER)
        schemas = [decomposition_schema(c.claim.width).schema_json for c in cases]
        if self.decoder == "one-row":
            return [sample(model, self.seats.trainer.tok, self.grammar, schema, c.decompose, n,
                           temperature=temperature, max_tokens=self.max_tokens,
                           generator=generator, device=self.device)
                    for c, schema in zip(cases, schemas, strict=True)]
        floor = self.seats.trainer.floor if self.seats.trainer.frozen else 0
        return decode(model, self.seats.trainer.tok, self.grammar, self._head(),
                      [c.decompose for c in cases], schemas, n, temperature=temperature,
                      max_tokens=self.max_tokens, generator=generator, device=self.device,
                      floor=floor, prefix=self.prefix)

    def greedy(self, cases: Sequence[TextCase]) -> list[Completion]:
        """A's most likely allowed decomposition of each case, decoded together."""
        model = self.seats.trainer.model
        model.set_adapter(PROVER)
        schemas = [decomposition_schema(c.claim.width).schema_json for c in cases]
        if self.decoder == "one-row":
            return greedy(model, self.seats.trainer.tok, self.grammar, schemas,
                          [c.decompose for c in cases], max_tokens=self.max_tokens,
                          device=self.device)
        got = decode(model, self.seats.trainer.tok, self.grammar, self._head(),
                     [c.decompose for c in cases], schemas, 1, temperature=0.0,
                     max_tokens=self.max_tokens, generator=None, device=self.device)
        return [g[0] for g in got]

    def logprobs(self, case: TextCase, comps: Sequence[Completion]) -> Any:
        return self.group_logprobs([case], [comps])[0]

    def group_logprobs(self, cases: Sequence[TextCase],
                       groups: Sequence[Sequence[Completion]]) -> list[Any]:
        """Each group's log-probabilities under A's adapter (differentiable)."""
        model = self.seats.trainer.model
        model.set_adapter(PROVER)
        model.train()
        tok = self.seats.trainer.tok
        if self.decoder == "one-row":
            return [sequence_logprobs(model, tok, c.decompose, g, self.device)
                    for c, g in zip(cases, groups, strict=True)]
        return group_logprobs(model, tok, self._head(), [c.decompose for c in cases], groups,
                              self.device, self.seats.trainer.top_only)


def play_out(d: Decomposer, case: TextCase, comps: Sequence[Completion],
             verdicts: Verdicts) -> list[Played]:
    out = []
    for c in comps:
        g, split = parsed(d.prompts, case.claim, c.text, d.step_claim)
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
            levels, b_step, at_b = levels_of(b, p.split, at_b)
            beliefs = [q[at_q + k] for k in range(len(p.split.prover_prompts))]
            at_q += len(p.split.prover_prompts)
            row.update(game.split_terms(s.ratio, q_x[i], p1[i], p.split.table, levels, beliefs,
                                        p.verdicts, epsilon=s.epsilon, temperature=temperature,
                                        step=b_step))
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
    sampled = d.groups(batch, s.group, 1.0, generator)
    plays = [p for case, comps in zip(batch, sampled, strict=True)
             for p in play_out(d, case, comps, verdicts)]
    played = _returns(seats, plays, s, prover_grad=False, estimator_grad=False,
                      temperature=None)
    for p, r in zip(plays, played, strict=True):
        p.value = _return(r)
    advantages = []
    for k in range(len(batch)):
        values = [p.value for p in plays[k * s.group : (k + 1) * s.group]]
        frame = game.decision_frame(s.ratio, math.fsum(values) / len(values))
        advantages.append(game.group_advantages([frame(v) for v in values]))
    lps = d.group_logprobs(batch, sampled)
    loss: Any = 0.0
    for lp, adv in zip(lps, advantages, strict=True):
        a = torch.tensor(adv, dtype=lp.dtype, device=lp.device)
        loss = loss - (a * lp).mean() / len(batch)
    loss.backward()
    groups = list(zip(batch, sampled, advantages, strict=True))
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
    inexact = [p.value for p in valid if not p.grade["exact_split"]]
    return ({"prover_return": math.fsum(p.value for p in plays) / n,
             "valid": sum(bool(p.grade["valid"]) for p in plays) / n,
             "exact_split": sum(bool(p.grade["exact_split"]) for p in plays) / n,
             "rule_right": sum(bool(p.grade["rule_right"]) for p in plays) / n,
             **({"inexact_return": math.fsum(inexact) / len(inexact)} if inexact else {}),
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
