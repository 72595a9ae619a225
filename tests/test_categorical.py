"""Categorical columns (one-hot for networks and linear models, dummies in 2SLS) and the
regression baseline that ignores the instrument."""

import numpy as np
import pandas as pd
import pytest

from dmlcore.data.roles import CausalData
from dmlcore.data.simulate import simulate_demand_iv
from dmlcore.errors import DMLCoreError
from dmlcore.estimators.dml import DMLCMR, NaivePlugIn
from dmlcore.learners.encoding import OneHot
from dmlcore.runs import fit_run


def _table(n=200, levels=3, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"y": rng.normal(size=n), "a": rng.normal(size=n), "z": rng.normal(size=n),
                         "group": rng.integers(0, levels, size=n).astype(float)})


def _iv(table, **kwargs):
    return CausalData(table, "iv", "y", treatment="a", instrument="z", covariates=["group"], **kwargs)


def test_bad_categorical_columns_are_named():
    table = _table()
    with pytest.raises(DMLCoreError, match="'group' has a single level"):
        _iv(table.assign(group=1.0), categorical="group")
    with pytest.raises(DMLCoreError, match="'group' has 200 levels, more than 50"):
        _iv(table.assign(group=np.arange(200.0)), categorical="group")
    with pytest.raises(DMLCoreError, match="outcome 'y' cannot be categorical"):
        _iv(table, categorical="y")
    with pytest.raises(DMLCoreError, match="'other' has no role"):
        _iv(table.assign(other=1.0), categorical="other")


def test_one_hot_replaces_codes_and_refuses_unseen_levels():
    enc = OneHot({1: np.array([1.0, 2.0, 5.0])}, 3, ["a", "type", "b"])
    x = np.array([[0.5, 2.0, -1.0], [1.5, 5.0, 3.0]])
    np.testing.assert_array_equal(enc.transform(x), [[0.5, -1.0, 0, 1, 0], [1.5, 3.0, 0, 0, 1]])
    assert enc.encoded_width == 5 and enc.position(2) == 1
    draws = np.stack([x, x])                      # (..., width) arrays keep their leading axes
    assert enc.transform(draws).shape == (2, 2, 5)
    with pytest.raises(DMLCoreError, match="'type' has the value 3, a level not seen"):
        enc.transform(np.array([[0.0, 3.0, 0.0]]))


def test_demand_iv_declares_customer_type_and_networks_see_one_hot():
    sim = simulate_demand_iv(400, seed=0)
    assert sim.data.categorical == ["customer_type"]
    est = DMLCMR("nn", folds=2, epochs=2, n_draws=2, seed=0, outcome_learner="nn", sampler="nn").fit(sim.data)
    # f reads price, time and 7 one-hot columns; s and the distribution read fuel price, time, 7 columns
    assert est.f_.model_.weights[0].shape[1] == 9
    assert est.s_model_.model_.weights[0].shape[1] == 9
    grid = sim.data.table[est.input_columns_].head(5)
    assert np.isfinite(est.predict(grid)).all()
    with pytest.raises(DMLCoreError, match="level not seen in training"):
        est.predict(grid.assign(customer_type=8.0))


def test_trees_read_the_codes():
    sim = simulate_demand_iv(300, seed=0)
    est = NaivePlugIn("gb", epochs=5, n_draws=2, seed=0).fit(sim.data)
    assert not hasattr(est.f_, "encoder")         # boosting's f splits on the codes directly


def test_categorical_treatment_is_refused_by_methods_that_model_it():
    table = _table()
    data = CausalData(table, "iv", "y", treatment="group", instrument=["z", "a"], categorical="group")
    with pytest.raises(DMLCoreError, match="models the distribution of 'group'.*Use 2SLS"):
        DMLCMR("linear", folds=2).fit(data)


def test_linear_regression_baseline_is_ols_with_dummies():
    """method='regression' with the linear learner is OLS of y on f's inputs (the categorical one as
    dummies), ignoring the instrument: the textbook confounded estimate."""
    rng = np.random.default_rng(1)
    n = 2000
    u, z = rng.normal(size=n), rng.normal(size=n)
    group = rng.integers(0, 3, size=n).astype(float)
    a = z + u + rng.normal(size=n)
    y = 2.0 * a + np.array([0.0, 1.0, -1.0])[group.astype(int)] + 3.0 * u + rng.normal(size=n)
    table = pd.DataFrame({"y": y, "a": a, "z": z, "group": group})
    run = fit_run(_iv(table, categorical="group"), "regression", learner="linear")
    design = np.column_stack([a, group == 0, group == 1, group == 2]).astype(float)
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    np.testing.assert_allclose(run.estimator.predict(table[["a", "group"]]), design @ coef, rtol=1e-4, atol=1e-4)
    assert coef[0] > 2.5                           # confounded: the slope is biased away from 2
    assert run.record["method"] == "regression" and run.record["learner"] == "linear"
    tsls = fit_run(_iv(table, categorical="group"), "2sls").record["coefficients"]["a"]
    assert abs(tsls - 2.0) < 0.15                  # the instrument removes the bias
