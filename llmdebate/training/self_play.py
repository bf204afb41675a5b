"""Self-play of both seats at the leaf, from the base model: the prover A and the estimator B,
each the base model with its own LoRA adapter, trained on their own payoffs in the game with
the leaf judge's verdict the only label.

This is the protocol's reward where it lives, at the leaf, not a full-text debate: every case
is one leaf claim, both seats read the claim alone (the estimator's ``logprobs`` prompt, so
the frozen layers' outputs cached by :class:`~llmdebate.training.debate_reward.LeafTrainer`
serve both), and A's decompositions are not learned here (its claims are the problem code's).

* **A's belief** q_A = its adapter's P(True | claim) (the answer tokens' logits, as B's p).
* **A's direction when played** against B's p is eq. 13 on q_A:
  s = +1 when q_A − p > ε, −1 when below −ε, else 0 (:func:`llmdebate.beliefs.belief_direction`);
  A's payoff r_0 = s·(O − p) (:func:`llmdebate.core.scoring.leaf_reward`), B's −r_0.
* **A learns** on a mixed direction, π = P(s = +1) = σ((q_A − p)/τ) (τ the ``temperature``),
  and ascends its exact expected payoff E[r_0] = (2π − 1)·(O − p)
  (:func:`prover_expected_payoff`: ``leaf_reward`` of the expected direction 2π − 1, since
  r_0 is linear in s), p held fixed: the gradient in q_A is 2π(1 − π)/τ · (O − p), so q_A
  rises where the verdict is above B's p and falls where it is below.
* **B learns** on its payoff −s·(O − p) against A's played direction
  (:func:`~llmdebate.training.debate_reward.estimator_leaf_payoff` with A's q as the belief),
  q_A held fixed: its gradient in p is s, so p moves towards q_A.
* **The order** is Algorithm 1's (:func:`llmdebate.formal.ogd.algorithm1_estimator` builds B
  against a fixed A): each iteration takes one A step, then ``estimator_steps`` B steps
  against the A that step left. With ``train_estimator`` off, B stays the base model (a
  frozen estimator: the judge-hacking runs).

:func:`round_figures` are the per-round figures on held-out claims (the claim's truth is read
there and only there), with the judge-hacking audit's rows
(:func:`llmdebate.report.judge_audit.leaf_audit`) for
:func:`~llmdebate.report.judge_audit.hacking_line`.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from llmdebate.beliefs import belief_direction
from llmdebate.core import scoring
from llmdebate.report.judge_audit import audit_shares, leaf_audit
from llmdebate.training.config import LoraSettings
from llmdebate.training.debate_reward import LeafTrainer, estimator_leaf_payoff
from llmdebate.training.update import peft_lora

PROVER = "default"
"""A's adapter (the :class:`LeafTrainer`'s own)."""
ESTIMATOR = "estimator"
"""B's adapter, added beside A's on the same base model."""


@dataclass(frozen=True)
class SeatCase:
    """One leaf claim: the prompt both seats read, the leaf judge's verdict O (the only label
    training reads), the claim's truth (read only by the figures) and its number (the
    cluster of the intervals)."""

    claim: str
    prompt: str
    verdict: int
    truth: int
    number: int


@dataclass(frozen=True)
class SelfPlaySettings:
    """One run of the two seats."""

    prover_steps: int = 24
    estimator_steps: int = 4
    """B's steps per A step (Algorithm 1's order: B fitted against a fixed A)."""
    batch_size: int = 8
    learning_rate: float = 1e-3
    warmup_steps: int = 2
    temperature: float = 0.1
    """τ of A's mixed direction σ((q_A − p)/τ) while it learns."""
    epsilon: float = 0.0
    """ε of eq. 13 when A's direction is played (and B learns against it)."""
    round_every: int = 4
    """A steps per round of held-out figures."""
    train_estimator: bool = True
    lora: LoraSettings = field(default_factory=LoraSettings)
    draws: int = 1000
    """Bootstrap draws of each interval."""


# ---------------------------------------------------------------------------- payoffs
def mixed_direction(q: Any, p: Any, temperature: float) -> Any:
    """A's expected direction 2π − 1, π = σ((q − p)/τ) (floats or torch tensors)."""
    z = (q - p) / temperature
    pi = z.sigmoid() if hasattr(z, "sigmoid") else 1.0 / (1.0 + math.exp(-z))
    return 2 * pi - 1


