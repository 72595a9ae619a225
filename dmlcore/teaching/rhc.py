"""A proximal real-data exercise: right heart catheterization (RHC) and 30-day survival in the SUPPORT
study (``load_dataset("rhc")``: 5,735 ICU patients, treatment ``swang1``, outcome ``t3d30``, days alive
up to day 30; treatment proxies ``pafi1``, ``paco21``; outcome proxies ``ph1``, ``hema1``; 73 covariate
columns), the roles of Tchetgen Tchetgen et al. (2024) and Cui et al. (2023).

:func:`proxy_steps` computes, in closed form or with the tool's own linear fits:

* the regression of Y on A and X (no proxies: what a "no unmeasured confounding" analysis reports),
  and the same with the four proxies added as if they were confounders;
* the proxies' strength: each outcome proxy regressed on the treatment proxies given A and X (the
  first stage of linear proximal 2SLS, :func:`dmlcore.inference.first_stage.first_stage`);
* linear proximal 2SLS (regress Y on A, W and X, instrumenting W with Z; the tool's ``2sls`` on these
  roles gives the same numbers), and the same with the proxies' roles swapped (Z as outcome proxies,
  W as treatment proxies), which changes the assumptions.

:func:`measured_effects` reads the project's fits of every method on these data
(``bench/results/rhc-effects.csv``, ``rhc-effects-boot.csv``, written by ``python -m bench.rhc_effects``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from dmlcore.data.registry import load_dataset
from dmlcore.inference.first_stage import first_stage
from dmlcore.estimators import METHOD_TITLES, METHODS

Z95 = 1.959963984540054
RESULTS = Path(__file__).resolve().parents[2] / "bench" / "results"
EFFECT_FILES = ("rhc-effects.csv", "rhc-effects-boot.csv")
TODAY_FILE = "rhc-effects-31.csv"     # every method fitted with today's weak-identification flag


def _ols(y: np.ndarray, x: np.ndarray) -> tuple[float, float]:
    """Coefficient of the first column of ``x`` (a constant is added) and its homoskedastic s.e."""
    design = np.column_stack([x, np.ones(len(y))])
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    resid = y - design @ coef
    sigma2 = resid @ resid / (len(y) - design.shape[1])
    cov = sigma2 * np.linalg.pinv(design.T @ design)
    return float(coef[0]), float(np.sqrt(cov[0, 0]))


def p2sls(y: np.ndarray, a: np.ndarray, w: np.ndarray, z: np.ndarray, x: np.ndarray) -> dict:
    """Linear proximal 2SLS: the coefficient of ``a`` in the 2SLS of ``y`` on (a, w, x, 1) with
    instruments (a, z, x, 1), and its homoskedastic standard error (residual variance over n, as
    linearmodels' "unadjusted" and the tool's 2SLS)."""
    one = np.ones((len(y), 1))
    regressors = np.column_stack([a, w, x, one])
    instruments = np.column_stack([a, z, x, one])
    fitted = instruments @ np.linalg.lstsq(instruments, regressors, rcond=None)[0]
    coef = np.linalg.lstsq(fitted, y, rcond=None)[0]
    resid = y - regressors @ coef
    cov = resid @ resid / len(y) * np.linalg.pinv(fitted.T @ fitted)
    se = float(np.sqrt(cov[0, 0]))
    return {"coef": float(coef[0]), "se": se, "lower": float(coef[0] - Z95 * se), "upper": float(coef[0] + Z95 * se)}


def proxy_steps() -> dict:
    """The linear steps of the exercise (module docstring)."""
    data = load_dataset("rhc").data
    table = data.table
    y = table[data.outcome].to_numpy(dtype=float)
    a = table[data.treatment].to_numpy(dtype=float)
    x = table[data.covariates].to_numpy(dtype=float)
    proxies = table[data.treatment_proxy + data.outcome_proxy].to_numpy(dtype=float)
    steps = {"n": len(table), "outcome": data.outcome, "treatment": data.treatment[0],
             "treatment_proxies": list(data.treatment_proxy), "outcome_proxies": list(data.outcome_proxy),
             "covariates": len(data.covariates), "treated_share": float(a.mean())}
    for name, columns in (("regression", np.column_stack([a, x])),
                          ("regression_with_proxies", np.column_stack([a, x, proxies]))):
        coef, se = _ols(y, columns)
        steps[name] = {"coef": coef, "se": se, "lower": coef - Z95 * se, "upper": coef + Z95 * se}
    strength = first_stage(data, nonparametric=False, inference=False)
    steps["strength"] = {"per_proxy": {w: {"f_stat": v["f_stat"], "partial_r2": v["partial_r2"]}
                                       for w, v in strength["outcome_proxies"].items()},
                         "cragg_donald_f": strength["cragg_donald_f"], "level": strength["strength"]["level"]}
    z, w = (table[c].to_numpy(dtype=float) for c in (data.treatment_proxy, data.outcome_proxy))
    steps["p2sls"] = p2sls(y, a, w, z, x)
    steps["p2sls_swapped"] = p2sls(y, a, z, w, x)
    return steps


def _fixed_f(method: str) -> str | None:
    """The f a method always fits (its registry entry's ``f_model``; None: chosen, or unknown here)."""
    return METHODS[method].f_model if method in METHODS else None


def measured_effects(folder: Path = RESULTS) -> pd.DataFrame | None:
    """Every method's effect on these data as the project measured it (one row per fit), or None
    when the rows are not in this installation."""
    frames = [pd.read_csv(Path(folder) / name) for name in EFFECT_FILES if (Path(folder) / name).exists()]
    if not frames:
        return None
    rows = pd.concat(frames, ignore_index=True).drop_duplicates(["method", "learner", "f_model", "bootstrap"])
    second = np.where(rows["bootstrap"].notna(), "the learner's own f (bootstrap interval)",
                      np.where((rows["f_model"] == "sieve") | (rows["method"].map(_fixed_f) == "sieve"),
                               "spline f", "linear f"))
    return pd.DataFrame({"method": rows["method"].map(lambda m: METHOD_TITLES.get(m, m)),
                         "nuisances": rows["learner"], "second stage": second,
                         "ATE (days)": rows["estimate"], "lower": rows["lower"], "upper": rows["upper"],
                         "held-out score": rows["heldout"], "held-out s.e.": rows["heldout_se"]}).reset_index(drop=True)


def flagged_today(folder: Path = RESULTS) -> list[str] | None:
    """The methods (titles) whose fits on these data the tool today flags weakly identified, so that it
    prints no interval for them (``bench/results/rhc-effects-31.csv``, the same rows as docs/coverage.md's
    "RHC: every method"); None when the rows are not in this installation."""
    path = Path(folder) / TODAY_FILE
    if not path.exists():
        return None
    rows = pd.read_csv(path)
    weak = rows.loc[rows["weak"].astype(str).str.lower() == "true", "method"]
    return [METHOD_TITLES.get(m, m) for m in dict.fromkeys(weak)]
