"""Anchor values for the linear IV layer's small-sample conventions, from pyfixest (fixest's conventions).

Run with a Python that has pyfixest (not a dependency of dmlcore; e.g. ``python3 -m venv /tmp/ref &&
/tmp/ref/bin/pip install pyfixest==0.60.0``)::

    /tmp/ref/bin/python bench/pyfixest_anchors.py tests/fixtures/pyfixest_iv_conventions.json

It simulates a small panel (numpy's default_rng(46); the rows are written into the file, so the test does
not depend on numpy's generator), fits IV models with absorbed fixed effects by ``pyfixest.feols`` under
CRV1 / HC1 with its ``ssc`` choices (``k_fixef`` "nonnested" or "full", ``G_df`` "conventional" or "min"),
and writes each model's coefficients, standard errors, t degrees of freedom and 95 % interval. The test
``tests/test_linear_conventions.py`` fits the same models with dmlcore's options (``fixef_k``, ``cluster_df``,
``small``) and compares.
"""

from __future__ import annotations

import json
import sys

import numpy as np
import pandas as pd


def panel(units: int = 40, periods: int = 5, seed: int = 46) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n = units * periods
    unit, year = np.repeat(np.arange(units), periods), np.tile(np.arange(periods), units)
    g = unit // 5                                        # units nested in 8 groups
    a_unit, a_year, shock_g = rng.normal(size=units), rng.normal(size=periods), rng.normal(size=g.max() + 1)
    z1, z2, x1 = rng.normal(size=n), rng.normal(size=n), rng.normal(size=n)
    u = rng.normal(size=n) + shock_g[g]
    d = 0.8 * z1 + 0.4 * z2 + 0.3 * x1 + a_unit[unit] + 0.5 * u + rng.normal(size=n)
    y = 1.5 * d + 0.7 * x1 + a_unit[unit] + a_year[year] + u + rng.normal(size=n) * (1 + 0.5 * np.abs(z1))
    return pd.DataFrame({"unit": unit, "year": year, "g": g, "z1": z1, "z2": z2, "x1": x1, "d": d, "y": y}).round(10)


# (name, pyfixest formula, vcov, ssc options, dmlcore options)
MODELS = [
    ("unit-fe, CRV1 by g, k nested", "y ~ x1 | unit | d ~ z1 + z2", {"CRV1": "g"}, {"k_fixef": "nonnested"},
     {"absorb": ["unit"], "cov_type": "clustered-cr1", "cluster": "g", "fixef_k": "nested", "small": True}),
    ("unit-fe, CRV1 by g, k full", "y ~ x1 | unit | d ~ z1 + z2", {"CRV1": "g"}, {"k_fixef": "full"},
     {"absorb": ["unit"], "cov_type": "clustered-cr1", "cluster": "g", "fixef_k": "full", "small": True}),
    ("unit+year fe, CRV1 by unit, k nested", "y ~ x1 | unit + year | d ~ z1", {"CRV1": "unit"},
     {"k_fixef": "nonnested"},
     {"absorb": ["unit", "year"], "cov_type": "clustered-cr1", "cluster": "unit", "fixef_k": "nested", "small": True}),
    ("unit+year fe, CRV1 by unit, k full", "y ~ x1 | unit + year | d ~ z1", {"CRV1": "unit"}, {"k_fixef": "full"},
     {"absorb": ["unit", "year"], "cov_type": "clustered-cr1", "cluster": "unit", "fixef_k": "full", "small": True}),
    ("unit fe, two-way g+year, G min, k nested", "y ~ x1 | unit | d ~ z1 + z2", {"CRV1": "g+year"},
     {"k_fixef": "nonnested", "G_df": "min"},
     {"absorb": ["unit"], "cov_type": "clustered-cr1", "cluster": "g,year", "fixef_k": "nested",
      "cluster_df": "min", "small": True}),
    ("unit fe, two-way g+year, G conventional, k full", "y ~ x1 | unit | d ~ z1 + z2", {"CRV1": "g+year"},
     {"k_fixef": "full", "G_df": "conventional"},
     {"absorb": ["unit"], "cov_type": "clustered-cr1", "cluster": "g,year", "fixef_k": "full", "small": True}),
    ("no fe, two-way g+year, G min", "y ~ x1 + 1 | d ~ z1 + z2", {"CRV1": "g+year"},
     {"k_fixef": "full", "G_df": "min"},
     {"absorb": [], "cov_type": "clustered-cr1", "cluster": "g,year", "cluster_df": "min", "small": True}),
    ("unit fe, HC1", "y ~ x1 | unit | d ~ z1 + z2", "hetero", {"k_fixef": "full"},
     {"absorb": ["unit"], "cov_type": "robust-hc1", "small": True}),
]


def main(path: str) -> None:
    import pyfixest as pf

    data = panel()
    out = {"source": f"pyfixest {pf.__version__} (feols; bench/pyfixest_anchors.py)", "rows": data.to_dict("list"),
           "models": []}
    for name, formula, vcov, ssc, ours in MODELS:
        fit = pf.feols(formula, data=data, vcov=vcov, ssc=pf.ssc(**ssc))
        ci = fit.confint(alpha=0.05)
        out["models"].append({
            "name": name, "formula": formula, "vcov": vcov, "ssc": ssc, "dmlcore": ours,
            "coef": {k: float(v) for k, v in fit.coef().items()},
            "se": {k: float(v) for k, v in fit.se().items()},
            "df_t": int(fit._df_t),
            "ci": {k: [float(ci.loc[k].iloc[0]), float(ci.loc[k].iloc[1])] for k in fit.coef().index}})
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(out, handle, indent=1)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/pyfixest_iv_conventions.json")
