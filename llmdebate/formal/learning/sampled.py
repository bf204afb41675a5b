"""Learning from sampled debates: policy gradients on Monte Carlo payoffs.

The exact learners of :mod:`.stackelberg` see the expected payoff of every policy they try.
An LLM trainer sees one payoff per sampled debate. Here:

* **A (REINFORCE).** A plays N sampled debates against the current B
  (:func:`llmdebate.formal.montecarlo.simulate_debates`). Its own decisions (answer,
  directions, recursion index or commitment) are drawn by :class:`Recorder`, which keeps
  what was drawn, from which inputs. The gradient is the score-function estimate
  Σ_n Â_n·∇_θ log π_θ(decisions of debate n) / N with Â the payoffs minus their batch mean,
  divided by their standard deviation (advantage normalisation); ∇ log π is taken by
  central differences of the exact log-probabilities of the recorded decisions (the policy
  is re-asked at θ ± h·e_j on the recorded inputs), so any differentiable policy will do.
  Adam takes the step.
* **B (sampled evolution strategies).** B's numbers are not drawn: they are deterministic
  functions of its parameters, and its payoff depends on them through the rewards as well
  as through the draws, so a score function of its draws alone would be biased. B therefore
  uses the policy gradient of a Gaussian policy over its parameters: antithetic perturbed
  members, as in :mod:`.es`, each scored by the mean payoff of M sampled debates instead of
  its exact expectation.

Nothing is enumerated during training; the curves are still measured exactly
(:func:`llmdebate.formal.learning.curves.evaluate`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from llmdebate.formal.learning.replicas import Parametrised
from llmdebate.formal.strategies.alternatives import Alternatives, deterministic, sample
from llmdebate.formal.strategies.provers import ProverPolicy

FD_STEP = 1e-4


def chosen_probability(alts: Alternatives, drawn: np.ndarray) -> np.ndarray:
    """P(the drawn value) per row under ``alts``."""
    out = np.zeros(len(drawn))
    for v, pr in alts:
        out += np.broadcast_to(np.asarray(pr, dtype=float), out.shape) * (
            np.broadcast_to(v, out.shape) == drawn
        )
    return out


class Recorder(ProverPolicy):
    """Plays ``policy`` by drawing each decision itself (so the engine sees a deterministic
    prover) and keeps every call's inputs and draws, one row per debate."""

    def __init__(self, policy: ProverPolicy, rng: np.random.Generator):
        self.policy, self.rng = policy, rng
        self.name = f"recorded[{policy.name}]"
        self.calls: list[tuple[str, tuple[Any, ...], np.ndarray]] = []

    def _draw(self, kind: str, args: tuple[Any, ...], alts: Alternatives) -> Alternatives:
        drawn = sample(alts, self.rng, len(args[0]))
        self.calls.append((kind, args, drawn))
        return deterministic(drawn)

    def answer(self, inst: np.ndarray) -> Alternatives:
        return self._draw("answer", (inst,), self.policy.answer(inst))

    def stops(self, inst: np.ndarray, p: np.ndarray, a: np.ndarray) -> np.ndarray:
        return self.policy.stops(inst, p, a)

    def direction(self, inst: np.ndarray, k: int, node: np.ndarray, p: np.ndarray) -> Alternatives:
        args = (inst, k, node, p)
        return self._draw("direction", args, self.policy.direction(*args))

    def choose(
        self, inst: np.ndarray, k: int, node: np.ndarray, b: np.ndarray, z: np.ndarray
    ) -> Alternatives:
        args = (inst, k, node, b, z)
        return self._draw("choose", args, self.policy.choose(*args))

    def commit(self, inst: np.ndarray, k: int, node: np.ndarray, marg: np.ndarray) -> Alternatives:
        args = (inst, k, node, marg)
        return self._draw("commit", args, self.policy.commit(*args))

    def log_prob(self, theta: np.ndarray) -> np.ndarray:
        """log π_θ of each debate's recorded decisions (the policy re-asked at θ)."""
        pol = self.policy
        assert isinstance(pol, Parametrised)
        pol.set_params(theta[None, :])
        total: np.ndarray | None = None
        for kind, args, drawn in self.calls:
            pr = chosen_probability(getattr(pol, kind)(*args), drawn)
            lp = np.log(np.maximum(pr, 1e-300))
            total = lp if total is None else total + lp
        assert total is not None
        return total

    def gradient(self, advantage: np.ndarray, theta: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Σ_n advantage_n·∇ log π_θ(debate n) / N by central differences (masked)."""
        grad = np.zeros(len(theta))
        n = len(advantage)
        for j in np.flatnonzero(mask):
            e = np.zeros(len(theta))
            e[j] = FD_STEP
            up = self.log_prob(theta + e)
            down = self.log_prob(theta - e)
            grad[j] = float((advantage * (up - down)).sum()) / (2 * FD_STEP * n)
        self.policy.set_params(theta[None, :])  # type: ignore[attr-defined]
        return grad
