"""A learnable prover: linear-softmax decisions over what eq. (13)'s provers read.

At a claim the prover knows its truth t and the value v of one coherent lie (the beliefs of
:func:`llmdebate.formal.problems.problem.believed_values` defending the wrong top answer,
which the dishonest eq.-(13) prover plays); it sees B's p_k, and when it picks a subclaim,
B's b_i. Parameters (one row per population member):

* answer: P(a = 1) = σ(θ₀ + θ₁·(2t − 1)) (or a = 1 − t when the prover must lie);
* direction at rounds k >= 1 and, separately, at the leaf: logits of s = +1 and s = −1
  are linear in (1, t − p_k, v − p_k), the logit of s = 0 is 0;
* recursion: logit of subclaim i is θ·(|b_i − t_i|, |b_i − v_i|).

Parameters zero is the uniformly random prover; eq. (13)'s honest prover is the limit of
large weights on t − p_k and |b_i − t_i|, the dishonest one of the weights on v.
"""

from __future__ import annotations

import numpy as np

from llmdebate.formal.problems.problem import TreeProblem, believed_values
from llmdebate.formal.strategies.alternatives import Alternatives, deterministic
from llmdebate.formal.strategies.provers import ProverPolicy

from .replicas import Parametrised, sigmoid, softmax

ANSWER = slice(0, 2)
ROUND = slice(2, 8)
LEAF = slice(8, 14)
RECURSE = slice(14, 16)
PROVER_DIM = 16


class LearnedProver(Parametrised, ProverPolicy):
    """The prover of the module docstring (``lie``: its top answer is always wrong)."""

    dim = PROVER_DIM

    def __init__(self, problem: TreeProblem, n_base: int, lie: bool = False):
        Parametrised.__init__(self, n_base)
        self.problem, self.lie = problem, lie
        self.name = "learned-liar" if lie else "learned"
        self.lies = believed_values(problem, 1 - problem.top_truth())

    def answer(self, inst: np.ndarray) -> Alternatives:
        t = self.problem.top_truth()[inst].astype(np.int64)
        if self.lie:
            return deterministic(1 - t)
        th = self.rows(inst)[:, ANSWER]
        p1 = sigmoid(th[:, 0] + th[:, 1] * (2 * t - 1))
        n = len(inst)
        return [(np.ones(n, dtype=np.int64), p1), (np.zeros(n, dtype=np.int64), 1.0 - p1)]

    def direction(self, inst: np.ndarray, k: int, node: np.ndarray, p: np.ndarray) -> Alternatives:
        t = self.problem.truth[k][inst, node].astype(np.float64)
        v = self.lies[k][inst, node].astype(np.float64)
        feats = np.stack([np.ones_like(p), t - p, v - p], axis=1)
        th = self.rows(inst)[:, LEAF if k == 0 else ROUND].reshape(-1, 2, 3)
        logits = np.einsum("nsf,nf->ns", th, feats)
        probs = softmax(np.concatenate([logits, np.zeros((len(inst), 1))], axis=1))
        n = len(inst)
        return [
            (np.full(n, s, dtype=np.int64), probs[:, c]) for c, s in enumerate((1, -1, 0))
        ]

    def choose(
        self, inst: np.ndarray, k: int, node: np.ndarray, b: np.ndarray, z: np.ndarray
    ) -> Alternatives:
        t = self.problem.children_of(self.problem.truth, inst, k, node)
        v = self.problem.children_of(self.lies, inst, k, node)
        th = self.rows(inst)[:, RECURSE]
        logits = th[:, :1] * np.abs(b - t) + th[:, 1:] * np.abs(b - v)
        probs = softmax(logits)
        n, q = b.shape
        return [(np.full(n, c, dtype=np.int64), probs[:, c]) for c in range(q)]
