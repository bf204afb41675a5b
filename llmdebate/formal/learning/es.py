"""Antithetic evolution strategies with Adam: the gradient of an exact expected payoff
estimated from the payoffs of a population of perturbed policies (Salimans et al. 2017).

The objective is only ever evaluated, never differentiated: the learner sees the protocol's
reward and nothing else.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

Objective = Callable[[np.ndarray], np.ndarray]  # (members, dim) -> payoff per member


@dataclass
class ESConfig:
    pairs: int = 8  # antithetic pairs per step: 2·pairs members in one evaluation
    sigma: float = 0.5  # perturbation scale
    lr: float = 0.15  # Adam step size
    clip: float = 8.0  # parameters kept in [-clip, clip]
    halflife: float = 0.0  # if > 0, step size lr / (1 + t / halflife) at step t (and σ alike)


@dataclass
class Adam:
    dim: int
    lr: float
    beta1: float = 0.9
    beta2: float = 0.999
    m: np.ndarray = field(init=False)
    v: np.ndarray = field(init=False)
    t: int = 0

    def __post_init__(self) -> None:
        self.m, self.v = np.zeros(self.dim), np.zeros(self.dim)

    def step(self, grad: np.ndarray) -> np.ndarray:
        """The ascent step for ``grad``."""
        self.t += 1
        self.m = self.beta1 * self.m + (1 - self.beta1) * grad
        self.v = self.beta2 * self.v + (1 - self.beta2) * grad**2
        mh = self.m / (1 - self.beta1**self.t)
        vh = self.v / (1 - self.beta2**self.t)
        return np.asarray(self.lr * mh / (np.sqrt(vh) + 1e-8))


class Learner:
    """One player's parameters, its optimiser and its random stream."""

    def __init__(self, dim: int, cfg: ESConfig, rng: np.random.Generator, mask: np.ndarray):
        self.theta = np.zeros(dim)
        self.cfg, self.rng, self.mask = cfg, rng, mask.astype(np.float64)
        self.adam = Adam(dim, cfg.lr)

    def decay(self) -> float:
        h = self.cfg.halflife
        return 1.0 if h <= 0 else 1.0 / (1.0 + self.adam.t / h)

    def population(self) -> tuple[np.ndarray, np.ndarray]:
        """Antithetic perturbations (pairs, dim) and the members' parameters (2·pairs, dim)."""
        eps = self.rng.standard_normal((self.cfg.pairs, len(self.theta))) * self.mask
        sigma = self.cfg.sigma * self.decay()
        members = np.concatenate([self.theta + sigma * eps, self.theta - sigma * eps])
        return eps, members

    def step(self, objective: Objective) -> float:
        """One ascent step on ``objective``; returns the population's mean payoff."""
        eps, members = self.population()
        f = objective(members)
        k = self.cfg.pairs
        diff = f[:k] - f[k:]
        scale = float(np.abs(diff).mean()) or 1.0  # payoff units differ by r^-k across roles
        grad = (diff[:, None] * eps).sum(axis=0) / (2 * k * scale)
        step = self.adam.step(grad) * self.decay()
        self.theta = np.clip(self.theta + step, -self.cfg.clip, self.cfg.clip)
        return float(f.mean())
