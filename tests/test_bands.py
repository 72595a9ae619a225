"""Tests of confidence bands: the sieve second stage (SieveF, ``f_model="sieve"``), repeated
cross-fitting (RepeatedCrossFit, ``--reps-crossfit``), the band fields of run records and the
band columns of ``Run.curve()``."""

import json

import numpy as np
import pandas as pd
import pytest

from conftest import make_linear_iv
from dmlcore.runs import bands, result
from dmlcore.cli import main
from dmlcore.data.simulate import simulate_demand_iv, simulate_demand_pcl
from dmlcore.errors import DMLCoreError
from dmlcore.estimators.crossfit_reps import RepeatedCrossFit
from dmlcore.estimators.dml import DMLCMR
from dmlcore.estimators.second_stage import SieveF
from dmlcore.estimators.sieve import Sieve2SLS
from dmlcore.progress import Monitor
from dmlcore.runs import fit_run

from test_cli import run_main


def linear_iv(n=500, seed=0):
    """y = 1 + 2a + e with a = z + w and e = 1.8 w + noise: f is linear, in the sieve's span,
    and the linear learners' nuisances are correctly specified."""
    return make_linear_iv(n, seed, intercept=1.0, strength=1.0, confounding=1.8, first_noise=0)


def cubic(x):
    return 1 + x - 0.5 * x ** 2 + 0.2 * x ** 3


# ------------------------------------------------------------------ SieveF
def test_sieve_f_recovers_a_cubic_through_the_score():
    rng = np.random.default_rng(0)
    n, bank = 600, 16
    c = rng.uniform(-2, 2, size=(n, 1))
    draws = c[:, None, :] + 0.5 * rng.normal(size=(n, bank, 1))
    targets = cubic(draws[..., 0]).mean(1)  # t_i = mean_j f0(x_ij): the score is zero at f0
    monitor = Monitor()
    f = SieveF(None, 8, 0).fit(targets, draws, c, monitor, outcome=targets, names=["x"])
    xs = np.linspace(-1.5, 1.5, 13)[:, None]
    np.testing.assert_allclose(f.predict(xs), cubic(xs[:, 0]), atol=0.02)
    assert f.n_knots_ > 0 and f.ridge_ in f.cv_loss_
    assert monitor.histories[("f", None)]["train"][0] < 1e-4
    lower, upper = f.predict_interval(xs, 0.9)
    assert np.all(lower < upper)


def test_dml_sieve_finds_the_iv_slope_and_its_band_covers_it():
    est = DMLCMR("linear", folds=5, f_model="sieve", seed=1).fit(linear_iv(2000, seed=1))
    grid = pd.DataFrame({"a": [-1.0, 0.0, 1.0]})
    fitted = est.predict(grid)
    assert fitted[2] - fitted[1] == pytest.approx(2.0, abs=0.2)
    lower, upper = est.predict_interval(grid)
    truth = 1 + 2 * grid["a"].to_numpy()
    assert np.all((lower <= truth) & (truth <= upper))
    np.testing.assert_allclose((lower + upper) / 2, fitted)


def test_sieve_bands_cover_at_about_the_nominal_rate_when_f_is_in_the_span():
    """30 simulated data sets: the default and structural variances cover the linear truth in
    most of them, while the plug-in of the paper's Theorem 3.4 (nuisances known) does not."""
    grid = np.linspace(-1.5, 1.5, 7)[:, None]
    truth = 1 + 2 * grid[:, 0]
    covered = {None: [], "structural": [], "score": []}
    for seed in range(30):
        est = DMLCMR("linear", folds=5, f_model="sieve", seed=seed,
                     f_params={"n_knots": 0}).fit(linear_iv(500, seed=100 + seed))
        for variance in covered:
            lower, upper = est.predict_interval(grid, 0.95, variance=variance)
            covered[variance].append(np.mean((lower <= truth) & (truth <= upper)))
    assert np.mean(covered[None]) >= 0.9
    assert 0.75 <= np.mean(covered["structural"]) <= 1.0
    assert np.mean(covered["score"]) < 0.5


def test_categorical_covariates_split_the_sieve_into_cells():
    est = DMLCMR("linear", folds=2, f_model="sieve").fit(simulate_demand_iv(400, seed=0).data)
    assert est.f_.cells_.columns == [(2, "customer_type")] and len(est.f_.theta_) == 7
    assert est.f_.free_inputs_ == [0, 1]
    with pytest.raises(DMLCoreError, match="customer_type"):
        est.predict(np.array([[20.0, 5.0, 9.0]]))


