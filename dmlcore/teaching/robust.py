"""Weak-IV lessons when the errors are not homoskedastic, and with several instruments.

Both experiments simulate small data sets and hand each one, as a :class:`CausalData`, to the
library's own linear-IV inference (:mod:`dmlcore.inference.linear_iv`): nothing is recomputed here.

:func:`robust_inference` -- the first-stage F and the Anderson-Rubin set computed as if the errors were
homoskedastic beside the same statistics under a heteroskedasticity-robust or a cluster-robust covariance
(the effective F of Montiel Olea & Pflueger 2013; the robust AR set, Andrews, Stock & Sun 2019), on one of
two designs where they differ (the truth is beta = -1 in both, rho the share of the noise that is the
hidden confounder U):

* ``heteroskedastic``: n rows, Z ~ N(0, 1), A = pi Z + s(Z) e_A, Y = beta A + s(Z) e_Y, with
  s(Z) = 1.5 |Z| and (e_A, e_Y) standard normal with correlation rho (through U). The noise is
  largest where the instrument is far from its mean, which is where a homoskedastic formula
  understates the variance of the instrument's coefficient.
* ``clustered``: markets of equal size; the instrument is a market's fuel cost (one value per market), and
  both noises have a market-level part of variance 1/2 beside a row-level part of variance 1/2 (the same rho
  in each). Rows of one market are not independent, so the homoskedastic formulas count about one
  market's worth of rows as if they were independent pieces of information.

:func:`overidentification` -- three instruments, each moving the price by pi; in the ``invalid`` design the
third also moves sales directly by delta, in ``all invalid`` each of the three does (delta each, so each
instrument alone points to the same wrong value), in ``valid`` none does. Sargan's (1958) test and Hansen's
(1982) J (heteroskedasticity-robust, efficient GMM), both from :func:`first_stage_inference`, per data set.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from dmlcore.data.roles import CausalData
from dmlcore.errors import DMLCoreError
from dmlcore.inference.first_stage import WEAK_F
from dmlcore.inference.linear_iv import anderson_rubin_set, first_stage_inference, fit_iv, linear_iv
from dmlcore.teaching.result import Experiment, check_count, check_range

BETA = -1.0
LEVEL = 0.95
ERRORS = {"heteroskedastic": ("robust", None), "clustered": ("clustered", "market")}
"""Each design's covariance choice beside the homoskedastic one, and its cluster column."""
COV_WORDS = {"unadjusted": "homoskedastic", "robust": "heteroskedasticity-robust", "clustered": "cluster-robust"}
OVERID_DESIGNS = ("valid", "invalid", "all invalid")


def _noises(rng, shape, rho):
    """Two standard normal noises of ``shape`` with correlation ``rho``, through a shared U."""
    u = rng.standard_normal(shape)
    return (np.sqrt(rho) * u + np.sqrt(1 - rho) * rng.standard_normal(shape),
            np.sqrt(rho) * u + np.sqrt(1 - rho) * rng.standard_normal(shape))


def heteroskedastic_data(seed: int = 0, *, n: int = 500, pi: float = 0.22, rho: float = 0.5) -> CausalData:
    """One data set of the heteroskedastic design (module notes)."""
    rng = np.random.default_rng([seed, 47, 1])
    z = rng.standard_normal(n)
    e_a, e_y = _noises(rng, n, rho)
    s = 1.5 * np.abs(z)
    a = pi * z + s * e_a
    y = BETA * a + s * e_y
    return CausalData(pd.DataFrame({"sales": y, "price": a, "fuel": z}), "iv", outcome="sales",
                      treatment=["price"], instrument=["fuel"], name="heteroskedastic")


def clustered_data(seed: int = 0, *, markets: int = 40, rows: int = 25, pi: float = 0.25,
                   rho: float = 0.5) -> CausalData:
    """One data set of the clustered design (module notes): ``markets`` markets of ``rows`` rows."""
    rng = np.random.default_rng([seed, 47, 2])
    market = np.repeat(np.arange(markets), rows)
    z = rng.standard_normal(markets)[market]
    shared_a, shared_y = (v[market] for v in _noises(rng, markets, rho))
    own_a, own_y = _noises(rng, markets * rows, rho)
    a = pi * z + np.sqrt(0.5) * (shared_a + own_a)
    y = BETA * a + np.sqrt(0.5) * (shared_y + own_y)
    return CausalData(pd.DataFrame({"sales": y, "price": a, "fuel": z, "market": market}), "iv", outcome="sales",
                      treatment=["price"], instrument=["fuel"], name="clustered")


def _covers(pieces, value: float) -> bool:
    return any((lo is None or lo <= value) and (hi is None or value <= hi) for lo, hi in pieces)


def _bounded(pieces) -> bool:
    return bool(pieces) and all(lo is not None and hi is not None for lo, hi in pieces)


def one_data_set(data: CausalData, cov_type: str, cluster: str | None) -> dict:
    """The library's effective F and Anderson-Rubin set of ``data`` under ``cov_type``, and whether the set
    holds the truth."""
    strength = first_stage_inference(data, cov_type, cluster)
    ar = anderson_rubin_set(data, cov_type, cluster, level=LEVEL)
    return {"effective F": float(strength["effective_f"]), "AR set": ar["text"], "AR pieces": ar["pieces"],
            "AR covers": _covers(ar["pieces"], BETA), "AR bounded": _bounded(ar["pieces"]),
            "AR kind": ar["kind"]}


