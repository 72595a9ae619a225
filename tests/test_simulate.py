"""Tests of dmlcore.data.simulate against the paper's appendix D (ticket demand for IV and PCL)."""

import numpy as np
import pandas as pd
import pytest

from dmlcore.data.simulate import (Y_STD, bridge_curve, demand_f0, demand_iv_grid, demand_pcl_do, psi,
                                   simulate_demand_iv, simulate_demand_pcl)
from dmlcore.errors import DMLCoreError

COLS = ["price", "time", "customer_type"]


def paper_psi(t):
    return 2 * ((t - 5) ** 4 / 600 + np.exp(-4 * (t - 5) ** 2) + t / 10 - 2)


class Oracle:
    """Predicts f0 plus a constant; records every frame it is asked about."""

    def __init__(self, offset=0.0):
        self.offset = offset
        self.frames = []

    def predict(self, frame):
        self.frames.append(frame.copy())
        return demand_f0(frame["price"], frame["time"], frame["customer_type"]).to_numpy() + self.offset


# ------------------------------------------------------------------ demand-iv
def test_psi_at_known_points():
    assert psi(5.0) == pytest.approx(-1.0)                       # 2 (0 + 1 + 0.5 - 2)
    assert psi(0.0) == pytest.approx(2 * (625 / 600 - 2))
    assert psi(10.0) == pytest.approx(2 * (625 / 600 + 1 - 2))
    t = np.linspace(-1, 12, 57)
    np.testing.assert_allclose(psi(t), paper_psi(t), rtol=1e-12)


def test_f0_at_known_points():
    assert demand_f0(10.0, 5.0, 1.0) == pytest.approx(100 + 20 * 1 * -1 - 20)  # 60
    assert demand_f0(25.0, 5.0, 7.0) == pytest.approx(100 + 35 * 7 * -1 - 50)  # -195
    assert demand_f0(20.0, 0.0, 3.0) == pytest.approx(100 + 30 * 3 * paper_psi(0.0) - 40)


def test_demand_iv_follows_the_structural_equations():
    sim = simulate_demand_iv(600, seed=3, rho=0.9)
    t = sim.data.table
    assert list(t.columns) == ["sales", "price", "time", "customer_type", "fuel_price"]
    assert set(t["customer_type"].unique()) <= set(range(1, 8)) and t["customer_type"].nunique() == 7
    assert t["time"].between(0, 10).all()
    # price noise w and outcome noise e recovered from the equations; the authors' code adds e
    # on the standardized outcome scale (y + 292.1) / 158, so in sales it is 158 e
    w = t["price"] - 25 - (t["fuel_price"] + 3) * psi(t["time"])
    e = (t["sales"] - demand_f0(t["price"], t["time"], t["customer_type"])) / 158.0
    assert abs(w.mean()) < 0.15 and 0.85 < w.std() < 1.15
    assert abs(e.mean()) < 0.15 and 0.85 < e.std() < 1.15
    assert 0.85 < np.corrcoef(w, e)[0, 1] < 0.95
    assert abs(np.corrcoef(t["fuel_price"], w)[0, 1]) < 0.12
    assert 0.85 < t["fuel_price"].std() < 1.15


def test_raw_noise_scale_is_the_appendix_text():
    standard = simulate_demand_iv(600, seed=3, rho=0.9).data.table
    raw = simulate_demand_iv(600, seed=3, rho=0.9, noise_scale="raw").data.table
    f0 = demand_f0(raw["price"], raw["time"], raw["customer_type"])
    # the same draws; only the outcome noise's scale differs (sd 1 in sales vs 158)
    np.testing.assert_allclose(standard["sales"] - f0, 158.0 * (raw["sales"] - f0), rtol=1e-9, atol=1e-9)
    assert 0.85 < (raw["sales"] - f0).std() < 1.15
    with pytest.raises(DMLCoreError, match="noise_scale must be one of standardized, raw; got 'big'"):
        simulate_demand_iv(100, noise_scale="big")


def test_regression_baseline_shows_confounding_only_on_the_authors_design():
    """Ignoring the instrument costs a lot when the noise is on the standardized scale and
    confounding is strong, little at rho = 0, and almost nothing on the raw-noise design."""
    from dmlcore.runs import fit_run

    def regression_mse(rho, noise_scale):
        sim = simulate_demand_iv(3000, seed=0, rho=rho, noise_scale=noise_scale)
        return fit_run(sim.data, "regression", truth=sim.truth, learner="gb").record["mse"]

    strong, none, raw = regression_mse(0.9, "standardized"), regression_mse(0.0, "standardized"), regression_mse(0.9, "raw")
    assert strong > 0.5 and strong > 4 * none
    assert raw < 0.05


