"""The forbidden regression: plugging E[A | Z] into a nonlinear f is not E[f(A) | Z].

Design, for each draw (rows i = 1..n):

    Z ~ N(0, 1),  U ~ N(0, 1) hidden,  A = Z + sigma (sqrt(rho) U + sqrt(1 - rho) V),
    Y = f0(A) + 2 (sqrt(rho) U + sqrt(1 - rho) E),   f0(a) = 2 sin(a).

Given Z, A is normal with mean Z and variance sigma^2, so E[f0(A) | Z] = exp(-sigma^2 / 2) f0(Z):
the instrument sees a flattened copy of f0. Three fits of the same polynomial basis B(a) are
compared on the same data:

* regression: Y on B(A) -- confounded by U;
* forbidden: first stage A-hat = E-hat[A | Z] (linear), then Y on B(A-hat) -- it fits
  f(E[A | Z]) and so recovers the flattened curve;
* two-stage, right: Y on E-hat[B(A) | Z], the mean of B over draws A-hat + r with r resampled
  first-stage residuals (what the tool's g(f, c) does), then f-hat = B(a)' theta.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from dmlcore.teaching.result import Experiment, check_count, check_range

DEGREE = 5           # polynomial degree of the basis
GRID = np.linspace(-2.0, 2.0, 41)
N_DRAWS = 50         # draws of A per row for E[B(A) | Z]
METHODS = ("regression", "forbidden", "two-stage")


def f0(a):
    """The true structural function."""
    return 2.0 * np.sin(np.asarray(a, dtype=float))


def basis(a) -> np.ndarray:
    """Polynomial basis 1, a, ..., a^DEGREE (with a halved, to keep powers of order one)."""
    a = np.asarray(a, dtype=float)[..., None] / 2.0
    return a ** np.arange(DEGREE + 1)


def _lstsq(X, y):
    return np.linalg.lstsq(X, y, rcond=None)[0]


def fits(z, a, y, rng) -> dict[str, np.ndarray]:
    """The three fits on one data set: each method's f-hat on GRID."""
    Z = np.column_stack([np.ones_like(z), z])
    gamma = _lstsq(Z, a)
    a_hat = Z @ gamma
    resid = a - a_hat
    draws = a_hat[:, None] + resid[rng.integers(0, len(a), size=(len(a), N_DRAWS))]
    expected_basis = basis(draws).mean(axis=1)
    grid_basis = basis(GRID)
    return {"regression": grid_basis @ _lstsq(basis(a), y),
            "forbidden": grid_basis @ _lstsq(basis(a_hat), y),
            "two-stage": grid_basis @ _lstsq(expected_basis, y)}


def forbidden_regression(*, n: int = 1000, draws: int = 30, sigma: float = 0.8, rho: float = 0.8,
                         seed: int = 0) -> Experiment:
    """The three fits over ``draws`` simulations.

    ``draws`` holds every fit's curve on GRID per draw (columns draw, method, a, estimate,
    truth); ``summary`` each method's mean squared error against f0 on GRID (mean and quartiles
    over draws) and ``slope ratio``, the slope of its median curve (a straight-line fit over
    GRID) over the truth's: above 1 too steep, below 1 too flat; ``params`` the median curves
    (``curves``) and the flattening factor exp(-sigma^2 / 2) (``flattening``).
    """
    check_count("n", n, 50)
    check_count("draws", draws, 1, 1000)
    check_range("sigma", sigma, 0.05, 3.0)
    check_range("rho", rho, 0.0, 0.99)
    start = time.perf_counter()
    rng = np.random.default_rng([seed, 47])
    truth = f0(GRID)
    frames = []
    for r in range(draws):
        z, u, v, e = rng.standard_normal((4, n))
        a = z + sigma * (np.sqrt(rho) * u + np.sqrt(1.0 - rho) * v)
        y = f0(a) + 2.0 * (np.sqrt(rho) * u + np.sqrt(1.0 - rho) * e)
        for method, curve in fits(z, a, y, rng).items():
            frames.append(pd.DataFrame({"draw": r, "method": method, "a": GRID, "estimate": curve, "truth": truth}))
    table = pd.concat(frames, ignore_index=True)
    table["squared error"] = (table["estimate"] - table["truth"]) ** 2
    mse = table.groupby(["method", "draw"], sort=False)["squared error"].mean().groupby("method", sort=False)
    summary = pd.DataFrame({"method": list(METHODS)})
    summary["mse"] = summary["method"].map(mse.mean())
    summary["mse q25"] = summary["method"].map(mse.quantile(0.25))
    summary["mse q75"] = summary["method"].map(mse.quantile(0.75))
    curves = table.groupby(["method", "a"], sort=False)["estimate"].median().rename("median estimate").reset_index()
    slopes = curves.groupby("method", sort=False)["median estimate"].apply(lambda v: np.polyfit(GRID, v, 1)[0])
    summary["slope ratio"] = summary["method"].map(slopes) / np.polyfit(GRID, truth, 1)[0]
    params = dict(n=n, draws=draws, sigma=sigma, rho=rho, seed=seed, flattening=float(np.exp(-sigma ** 2 / 2)),
                  curves=curves)
    return Experiment("forbidden regression", table, summary, params, None, time.perf_counter() - start)
