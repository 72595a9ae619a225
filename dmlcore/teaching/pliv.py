"""Orthogonality that works: a partially linear IV model with a scalar effect theta.

Design (rows i = 1..n; X has ``P`` correlated standard normal columns, correlation 0.5^|j-k|):

    Z = r0(X) + E_Z,           r0(x) = x_0                                  instrument
    A = Z + tanh(x_1) + V                                                  treatment (D in the papers)
    Y = theta A + q(X) + U,    q(x) = 3 sin(2 x_0) + cos(x_1)             outcome
    U = rho V + sqrt(1 - rho^2) E,   E_Z, V, E ~ N(0, 1),  rho = 0.7       (confounding)

so E[U | Z, X] = 0 and theta = 0.5 is identified by E[(Z - r0(X)) (Y - l0(X) - theta (A - m0(X)))] = 0
with the nuisances l0(X) = E[Y | X], m0(X) = E[A | X], r0(X) = E[Z | X] (m0 = x_0 + tanh(x_1) and
l0 = theta m0 + q are known in closed form). Both estimators below use the same fitted l, m
(and r) and differ only in what multiplies the residual:

* **naive** (not orthogonal): theta-hat = sum Z (Y - l-hat) / sum Z (A - m-hat). Its score
  Z (Y - l(X) - theta (A - m(X))) has derivative -E[Z Delta(X)] = -E[r0(X) Delta(X)] in l: a
  nuisance error Delta reaches theta-hat at first order (the regularization bias of
  Chernozhukov et al. 2018, section 1);
* **orthogonal** (DML for the partially linear IV model): theta-hat = sum (Z - r-hat)(Y - l-hat) /
  sum (Z - r-hat)(A - m-hat). Its derivative in each nuisance is zero at the truth, so errors
  enter only through products such as E[(r-hat - r0)(l-hat - l0)].

Each is computed with K-fold cross-fitting (nuisances fitted on the other folds) and without
(fitted on all rows and evaluated on the same rows), with the standard error of the score
(sqrt(mean psi^2) / |J| / sqrt(n)), so that (theta-hat - theta) / se should be N(0, 1) when
the estimator is centred and its standard error right. The nuisance learner is k-nearest
neighbours (k = 10): a fast smoother whose smoothing bias plays the part of a machine
learner's regularization bias. This is our own code, written for this lesson.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import norm
from sklearn.neighbors import KNeighborsRegressor

from dmlcore.errors import DMLCoreError
from dmlcore.teaching.result import Experiment, check_count, check_range

THETA = 0.5
RHO = 0.7
P = 3
NEIGHBOURS = 10
LEVEL = 0.95
SCORES = ("naive", "orthogonal")
SCORE_TITLES = {"naive": "naive score (not orthogonal)", "orthogonal": "orthogonal score (DML)"}
CACHE = Path(__file__).with_name("pliv.csv")      # written by python -m bench.pliv
CACHE_SETTINGS = dict(n=1000, sims=1000, folds=5, seed=0)
EPSILONS = (0.025, 0.05, 0.1, 0.2, 0.4)


def simulate(n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """One data set of the design (module docstring), with the true nuisances l0, m0, r0."""
    cov = 0.5 ** np.abs(np.subtract.outer(np.arange(P), np.arange(P)))
    x = rng.standard_normal((n, P)) @ np.linalg.cholesky(cov).T
    e_z, v, e = rng.standard_normal((3, n))
    r0 = x[:, 0]
    z = r0 + e_z
    m0 = r0 + np.tanh(x[:, 1])
    d = z + np.tanh(x[:, 1]) + v
    q = 3.0 * np.sin(2.0 * x[:, 0]) + np.cos(x[:, 1])
    y = THETA * d + q + RHO * v + np.sqrt(1.0 - RHO ** 2) * e
    return {"x": x, "z": z, "d": d, "y": y, "l0": THETA * m0 + q, "m0": m0, "r0": r0}


def fit_nuisances(x: np.ndarray, targets: dict[str, np.ndarray], folds: int,
                  rng: np.random.Generator) -> dict[str, np.ndarray]:
    """k-NN predictions of each target from X: with ``folds`` >= 2 each row is predicted by a
    model fitted on the other folds (cross-fitting); with ``folds`` = 1 by a model fitted on all
    rows, the row itself included."""
    n = len(x)
    if folds == 1:
        return {k: KNeighborsRegressor(NEIGHBOURS).fit(x, t).predict(x) for k, t in targets.items()}
    out = {k: np.empty(n) for k in targets}
    order = rng.permutation(n)
    for part in np.array_split(order, folds):
        train = np.setdiff1d(order, part)
        for k, t in targets.items():
            out[k][part] = KNeighborsRegressor(NEIGHBOURS).fit(x[train], t[train]).predict(x[part])
    return out


def estimate(score: str, z, d, y, l_hat, m_hat, r_hat) -> tuple[float, float]:
    """theta-hat and its standard error with the ``score`` ("naive" or "orthogonal")."""
    if score not in SCORES:
        raise DMLCoreError(f"Unknown score {score!r}; choose one of {', '.join(SCORES)}.")
    w = z - r_hat if score == "orthogonal" else z
    j = float(np.mean(w * (d - m_hat)))
    theta = float(np.mean(w * (y - l_hat))) / j
    psi = w * (y - l_hat - theta * (d - m_hat))
    return theta, float(np.sqrt(np.mean(psi ** 2) / len(y)) / abs(j))


def simulations(*, n: int = 1000, sims: int = 200, folds: int = 5, seed: int = 0, callback=None,
                should_stop=None) -> Experiment:
    """Both scores, with and without cross-fitting, on ``sims`` simulated data sets.

    ``draws``: one row per (sim, score, cross-fitting) with theta-hat, se, t = (theta-hat -
    theta) / se and whether the 95 % interval covers theta. ``summary``: per (score,
    cross-fitting) the mean and standard deviation of t, the coverage and the median bias.
    """
    check_count("n", n, 100, 100_000)
    check_count("sims", sims, 2, 100_000)
    check_count("folds", folds, 2, 20)
    start = time.perf_counter()
    rows = []
    for s in range(sims):
        if should_stop is not None and should_stop():
            raise DMLCoreError("The experiment was stopped.")
        data = simulate(n, np.random.default_rng([seed, s, 61]))
        for k, crossfit in ((folds, True), (1, False)):
            hat = fit_nuisances(data["x"], {"l": data["y"], "m": data["d"], "r": data["z"]}, k,
                                np.random.default_rng([seed, s, 67]))
            for score in SCORES:
                theta, se = estimate(score, data["z"], data["d"], data["y"], hat["l"], hat["m"], hat["r"])
                rows.append({"sim": s, "score": score, "cross-fitting": crossfit, "theta_hat": theta, "se": se})
        if callback is not None:
            callback((s + 1) / sims, f"data set {s + 1} of {sims}")
    table = pd.DataFrame(rows)
    return from_draws(table, dict(n=n, sims=sims, folds=folds, seed=seed), time.perf_counter() - start)


def from_draws(table: pd.DataFrame, params: dict, seconds: float = 0.0) -> Experiment:
    """The Experiment of :func:`simulations` from its ``draws`` table (e.g. read from the cache)."""
    table = table.copy()
    q = norm.ppf(0.5 + LEVEL / 2)
    table["t"] = (table["theta_hat"] - THETA) / table["se"]
    table["covers"] = table["t"].abs() <= q
    grouped = table.groupby(["score", "cross-fitting"], sort=False)
    summary = pd.DataFrame({"mean t": grouped["t"].mean(), "sd t": grouped["t"].std(),
                            "coverage": grouped["covers"].mean(),
                            "median bias": grouped["theta_hat"].median() - THETA,
                            "median se": grouped["se"].median(), "sims": grouped.size()}).reset_index()
    return Experiment("pliv", table, summary, dict(params, theta=THETA, level=LEVEL), THETA, seconds)


def cached() -> Experiment | None:
    """The shipped large run (:data:`CACHE`, written by ``python -m bench.pliv``), or None without it."""
    if not CACHE.exists():
        return None
    table = pd.read_csv(CACHE)
    return from_draws(table, dict(CACHE_SETTINGS, source=f"dmlcore/teaching/{CACHE.name}"))


def second_order(*, n: int = 200_000, epsilons=EPSILONS, seed: int = 0) -> Experiment:
    """The positive control: how theta-hat moves when the nuisances are off by eps.

    On one large data set, start from the TRUE nuisances l0, m0, r0 and add eps * Delta(X) to
    each (Delta: the standardized x_0 + sin(x_1), so that it is correlated with r0). With the
    orthogonal score theta-hat moves by about eps^2 E[Delta^2] (1 - theta) / J: second order;
    with the naive score by about eps E[r0 Delta] (1 - theta) / J: first order. ``summary``: per
    score, the change |theta-hat(eps) - theta-hat(0)| at each eps and ``slope``, the least-squares
    slope of log change on log eps (about 2 and 1). A finite sample adds a first-order term of
    size eps / sqrt(n) to the orthogonal change, hence the large n.
    """
    check_count("n", n, 1000, 5_000_000)
    epsilons = sorted(float(e) for e in epsilons)
    if len(epsilons) < 2:
        raise DMLCoreError("Give at least two eps values to measure a slope.")
    for e in epsilons:
        check_range("eps", e, 1e-6, 1.0)
    start = time.perf_counter()
    data = simulate(n, np.random.default_rng([seed, 71]))
    delta = data["x"][:, 0] + np.sin(data["x"][:, 1])
    delta = (delta - delta.mean()) / delta.std()
    rows = []
    for score in SCORES:
        base, _ = estimate(score, data["z"], data["d"], data["y"], data["l0"], data["m0"], data["r0"])
        for eps in epsilons:
            moved, _ = estimate(score, data["z"], data["d"], data["y"], data["l0"] + eps * delta,
                                data["m0"] + eps * delta, data["r0"] + eps * delta)
            rows.append({"score": score, "eps": eps, "change": abs(moved - base)})
    table = pd.DataFrame(rows)
    slopes = {score: loglog_slope(part["eps"], part["change"]) for score, part in table.groupby("score", sort=False)}
    table["slope"] = table["score"].map(slopes)
    return Experiment("second order", table, table, dict(n=n, seed=seed, epsilons=epsilons, slopes=slopes),
                      None, time.perf_counter() - start)


def loglog_slope(eps, change) -> float:
    """Least-squares slope of log change on log eps (1: first order, 2: second order)."""
    eps, change = np.asarray(eps, dtype=float), np.asarray(change, dtype=float)
    keep = (eps > 0) & (change > 0)
    if keep.sum() < 2:
        raise DMLCoreError("Need at least two positive (eps, change) pairs to measure a slope.")
    return float(np.polyfit(np.log(eps[keep]), np.log(change[keep]), 1)[0])
