"""Proximal causal learning on a small linear simulation with a hidden confounder U.

For each draw (rows i = 1..n):

    U ~ N(0, 1)                                  hidden confounder
    Z = U + tau N1                                 treatment proxy (may affect the price)
    A = U + 0.5 Z + V                            price
    W = U + tau N2 + kappa A                       outcome proxy (kappa = 0: not affected by A)
    Y = beta A + 2 U + E                         sales

with N1, N2, V, E ~ N(0, 1), beta = -1 and proxy noise tau (``proxy_noise``). With kappa = 0 the bridge
h(a, w) = beta a + 2 w solves E[Y - h(A, W) | A, Z] = 0, so the coefficient of A in the
proximal 2SLS (regress Y on A and W, instrumenting W with Z) is consistent for beta. With
kappa != 0 (the proxy is affected by the treatment) the same estimator converges to
beta - 2 kappa. Estimators compared on the same data:

* Y on A (OLS); Y on A and W (adjusting for the proxy as if it were U);
* proximal 2SLS with Z; the same with Z replaced by noise unrelated to U (dropping Z's
  information: the bridge is then not identified and the estimates scatter).
"""

from __future__ import annotations

import time

import numpy as np

from dmlcore.teaching.result import Experiment, check_count, check_range, summarize
from dmlcore.teaching.iv import _long

BETA = -1.0
U_EFFECT = 2.0
ESTIMATORS = ("Y on A", "Y on A and W", "proximal 2SLS", "proximal 2SLS, Z dropped (noise)")


def _iv_coef(y, regressors, instruments):
    """2SLS coefficients of y on ``regressors`` with ``instruments`` (both include a constant)."""
    fitted = instruments @ np.linalg.lstsq(instruments, regressors, rcond=None)[0]
    return np.linalg.lstsq(fitted, y, rcond=None)[0]


def proximal(*, n: int = 1000, draws: int = 200, proxy_noise: float = 1.0, kappa: float = 0.0,
             seed: int = 0) -> Experiment:
    """The four estimators of beta over ``draws`` simulations (see the module docstring).

    ``summary`` has the median and quartiles of each; ``params["predicted"]`` the large-sample
    value of proximal 2SLS, beta - 2 kappa.
    """
    check_count("n", n, 50)
    check_count("draws", draws, 2, 5000)
    check_range("proxy_noise", proxy_noise, 0.0, 5.0)
    check_range("kappa", kappa, -2.0, 2.0)
    start = time.perf_counter()
    rng = np.random.default_rng([seed, 53])
    out = {name: np.empty(draws) for name in ESTIMATORS}
    one = np.ones(n)
    for r in range(draws):
        u, n1, n2, v, e, noise = rng.standard_normal((6, n))
        z = u + proxy_noise * n1
        a = u + 0.5 * z + v
        w = u + proxy_noise * n2 + kappa * a
        y = BETA * a + U_EFFECT * u + e
        out["Y on A"][r] = np.linalg.lstsq(np.column_stack([one, a]), y, rcond=None)[0][1]
        out["Y on A and W"][r] = np.linalg.lstsq(np.column_stack([one, a, w]), y, rcond=None)[0][1]
        regressors = np.column_stack([one, a, w])
        out["proximal 2SLS"][r] = _iv_coef(y, regressors, np.column_stack([one, a, z]))[1]
        out["proximal 2SLS, Z dropped (noise)"][r] = _iv_coef(y, regressors, np.column_stack([one, a, noise]))[1]
    table = _long(**out)
    summary = summarize(table, ["estimator"])
    params = dict(n=n, draws=draws, proxy_noise=proxy_noise, kappa=kappa, seed=seed,
                  predicted=BETA - U_EFFECT * kappa)
    return Experiment("proximal", table, summary, params, BETA, time.perf_counter() - start)