def robust_inference(errors: str = "heteroskedastic", *, draws: int = 60, seed: int = 0,
                     callback=None) -> Experiment:
    """The homoskedastic first-stage F and AR set against the robust (or clustered) effective F and AR
    set, over ``draws`` data sets of the ``errors`` design (module notes).

    ``draws`` holds per data set and covariance the effective F (with the homoskedastic covariance it is
    the usual first-stage F), whether the AR set holds the truth and whether it is bounded; ``summary``
    per covariance the median effective F, the AR coverage and the share of bounded AR sets;
    ``params["example"]`` the first data set's numbers under both covariances. ``callback(fraction, text)``
    hears of each data set done.
    """
    if errors not in ERRORS:
        raise DMLCoreError(f"errors must be one of {', '.join(ERRORS)}; got {errors!r}.")
    check_count("draws", draws, 2, 2000)
    check_count("seed", seed, 0, 10 ** 9)
    start = time.perf_counter()
    make = heteroskedastic_data if errors == "heteroskedastic" else clustered_data
    cov_type, cluster = ERRORS[errors]
    rows, example = [], {}
    for r in range(draws):
        data = make(seed + r)
        for cov, column in (("unadjusted", None), (cov_type, cluster)):
            out = one_data_set(data, cov, column)
            rows.append({"draw": r, "covariance": COV_WORDS[cov], **{k: out[k] for k in (
                "effective F", "AR covers", "AR bounded")}})
            if r == 0:
                example[COV_WORDS[cov]] = out
        if callback is not None:
            callback((r + 1) / draws, f"{r + 1} of {draws} data sets")
    table = pd.DataFrame(rows)
    grouped = table.groupby("covariance", sort=False)
    summary = pd.DataFrame({"median effective F": grouped["effective F"].median(),
                            f"share effective F < {WEAK_F:g}": grouped["effective F"].apply(lambda f: float(np.mean(f < WEAK_F))),
                            "AR coverage": grouped["AR covers"].mean(),
                            "AR bounded": grouped["AR bounded"].mean()}).reset_index()
    first = make(seed)
    fit = fit_iv(linear_iv(first))
    params = dict(errors=errors, draws=draws, seed=seed, cov_type=cov_type, cluster=cluster, example=example,
                  tsls=float(fit.params["price"]), n=int(len(first.table)),
                  clusters=int(first.table["market"].nunique()) if cluster else None)
    return Experiment("robust first stage and AR", table, summary, params, BETA, time.perf_counter() - start)


def overid_data(design: str, seed: int = 0, *, n: int = 500, pi: float = 0.3, delta: float = 0.2,
                rho: float = 0.5) -> CausalData:
    """One data set with three instruments (module notes); ``design`` one of OVERID_DESIGNS."""
    if design not in OVERID_DESIGNS:
        raise DMLCoreError(f"design must be one of {', '.join(OVERID_DESIGNS)}; got {design!r}.")
    check_range("delta", delta, -5.0, 5.0)
    rng = np.random.default_rng([seed, 47, 3])
    z = rng.standard_normal((n, 3))
    e_a, e_y = _noises(rng, n, rho)
    direct = {"valid": np.zeros(3), "invalid": np.array([0.0, 0.0, delta]), "all invalid": np.full(3, delta)}[design]
    a = pi * z.sum(1) + e_a
    y = BETA * a + z @ direct + e_y
    cols = {f"fuel{j + 1}": z[:, j] for j in range(3)}
    return CausalData(pd.DataFrame({"sales": y, "price": a, **cols}), "iv", outcome="sales", treatment=["price"],
                      instrument=list(cols), name=f"overid-{design}")


def overidentification(*, draws: int = 20, seed: int = 0, delta: float = 0.2, level: float = LEVEL,
                       callback=None) -> Experiment:
    """Sargan's test and Hansen's J over ``draws`` data sets of each design in OVERID_DESIGNS.

    ``draws`` per data set: the 2SLS estimate, Sargan's and Hansen's statistics and p-values; ``summary``
    per design: the share of data sets where each test rejects at 1 - ``level``, the median 2SLS
    estimate and its large-sample value (beta plus the instruments' average direct effect over pi).
    ``callback(fraction, text)`` hears of each data set done.
    """
    check_count("draws", draws, 2, 2000)
    check_count("seed", seed, 0, 10 ** 9)
    check_range("level", level, 0.5, 0.999)
    start = time.perf_counter()
    pi, rows = 0.3, []
    for i, design in enumerate(OVERID_DESIGNS):
        for r in range(draws):
            data = overid_data(design, seed + r, pi=pi, delta=delta)
            out = first_stage_inference(data, "robust")
            tests = out["overid"]
            estimate = float(fit_iv(linear_iv(data)).params["price"])
            rows.append({"design": design, "draw": r, "2SLS": estimate,
                         "Sargan": tests["sargan"]["stat"], "Sargan p": tests["sargan"]["pvalue"],
                         "Hansen J": tests["hansen_j"]["stat"], "Hansen J p": tests["hansen_j"]["pvalue"],
                         "df": tests["hansen_j"]["df"]})
            if callback is not None:
                done = i * draws + r + 1
                callback(done / (3 * draws), f"{done} of {3 * draws} data sets")
    table = pd.DataFrame(rows)
    alpha = 1 - level
    grouped = table.groupby("design", sort=False)
    direct = {"valid": 0.0, "invalid": delta / 3, "all invalid": delta}
    summary = pd.DataFrame({"Sargan rejects": grouped["Sargan p"].apply(lambda p: float(np.mean(p < alpha))),
                            "Hansen J rejects": grouped["Hansen J p"].apply(lambda p: float(np.mean(p < alpha))),
                            "median 2SLS": grouped["2SLS"].median()}).reset_index()
    summary["large-sample 2SLS"] = [BETA + direct[d] / pi for d in summary["design"]]
    return Experiment("overidentification", table, summary,
                      dict(draws=draws, seed=seed, delta=delta, pi=pi, level=level, n=500), BETA,
                      time.perf_counter() - start)