def test_rho_sets_confounding():
    t = simulate_demand_iv(600, seed=3, rho=0.0).data.table
    w = t["price"] - 25 - (t["fuel_price"] + 3) * psi(t["time"])
    e = t["sales"] - demand_f0(t["price"], t["time"], t["customer_type"])
    assert abs(np.corrcoef(w, e)[0, 1]) < 0.12


def test_instrument_strength_scales_the_first_stage():
    strong = simulate_demand_iv(300, seed=1, iv_strength=1.0).data.table
    weak = simulate_demand_iv(300, seed=1, iv_strength=0.1).data.table
    # same draws; only the price equation p = 25 + (strength z + 3) psi(t) + w changes
    for col in ("time", "customer_type", "fuel_price"):
        np.testing.assert_array_equal(strong[col], weak[col])
    np.testing.assert_allclose(strong["price"] - weak["price"],
                               0.9 * strong["fuel_price"] * psi(strong["time"]), atol=1e-9)
    corr = lambda t: abs(np.corrcoef(t["fuel_price"] * psi(t["time"]), t["price"])[0, 1])
    assert corr(weak) < corr(strong) - 0.3


def test_demand_iv_is_deterministic_by_seed():
    a = simulate_demand_iv(200, seed=7).data.table
    b = simulate_demand_iv(200, seed=7).data.table
    c = simulate_demand_iv(200, seed=8).data.table
    pd.testing.assert_frame_equal(a, b)
    assert not np.allclose(a["sales"], c["sales"])


def test_demand_iv_roles():
    data = simulate_demand_iv(100).data
    assert data.problem == "iv" and data.outcome == "sales"
    assert data.treatment == ["price"] and data.instrument == ["fuel_price"]
    assert data.covariates == ["time", "customer_type"]
    assert data.input_columns == COLS


def test_grid_has_2800_points_with_the_right_ranges():
    grid = demand_iv_grid()
    assert list(grid.columns) == COLS and len(grid) == 2800
    assert len(grid.drop_duplicates()) == 2800
    np.testing.assert_allclose(np.sort(grid["price"].unique()), np.linspace(10, 25, 20))
    np.testing.assert_allclose(np.sort(grid["time"].unique()), np.linspace(0, 10, 20))
    assert sorted(grid["customer_type"].unique()) == [1, 2, 3, 4, 5, 6, 7]


def test_oracle_scores_zero_and_offset_scores_scaled_square():
    truth = simulate_demand_iv(100, seed=0).truth
    oracle = Oracle()
    scores = truth.score(oracle)
    assert list(scores)[0] == "mse"
    assert scores["mse"] == pytest.approx(0.0, abs=1e-20)
    assert scores["mse_fresh"] == pytest.approx(0.0, abs=1e-20)
    # scored on the grid, then on 10,000 fresh draws
    pd.testing.assert_frame_equal(oracle.frames[0].reset_index(drop=True), demand_iv_grid())
    assert len(oracle.frames[1]) == 10_000 and list(oracle.frames[1].columns) == COLS
    for c in (3.0, -15.8, 158.0):
        scores = truth.score(Oracle(c))
        assert scores["mse"] == pytest.approx((c / 158) ** 2, rel=1e-9)
        assert scores["mse_fresh"] == pytest.approx((c / Y_STD) ** 2, rel=1e-9)


def test_ood_test_draws_time_beyond_training_range():
    seen = {}
    for ood in (False, True):
        oracle = Oracle()
        simulate_demand_iv(100, seed=0, ood_test=ood).truth.score(oracle)
        seen[ood] = oracle.frames[1]["time"]
    assert seen[False].between(0, 10).all()
    assert seen[True].between(1, 11).all() and seen[True].max() > 10.5


def test_curve_has_truth_and_estimate_per_type():
    truth = simulate_demand_iv(100).truth
    curve = truth.curve(Oracle(2.0))
    assert len(curve) == 7 * 60 and curve["group"].nunique() == 7
    np.testing.assert_allclose(curve["truth"], demand_f0(curve["price"], 5.0, curve["customer_type"]))
    np.testing.assert_allclose(curve["estimate"] - curve["truth"], 2.0)


