"""An exclusion-violation exercise: Card's (1995) return to schooling when growing up near a college
may also raise wages directly (Conley, Hansen & Rossi 2012, "Plausibly exogenous").

The model, with the covariates X partialled out of every column (as :mod:`dmlcore.teaching.card`):

    lwage = beta * educ + gamma * nearc4 + e,        educ = pi * nearc4 + v

gamma = 0 is the exclusion restriction. With gamma known, 2SLS of lwage - gamma * nearc4 on educ
(instrument nearc4) is consistent for beta: beta_hat(gamma) = beta_hat(0) - gamma * A with
A = sum(z^2) / sum(z * educ), the inverse of the first-stage slope. Two ways to report beta when
gamma is only believed to lie near 0:

* **union of confidence intervals**: gamma somewhere in [0, delta]; the union over that range of
  the usual 95 % intervals of beta_hat(gamma) covers beta at least 95 % of the time whatever the
  true gamma in the range;
* **local to zero**: gamma random with a prior, here normal with the mean delta / 2 and variance
  delta^2 / 12 of the uniform on [0, delta]; then beta_hat(0) is approximately normal with mean
  beta + A * E[gamma] and variance V + A^2 Var(gamma), V the usual 2SLS variance, and the interval
  is beta_hat(0) - A * E[gamma] -/+ 1.96 * sqrt(V + A^2 Var(gamma)).

:func:`card_sensitivity` computes both for a range of delta and the smallest delta at which each
interval reaches 0 (how large a direct effect overturns "schooling raises wages").
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dmlcore.data.registry import load_dataset
from dmlcore.teaching.card import _partial_out

Z95 = 1.959963984540054
DELTAS = (0.0, 0.0025, 0.005, 0.0075, 0.01, 0.015, 0.02)


def _card_residuals() -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    data = load_dataset("card").data
    y, a, z = data.outcome, data.treatment[0], data.instrument[0]
    r = _partial_out(data.table, [y, a, z], list(data.covariates))
    return r[y], r[a], r[z], len(data.table)   # no degrees-of-freedom correction, as the tool's 2SLS


def iv_given_gamma(y, a, z, dof: int, gamma: float) -> tuple[float, float]:
    """2SLS of y - gamma * z on a with instrument z (all partialled out): estimate and its usual
    homoskedastic standard error (residual variance over ``dof``; the tool's 2SLS divides by n)."""
    target = y - gamma * z
    beta = float(z @ target / (z @ a))
    resid = target - beta * a
    sigma2 = resid @ resid / dof
    return beta, float(np.sqrt(sigma2 * (z @ z)) / abs(z @ a))


def union_interval(y, a, z, dof: int, delta: float, points: int = 201) -> tuple[float, float]:
    """The union over gamma in [0, delta] of the 95 % intervals of beta_hat(gamma)."""
    lows, highs = [], []
    for gamma in np.linspace(0.0, delta, points if delta > 0 else 1):
        beta, se = iv_given_gamma(y, a, z, dof, float(gamma))
        lows.append(beta - Z95 * se)
        highs.append(beta + Z95 * se)
    return float(min(lows)), float(max(highs))


def local_to_zero(y, a, z, dof: int, delta: float) -> tuple[float, float, float]:
    """Estimate and 95 % interval with gamma ~ normal(delta / 2, delta^2 / 12)."""
    beta, se = iv_given_gamma(y, a, z, dof, 0.0)
    scale = float(z @ z / (z @ a))
    centre = beta - scale * delta / 2
    half = Z95 * np.sqrt(se ** 2 + scale ** 2 * delta ** 2 / 12)
    return float(centre), float(centre - half), float(centre + half)


def _breakdown(lower_at, hi: float = 0.1) -> float:
    """The smallest delta in [0, hi] at which ``lower_at(delta)`` reaches 0 (bisection)."""
    lo = 0.0
    if lower_at(lo) <= 0:
        return 0.0
    if lower_at(hi) > 0:
        return float("inf")
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if lower_at(mid) > 0 else (lo, mid)
    return hi


def card_sensitivity(deltas=DELTAS) -> dict:
    """Both intervals for each delta, the first-stage slope, the reduced form, and each interval's
    breakdown delta (the smallest direct effect at which its lower end reaches 0)."""
    y, a, z, dof = _card_residuals()
    rows = []
    for delta in deltas:
        u_lo, u_hi = union_interval(y, a, z, dof, float(delta))
        c, l_lo, l_hi = local_to_zero(y, a, z, dof, float(delta))
        rows.append({"delta": float(delta), "union lower": u_lo, "union upper": u_hi,
                     "local-to-zero estimate": c, "local-to-zero lower": l_lo, "local-to-zero upper": l_hi})
    beta, se = iv_given_gamma(y, a, z, dof, 0.0)
    return {"table": pd.DataFrame(rows), "tsls": beta, "se": se,
            "first_stage": float(z @ a / (z @ z)), "reduced_form": float(z @ y / (z @ z)),
            "breakdown_union": _breakdown(lambda d: union_interval(y, a, z, dof, d, 41)[0]),
            "breakdown_local": _breakdown(lambda d: local_to_zero(y, a, z, dof, d)[1])}
