import numpy as np
import pandas as pd
import pytest

from dmlcore.data.roles import CausalData
from dmlcore.data.simulate import simulate_demand_iv, simulate_demand_pcl
from dmlcore.errors import DMLCoreError, FitCancelled
from dmlcore.estimators.dml import DMLCMR
from dmlcore.estimators.sieve import Sieve2SLS

GRID = np.linspace(-1.5, 1.5, 31)


def f_true(x):
    return x ** 2 - x


@pytest.fixture(scope="module")
def poly_iv():
    """x is confounded with y through u; z shifts x only."""
    rng = np.random.default_rng(2)
    n = 2000
    z, u = rng.normal(size=n), rng.normal(size=n)
    x = z + 0.5 * u
    y = f_true(x) + 2.0 * u + 0.1 * rng.normal(size=n)
    return CausalData(pd.DataFrame({"y": y, "x": x, "z": z}), "iv", "y", treatment="x", instrument="z")


@pytest.fixture(scope="module")
def poly_fit(poly_iv):
    events = []
    model = Sieve2SLS().fit(poly_iv, callback=events.append)
    return model, events


def test_recovers_polynomial_where_regression_is_biased(poly_iv, poly_fit):
    model, _ = poly_fit
    mse = np.mean((model.predict(GRID[:, None]) - f_true(GRID)) ** 2)
    naive = Sieve2SLS().fit(CausalData(poly_iv.table, "cmr", "y", inputs=["x"], conditioning=["x"]))
    naive_mse = np.mean((naive.predict(GRID[:, None]) - f_true(GRID)) ** 2)
    assert mse < 0.06
    assert naive_mse > 0.3          # the confounded regression is far off: the test has power


def test_fitted_attributes_and_validation(poly_fit):
    model, events = poly_fit
    assert model.n_knots_ in (8, 12, 16) and model.ridge_ > 0
    assert len(model.cv_loss_) == 30 and min(model.cv_loss_, key=model.cv_loss_.get) == (
        model.n_knots_, model.ridge_)
    assert model.fold_losses_ == [] and model.n_ == 2000 and model.input_columns_ == ["x"]
    assert [e["stage"] for e in events][-1] == "sieve final fit"


def test_predict_interval(poly_fit):
    model, _ = poly_fit
    frame = pd.DataFrame({"x": GRID})
    center = model.predict(frame)
    lo, hi = model.predict_interval(frame)
    lo90, hi90 = model.predict_interval(frame, level=0.9)
    assert center.shape == lo.shape == hi.shape == (31,)
    assert np.all(lo < center) and np.all(center < hi)
    np.testing.assert_allclose((lo + hi) / 2, center)
    assert np.all(hi90 - lo90 < hi - lo)
    assert np.mean((lo <= f_true(GRID)) & (f_true(GRID) <= hi)) >= 0.8
    with pytest.raises(DMLCoreError, match="level must be"):
        model.predict_interval(frame, level=95)


def test_fixed_settings_skip_validation(poly_iv):
    model = Sieve2SLS(n_knots=6, ridge=1e-3).fit(poly_iv)
    assert (model.n_knots_, model.ridge_) == (6, 1e-3) and model.cv_loss_ == {}
    assert np.mean((model.predict(GRID[:, None]) - f_true(GRID)) ** 2) < 0.1


def test_demand_iv_categorical_cells():
    sim = simulate_demand_iv(n=1500, seed=1, noise_scale="raw")  # little noise: the cells' fit shows
    model = Sieve2SLS(n_knots=6, ridge=1e-6).fit(sim.data)
    assert set(model.theta_) == set(range(7))            # one cell per customer type
    assert sim.truth.score(model)["mse"] < 0.2
    frame = sim.data.table[model.input_columns_].head(3).assign(customer_type=9.0)
    with pytest.raises(DMLCoreError, match="customer_type.*unseen value 9"):
        model.predict(frame)


def test_demand_pcl_runs():
    sim = simulate_demand_pcl(n=800, seed=0)
    model = Sieve2SLS(n_knots=4).fit(sim.data)
    assert np.isfinite(sim.truth.score(model)["mse"])


def test_errors(poly_iv):
    with pytest.raises(DMLCoreError, match="not fitted"):
        Sieve2SLS().predict(np.zeros((2, 1)))
    with pytest.raises(DMLCoreError, match="n_knots must be a non-negative integer"):
        Sieve2SLS(n_knots=-1).fit(poly_iv)
    with pytest.raises(DMLCoreError, match="ridge must be a positive number"):
        Sieve2SLS(ridge=0.0).fit(poly_iv)
    with pytest.raises(DMLCoreError, match="max_features=3"):
        Sieve2SLS(max_features=3).fit(poly_iv)
    table = poly_iv.table.assign(x2=poly_iv.table["x"] ** 3)
    with pytest.raises(DMLCoreError, match="under-identified"):
        Sieve2SLS().fit(CausalData(table, "cmr", "y", inputs=["x", "x2"], conditioning=["z"]))


