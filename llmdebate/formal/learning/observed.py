"""Players that must compute: learners whose inputs are what each player may observe.

The provers and estimators of :mod:`.prover` and :mod:`.estimator` read the truth of every
claim as a feature, so learning only has to find one large weight. Here a player's only
input about an instance is what it sees of the instance's leaves:

* **Sight.** A player inspects a fixed, seeded subset of each instance's q^d leaves,
  ``budget`` of them (all of them by default); an inspected leaf shows its value (what the
  judge rules on, exactly), an uninspected one shows nothing. A prover and an estimator may
  have different budgets. Nothing else is an input: not the truth of any claim above the
  leaves, not a coherent lie, not the instance's answer.
* **Computation.** Every player computes its own value for each claim bottom-up, with
  learned weights (one pair per level, shared by every node of the level):

      v_0(leaf) = 2·bit − 1 if inspected, else 0;
      v_k(node) = tanh(α_k · mean_i v_(k−1)(child i) + β_k).

  At zero weights every value is 0 (no opinion). With large α_k and β_k/α_k at the level's
  threshold (0 for MAJORITY, −(1 − 1/q) for AND, +(1 − 1/q) for OR) v_k is ±1 at the truth
  of the claim over the inspected leaves; nothing tells the player that this is the
  computation to learn. The value read as a probability is g = (v + 1)/2.
* **The prover** (:class:`ObservedProver`) reads its values where :class:`.LearnedProver`
  read the truth: P(a = 1) = σ(θ₀ + θ₁·v_d); the directions' logits (s = +1 and s = −1;
  s = 0 has logit 0) are linear in (1, g − p_k), one set for rounds k >= 1 and one for the
  leaf; the logit of subclaim i is θ·|b_i − g_i|. 2d + 11 parameters.
* **The estimator** (:class:`ObservedEstimator`) is :class:`.LearnedEstimator` with its
  values for the truths: p_d = σ(w₀ + w₁·v_d); at level k the joint is
  h(z) ∝ exp(Σ W_k[c, e]·f_e·φ_c(z)) with f = (1, v_k, 2p_k − 1, v_k·(2p_k − 1)) and
  φ(z) = (Σ_i v_(k−1),i·(2z_i − 1)/q, mean of 2z − 1, its square, 2M_D(z) − 1).
  18d + 2 parameters.
* **The naive prover** (:class:`ObservedNaiveProver`) states subclaim i with
  P(ŝ_i = 1) = σ(θ₀ + θ₁·v_(k−1),i + θ₂·(2c − 1)) and its top claim with σ(θ₃ + θ₄·v_d).

The honest equilibrium (A answers the truth and plays eq. (13) on it, B states calibrated
numbers) is in each family only in the limit of large weights, and only if the player
inspects enough leaves to decide each claim it must decide.
"""

from __future__ import annotations

import numpy as np

from llmdebate.core.rules import outcome_bits
from llmdebate.formal.learning.naive_prover import LearnedNaiveProver
from llmdebate.formal.learning.replicas import Parametrised, sigmoid, softmax
from llmdebate.formal.problems.problem import TreeProblem
from llmdebate.formal.strategies.alternatives import Alternatives
from llmdebate.formal.strategies.estimators import EstimatorPolicy
from llmdebate.formal.strategies.provers import ProverPolicy
from llmdebate.formal.tables import Levels, levels_from_joint


