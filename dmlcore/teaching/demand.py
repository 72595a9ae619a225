"""The paper's IV benchmark (demand-iv) as a lesson: a regression, 2SLS and a fast DML-CMR on one
simulated data set, and DML-CMR's confidence band as the instrument weakens.

Curves are average demand curves: the mean over the data's rows of f(price, time_i, type_i),
over the central 96 % of the simulated prices.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from dmlcore.data.registry import load_dataset
from dmlcore.data.simulate import RHO, bridge_curve, demand_f0
from dmlcore.inference.first_stage import first_stage
from dmlcore.errors import DMLCoreError
from dmlcore.runs import curve_band, fit_run

# the nuisances named gb (not "auto", the default): one small booster each, as the Learn page's text and rows say
FAST_GB = dict(learner="gb", folds=3, n_draws=8, nuisance_params=dict(max_iter=60, learning_rate=0.2),
               f_params=dict(max_stages=60, learning_rate=0.2), outcome_learner="gb", sampler="gb")
BAND_STRENGTHS = (2.0, 1.0, 0.5, 0.25, 0.1, 0.05)
BAND_RIDGE = 1e-6  # the spline penalty, held fixed so that only the instrument changes
SIEVE_GB = {**FAST_GB, "f_model": "sieve", "f_params": dict(ridge=BAND_RIDGE)}
REGRESSION = "Regression (ignores the instrument)"
BAND_COVERAGE_CSV = Path(__file__).resolve().parents[2] / "bench" / "results" / "teaching" / "demand-band-coverage.csv"


class TrueDemand:
    """The true structural function of demand-iv, with the predict() of a fitted estimator."""

    def predict(self, frame):
        return np.asarray(demand_f0(frame["price"], frame["time"], frame["customer_type"]), dtype=float)


def _price_grid(data) -> np.ndarray:
    return np.linspace(*np.quantile(data.table["price"], [0.02, 0.98]), 40)


def _f_stat(data) -> float:
    try:
        return first_stage(data, nonparametric=False)["treatments"]["price"]["f_stat"]
    except DMLCoreError:
        return float("nan")


def demand_fits(strength: float, rho: float, n: int, seed: int, with_naive: bool = False) -> dict:
    """Regression (the tool's method that ignores the instrument), 2SLS and fast DML-CMR (and the
    naive plug-in) on one simulated demand-iv data set, all boosting fits with FAST_GB.

    Returns {"fits": {name: {"key", "mse", "slope", "curve"}}, "true_slope", "f_stat"}; ``slope``
    is that of a straight line fitted to the average demand curve.
    """
    loaded = load_dataset("demand-iv", n=n, seed=seed, rho=rho, iv_strength=strength)
    data, truth = loaded.data, loaded.truth
    fits = [(REGRESSION, "regression", {k: FAST_GB[k] for k in ("learner", "nuisance_params")}),
            ("2SLS", "2sls", {}), ("DML-CMR (small boosting)", "dml-cmr", FAST_GB)]
    if with_naive:
        fits.append(("Naive plug-in (small boosting)", "naive", {k: v for k, v in FAST_GB.items() if k not in ("folds", "outcome_learner")}))
    grid = _price_grid(data)
    true_curve = bridge_curve(TrueDemand(), data, grid)
    out = {}
    for name, key, kwargs in fits:
        run = fit_run(data, key, truth=truth, **kwargs)
        curve = bridge_curve(run.estimator, data, grid)
        out[name] = {"key": key, "mse": run.record["mse"], "slope": float(np.polyfit(grid, curve, 1)[0]),
                     "curve": pd.DataFrame({"x": grid, "estimate": curve, "truth": true_curve,
                                            "group": "average over customers"})}
    return {"fits": out, "true_slope": float(np.polyfit(grid, true_curve, 1)[0]), "f_stat": _f_stat(data)}


def band_fit(strength: float, rho: float, n: int, seed: int, ridge: float = BAND_RIDGE) -> dict:
    """Fast DML-CMR with the spline second stage (penalty fixed at ``ridge``) on simulated
    demand-iv: the average demand curve with its 95 % band, the band of f on the test grid (mean
    width, coverage of the truth), the mean width of the curve's band and the first-stage F."""
    loaded = load_dataset("demand-iv", n=n, seed=seed, rho=rho, iv_strength=strength)
    data = loaded.data
    run = fit_run(data, "dml-cmr", truth=loaded.truth, **{**SIEVE_GB, "f_params": dict(ridge=ridge)})
    grid = _price_grid(data)
    frame = pd.DataFrame({"x": grid, "estimate": bridge_curve(run.estimator, data, grid),
                          "truth": bridge_curve(TrueDemand(), data, grid), "group": "average over customers"})
    curve = curve_band(run.estimator, data, frame, treatment_values=grid)
    return {"curve": curve, "width": run.record["band_width"], "coverage": run.record["band_coverage"],
            "curve_width": float(np.mean(curve["upper"] - curve["lower"])), "f_stat": _f_stat(data),
            "seconds": run.record["seconds"]}


def band_coverage(strengths=BAND_STRENGTHS, *, seeds: int = 10, rho: float = RHO.default, n: int = 1000,
                  small_ridge: float = 1e-9) -> pd.DataFrame:
    """What the band of :func:`band_fit` delivers over ``seeds`` data sets at each strength: the
    mean (and lowest) share of the test grid inside the band with the Monte-Carlo standard error of
    that mean (the share's sd over the data sets / sqrt(data sets)), its mean width and the median
    first-stage F; and, at the weakest strength, the same with the penalty ``small_ridge``
    instead of BAND_RIDGE (how much the fixed penalty holds the band's width down)."""
    rows = []
    for strength, ridge in [(v, BAND_RIDGE) for v in strengths] + [(min(strengths), small_ridge)]:
        for seed in range(seeds):
            r = band_fit(strength, rho, n, seed, ridge)
            rows.append({"instrument strength": strength, "ridge": ridge, "seed": seed, "first-stage F": r["f_stat"],
                         "coverage": r["coverage"], "width": r["width"]})
    table = pd.DataFrame(rows)
    return table.groupby(["instrument strength", "ridge"], sort=False).agg(
        **{"median first-stage F": ("first-stage F", "median"), "mean coverage": ("coverage", "mean"),
           "coverage s.e.": ("coverage", lambda v: float(v.std(ddof=1) / np.sqrt(len(v)))),
           "lowest coverage": ("coverage", "min"), "mean width": ("width", "mean"),
           "data sets": ("seed", "size")}).reset_index()



def measured_band_coverage() -> pd.DataFrame | None:
    """:func:`band_coverage` as ``python -m bench.teaching`` wrote it (None when the file is not here)."""
    return pd.read_csv(BAND_COVERAGE_CSV) if BAND_COVERAGE_CSV.exists() else None
