"""A logistic regression with crossed random intercepts, fitted by maximum likelihood under
the Laplace approximation (definitions: ``docs/metrics.md``, "Judge accuracy by row").

The model: logit P[y = 1] = Xβ + Σ_g σ_g·Z_g v_g with v_g ~ N(0, I) (spherical random
effects, as lme4 writes them, so that σ_g = 0 is an ordinary point). For given σ the
conditional mode (β̂, v̂) maximises the penalised log-likelihood
ℓ(β, v) = Σ [y·η − ln(1 + e^η)] − ½‖v‖², found by Newton's method with step halving; the
Laplace deviance is −2·ℓ(β̂, v̂) + ln det H_vv, H the negative Hessian of ℓ at the mode;
σ minimises it (Nelder–Mead on |σ| from σ = 1, to 1e-4, deterministic). The fixed effects'
covariance is the β block of H⁻¹ at the fitted σ: it carries the random effects'
uncertainty, not σ's.
Plain NumPy; SciPy for the outer minimisation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from llmdebate.errors import MissingExtraError

TOL = 1e-10
"""Newton's method stops when no coordinate moves by more than this."""
MAX_ABS_ETA = 30.0
"""A fitted linear predictor beyond this: the data separate (no finite estimate)."""


@dataclass(frozen=True)
class Fit:
    """β̂ and its standard errors, σ̂ per random effect, the Laplace deviance, and whether
    the estimate is finite (False: the data separate, a logit goes to ±∞)."""

    beta: np.ndarray
    se: np.ndarray
    sigma: np.ndarray
    deviance: float
    finite: bool


def indicator(codes: Sequence[int], levels: int) -> np.ndarray:
    """The n × levels 0/1 matrix of a factor's codes."""
    z = np.zeros((len(codes), levels))
    z[np.arange(len(codes)), np.asarray(codes, dtype=int)] = 1.0
    return z


def mode(
    y: np.ndarray, a: np.ndarray, n_fixed: int, start: np.ndarray | None = None
) -> tuple[np.ndarray, float, np.ndarray]:
    """(b̂, ℓ(b̂), H) of ℓ(b) = Σ [y·η − ln(1 + e^η)] − ½‖b[n_fixed:]‖², η = a·b."""
    pen = np.r_[np.zeros(n_fixed), np.ones(a.shape[1] - n_fixed)]
    diag = np.diag_indices(a.shape[1])
    b = np.zeros(a.shape[1]) if start is None else start.copy()

    def value(b: np.ndarray) -> tuple[float, np.ndarray]:
        eta = a @ b
        return float(y @ eta - np.logaddexp(0.0, eta).sum() - 0.5 * (pen @ (b * b))), eta

    def newton(b: np.ndarray, eta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        mu = 1.0 / (1.0 + np.exp(-eta))
        h = (a.T * (mu * (1.0 - mu))) @ a
        h[diag] += pen
        return a.T @ (y - mu) - pen * b, h

    current, eta = value(b)
    for _ in range(100):
        grad, h = newton(b, eta)
        step = np.linalg.solve(h, grad)
        scale = 1.0
        while True:
            trial = b + scale * step
            v, trial_eta = value(trial)
            if v >= current - 1e-12 or scale < 1e-8:
                break
            scale /= 2.0
        b, current, eta = trial, v, trial_eta
        if float(np.max(np.abs(scale * step))) < TOL:
            break
    return b, current, newton(b, eta)[1]


def deviance(
    y: np.ndarray, x: np.ndarray, zs: Sequence[np.ndarray], sigma: np.ndarray,
    start: np.ndarray | None = None,
) -> tuple[float, np.ndarray, np.ndarray]:
    """(the Laplace deviance at ``sigma``, the conditional mode, H there)."""
    a = np.hstack([x, *(z * abs(float(s)) for z, s in zip(zs, sigma, strict=True))])
    p = x.shape[1]
    b, ll, h = mode(y, a, p, start)
    _, logdet = np.linalg.slogdet(h[p:, p:])
    return -2.0 * ll + float(logdet), b, h


def fit(y: Sequence[float], x: np.ndarray, zs: Sequence[np.ndarray]) -> Fit:
    """The maximum-likelihood fit (Laplace) of y on the fixed effects ``x`` with one random
    intercept per matrix of ``zs`` (each the indicator matrix of a grouping factor)."""
    try:
        from scipy.optimize import minimize
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise MissingExtraError("scipy", "report") from exc
    yy = np.asarray(y, dtype=float)
    last: dict[str, np.ndarray] = {}

    def objective(s: np.ndarray) -> float:
        dev, b, _ = deviance(yy, x, zs, s, last.get("b"))
        last["b"] = b
        return dev

    sigma = np.ones(len(zs))
    if zs:
        res = minimize(objective, sigma, method="Nelder-Mead",
                       options={"xatol": 1e-4, "fatol": 1e-8, "maxiter": 2000})
        sigma = np.abs(res.x)
    dev, b, h = deviance(yy, x, zs, sigma)
    p = x.shape[1]
    cov = np.linalg.inv(h)[:p, :p]
    eta = np.hstack([x, *(z * s for z, s in zip(zs, sigma, strict=True))]) @ b
    return Fit(
        beta=b[:p],
        se=np.sqrt(np.diag(cov)),
        sigma=sigma,
        deviance=dev,
        finite=bool(np.max(np.abs(eta)) < MAX_ABS_ETA),
    )