class Sight:
    """What one player sees of every instance's leaves: +1 / −1 where inspected, else 0.

    Built on the base problem (``n_base`` instances); a replicated problem's instance i
    reads row i mod n_base, so every member of a population sees the same leaves."""

    def __init__(self, problem: TreeProblem, n_base: int, budget: int | None, seed: int):
        q, d = problem.width, problem.depth
        leaves = q**d
        bits = problem.truth[0][:n_base].astype(np.float64)
        seen = np.ones((n_base, leaves))
        if budget is not None and budget < leaves:
            rng = np.random.default_rng(np.random.SeedSequence([seed, 41]))
            seen = np.zeros((n_base, leaves))
            for i in range(n_base):
                seen[i, rng.permutation(leaves)[:budget]] = 1.0
        self.budget = leaves if budget is None else min(budget, leaves)
        self.leaf = (2.0 * bits - 1.0) * seen  # (n_base, q^d)
        self.n_base, self.q, self.leaves = n_base, q, leaves

    def under(self, inst: np.ndarray, k: int, node: np.ndarray) -> np.ndarray:
        """The seen leaves under (k, node), in order: shape (len, q^k)."""
        span = self.q**k
        idx = node[:, None] * span + np.arange(span)[None, :]
        rows = (inst % self.n_base)[:, None] * self.leaves + idx
        return np.asarray(self.leaf.reshape(-1)[rows])


def computed(
    sight: Sight, agg: np.ndarray, inst: np.ndarray, k: int, node: np.ndarray
) -> list[np.ndarray]:
    """The player's values v_0 .. v_k of every claim in the subtree of (k, node): level l
    has shape (len, q^(k−l)); ``agg`` (len, 2d) holds each row's (α_l, β_l)."""
    v = sight.under(inst, k, node)
    out = [v]
    n, q = len(inst), sight.q
    for lv in range(1, k + 1):
        mean = v.reshape(n, -1, q).mean(axis=2)
        a, b = agg[:, 2 * (lv - 1)], agg[:, 2 * (lv - 1) + 1]
        v = np.tanh(a[:, None] * mean + b[:, None])
        out.append(v)
    return out


class ObservedProver(Parametrised, ProverPolicy):
    """The prover of the module docstring."""

    name = "observed"

    def __init__(self, problem: TreeProblem, n_base: int, sight: Sight):
        self.depth = problem.depth
        self.dim = 2 * self.depth + 11
        Parametrised.__init__(self, n_base)
        self.problem, self.sight = problem, sight
        a = 2 * self.depth
        self.agg, self.ans = slice(0, a), slice(a, a + 2)
        self.round, self.leaf, self.rec = slice(a + 2, a + 6), slice(a + 6, a + 10), a + 10

    def value(self, inst: np.ndarray, k: int, node: np.ndarray) -> np.ndarray:
        th = self.rows(inst)
        return np.asarray(computed(self.sight, th[:, self.agg], inst, k, node)[-1][:, 0])

    def answer(self, inst: np.ndarray) -> Alternatives:
        v = self.value(inst, self.depth, np.zeros(len(inst), dtype=np.int64))
        th = self.rows(inst)[:, self.ans]
        p1 = sigmoid(th[:, 0] + th[:, 1] * v)
        n = len(inst)
        return [(np.ones(n, dtype=np.int64), p1), (np.zeros(n, dtype=np.int64), 1.0 - p1)]

    def direction(self, inst: np.ndarray, k: int, node: np.ndarray, p: np.ndarray) -> Alternatives:
        g = 0.5 * (self.value(inst, k, node) + 1.0)
        th = self.rows(inst)[:, self.leaf if k == 0 else self.round]
        gap = g - p
        logits = np.stack(
            [th[:, 0] + th[:, 1] * gap, th[:, 2] + th[:, 3] * gap, np.zeros(len(inst))], axis=1
        )
        probs = softmax(logits)
        n = len(inst)
        return [(np.full(n, s, dtype=np.int64), probs[:, c]) for c, s in enumerate((1, -1, 0))]

    def choose(
        self, inst: np.ndarray, k: int, node: np.ndarray, b: np.ndarray, z: np.ndarray
    ) -> Alternatives:
        th = self.rows(inst)
        g = 0.5 * (computed(self.sight, th[:, self.agg], inst, k, node)[k - 1] + 1.0)
        probs = softmax(th[:, self.rec : self.rec + 1] * np.abs(b - g))
        n, q = b.shape
        return [(np.full(n, c, dtype=np.int64), probs[:, c]) for c in range(q)]