def test_group_band_is_the_band_of_the_group_mean():
    est = DMLCMR("linear", folds=2, f_model="sieve").fit(simulate_demand_iv(400, seed=0).data)
    X = simulate_demand_iv(60, seed=3).data.table[["price", "time", "customer_type"]]
    groups = np.repeat([7, 3, 5], 20)
    lower, upper = est.predict_interval(X, groups=groups)
    point_lo, point_hi = est.predict_interval(X)
    for k, label in enumerate([3, 5, 7]):
        rows = groups == label
        assert (lower[k] + upper[k]) / 2 == pytest.approx(est.predict(X)[rows].mean())
        # the standard error of a mean is at most the mean of the standard errors
        assert upper[k] - lower[k] <= np.mean(point_hi[rows] - point_lo[rows]) + 1e-9


@pytest.mark.parametrize("kwargs, words", [
    (dict(level=1.5), ["level", "1.5"]),
    (dict(variance="robust"), ["variance", "'robust'", "outcome, structural, score"]),
])
def test_bad_band_settings_raise(kwargs, words):
    est = DMLCMR("linear", folds=2, f_model="sieve").fit(linear_iv(200))
    with pytest.raises(DMLCoreError) as info:
        est.predict_interval(np.zeros((2, 1)), **kwargs)
    for word in words:
        assert word in str(info.value)


def test_predict_interval_errors_for_second_stages_without_bands():
    with pytest.raises(DMLCoreError, match="not fitted"):
        DMLCMR("linear", folds=2, f_model="sieve").predict_interval(np.zeros((1, 1)))
    est = DMLCMR("linear", folds=2).fit(linear_iv(200))
    assert not est.has_bands
    with pytest.raises(DMLCoreError, match=r"f_model 'linear' gives no confidence bands.*f_model='sieve'"):
        est.predict_interval(np.zeros((1, 1)))
    reps = RepeatedCrossFit(DMLCMR("linear", folds=2), reps=2).fit(linear_iv(200))
    with pytest.raises(DMLCoreError, match="predict_spread"):
        reps.predict_interval(np.zeros((1, 1)))


def test_sieve_f_rejects_bad_settings():
    with pytest.raises(DMLCoreError, match="variance"):
        DMLCMR("linear", folds=2, f_model="sieve", f_params={"variance": "hc3"}).fit(linear_iv(200))
    with pytest.raises(DMLCoreError, match="n_knots"):
        DMLCMR("linear", folds=2, f_model="sieve", f_params={"n_knots": -1}).fit(linear_iv(200))


# ------------------------------------------------------------------ repeated cross-fitting
def test_repeated_crossfit_takes_the_median_over_splits():
    data = linear_iv(300)
    reps = RepeatedCrossFit(DMLCMR("linear", folds=3, f_model="sieve", seed=4), reps=3).fit(data)
    assert reps.seeds_ == [4, 5, 6]
    assert not np.array_equal(reps.estimators_[0].folds_[0], reps.estimators_[1].folds_[0])
    grid = pd.DataFrame({"a": np.linspace(-1, 1, 5)})
    every = reps.predict_all(grid)
    assert every.shape == (3, 5)
    np.testing.assert_allclose(reps.predict(grid), np.median(every, axis=0))
    lower, upper = reps.predict_spread(grid)
    assert np.all((lower <= reps.predict(grid)) & (reps.predict(grid) <= upper))
    lower, upper = reps.predict_interval(grid)
    np.testing.assert_allclose((lower + upper) / 2, reps.predict(grid))
    widest_single = max(np.max(np.diff(est.predict_interval(grid), axis=0)) for est in reps.estimators_)
    assert np.all(upper - lower <= widest_single + 2 * 1.96 * np.ptp(every, axis=0))


@pytest.mark.parametrize("estimator, reps, word", [
    (DMLCMR("linear", folds=2), 0, "reps"),
    (Sieve2SLS(), 2, "Sieve2SLS"),
])
def test_repeated_crossfit_rejects_bad_settings(estimator, reps, word):
    with pytest.raises(DMLCoreError, match=word):
        RepeatedCrossFit(estimator, reps).fit(linear_iv(200))


# ------------------------------------------------------------------ command line and records
def test_cli_f_model_sieve_records_a_confidence_band(capsys, tmp_path):
    path = tmp_path / "run.json"
    code, out, err = run_main(capsys, "fit", "--n", "400", "--learner", "linear", "--folds", "2",
                              "--f-model", "sieve", "--json", str(path))
    assert code == 0, err
    rec = json.loads(path.read_text())
    assert rec["f_model"] == "sieve" and rec["reps_crossfit"] == 1 and rec["config"]["f_model"] == "sieve"
    band = rec["bands"]["confidence"]
    assert band["n_points"] == 2800 and band["level"] == 0.95 and "'outcome'" in band["what"]
    assert 0 <= rec["band_coverage"] <= 1 and rec["band_coverage"] == band["coverage"]
    assert rec["band_width"] == band["mean_width"] > 0
    assert f"band_coverage={rec['band_coverage']:.3f}" in out


