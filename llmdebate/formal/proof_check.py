"""An exact audit of the step from eqs. (7)-(8) to (9)-(10) in the proof of Lemma A.4.

For a game (problem, prover A, estimator B whose round-(k+1) joint plays the role of
h_(k+1)) and every round k+1 >= 1, the proof needs

    E_{x~µ_k}[A_k(x, ŷ^k, p_k)·(g(ŷ^k) - p_k)]  =  E_{z~g}[f_(k+1)] - E_{z~h}[f_(k+1)]   (*)

with f_(k+1) = A_k(x, y_j, p_k)·z_j (eq. 7), j A's recursion index and p_k the probability
the round hands on. Here µ_k is the law of round-k inputs, *generated with z drawn from h*.
(*) splits into two identities, computed separately below:

* ``tower``: E_{µ_k}[A_k·p_k] = E_{z~h}[f] — true when j is fixed before z_j is drawn and
  p_k = b_j (the tower rule: E_h[z_j | z_<j] = b_j);
* ``hybrid``: E_{µ_k}[A_k·g(ŷ^k)] = E_{z~g}[f] — the path drawn from h, scored against the
  truth, against the path drawn from the truth. No test f(x, z, h) with z drawn from g or
  from h sees the left side; this is the identity the counterexample breaks.

Everything is an exact expectation (weights over instances, outcomes and A's choices).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from llmdebate.core.rules import outcome_bits
from llmdebate.formal.exact import exact_prover_estimator
from llmdebate.formal.game import Game
from llmdebate.formal.strategies.alternatives import Alternatives
from llmdebate.formal.tables import fdot, index_of
from llmdebate.formal.variants import RoundView, choices


@dataclass
class StepTerms:
    """The terms of (*) for the passage from round ``k`` to round k - 1 (exact)."""

    k: int
    mu_A_g: float  # E_{µ_(k-1)}[A·g(ŷ)]   (path from h, truth at the end)
    mu_A_p: float  # E_{µ_(k-1)}[A·p]
    g_f: float  # E_{z~g}[f_k]          (path from the truth)
    h_f: float  # E_{z~h}[f_k]

    @property
    def lhs(self) -> float:
        """E_µ[A·(g - p)]: what the next round pays A in expectation, per unit r^(k-1)."""
        return self.mu_A_g - self.mu_A_p

    @property
    def rhs(self) -> float:
        """E_g[f] - E_h[f]: what indistinguishability bounds by δ."""
        return self.g_f - self.h_f

    def as_dict(self) -> dict[str, float]:
        return {
            "k": self.k,
            "E_mu[A*g]": self.mu_A_g,
            "E_mu[A*p]": self.mu_A_p,
            "E_g[f]": self.g_f,
            "E_h[f]": self.h_f,
            "lhs": self.lhs,
            "rhs": self.rhs,
        }


def _expected(alts: Alternatives, n: int) -> np.ndarray:
    out = np.zeros(n)
    for v, pr in alts:
        out += np.asarray(pr, dtype=float) * np.broadcast_to(v, (n,))
    return out


def lemma_a4_terms(game: Game) -> list[StepTerms]:
    """The terms of (*) for every round k = d..1 of ``game`` (B's tables as h_k)."""
    prob, prover = game.problem, game.prover
    q = prob.width
    bits = outcome_bits(q).astype(np.int64)
    weights = prob.weights
    out: list[StepTerms] = []

    def observe(
        k: int, inst: np.ndarray, node: np.ndarray, p: np.ndarray, w: np.ndarray, view: RoundView
    ) -> None:
        n = len(inst)
        wi = weights[inst] * w
        truth = prob.children_of(prob.truth, inst, k, node).astype(np.int64)  # (n, q)
        terms = {"mu_A_g": 0.0, "mu_A_p": 0.0, "g_f": 0.0, "h_f": 0.0}
        # z ~ h: every outcome of every state
        rep = np.repeat(np.arange(n), 1 << q)
        z = np.tile(bits, (n, 1))
        wz = (wi[:, None] * view.joint).reshape(-1)
        nextp = view.nextp.reshape(n << q, q)
        rows = np.arange(n << q)
        for j, pj in choices(prover, game.variant, inst, k, node, view, rep, z):
            jj = np.broadcast_to(j, (n << q,))
            pn = nextp[rows, jj]
            child = node[rep] * q + jj
            a = _expected(prover.direction(inst[rep], k - 1, child, pn), n << q)
            ww = wz * pj * a
            terms["mu_A_g"] += fdot(ww, truth[rep, jj])
            terms["mu_A_p"] += fdot(ww, pn)
            terms["h_f"] += fdot(ww, z[rows, jj])
        # z ~ g: the true outcome of every state, with the probabilities B stated on its path
        t_true = index_of(truth)
        ar = np.arange(n)
        zt = bits[t_true]
        for j, pj in choices(prover, game.variant, inst, k, node, view, ar, zt):
            jj = np.broadcast_to(j, (n,))
            pn = view.nextp[ar, t_true, jj]
            a = _expected(prover.direction(inst, k - 1, node * q + jj, pn), n)
            terms["g_f"] += fdot(wi * pj * a, zt[ar, jj])
        out.append(StepTerms(k=k, **terms))

    exact_prover_estimator(game, observe=observe)
    return out
