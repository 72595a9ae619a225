"""Simulated data with a known structural function (the paper's appendix D).

Each simulator returns a :class:`Simulation`: the data with roles filled in and a
ground truth that scores any fitted model by the benchmark's protocol.

demand-iv (Hartford et al. 2017): sales = f0(price, time, type) + 158 e with
f0 = 100 + (10 + p) * s * psi(t) - 2p, price p = 25 + (rho_iv * z + 3) psi(t) + w,
e = rho w + sqrt(1 - rho^2) N(0, 1). The factor 158 is the authors' code (the noise is added
after the outcome is standardized by (y + 292.1) / 158; ANCHORS.md); ``noise_scale="raw"``
adds e on the raw sales scale instead, as the appendix's text reads (also DFIV's design),
which leaves almost no confounding. Customer type is categorical. Scored, as in the DeepIV
/ DFIV / DML-IV code, on the 2,800-point grid (20 prices in [10, 25] x 20 times in [0, 10]
x 7 types), as the MSE of f-hat vs f0 on the standardized outcome scale (y + 292.1) / 158;
also on 10,000 fresh draws from the data's own distribution.

demand-pcl (Xu et al. 2021): hidden demand U, fuel prices V (treatment proxies), page
views W (outcome proxy), price A, sales Y = A min(exp((W - A)/10), 5) - 5 psi(U) + e.
Scored as the MSE of E[Y | do(a)] over 100 prices in [10, 30] on the raw scale; the
truth averages 10,000 Monte-Carlo draws of (U, W) (seed 42), the estimate averages the
bridge h(a, w) over the training W.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import Callable

import numpy as np
import pandas as pd

from dmlcore.data.options import DataOption
from dmlcore.data.roles import CausalData
from dmlcore.errors import DMLCoreError
from dmlcore.learners.oracle import OracleOutcome, OracleSampler
from dmlcore.stats.resample import SEED

Y_MEAN, Y_STD = -292.1, 158.0      # outcome scale of the demand-iv protocol
P_MEAN, P_STD = 17.779, 3.7        # price scale of the demand-iv protocol
NOISE_SCALES = {
    "standardized": "the code behind the paper's numbers: noise added on the standardized outcome "
                    "scale (sd 158 in sales), so the hidden confounder biases a regression",
    "raw": "the appendix's literal text, also DFIV's design: noise sd 1 in sales, almost no confounding",
}
NOISE_SD = {"standardized": Y_STD, "raw": 1.0}
METRIC_HELP = {
    "mse": "MSE on the benchmark's own test points (the paper's headline figure)",
    "mse_fresh": "MSE at 10,000 fresh draws from the data's distribution: where the data are dense. "
                 "The grid also reaches prices the data rarely show, so with a weak instrument the two "
                 "can differ by more than tenfold",
}


def psi(t):
    """The nonlinear seasonality of the ticket demand design."""
    t = np.asarray(t, dtype=float)
    return 2.0 * ((t - 5.0) ** 4 / 600.0 + np.exp(-4.0 * (t - 5.0) ** 2) + t / 10.0 - 2.0)


def demand_f0(price, time, customer_type):
    """True structural function of demand-iv on the raw scale."""
    return 100.0 + (10.0 + price) * customer_type * psi(time) - 2.0 * price


@dataclass
class Evaluation:
    """Where a ground truth is scored, so that nothing downstream branches on a data set's name.

    Pointwise: f at the rows of ``points`` (f's input columns) against ``values``. Averaged
    (``treatment_values`` given): the mean of f over the data's rows with the treatment set to
    each value, against ``values`` (E[Y | do(a)] of a proximal problem).
    """

    where: str
    values: np.ndarray
    points: pd.DataFrame | None = None
    treatment_values: np.ndarray | None = None

    @property
    def averaged(self) -> bool:
        return self.treatment_values is not None


@dataclass
class GroundTruth:
    """Scores a fitted model against the known truth of a simulation.

    ``score(model)`` returns a dict of metrics whose first entry is the headline ``mse``;
    ``curve(model)`` returns a table for plotting the estimated against the true causal function;
    ``evaluation`` says where the headline is scored (None: nowhere a band can be checked);
    ``metric_help`` says in words what each metric of ``score`` measures; ``structural``, where
    known, gives the true f at a frame of f's inputs (IV), or for a proximal problem the true
    E[Y | do(a)] at the frame's treatment values (the bridge is not known, its mean over W is), so
    that :meth:`effect` scores any effect written as a weighted sum of f.

    Where the design knows its nuisances, ``outcome_mean(frame)`` is the true E[Y | C] and
    ``draw_modelled(frame, n_draws, rng)`` draws f's modelled inputs from their true distribution
    given C (``frame``: the ``conditioning`` columns); :meth:`oracle_outcome` and
    :meth:`oracle_sampler` hand them out as nuisance learners (:mod:`dmlcore.learners.oracle`).
    """

    kind: str
    score: Callable[[object], dict]
    curve: Callable[[object], pd.DataFrame]
    description: str = ""
    evaluation: Evaluation | None = None
    metric_help: dict = field(default_factory=dict)
    structural: Callable[[pd.DataFrame], np.ndarray] | None = None
    outcome_mean: Callable[[pd.DataFrame], np.ndarray] | None = None
    draw_modelled: Callable[[pd.DataFrame, int, np.random.Generator], np.ndarray] | None = None
    conditioning: list[str] | None = None

    def effect(self, points: pd.DataFrame, weights) -> float | None:
        """The true value of sum_k weights[k] f(points[k]) (an effect of dmlcore.runs.average_effect), or None
        when the truth does not know f."""
        if self.structural is None:
            return None
        return float(np.asarray(weights, dtype=float) @ np.asarray(self.structural(points), dtype=float))

    @property
    def has_oracles(self) -> bool:
        return self.outcome_mean is not None and self.draw_modelled is not None

    def oracle_outcome(self):
        """An OutcomeLearner whose every fold model is the true s(c) = E[Y | C]."""
        self._check_oracles()
        return OracleOutcome(self.outcome_mean, self.conditioning)

    def oracle_sampler(self):
        """A ConditionalSampler whose every fold model draws from the true distribution given C."""
        self._check_oracles()
        return OracleSampler(self.draw_modelled, self.conditioning)

    def _check_oracles(self) -> None:
        if not self.has_oracles:
            raise DMLCoreError(f"This design ({self.description or self.kind}) does not know its true nuisances; "
                               f"oracle nuisances exist for demand-iv only.")


@dataclass
class Simulation:
    data: CausalData
    truth: GroundTruth
    params: dict = field(default_factory=dict)


# The limits every simulator enforces on its options (a study's form and spec ask the same checks).
N_MIN, N_MAX = 20, 1_000_000


def _check_n(n, minimum=N_MIN):
    if not isinstance(n, (int, np.integer)) or n < minimum:
        raise DMLCoreError(f"n must be an integer of at least {minimum}; got {n!r}.")
    if n > N_MAX:
        raise DMLCoreError(f"n = {n} is larger than this tool supports ({N_MAX:,}).")


check_n = _check_n


def check_rho(rho) -> None:
    """The confounding correlation of demand-iv and digits-iv: in [0, 1)."""
    if not 0.0 <= rho < 1.0:
        raise DMLCoreError(f"rho must be in [0, 1); got {rho}.")


def check_iv_strength(iv_strength) -> None:
    if not np.isfinite(iv_strength):
        raise DMLCoreError(f"iv_strength must be a finite number; got {iv_strength}.")


# ------------------------------------------------------------------ demand-iv
def check_noise_scale(noise_scale: str) -> str:
    if noise_scale not in NOISE_SCALES:
        raise DMLCoreError(f"noise_scale must be one of {', '.join(NOISE_SCALES)}; got {noise_scale!r}.")
    return noise_scale


# The options of the demand simulations (dmlcore.data.options; digits-iv and the designs take some of them too)
N = DataOption("n", 5000, "rows to simulate", kind="int", check=check_n, label="N (rows)", grid_flag="sizes")
RHO = DataOption("rho", 0.9, "confounding correlation", check=check_rho, label="Confounding ρ")
IV_STRENGTH = DataOption("iv_strength", 1.0, "instrument strength", check=check_iv_strength,
                         label="Instrument strength")
NOISE_SCALE = DataOption("noise_scale", "standardized", "outcome noise: 'standardized' (the authors' code behind "
                                                        "the paper's numbers, default) or 'raw' (the appendix's "
                                                        "literal text; almost no confounding)",
                         kind="text", choices=tuple(NOISE_SCALES), check=check_noise_scale, label="Outcome noise")
OOD_TEST = DataOption("ood_test", False, "fresh test draws with time in [1, 11]", kind="bool",
                      label="Out-of-distribution test")
DEMAND_IV_OPTIONS = (N, RHO, IV_STRENGTH, NOISE_SCALE, OOD_TEST)
DEMAND_PCL_OPTIONS = (N,)


def demand_iv_price_mean(frame: pd.DataFrame, iv_strength: float) -> np.ndarray:
    """E[price | fuel price z, time t] = 25 + (k z + 3) psi(t): the noise w has mean 0 and is
    independent of (z, t, type)."""
    return 25.0 + (iv_strength * frame["fuel_price"].to_numpy() + 3.0) * psi(frame["time"].to_numpy())


def demand_iv_outcome_mean(frame: pd.DataFrame, iv_strength: float) -> np.ndarray:
    """The true s(c) = E[sales | C] of demand-iv: f0 at E[price | C].

    sales = f0(p, t, s) + sd e with e = rho w + sqrt(1 - rho^2) u; f0 is linear in p given (t, s),
    so E[f0(p, t, s) | C] = f0(E[p | C], t, s); and E[e | C] = rho E[w | C] = 0 because w and u
    are independent of C = (z, t, s). Hence no term from the confounder, on either noise scale.
    """
    return demand_f0(demand_iv_price_mean(frame, iv_strength), frame["time"].to_numpy(),
                     frame["customer_type"].to_numpy())


def demand_iv_price_draws(frame: pd.DataFrame, n_draws: int, rng: np.random.Generator,
                          iv_strength: float) -> np.ndarray:
    """Draws of price from its true distribution given C, N(E[p | C], 1): shape (rows, n_draws, 1)."""
    mean = demand_iv_price_mean(frame, iv_strength)
    return (mean[:, None] + rng.standard_normal((len(frame), n_draws)))[:, :, None]


def _demand_iv_draw(n, rng, rho, iv_strength, ood=False, noise_scale=NOISE_SCALE.default):
    s = rng.integers(1, 8, size=n).astype(float)
    t = rng.uniform(1.0, 11.0, size=n) if ood else rng.uniform(0.0, 10.0, size=n)
    z = rng.normal(size=n)
    return demand_iv_given(s, t, z, rng, rho, iv_strength, noise_scale)


def demand_iv_given(s, t, z, rng, rho, iv_strength, noise_scale=NOISE_SCALE.default) -> pd.DataFrame:
    """Price and sales of demand-iv drawn given customer type s, time t and fuel price z."""
    n = len(z)
    w = rng.normal(size=n)
    e = rng.normal(rho * w, np.sqrt(1.0 - rho ** 2))
    p = 25.0 + (iv_strength * z + 3.0) * psi(t) + w
    y = demand_f0(p, t, s) + NOISE_SD[noise_scale] * e
    return pd.DataFrame({"sales": y, "price": p, "time": t, "customer_type": s, "fuel_price": z})


def demand_iv_grid() -> pd.DataFrame:
    """The 2,800-point test grid of the DeepIV / DFIV / DML-IV code."""
    p, t, s = np.meshgrid(np.linspace(10, 25, 20), np.linspace(0, 10, 20), np.arange(1, 8),
                          indexing="ij")
    return pd.DataFrame({"price": p.ravel(), "time": t.ravel(), "customer_type": s.ravel().astype(float)})


def simulate_demand_iv(n: int = N.default, seed: int = SEED, rho: float = RHO.default,
                       iv_strength: float = IV_STRENGTH.default, ood_test: bool = OOD_TEST.default,
                       noise_scale: str = NOISE_SCALE.default) -> Simulation:
    """IV ticket demand. ``ood_test`` draws the fresh test points with time in [1, 11];
    ``noise_scale`` is "standardized" (the authors' code, default) or "raw" (the appendix's text)."""
    _check_n(n)
    check_rho(rho)
    check_iv_strength(iv_strength)
    check_noise_scale(noise_scale)
    rng = np.random.default_rng(seed)
    table = _demand_iv_draw(n, rng, rho, iv_strength, noise_scale=noise_scale)
    data = CausalData(table, "iv", outcome="sales", treatment="price", instrument="fuel_price",
                      covariates=["time", "customer_type"], categorical=["customer_type"], name="demand-iv")
    grid = demand_iv_grid()
    fresh = _demand_iv_draw(10_000, np.random.default_rng([seed, 10_001]), rho, iv_strength, ood_test,
                            noise_scale)
    cols = ["price", "time", "customer_type"]

    def scaled_mse(model, frame):
        est = np.asarray(model.predict(frame[cols]), dtype=float).ravel()
        true = demand_f0(frame["price"], frame["time"], frame["customer_type"])
        return float(np.mean(((est - true) / Y_STD) ** 2))

    def score(model):
        return {"mse": scaled_mse(model, grid), "mse_fresh": scaled_mse(model, fresh)}

    def curve(model):
        # f against price at the median time and each customer type
        prices = np.linspace(10, 25, 60)
        frames = []
        for s in range(1, 8):
            frame = pd.DataFrame({"price": prices, "time": 5.0, "customer_type": float(s)})
            frame["estimate"] = np.asarray(model.predict(frame[cols]), dtype=float).ravel()
            frame["truth"] = demand_f0(prices, 5.0, s)
            frames.append(frame)
        out = pd.concat(frames, ignore_index=True)
        out["x"] = out["price"]
        out["group"] = "type " + out["customer_type"].astype(int).astype(str)
        return out

    evaluation = Evaluation("demand-iv test grid (2,800 points)",
                            demand_f0(grid["price"], grid["time"], grid["customer_type"]).to_numpy(), points=grid)
    truth = GroundTruth("iv", score, curve,
                        "MSE of f-hat vs f0 on the 2,800-point grid, outcome scaled (y + 292.1)/158",
                        evaluation, METRIC_HELP,
                        lambda frame: demand_f0(frame["price"], frame["time"], frame["customer_type"]).to_numpy(),
                        outcome_mean=partial(demand_iv_outcome_mean, iv_strength=iv_strength),
                        draw_modelled=partial(demand_iv_price_draws, iv_strength=iv_strength),
                        conditioning=list(data.conditioning_columns))
    return Simulation(data, truth, dict(dataset="demand-iv", n=n, seed=seed, rho=rho,
                                        iv_strength=iv_strength, ood_test=ood_test, noise_scale=noise_scale))


# ----------------------------------------------------------------- demand-pcl
def _demand_pcl_draw(n, rng):
    u = rng.uniform(0.0, 10.0, size=n)
    v1 = 2.0 * np.sin(2.0 * np.pi * u / 10.0) + rng.normal(size=n)
    v2 = 2.0 * np.cos(2.0 * np.pi * u / 10.0) + rng.normal(size=n)
    w = 7.0 * psi(u) + 45.0 + rng.normal(size=n)
    a = 35.0 + (v1 + 3.0) * psi(u) + v2 + rng.normal(size=n)
    y = a * np.minimum(np.exp((w - a) / 10.0), 5.0) - 5.0 * psi(u) + rng.normal(size=n)
    return pd.DataFrame({"sales": y, "price": a, "fuel_price_1": v1, "fuel_price_2": v2, "views": w})


def demand_pcl_do(prices, n_mc: int = 10_000, seed: int = 42) -> np.ndarray:
    """True E[Y | do(a)] of demand-pcl by Monte Carlo over (U, W)."""
    rng = np.random.default_rng(seed)
    u = rng.uniform(0.0, 10.0, size=n_mc)
    w = 7.0 * psi(u) + 45.0 + rng.normal(size=n_mc)
    a = np.asarray(prices, dtype=float)[:, None]
    return np.mean(a * np.minimum(np.exp((w[None, :] - a) / 10.0), 5.0) - 5.0 * psi(u)[None, :], axis=1)


def bridge_curve(model, data: CausalData, values) -> np.ndarray:
    """E[Y | do(a)] = mean over the rows of ``data`` of h(a, W, X), for each a in ``values``."""
    frame = data.table[data.input_columns]
    other = [c for c in data.input_columns if c not in data.treatment]
    base = frame[other].to_numpy()
    out = np.empty(len(values))
    for i, a in enumerate(values):
        rows = pd.DataFrame(base, columns=other)
        rows[data.treatment[0]] = a
        out[i] = float(np.mean(np.asarray(model.predict(rows[data.input_columns])).ravel()))
    return out


def _at_unique(function, values) -> np.ndarray:
    """``function`` of each distinct value once, spread back over ``values``."""
    unique, position = np.unique(np.asarray(values, dtype=float), return_inverse=True)
    return np.asarray(function(unique), dtype=float)[position.ravel()]


def simulate_demand_pcl(n: int = N.default, seed: int = SEED) -> Simulation:
    """Proximal ticket demand of Xu et al. (2021)."""
    _check_n(n)
    table = _demand_pcl_draw(n, np.random.default_rng(seed))
    data = CausalData(table, "pcl", outcome="sales", treatment="price",
                      treatment_proxy=["fuel_price_1", "fuel_price_2"], outcome_proxy="views",
                      name="demand-pcl")
    grid = np.linspace(10.0, 30.0, 100)
    true = demand_pcl_do(grid)

    def score(model):
        est = bridge_curve(model, data, grid)
        return {"mse": float(np.mean((est - true) ** 2))}

    def curve(model):
        return pd.DataFrame({"x": grid, "price": grid, "estimate": bridge_curve(model, data, grid),
                             "truth": true, "group": "E[Y | do(price)]"})

    evaluation = Evaluation("E[Y | do(price)] at 100 prices in [10, 30], the mean of f over the data's rows",
                            true, treatment_values=grid)
    truth = GroundTruth("pcl", score, curve,
                        "MSE of E[Y|do(a)] over 100 prices in [10, 30], raw outcome scale", evaluation,
                        {"mse": "MSE of E[Y | do(price)] at 100 prices in [10, 30] (the benchmark's headline)"},
                        lambda frame: _at_unique(demand_pcl_do, frame["price"]))
    return Simulation(data, truth, dict(dataset="demand-pcl", n=n, seed=seed))