def test_cli_reps_crossfit_records_the_split_spread(capsys, tmp_path):
    path = tmp_path / "run.json"
    code, out, err = run_main(capsys, "fit", "--n", "300", "--learner", "linear", "--folds", "2",
                              "--reps-crossfit", "3", "--json", str(path))
    assert code == 0, err
    rec = json.loads(path.read_text())
    assert rec["reps_crossfit"] == 3 and rec["f_model"] == "linear"
    assert set(rec["bands"]) == {"split_spread"}
    spread = rec["bands"]["split_spread"]
    assert "not a confidence band" in spread["what"] and spread["n_points"] == 2800
    assert 0 <= rec["band_coverage"] <= 1 and rec["band_width"] > 0
    assert np.isfinite(rec["mse"])


def test_cli_sieve_with_reps_and_pcl_records_both_bands(capsys, tmp_path):
    path = tmp_path / "run.json"
    code, out, err = run_main(capsys, "fit", "--dataset", "demand-pcl", "--n", "300", "--learner", "linear",
                              "--folds", "2", "--f-model", "sieve", "--reps-crossfit", "2", "--json", str(path))
    assert code == 0, err
    rec = json.loads(path.read_text())
    assert set(rec["bands"]) == {"confidence", "split_spread"}
    assert rec["bands"]["confidence"]["n_points"] == 100 and "do(price)" in rec["bands"]["confidence"]["points"]
    assert "median-aggregated over 2" in rec["bands"]["confidence"]["what"]


def test_cli_records_no_band_without_one(capsys, tmp_path):
    path = tmp_path / "run.json"
    code, out, err = run_main(capsys, "fit", "--n", "200", "--learner", "linear", "--folds", "2",
                              "--json", str(path))
    assert code == 0, err
    rec = json.loads(path.read_text())
    assert rec["bands"] == {} and rec["band_coverage"] is None and rec["band_width"] is None
    assert "band_coverage" not in out


@pytest.mark.parametrize("argv, words", [
    (["--method", "2sls", "--f-model", "sieve"], ["2sls does not use --f-model"]),
    (["--reps-crossfit", "0", "--learner", "linear", "--folds", "2"], ["reps", "at least 1", "0"]),
])
def test_cli_bad_band_options_exit_2(capsys, argv, words):
    code, out, err = run_main(capsys, "fit", "--n", "200", *argv)
    assert code == 2
    line = err.strip()
    assert len(line.splitlines()) == 1 and line.startswith("error: ")
    for word in words:
        assert word in line


def test_cli_unknown_f_model_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as info:
        main(["fit", "--f-model", "spline"])
    err = capsys.readouterr().err.strip()
    assert info.value.code == 2 and len(err.splitlines()) == 1
    assert "--f-model" in err and "'spline'" in err and "sieve" in err


# ------------------------------------------------------------------ curves with bands
FAST_GB = dict(learner="gb", folds=3, nuisance_params=dict(max_iter=30, learning_rate=0.2))


@pytest.fixture(scope="module")
def sieve_iv():
    sim = simulate_demand_iv(400, seed=0)
    return fit_run(sim.data, "dml-cmr", truth=sim.truth, f_model="sieve", **FAST_GB)


@pytest.fixture(scope="module")
def sieve_pcl():
    sim = simulate_demand_pcl(300, seed=0)
    return fit_run(sim.data, "dml-cmr", truth=sim.truth, f_model="sieve", **FAST_GB)


def test_pointwise_curve_carries_the_confidence_band_at_its_rows(sieve_iv):
    curve = sieve_iv.curve()
    assert {"lower", "upper", "band"} <= set(curve.columns) and len(curve) == 420
    assert set(curve["band"]) == {"95 % confidence band (sandwich)"}
    lower, upper = sieve_iv.estimator.predict_interval(curve[["price", "time", "customer_type"]], 0.95)
    np.testing.assert_allclose(curve["lower"], lower)
    np.testing.assert_allclose(curve["upper"], upper)
    np.testing.assert_allclose((curve["lower"] + curve["upper"]) / 2, curve["estimate"])
    assert (curve["upper"] > curve["lower"]).all()


