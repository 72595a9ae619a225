import numpy as np
import pandas as pd
import pytest
from linearmodels.iv import IV2SLS

from dmlcore.data.roles import CausalData
from dmlcore.data.simulate import simulate_demand_iv, simulate_demand_pcl
from dmlcore.errors import DMLCoreError
from dmlcore.estimators.tsls import TwoStageLeastSquares


@pytest.fixture(scope="module")
def iv_data():
    return simulate_demand_iv(n=1000, seed=3).data


def _linearmodels(table, outcome, exog, endog, instruments, constant=True):
    t = table.assign(const=1.0)
    exog = (["const"] if constant else []) + exog
    return IV2SLS(t[outcome], t[exog] if exog else None, t[endog], t[instruments]).fit(
        cov_type="unadjusted")


def _dummies(table, first):
    """customer_type as dummies type=2..7 (type=1..7 without ``first``), as linearmodels sees them."""
    out = table.copy()
    for v in range(1 if first else 2, 8):
        out[f"customer_type={v}"] = (table["customer_type"] == v).astype(float)
    return out, [f"customer_type={v}" for v in range(1 if first else 2, 8)]


def test_matches_linearmodels_iv_with_covariates(iv_data):
    model = TwoStageLeastSquares().fit(iv_data)
    table, dummies = _dummies(iv_data.table, first=False)
    ref = _linearmodels(table, "sales", ["time", *dummies], ["price"], ["fuel_price"])
    names = ["const", "price", "time", *dummies]    # customer type is categorical: dummies, type 1 the base
    assert list(model.coef_.index) == names
    np.testing.assert_allclose(model.coef_[names], ref.params[names], rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(model.std_errors_[names], ref.std_errors[names], rtol=1e-6, atol=1e-10)
    assert model.n_ == 1000 and model.fold_losses_ == []
    assert model.input_columns_ == ["price", "time", "customer_type"]


def test_numeric_covariate_enters_linearly(iv_data):
    data = CausalData(iv_data.table, "iv", "sales", treatment="price", instrument="fuel_price",
                      covariates=["time", "customer_type"])            # not declared categorical
    model = TwoStageLeastSquares().fit(data)
    ref = _linearmodels(iv_data.table, "sales", ["time", "customer_type"], ["price"], ["fuel_price"])
    np.testing.assert_allclose(model.coef_[ref.params.index], ref.params, rtol=1e-6, atol=1e-8)


def test_matches_linearmodels_pcl():
    data = simulate_demand_pcl(n=800, seed=1).data
    model = TwoStageLeastSquares().fit(data)
    ref = _linearmodels(data.table, "sales", ["price"], ["views"], ["fuel_price_1", "fuel_price_2"])
    names = ["const", "price", "views"]
    np.testing.assert_allclose(model.coef_[names], ref.params[names], rtol=1e-6)
    np.testing.assert_allclose(model.std_errors_[names], ref.std_errors[names], rtol=1e-6)


def test_without_constant(iv_data):
    model = TwoStageLeastSquares(add_constant=False).fit(iv_data)
    table, dummies = _dummies(iv_data.table, first=True)   # every level a dummy: they hold the intercept
    ref = _linearmodels(table, "sales", ["time", *dummies], ["price"], ["fuel_price"], constant=False)
    assert "const" not in model.coef_.index
    np.testing.assert_allclose(model.coef_[ref.params.index], ref.params, rtol=1e-6)
    np.testing.assert_allclose(model.std_errors_[ref.params.index], ref.std_errors, rtol=1e-6)


def test_predict_frame_and_array(iv_data):
    model = TwoStageLeastSquares().fit(iv_data)
    frame = iv_data.table[["customer_type", "price", "time"]].head(20)   # order does not matter
    type_effect = np.array([model.coef_.get(f"customer_type={v:g}", 0.0) for v in frame["customer_type"]])
    expected = (model.coef_["const"] + frame["price"] * model.coef_["price"]
                + frame["time"] * model.coef_["time"] + type_effect).to_numpy()
    out = model.predict(frame)
    assert out.shape == (20,)
    np.testing.assert_allclose(out, expected)
    np.testing.assert_allclose(model.predict(frame[model.input_columns_].to_numpy()), expected)
    with pytest.raises(DMLCoreError, match="missing: time"):
        model.predict(frame.drop(columns="time"))
    with pytest.raises(DMLCoreError, match="3 column"):
        model.predict(np.zeros((4, 2)))
    with pytest.raises(DMLCoreError, match="'customer_type' has the value 9, a level not seen"):
        model.predict(frame.assign(customer_type=9.0))


def test_not_fitted():
    with pytest.raises(DMLCoreError, match="not fitted"):
        TwoStageLeastSquares().predict(np.zeros((2, 3)))


def test_under_identified():
    rng = np.random.default_rng(0)
    table = pd.DataFrame(rng.normal(size=(50, 4)), columns=["y", "x1", "x2", "z"])
    data = CausalData(table, "cmr", "y", inputs=["x1", "x2"], conditioning=["z"])
    with pytest.raises(DMLCoreError, match=r"under-identified.*x1, x2.*\(z\)"):
        TwoStageLeastSquares().fit(data)


def test_collinear_instruments_named(iv_data):
    table = iv_data.table.assign(fuel_copy=2.0 * iv_data.table["fuel_price"] + 1.0)
    # (problem "iv" rejects such instruments already in CausalData; "cmr" leaves it to 2SLS)
    data = CausalData(table, "cmr", "sales", inputs=["price", "time"],
                      conditioning=["fuel_price", "fuel_copy", "time"])
    with pytest.raises(DMLCoreError, match=r"instruments\) are perfectly collinear: column "
                                           r"'fuel_copy' is a linear combination of 'const', 'fuel_price'"):
        TwoStageLeastSquares().fit(data)


def test_collinear_regressors_named(iv_data):
    table = iv_data.table.assign(time_days=365.0 * iv_data.table["time"])
    data = CausalData(table, "iv", "sales", treatment="price", instrument="fuel_price",
                      covariates=["time", "time_days"])
    with pytest.raises(DMLCoreError, match=r"regressors\) are perfectly collinear: column 'time_days'"):
        TwoStageLeastSquares().fit(data)


def test_const_name_clash(iv_data):
    table = iv_data.table.assign(const=iv_data.table["time"])
    data = CausalData(table, "iv", "sales", treatment="price", instrument="fuel_price",
                      covariates=["const"])
    with pytest.raises(DMLCoreError, match="named 'const'"):
        TwoStageLeastSquares().fit(data)