def prover_expected_payoff(q: Any, p: Any, verdict: Any, temperature: float) -> Any:
    """A's exact expected leaf payoff under its mixed direction, (2π − 1)·(O − p)."""
    return scoring.leaf_reward(1.0, mixed_direction(q, p, temperature), verdict, p)


def played(q: float, p: float, verdict: int, epsilon: float) -> tuple[int, float]:
    """A's played direction (eq. 13 on q against p) and its leaf payoff r_0 = s·(O − p)."""
    s = belief_direction(q, p, epsilon)
    return s, float(scoring.leaf_reward(1.0, s, verdict, p))


# ------------------------------------------------------------------------ two seats
class TwoSeats:
    """A :class:`LeafTrainer`'s model with a second adapter, B's, beside A's: one copy of the
    base weights and of the frozen layers' outputs for both seats."""

    def __init__(self, trainer: LeafTrainer, lora: LoraSettings) -> None:
        self.trainer = trainer
        self.torch = trainer.torch
        trainer.model.add_adapter(ESTIMATOR, peft_lora(lora))
        for name, p in trainer.model.named_parameters():  # peft gives a new adapter the
            if "lora_" in name and p.dtype != self.torch.float32:  # base layer's dtype
                p.data = p.data.float()

    def _use(self, seat: str) -> None:
        self.trainer.model.set_adapter(seat)

    def probabilities(self, seat: str, prompts: Sequence[str]) -> Any:
        """The seat's P(True) of each prompt, differentiable in its adapter."""
        self._use(seat)
        self.trainer.model.train()
        return self.trainer.probabilities(prompts)

    def score(self, seat: str, prompts: Sequence[str]) -> list[float]:
        self._use(seat)
        return self.trainer.score(prompts)

    def fixed(self, seat: str, prompts: Sequence[str]) -> Any:
        """The seat's probabilities as constants (no gradient)."""
        self._use(seat)
        with self.torch.no_grad():
            return self.trainer.probabilities(prompts).detach()

    def params(self, seat: str) -> list[Any]:
        return [p for n, p in self.trainer.model.named_parameters()
                if "lora_" in n and f".{seat}." in n]

    def reset(self, seat: str, seed: int) -> None:
        """A fresh adapter for ``seat``: A drawn from ``seed``, B zero (the base model)."""
        self.torch.manual_seed(seed)
        for m in self.trainer.model.modules():
            if hasattr(m, "reset_lora_parameters") and seat in getattr(m, "lora_A", {}):
                m.reset_lora_parameters(seat, True)


class _Batches:
    """Seeded batches of case indices, every case once per pass."""

    def __init__(self, n: int, size: int, seed: int) -> None:
        self.n, self.size, self.rng = n, size, random.Random(seed)
        self.order: list[int] = []

    def next(self) -> list[int]:
        while len(self.order) < self.size:
            more = list(range(self.n))
            self.rng.shuffle(more)
            self.order += more
        out, self.order = self.order[: self.size], self.order[self.size :]
        return out


def _lr(s: SelfPlaySettings, step: int, total: int) -> float:
    return s.learning_rate * min(1.0, (step + 1) / max(1, s.warmup_steps)) * (1 - step / total)


def _ascend(torch: Any, opt: Any, params: list[Any], value: Any, lr: float) -> float:
    for g in opt.param_groups:
        g["lr"] = lr
    opt.zero_grad()
    (-value).backward()
    norm = torch.nn.utils.clip_grad_norm_(params, 1.0)
    opt.step()
    return float(norm)


def prover_step(seats: TwoSeats, opt: Any, batch: Sequence[SeatCase], s: SelfPlaySettings,
                lr: float, estimator_p: Callable[[Sequence[str]], Any]) -> dict[str, float]:
    """One step of A on its expected payoff against B's current p (a constant)."""
    torch = seats.torch
    prompts = [c.prompt for c in batch]
    p = estimator_p(prompts)
    q = seats.probabilities(PROVER, prompts)
    verdict = torch.tensor([float(c.verdict) for c in batch], device=q.device)
    value = prover_expected_payoff(q, p, verdict, s.temperature).mean()
    norm = _ascend(torch, opt, seats.params(PROVER), value, lr)
    return {"prover_objective": float(value.detach()), "mean_q": float(q.detach().mean()),
            "prover_grad_norm": norm}


