"""Small Monte-Carlo designs with a known structural function, for coverage and ranking studies.

Every design's truth (:class:`~dmlcore.data.simulate.GroundTruth`) knows f (IV) or E[Y | do(a)]
(the proximal design), so it scores a fit's MSE, its bands and any effect (``truth.effect``). u is
the hidden confounder; z, x1, x2, e are independent standard normals.

* ``linear-iv`` -- y = 2a + x1 - x2 + 1.5u + e, a = s z + 0.5 x1 + u (``iv_strength`` s; 1 is
  strong, 0.1 weak: first-stage F about 10 at n = 1000). Average derivative 2.
* ``simple-iv`` -- y = 1 + 2a + 1.8w + e, a = z + w, w the confounder; no covariates.
* ``nonlinear-iv`` -- a nonlinear first stage and an f nonlinear in the treatment:
  a = z + 2 tanh(z) + 0.5 x1 + 0.8u, y = 2 tanh(a) + 0.3 a + x1 + 1.5u + e. 2SLS's slope is then a
  first-stage-weighted average of f's derivative, not its average.
* ``hetero-iv`` -- heteroscedastic noise: a = z + 0.5 x1 + u, y = 2a - x1 + (0.5 + |z|)(1.5u + e),
  so the outcome's noise grows with the instrument's size. Average derivative 2.
* ``clustered-iv`` -- linear-iv (strength 1) in CLUSTERS clusters of equal size (column ``cluster``):
  the instrument and the confounder each the sum of a cluster part and a row part of equal
  variance, z = z_g + z_i, u = u_g + u_i (variance 1 in all), so 2SLS's and every effect's score
  are correlated within a cluster. Average derivative 2.
* ``moderate-pcl`` -- linear-Gaussian proximal learning with moderate proxies: one confounder
  u ~ N(0, 1), covariate x, a = 0.5 + 0.3x + 0.8u + N(0, 1), treatment proxy z = u + 2 N(0, 1),
  outcome proxy w = u + 2 N(0, 1), y = g(a) + u + 0.5x + e with g(a) = a + 0.2a^2. The partial
  correlation of z and w given (a, x) is 0.61 / 4.61 = 0.13; the bridge h(a, w, x) = g(a) + w + 0.5x
  is linear in w (E[u - w | a, z, x] = 0), and E[Y | do(a)] = g(a). The average slope of
  E[Y | do(a)] (dmlcore.runs.average_effect) is about 1.2; the regression of y on (a, a^2, x) is off by
  0.8 / 1.64 = +0.49 in the slope (E[u | a, x]).
* ``demand-smooth`` -- demand-iv with psi(t) replaced by its smooth part 2 (1.04 ((t - 5)/5)^2 +
  t/10 - 2), so f lies in a spline basis; outcome noise sd 1 in sales. Scored on demand-iv's grid.

The MSE of the first four is the mean squared error of f-hat at the data's rows over Var(Y)
(``simple-iv``: at 21 treatment values in [-2, 2], raw scale); bands are scored where the MSE is.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dmlcore.data.roles import CausalData
from dmlcore.data.simulate import (IV_STRENGTH, N, Y_STD, Evaluation, GroundTruth, Simulation, _check_n, bridge_curve,
                                   demand_iv_grid)
from dmlcore.errors import DMLCoreError
from dmlcore.stats.resample import SEED

DESIGNS = {
    "linear-iv": "Linear IV with two covariates (slope 2); iv_strength 0.1 makes the instrument weak",
    "simple-iv": "Linear IV with one treatment and one instrument, no covariates (slope 2)",
    "nonlinear-iv": "Nonlinear first stage and an f nonlinear in the treatment (2 tanh(a) + 0.3a + x1)",
    "hetero-iv": "Linear IV whose outcome noise grows with the instrument's size (slope 2)",
    "demand-smooth": "demand-iv without psi's bump: f lies in a spline basis (noise sd 1 in sales)",
    "clustered-iv": "Linear IV in 50 clusters: instrument and confounder each with a cluster part (slope 2)",
    "moderate-pcl": "Linear-Gaussian proximal design, moderate proxies (partial correlation 0.13), f quadratic",
}
CLUSTERS = 50            # clusters of clustered-iv
PROXY_NOISE = 2.0        # sd of the proxies' noise in moderate-pcl


def _linear_f(frame):
    return 2.0 * frame["a"] + frame["x1"] - frame["x2"]


def _nonlinear_f(frame):
    return 2.0 * np.tanh(frame["a"]) + 0.3 * frame["a"] + frame["x1"]


def _hetero_f(frame):
    return 2.0 * frame["a"] - frame["x1"]


def smooth_psi(t):
    """psi without its bump, the quartic replaced by the quadratic through its ends."""
    t = np.asarray(t, dtype=float)
    return 2.0 * (1.04 * ((t - 5.0) / 5.0) ** 2 + t / 10.0 - 2.0)


def _smooth_f(frame):
    return (100.0 + (10.0 + frame["price"]) * frame["customer_type"] * smooth_psi(frame["time"])
            - 2.0 * frame["price"])


def _covariate_design(name, n, seed, strength=IV_STRENGTH.default):
    """linear-iv, nonlinear-iv and hetero-iv: the table and f."""
    rng = np.random.default_rng([seed, 41])
    z, u, x1, x2 = (rng.normal(size=n) for _ in range(4))
    e = rng.normal(size=n)
    if name == "linear-iv":
        a, f, noise = strength * z + 0.5 * x1 + u, _linear_f, 1.5 * u + e
    elif name == "nonlinear-iv":
        a, f, noise = z + 2.0 * np.tanh(z) + 0.5 * x1 + 0.8 * u, _nonlinear_f, 1.5 * u + e
    else:
        a, f, noise = z + 0.5 * x1 + u, _hetero_f, (0.5 + np.abs(z)) * (1.5 * u + e)
    table = pd.DataFrame({"a": a, "x1": x1, "x2": x2, "z": z})
    table.insert(0, "y", f(table).to_numpy() + noise)
    return table, f


# The options of each design (dmlcore.data.options): its rows, and linear-iv's instrument strength
DESIGN_OPTIONS = {**{name: (N,) for name in DESIGNS}, "linear-iv": (N, IV_STRENGTH)}


def simulate_design(name: str, n: int = 1000, seed: int = SEED, iv_strength: float = IV_STRENGTH.default) -> Simulation:
    """The design ``name`` (module notes) with ``n`` rows; ``iv_strength`` applies to linear-iv."""
    _check_n(n)
    if name not in DESIGNS:
        raise DMLCoreError(f"Unknown design {name!r}; choose one of {', '.join(DESIGNS)}.")
    if not np.isfinite(iv_strength):
        raise DMLCoreError(f"iv_strength must be a finite number; got {iv_strength}.")
    params = {"dataset": name, "n": n, "seed": seed}
    if name == "demand-smooth":
        return _demand_smooth(n, seed, params)
    if name == "simple-iv":
        return _simple(n, seed, params)
    if name == "moderate-pcl":
        return _moderate_pcl(n, seed, params)
    if name == "clustered-iv":
        return _clustered_iv(n, seed, params)
    table, f = _covariate_design(name, n, seed, iv_strength)
    if name == "linear-iv":
        params["iv_strength"] = iv_strength
    data = CausalData(table, "iv", "y", treatment="a", instrument="z", covariates=["x1", "x2"], name=name)
    return Simulation(data, _scored_iv(table, data, f), params)


def _simple(n, seed, params):
    rng = np.random.default_rng(seed)
    z, w = rng.normal(size=n), rng.normal(size=n)
    a = z + w
    table = pd.DataFrame({"y": 1.0 + 2.0 * a + 1.8 * w + rng.normal(size=n), "a": a, "z": z})
    data = CausalData(table, "iv", "y", treatment="a", instrument="z", name="simple-iv")
    grid = pd.DataFrame({"a": np.linspace(-2.0, 2.0, 21)})

    def f(frame):
        return 1.0 + 2.0 * np.asarray(frame["a"], dtype=float)

    def score(model):
        return {"mse": float(np.mean((np.asarray(model.predict(grid), dtype=float).ravel() - f(grid)) ** 2))}

    def curve(model):
        return grid.assign(x=grid["a"], estimate=np.asarray(model.predict(grid)).ravel(), truth=f(grid),
                           group="f(a)")

    truth = GroundTruth("iv", score, curve, "MSE of f-hat vs f at 21 values of a in [-2, 2]",
                        Evaluation("21 values of a in [-2, 2]", f(grid), points=grid),
                        {"mse": "MSE of f-hat at 21 values of a in [-2, 2]"}, f)
    return Simulation(data, truth, params)


def _demand_smooth(n, seed, params):
    rng = np.random.default_rng(seed)
    s = rng.integers(1, 8, size=n).astype(float)
    t = rng.uniform(0.0, 10.0, size=n)
    z, w = rng.normal(size=n), rng.normal(size=n)
    e = rng.normal(0.9 * w, np.sqrt(1 - 0.81))
    p = 25.0 + (z + 3.0) * smooth_psi(t) + w
    table = pd.DataFrame({"sales": 0.0, "price": p, "time": t, "customer_type": s, "fuel_price": z})
    table["sales"] = _smooth_f(table).to_numpy() + e
    data = CausalData(table, "iv", "sales", treatment="price", instrument="fuel_price",
                      covariates=["time", "customer_type"], name="demand-smooth")
    grid = demand_iv_grid()
    true = _smooth_f(grid).to_numpy()

    def score(model):
        est = np.asarray(model.predict(grid), dtype=float).ravel()
        return {"mse": float(np.mean(((est - true) / Y_STD) ** 2))}

    def curve(model):
        frames = []
        for level in range(1, 8):
            frame = pd.DataFrame({"price": np.linspace(10, 25, 60), "time": 5.0, "customer_type": float(level)})
            frames.append(frame.assign(estimate=np.asarray(model.predict(frame)).ravel(), truth=_smooth_f(frame),
                                       x=frame["price"], group=f"type {level}"))
        return pd.concat(frames, ignore_index=True)

    truth = GroundTruth("iv", score, curve, "MSE of f-hat vs f0 on the 2,800-point grid, outcome scaled by 158",
                        Evaluation("demand-iv test grid (2,800 points)", true, points=grid),
                        {"mse": "MSE on demand-iv's 2,800-point grid, outcome scaled by 158"},
                        lambda frame: _smooth_f(frame).to_numpy())
    return Simulation(data, truth, params)


def _scored_iv(table, data, f):
    """The truth of an IV design whose f (a function of a frame of a, x1, x2) is known."""
    rows = table[["a", "x1", "x2"]]
    scale = float(np.var(table["y"]))

    def score(model):
        est = np.asarray(model.predict(rows), dtype=float).ravel()
        return {"mse": float(np.mean((est - f(rows).to_numpy()) ** 2)) / scale}

    def curve(model):
        frame = pd.DataFrame({"a": np.linspace(*np.quantile(table["a"], [0.02, 0.98]), 60), "x1": 0.0, "x2": 0.0})
        return frame.assign(x=frame["a"], estimate=np.asarray(model.predict(frame[["a", "x1", "x2"]])).ravel(),
                            truth=f(frame).to_numpy(), group="x1 = x2 = 0")

    return GroundTruth("iv", score, curve, "MSE of f-hat vs f at the data's rows, divided by Var(Y)",
                       Evaluation("the data's rows", f(rows).to_numpy(), points=rows),
                       {"mse": "MSE of f-hat at the data's rows, divided by Var(Y)"}, lambda frame: f(frame).to_numpy())


def _clustered_iv(n, seed, params):
    if n < 2 * CLUSTERS:
        raise DMLCoreError(f"clustered-iv puts the rows in {CLUSTERS} clusters and needs at least {2 * CLUSTERS} "
                           f"rows; got {n}.")
    rng = np.random.default_rng([seed, 47])
    cluster = np.sort(np.arange(n) % CLUSTERS)
    half = np.sqrt(0.5)
    z = half * (rng.normal(size=CLUSTERS)[cluster] + rng.normal(size=n))
    u = half * (rng.normal(size=CLUSTERS)[cluster] + rng.normal(size=n))
    x1, x2, e = (rng.normal(size=n) for _ in range(3))
    table = pd.DataFrame({"a": z + 0.5 * x1 + u, "x1": x1, "x2": x2, "z": z, "cluster": cluster})
    table.insert(0, "y", _linear_f(table).to_numpy() + 1.5 * u + e)
    data = CausalData(table, "iv", "y", treatment="a", instrument="z", covariates=["x1", "x2"], name="clustered-iv")
    return Simulation(data, _scored_iv(table, data, _linear_f), params)


def moderate_pcl_do(a):
    """E[Y | do(a)] of moderate-pcl: g(a) = a + 0.2 a^2 (u and x have mean 0)."""
    a = np.asarray(a, dtype=float)
    return a + 0.2 * a ** 2


def _moderate_pcl(n, seed, params):
    rng = np.random.default_rng([seed, 53])
    u, x, nu, e = (rng.normal(size=n) for _ in range(4))
    a = 0.5 + 0.3 * x + 0.8 * u + nu
    z, w = (u + PROXY_NOISE * rng.normal(size=n) for _ in range(2))
    table = pd.DataFrame({"y": moderate_pcl_do(a) + u + 0.5 * x + e, "a": a, "z": z, "w": w, "x": x})
    data = CausalData(table, "pcl", "y", treatment="a", treatment_proxy="z", outcome_proxy="w", covariates="x",
                      name="moderate-pcl")
    grid = np.linspace(*np.quantile(a, [0.05, 0.95]), 40)
    true = moderate_pcl_do(grid)

    def score(model):
        return {"mse": float(np.mean((bridge_curve(model, data, grid) - true) ** 2))}

    def curve(model):
        return pd.DataFrame({"x": grid, "a": grid, "estimate": bridge_curve(model, data, grid), "truth": true,
                             "group": "E[Y | do(a)]"})

    where = "E[Y | do(a)] at 40 values of a (its 5-95 % range), the mean of f over the data's rows"
    truth = GroundTruth("pcl", score, curve, "MSE of E[Y|do(a)] over 40 values of a in its 5-95 % range",
                        Evaluation(where, true, treatment_values=grid),
                        {"mse": "MSE of E[Y | do(a)] at 40 values of a in its 5-95 % range"},
                        lambda frame: moderate_pcl_do(frame["a"]))
    return Simulation(data, truth, params)