def test_refuses_image_inputs_at_once():
    from dmlcore.data.registry import load_dataset

    data = load_dataset("digits-iv", n=200, seed=0).data
    with pytest.raises(DMLCoreError, match="64 image pixel columns"):
        Sieve2SLS().fit(data)
    events = []
    with pytest.raises(DMLCoreError, match="f_model 'sieve'.*64 image pixel columns"):
        DMLCMR("nn", folds=2, f_model="sieve").fit(data, callback=events.append)
    assert events == []                                  # refused before any nuisance trained


def test_cancel(poly_iv):
    with pytest.raises(FitCancelled):
        Sieve2SLS().fit(poly_iv, should_stop=lambda: True)


# ------------------------------------------------------------------ many covariates: additive bases
def many_covariates_iv(n=3000, seed=0, covariates=12):
    """Card-like: a binary instrument, many binary covariates and two continuous ones; f is a
    smooth function of the treatment plus a linear one of the covariates."""
    rng = np.random.default_rng(seed)
    u, z = rng.normal(size=n), rng.integers(0, 2, size=n).astype(float)
    x = rng.integers(0, 2, size=(n, covariates)).astype(float)
    e1, e2 = rng.normal(size=n), rng.uniform(0, 10, size=n)
    a = 12 + 1.5 * z + x[:, :3].sum(1) - 0.2 * e2 + u
    y = 0.1 * a + 0.01 * (a - 12) ** 2 + 0.2 * x.sum(1) + 0.05 * e2 + 0.3 * e1 + 0.5 * u + rng.normal(size=n)
    table = pd.DataFrame({"y": y, "a": a, "z": z, "e1": e1, "e2": e2,
                          **{f"x{j}": x[:, j] for j in range(covariates)}})
    cov = ["e1", "e2", *[f"x{j}" for j in range(covariates)]]
    return CausalData(table, "iv", "y", treatment="a", instrument="z", covariates=cov)


def test_additive_basis_when_the_tensor_product_is_too_large():
    data = many_covariates_iv()
    model = Sieve2SLS().fit(data)
    assert model.additive_ and model.basis_.size < 60 and "additive spline basis" in model.notes_[0]
    assert "a spline in a; linear in e1, e2; categories of x0" in model.basis_.describe()
    grid = data.table[model.input_columns_].head(200)
    h = 0.05
    slope = (model.predict(grid.assign(a=grid["a"] + h)) - model.predict(grid.assign(a=grid["a"] - h))) / (2 * h)
    true = 0.1 + 0.02 * (grid["a"] - 12)
    assert np.mean(np.abs(slope - true)) < 0.05       # the confounded slope is 0.1 + 0.5 / Var(a | z, x) higher


def test_additive_basis_pieces():
    from dmlcore.estimators.splines import additive_basis

    rng = np.random.default_rng(1)
    x = np.column_stack([rng.uniform(0, 1, 500), rng.integers(0, 3, 500), rng.normal(size=500)])
    basis = additive_basis(x, ["a", "k", "c"], 4, 10, 100, smooth={"a"}, products=[(0, 2)])
    b = basis(x)
    assert b.shape == (500, basis.size) == (500, 1 + 7 + 2 + 1 + 7)
    penalty = basis.penalty()
    line = np.linalg.lstsq(b, 3 * x[:, 0] - 2 + 0.5 * x[:, 2], rcond=None)[0]   # linear in a and c
    assert np.allclose(b @ line, 3 * x[:, 0] - 2 + 0.5 * x[:, 2])
    assert line @ penalty @ line < 1e-4                        # lines are not penalised
    wiggle = np.zeros(basis.size)
    wiggle[3] = 1.0                                            # one spline coefficient of a
    assert wiggle @ penalty @ wiggle > 0.5
    small = additive_basis(x, ["a", "k", "c"], 4, 10, 10, smooth={"a"}, products=[(0, 2)])
    assert small.size <= 10 and small.products == [] and small.n_knots < 4     # fewer knots, no product
    assert additive_basis(x, ["a", "k", "c"], 4, 10, 3, smooth={"a"}) is None


def test_linear_functional_sums_over_points(poly_iv):
    model = Sieve2SLS(n_knots=6, ridge=1e-3).fit(poly_iv)
    frame = pd.DataFrame({"x": [-1.0, 0.0, 1.0]})
    estimate, se = model.linear_functional(frame, np.array([1.0, -2.0, 1.0]))
    assert estimate == pytest.approx(model.predict(frame) @ np.array([1.0, -2.0, 1.0]))
    assert se > 0
    with pytest.raises(DMLCoreError, match="one number per row"):
        model.linear_functional(frame, np.ones(2))