def estimator_step(seats: TwoSeats, opt: Any, batch: Sequence[SeatCase],
                   s: SelfPlaySettings, lr: float) -> dict[str, float]:
    """One step of B on its payoff −s·(O − p) against A's played direction (A fixed)."""
    torch = seats.torch
    prompts = [c.prompt for c in batch]
    q = seats.fixed(PROVER, prompts)
    p = seats.probabilities(ESTIMATOR, prompts)
    verdict = torch.tensor([float(c.verdict) for c in batch], device=p.device)
    value = estimator_leaf_payoff(p, verdict, q, s.epsilon).mean()
    norm = _ascend(torch, opt, seats.params(ESTIMATOR), value, lr)
    return {"estimator_objective": float(value.detach()), "mean_p": float(p.detach().mean()),
            "mean_abs_p_q": float((p.detach() - q).abs().mean()), "estimator_grad_norm": norm}


# ------------------------------------------------------------------------- figures
def interval(values: Sequence[float], clusters: Sequence[int], draws: int,
             seed: int = 0) -> dict[str, float]:
    """The mean of ``values`` with a 95 % bootstrap interval resampling the clusters (a
    number's claims together)."""
    groups: dict[int, list[float]] = {}
    for v, c in zip(values, clusters, strict=True):
        groups.setdefault(c, []).append(float(v))
    gs = list(groups.values())
    rng = random.Random(seed)
    stats = []
    for _ in range(draws):
        pick = [gs[rng.randrange(len(gs))] for _ in gs]
        stats.append(math.fsum(math.fsum(g) for g in pick) / sum(len(g) for g in pick))
    stats.sort()
    return {"value": math.fsum(values) / len(values), "low": stats[int(0.025 * draws)],
            "high": stats[min(draws - 1, int(0.975 * draws))]}


def _right(x: float, truth: int) -> bool:
    """x on the truth's side of 1/2."""
    return x != 0.5 and (x > 0.5) == bool(truth)


def round_figures(cases: Sequence[SeatCase], q: Sequence[float], p: Sequence[float],
                  epsilon: float = 0.0, draws: int = 1000) -> dict[str, Any]:
    """The figures of one round on held-out ``cases`` with A's beliefs ``q`` and B's ``p``:

    * ``prover_payoff`` / ``estimator_payoff``: the mean of A's r_0 = s·(O − p) with s played
      (eq. 13) and of B's −r_0;
    * ``honest_minus_dishonest``: the mean over claims of r_0(h) − r_0(−h), h = +1 on a true
      claim and −1 on a false one (the direction towards the claim's truth), against the
      current p and the judge's O: > 0 when arguing the truth pays;
    * ``argued_truth``: the share of claims on which A's played direction is h (s = 0 argues
      nothing); ``higher``: the share on which it is +1;
    * ``accuracy_judge`` / ``accuracy_prover`` / ``accuracy_estimator``: the share of claims
      on which O equals the truth, q and p lie on the truth's side of 1/2;
    * ``brier_prover`` / ``brier_estimator``: mean (q − truth)², (p − truth)²;
      ``mean_abs_p_q``: mean |p − q|; ``mean_q``, ``mean_p``;
    * ``audit_*``: the judge-hacking audit's shares of A's side over the claims
      (:func:`~llmdebate.report.judge_audit.audit_shares` of
      :func:`~llmdebate.report.judge_audit.leaf_audit` rows, its interval over the claims'
      numbers).

    Payoffs, the honest margin, ``argued_truth`` and the Brier scores come with a 95 %
    interval over the claims' numbers."""
    numbers = [c.number for c in cases]
    plays = [played(qi, pi, c.verdict, epsilon) for qi, pi, c in zip(q, p, cases, strict=True)]
    r = [x for _, x in plays]
    honest = [1 if c.truth else -1 for c in cases]
    margin = [float(scoring.leaf_reward(1.0, h, c.verdict, pi)
                    - scoring.leaf_reward(1.0, -h, c.verdict, pi))
              for h, c, pi in zip(honest, cases, p, strict=True)]
    estimator = [float(estimator_leaf_payoff(pi, float(c.verdict), qi, epsilon))
                 for qi, pi, c in zip(q, p, cases, strict=True)]

    def ci(xs: Sequence[float]) -> dict[str, float]:
        return interval(xs, numbers, draws)

    n = len(cases)
    audit = audit_shares([leaf_audit("prover", s, ri, pi, c.verdict, c.truth)
                          for (s, ri), pi, c in zip(plays, p, cases, strict=True)],
                         items=numbers)
    return {
        "prover_payoff": ci(r), "estimator_payoff": ci(estimator),
        "honest_minus_dishonest": ci(margin),
        "argued_truth": ci([float(s == h) for (s, _), h in zip(plays, honest, strict=True)]),
        "higher": sum(s > 0 for s, _ in plays) / n,
        "accuracy_judge": sum(c.verdict == c.truth for c in cases) / n,
        "accuracy_prover": sum(_right(x, c.truth) for x, c in zip(q, cases, strict=True)) / n,
        "accuracy_estimator": sum(_right(x, c.truth) for x, c in zip(p, cases, strict=True)) / n,
        "brier_prover": ci([(x - c.truth) ** 2 for x, c in zip(q, cases, strict=True)]),
        "brier_estimator": ci([(x - c.truth) ** 2 for x, c in zip(p, cases, strict=True)]),
        "mean_abs_p_q": math.fsum(abs(a - b) for a, b in zip(p, q, strict=True)) / n,
        "mean_q": math.fsum(q) / n, "mean_p": math.fsum(p) / n,
        **{f"audit_{k}": v for k, v in audit.items()},
    }