class ObservedEstimator(Parametrised, EstimatorPolicy):
    """The estimator of the module docstring, one weight matrix per level k = 1..d."""

    name = "observed"

    def __init__(self, problem: TreeProblem, n_base: int, sight: Sight):
        self.depth = problem.depth
        self.dim = 18 * self.depth + 2
        Parametrised.__init__(self, n_base)
        self.problem, self.sight = problem, sight
        q = problem.width
        self.signs = 2.0 * outcome_bits(q).astype(np.float64) - 1.0  # (2^q, q)
        self.bias = self.signs.mean(axis=1)
        self.polar = self.bias**2
        self.rules = [np.empty(0)] + [
            2.0 * problem.rule(k).table.astype(np.float64) - 1.0
            for k in range(1, problem.depth + 1)
        ]
        self.agg = slice(0, 2 * self.depth)
        self.top_at = 2 * self.depth

    def top(self, inst: np.ndarray) -> np.ndarray:
        th = self.rows(inst)
        node = np.zeros(len(inst), dtype=np.int64)
        v = computed(self.sight, th[:, self.agg], inst, self.depth, node)[-1][:, 0]
        w = th[:, self.top_at : self.top_at + 2]
        return sigmoid(w[:, 0] + w[:, 1] * v)

    def joint(self, inst: np.ndarray, k: int, node: np.ndarray, p: np.ndarray) -> np.ndarray:
        th = self.rows(inst)
        vals = computed(self.sight, th[:, self.agg], inst, k, node)
        big = vals[k][:, 0]
        kids = vals[k - 1]  # (n, q)
        sp = 2.0 * p - 1.0
        f = np.stack([np.ones_like(sp), big, sp, big * sp], axis=1)
        start = self.top_at + 2 + 16 * (k - 1)
        w = th[:, start : start + 16].reshape(-1, 4, 4)
        coef = np.einsum("nce,ne->nc", w, f)
        agree = (kids[:, None, :] * self.signs[None, :, :]).mean(axis=2)  # (n, 2^q), no BLAS
        logits = (
            coef[:, :1] * agree
            + coef[:, 1:2] * self.bias[None, :]
            + coef[:, 2:3] * self.polar[None, :]
            + coef[:, 3:4] * self.rules[k][None, :]
        )
        return softmax(logits)

    def levels(self, inst: np.ndarray, k: int, node: np.ndarray, p: np.ndarray) -> Levels:
        return levels_from_joint(self.joint(inst, k, node, p))


class ObservedNaiveProver(LearnedNaiveProver):
    """The naive prover of the module docstring (five weights and 2d for its values)."""

    def __init__(self, problem: TreeProblem, n_base: int, sight: Sight):
        self.depth = problem.depth
        self.dim = 5 + 2 * self.depth
        super().__init__(problem, n_base, lie=False)
        self.sight = sight

    def top(self, inst: np.ndarray) -> np.ndarray:
        th = self.rows(inst)
        node = np.zeros(len(inst), dtype=np.int64)
        v = computed(self.sight, th[:, 5:], inst, self.depth, node)[-1][:, 0]
        return sigmoid(th[:, 3] + th[:, 4] * v)

    def stated(self, inst: np.ndarray, k: int, node: np.ndarray, c: np.ndarray) -> np.ndarray:
        th = self.rows(inst)
        kids = computed(self.sight, th[:, 5:], inst, k, node)[k - 1]
        one = sigmoid(th[:, :1] + th[:, 1:2] * kids + th[:, 2:3] * (2.0 * c[:, None] - 1.0))
        bits = outcome_bits(self.problem.width)[None, :, :]
        each = np.where(bits == 1, one[:, None, :], 1.0 - one[:, None, :])
        return np.asarray(np.prod(each, axis=2))