@pytest.mark.parametrize("kwargs", [dict(n=5), dict(n=19), dict(n=2.5e3), dict(rho=1.0), dict(rho=-0.1),
                                    dict(iv_strength=float("nan"))])
def test_demand_iv_bad_parameters(kwargs):
    with pytest.raises(DMLCoreError):
        simulate_demand_iv(**{"n": 100, **kwargs})


# ------------------------------------------------------------------ demand-pcl
def test_demand_pcl_roles_and_determinism():
    sim = simulate_demand_pcl(300, seed=2)
    data = sim.data
    assert data.problem == "pcl"
    assert data.treatment == ["price"] and data.outcome_proxy == ["views"]
    assert data.treatment_proxy == ["fuel_price_1", "fuel_price_2"]
    assert data.input_columns == ["price", "views"]
    assert data.conditioning_columns == ["price", "fuel_price_1", "fuel_price_2"]
    pd.testing.assert_frame_equal(data.table, simulate_demand_pcl(300, seed=2).data.table)
    assert not np.allclose(data.table["sales"], simulate_demand_pcl(300, seed=3).data.table["sales"])


def test_demand_pcl_proxies_follow_the_equations():
    t = simulate_demand_pcl(600, seed=0).data.table
    # V1^2/4 + V2^2/4 is about 1 + noise; W ranges over 7 psi(U) + 45
    r2 = (t["fuel_price_1"] ** 2 + t["fuel_price_2"] ** 2) / 4
    assert 1.2 < r2.mean() < 1.8
    assert t["views"].min() > 7 * psi(np.linspace(0, 10, 1001)).min() + 45 - 5
    assert t["views"].max() < 7 * psi(np.linspace(0, 10, 1001)).max() + 45 + 5
    assert np.corrcoef(t["views"], t["sales"])[0, 1] > 0.2


def test_pcl_truth_is_deterministic_smooth_and_matches_independent_monte_carlo():
    grid = np.linspace(10, 30, 100)
    truth = demand_pcl_do(grid)
    np.testing.assert_array_equal(truth, demand_pcl_do(grid))
    assert np.all(np.isfinite(truth))
    # smooth: second differences are small compared with the range
    assert np.abs(np.diff(truth, 2)).max() < 0.05 * (truth.max() - truth.min())
    # independent Monte Carlo of E[A min(exp((W - A)/10), 5) - 5 psi(U)] at do(A = a)
    rng = np.random.default_rng(123)
    u = rng.uniform(0, 10, 200_000)
    w = 7 * paper_psi(u) + 45 + rng.normal(size=u.size)
    for i in (0, 37, 99):
        a = grid[i]
        mc = np.mean(a * np.minimum(np.exp((w - a) / 10), 5) - 5 * paper_psi(u))
        assert truth[i] == pytest.approx(mc, abs=0.5)


class Bridge:
    """h(a, w) = 2 a + w / 10; checks that it receives the input columns in order."""

    def __init__(self):
        self.calls = 0

    def predict(self, frame):
        assert list(frame.columns) == ["price", "views"]
        self.calls += 1
        return 2 * frame["price"].to_numpy() + frame["views"].to_numpy() / 10


def test_bridge_curve_averages_over_the_data_rows():
    data = simulate_demand_pcl(200, seed=0).data
    before = data.table.copy()
    values = np.array([10.0, 17.5, 30.0])
    model = Bridge()
    out = bridge_curve(model, data, values)
    assert model.calls == len(values)
    np.testing.assert_allclose(out, 2 * values + data.table["views"].mean() / 10)
    pd.testing.assert_frame_equal(data.table, before)  # the data are not modified


def test_pcl_score_is_mse_of_the_do_curve():
    sim = simulate_demand_pcl(200, seed=0)
    grid = np.linspace(10, 30, 100)
    est = 2 * grid + sim.data.table["views"].mean() / 10
    expected = np.mean((est - demand_pcl_do(grid)) ** 2)
    assert sim.truth.score(Bridge())["mse"] == pytest.approx(expected, rel=1e-9)
    curve = sim.truth.curve(Bridge())
    np.testing.assert_allclose(curve["truth"], demand_pcl_do(grid))
    np.testing.assert_allclose(curve["estimate"], est)