# ---------------------------------------------------------------------------- play
def round_entry(index: int, prover_steps: int, estimator_per_step: int,
                figures: dict[str, Any], steps: Sequence[dict[str, float]],
                t0: float) -> dict[str, Any]:
    """One round's log entry: its index, both seats' step counts, the held-out ``figures``,
    the mean of each training statistic over ``steps`` (the steps since the round before,
    as ``train_<name>``) and the seconds since ``t0``."""
    entry = {"round": index, "prover_steps": prover_steps,
             "estimator_steps": prover_steps * estimator_per_step, **figures}
    for k in sorted({k for e in steps for k in e}):
        got = [e[k] for e in steps if k in e]
        entry[f"train_{k}"] = math.fsum(got) / len(got)
    entry["seconds"] = round(time.perf_counter() - t0, 1)
    return entry


def play(seats: TwoSeats, train: Sequence[SeatCase], held: Sequence[SeatCase],
         s: SelfPlaySettings, *, seed: int, base: dict[str, float],
         on_log: Callable[[dict[str, Any]], None] | None = None) -> list[dict[str, Any]]:
    """Both seats from the base model (fresh adapters from ``seed``), trained in Algorithm 1's
    order; returns one entry of :func:`round_figures` per round (round 0: the base model in
    both seats), each with the steps' mean objectives since the round before. ``base``: the
    base model's P(True) of every prompt (round 0, and B's p while B is frozen)."""
    torch = seats.torch
    seats.reset(PROVER, seed)
    seats.reset(ESTIMATOR, seed + 1)
    opt_a = torch.optim.AdamW(seats.params(PROVER), lr=s.learning_rate, weight_decay=0.0)
    opt_b = torch.optim.AdamW(seats.params(ESTIMATOR), lr=s.learning_rate, weight_decay=0.0)
    batches_a = _Batches(len(train), s.batch_size, seed)
    batches_b = _Batches(len(train), s.batch_size, seed + 1)
    held_prompts = [c.prompt for c in held]

    def estimator_p(prompts: Sequence[str]) -> Any:
        if not s.train_estimator:
            return torch.tensor([base[x] for x in prompts], device=seats.trainer.device)
        return seats.fixed(ESTIMATOR, prompts)

    def record(step: int, steps: list[dict[str, float]], t0: float) -> None:
        if step == 0:
            q = p = [base[x] for x in held_prompts]
        else:
            q = seats.score(PROVER, held_prompts)
            p = estimator_p(held_prompts).tolist()
        entry = round_entry(len(history), step, s.estimator_steps if s.train_estimator else 0,
                            round_figures(held, q, p, s.epsilon, s.draws), steps, t0)
        history.append(entry)
        if on_log is not None:
            on_log(entry)

    history: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    record(0, [], t0)
    since: list[dict[str, float]] = []
    total_b = s.prover_steps * s.estimator_steps
    for step in range(s.prover_steps):
        batch = [train[i] for i in batches_a.next()]
        since.append(prover_step(seats, opt_a, batch, s, _lr(s, step, s.prover_steps),
                                 estimator_p))
        if s.train_estimator:
            for j in range(s.estimator_steps):
                batch = [train[i] for i in batches_b.next()]
                since.append(estimator_step(seats, opt_b, batch, s,
                                            _lr(s, step * s.estimator_steps + j, total_b)))
        if (step + 1) % s.round_every == 0 or step + 1 == s.prover_steps:
            record(step + 1, since, t0)
            since = []
    return history