def test_averaged_curve_carries_the_band_of_the_mean_over_the_rows(sieve_pcl, monkeypatch):
    curve = sieve_pcl.curve()
    assert len(curve) == 100 and {"lower", "upper", "band"} <= set(curve.columns)
    # the centre of the band of the mean of f over the rows is that mean: the bridge curve
    np.testing.assert_allclose((curve["lower"] + curve["upper"]) / 2, curve["estimate"], rtol=1e-9)
    rows = sieve_pcl.data.table[sieve_pcl.data.input_columns]
    one_price = rows.assign(price=curve["price"].iloc[40])
    mean_lo, mean_hi = sieve_pcl.estimator.predict_interval(one_price, groups=np.zeros(len(rows)))
    assert (curve["lower"].iloc[40], curve["upper"].iloc[40]) == pytest.approx((mean_lo[0], mean_hi[0]))
    point_lo, point_hi = sieve_pcl.estimator.predict_interval(one_price)
    assert 0 < mean_hi[0] - mean_lo[0] < np.mean(point_hi - point_lo)
    # stacking the grid a few prices at a time gives the same band
    monkeypatch.setattr(bands, "STACK_ROWS", 3 * len(rows) + 1)
    pd.testing.assert_frame_equal(sieve_pcl.curve(), curve)


def test_curve_without_truth_averages_over_the_data_with_its_band(sieve_iv):
    no_truth = result.Run(sieve_iv.record, sieve_iv.estimator, sieve_iv.data)
    curve = no_truth.curve()
    assert len(curve) == result.CURVE_POINTS and set(curve["group"]) == {"average over the data"}
    assert curve["truth"].isna().all()
    np.testing.assert_allclose((curve["lower"] + curve["upper"]) / 2, curve["estimate"], rtol=1e-9)
    rows = sieve_iv.data.table[sieve_iv.data.input_columns].assign(price=curve["x"].iloc[7])
    lower, upper = sieve_iv.estimator.predict_interval(rows, groups=np.zeros(len(rows)))
    assert (curve["lower"].iloc[7], curve["upper"].iloc[7]) == pytest.approx((lower[0], upper[0]))


def test_repeated_crossfits_without_confidence_bands_show_their_range():
    sim = simulate_demand_iv(300, seed=1)
    run = fit_run(sim.data, "ce-dml-cmr", truth=sim.truth, reps_crossfit=3,
                  **{k: v for k, v in FAST_GB.items() if k != "folds"})     # CE-DML-CMR does not cross-fit
    curve = run.curve()
    assert set(curve["band"]) == {"95 % range of 3 cross-fits, not a confidence band"}
    lower, upper = run.estimator.predict_spread(curve[["price", "time", "customer_type"]], 0.95)
    np.testing.assert_allclose(curve["lower"], lower)
    np.testing.assert_allclose(curve["upper"], upper)
    assert (curve["lower"] <= curve["estimate"] + 1e-9).all() and (curve["estimate"] <= curve["upper"] + 1e-9).all()


def test_sieve_with_repeated_crossfits_shows_the_aggregated_confidence_band():
    sim = simulate_demand_iv(300, seed=2)
    run = fit_run(sim.data, "dml-cmr", truth=sim.truth, f_model="sieve", reps_crossfit=2, **FAST_GB)
    assert set(run.curve()["band"]) == {"95 % confidence band (sandwich, median over 2 cross-fits)"}


def test_runs_without_a_band_have_no_band_columns():
    sim = simulate_demand_iv(300, seed=0)
    for method, kwargs in (("dml-cmr", FAST_GB), ("2sls", {})):
        curve = fit_run(sim.data, method, truth=sim.truth, **kwargs).curve()
        assert not {"lower", "upper", "band"} & set(curve.columns), method


def test_averaged_band_needs_one_value_per_curve_row(sieve_pcl):
    frame = sieve_pcl.curve().head(5)
    with pytest.raises(DMLCoreError, match=r"one treatment value per curve row \(5\).*3 value"):
        bands.curve_band(sieve_pcl.estimator, sieve_pcl.data, frame, treatment_values=[10.0, 11.0, 12.0])


def test_run_curve_is_computed_once_and_handed_out_as_copies(monkeypatch):
    """The run store and the Results page both draw a live run's curve: it is made once."""
    sim = simulate_demand_iv(300, seed=0)
    run = fit_run(sim.data, "2sls", truth=sim.truth)
    calls = []
    make = run._make_curve
    monkeypatch.setattr(run, "_make_curve", lambda: calls.append(1) or make())
    first = run.curve()
    first["estimate"] = 0.0                              # a caller's change stays with the caller
    second = run.curve()
    assert len(calls) == 1
    assert not (second["estimate"] == 0.0).all()
