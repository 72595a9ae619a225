"""Tests of dmlcore.runs.heldout_residual: the held-out projected residual, a score that needs no truth."""

import numpy as np
import pandas as pd
import pytest

from dmlcore.data.roles import CausalData
from dmlcore.errors import DMLCoreError, FitCancelled
from dmlcore.runs.heldout_residual import _cross_fitted_projection, heldout_score, projected_residual
from dmlcore.runs import fit_run

from test_effects import linear_iv


def test_projection_is_near_zero_for_noise_and_the_signal_size_otherwise():
    rng = np.random.default_rng(0)
    m = 2000
    c = rng.normal(size=(m, 2))
    noise = rng.normal(size=m)
    products = noise * _cross_fitted_projection(c, noise, ["c1", "c2"], ["c1"], 0)
    assert abs(products.mean()) < 3 * products.std() / np.sqrt(m)     # no upward bias from fitting noise
    g = 0.5 * np.sin(2 * c[:, 0]) + 0.3 * c[:, 1]
    r = g + noise
    score = np.mean(r * _cross_fitted_projection(c, r, ["c1", "c2"], ["c1"], 0))
    assert score == pytest.approx(np.mean(g ** 2), rel=0.25)


def test_ranks_the_confounded_regression_below_2sls():
    data = linear_iv(1500, seed=4)
    good = heldout_score(data, "2sls", {}, 2)
    bad = heldout_score(data, "regression", {"learner": "linear"}, 2)   # ignores the instrument
    assert bad["score"] - good["score"] > 4 * np.hypot(bad["std_error"], good["std_error"])
    assert good["k"] == 2 and [f["fold"] for f in good["folds"]] == [0, 1]
    assert sum(f["rows"] for f in good["folds"]) == 1500
    assert good["relative"] == pytest.approx(good["score"] / np.var(data.table["y"]))


def test_projected_residual_on_validation_data_ranks_fits_it_never_saw():
    train, validation = linear_iv(1500, seed=4), linear_iv(1500, seed=5)
    good = projected_residual(fit_run(train, "2sls").estimator, validation)
    bad = projected_residual(fit_run(train, "regression", learner="linear").estimator, validation)
    assert bad["score"] - good["score"] > 4 * np.hypot(bad["std_error"], good["std_error"])
    assert abs(good["score"]) < 3 * good["std_error"] + 0.01
    assert good["relative"] == pytest.approx(good["score"] / np.var(validation.table["y"]))


def test_in_the_record_by_default_only_without_a_truth():
    data = linear_iv(400)
    events = []
    record = fit_run(data, "2sls", callback=events.append).record
    assert record["heldout"]["k"] == 2 and "projected residual" in record["heldout"]["what"]
    progress = [e["progress"] for e in events]
    assert progress == sorted(progress) and 0 <= progress[0] and progress[-1] <= 1
    assert any("held-out residual, fold 2 of 2" in e["stage"] for e in events)
    from dmlcore.data.registry import load_dataset
    loaded = load_dataset("demand-iv", n=300, seed=0)
    assert fit_run(loaded.data, "2sls", truth=loaded.truth).record["heldout"] is None
    assert fit_run(loaded.data, "2sls", truth=loaded.truth, heldout_folds=3).record["heldout"]["k"] == 3


def test_bad_input():
    data = linear_iv(100)
    for folds in (1, -2, 2.5, True):
        with pytest.raises(DMLCoreError, match="at least 2 folds"):
            fit_run(data, "2sls", heldout_folds=folds)
    with pytest.raises(DMLCoreError, match="needs at least 200 rows"):
        heldout_score(data, "2sls", {}, 10)
    record = fit_run(data, "2sls", heldout_folds=10).record         # the fit is kept, the score says why
    assert record["effect"]["estimate"] is not None
    assert record["heldout"] == {"error": "no held-out residual: The held-out residual with 10 folds needs at least "
                                          "200 rows; the data has 100."}
    from dmlcore.data.registry import load_dataset
    digits = load_dataset("digits-iv", n=200, seed=0).data
    with pytest.raises(DMLCoreError, match="not available for image data"):
        heldout_score(digits, "2sls", {}, 2)
    with pytest.raises(FitCancelled):
        heldout_score(linear_iv(300), "naive", {"learner": "linear"}, 2, should_stop=lambda: True)


def test_proximal_data():
    rng = np.random.default_rng(3)
    n = 600
    u = rng.normal(size=n)
    table = pd.DataFrame({"a": u + rng.normal(size=n), "z": u + rng.normal(size=n), "w": u + rng.normal(size=n)})
    table["y"] = 2 * table["a"] + 3 * u + rng.normal(size=n)
    data = CausalData(table, "pcl", "y", treatment="a", treatment_proxy="z", outcome_proxy="w")
    score = heldout_score(data, "2sls", {}, 2)
    assert np.isfinite(score["score"]) and abs(score["relative"]) < 0.05


def test_a_rare_category_missing_from_a_refit_is_ignored():
    """A 0/1 covariate that is 1 in one row only is constant in one of the refits' halves."""
    data = linear_iv(400, seed=2, covariates=2)
    data.table["x1"] = 0.0
    data.table.loc[7, "x1"] = 1.0
    for method, kwargs in (("sieve-2sls", {}), ("dml-cmr", {"learner": "linear", "folds": 2, "f_model": "sieve"})):
        score = heldout_score(data, method, kwargs, 2)
        assert np.isfinite(score["score"]), method
