"""Tests of dmlcore.runs.average_effect: the estimand, each interval, the bootstrap, bad input, and the effect
in run records, on the command line and on real covariates (Card)."""

import json

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm

from conftest import make_linear_iv
from dmlcore.runs import average_effect as effects
from dmlcore.data.roles import CausalData
from dmlcore.runs.average_effect import bootstrap_effect, check_bootstrap, contrast, effect_record, plug_in
from dmlcore.errors import DMLCoreError, FitCancelled
from dmlcore.estimators.dml import DMLCMR
from dmlcore.estimators.sieve import Sieve2SLS
from dmlcore.estimators.tsls import TwoStageLeastSquares
from dmlcore.runs import fit_run

from test_cli import assert_one_line_error, run_main


def linear_iv(n=1500, seed=0, slope=2.0, covariates=0, binary=False):
    """y = slope * a + x'1 + 1.5 u + e, a = z + x'0.3 + u (or 1{...} when ``binary``): f is linear."""
    return make_linear_iv(n, seed, slope=slope, strength=1.0, confounding=1.5, first_noise=0, covariates=covariates,
                          binary=binary)


class Known:
    """A fitted model whose f is a given function of the input columns (to check the estimands)."""

    def __init__(self, f, columns):
        self.f, self.input_columns_ = f, columns

    def predict(self, X):
        return self.f(X[self.input_columns_])


# ------------------------------------------------------------------ estimands
def test_average_derivative_of_f_at_the_rows():
    data = linear_iv(400, covariates=1)
    a, x = data.table["a"], data.table["x0"]
    model = Known(lambda X: X["a"] ** 2 + 3 * X["a"] * X["x0"], ["a", "x0"])
    plan = contrast(data)
    h = effects.STEP * a.std()
    near_ends = ((a < a.min() + h) | (a > a.max() - h)).mean()
    # central differences are exact for a quadratic; rows within h of the range's ends use a
    # one-sided difference, off by at most h each
    assert abs(plug_in(model, plan) - (2 * a + 3 * x).mean()) <= h * near_ends + 1e-9
    assert near_ends < 0.05 and "average derivative of f in a" in plan.estimand


def test_binary_treatment_gives_the_average_effect():
    data = linear_iv(300, binary=True, covariates=1)
    model = Known(lambda X: 5 * X["a"] * (1 + X["x0"]), ["a", "x0"])
    plan = contrast(data)
    assert plug_in(model, plan) == pytest.approx(np.mean(5 * (1 + data.table["x0"])))
    assert "a = 1 against 0" in plan.estimand


def test_proximal_slope_averages_the_do_curve(monkeypatch):
    rng = np.random.default_rng(1)
    n = 300
    table = pd.DataFrame({"y": rng.normal(size=n), "a": rng.uniform(0, 4, n), "z1": rng.normal(size=n),
                          "w": rng.normal(size=n)})
    data = CausalData(table, "pcl", "y", treatment="a", treatment_proxy="z1", outcome_proxy="w")
    model = Known(lambda X: X["a"] ** 2 + X["w"] * X["a"], ["a", "w"])   # E[Y|do(a)] = a^2 + a mean(w)
    plan = contrast(data)
    grid = np.quantile(table["a"], (np.arange(effects.PCL_GRID) + 0.5) / effects.PCL_GRID)
    assert plug_in(model, plan) == pytest.approx(np.mean(2 * grid + table["w"].mean()), rel=1e-6)
    assert "E[Y | do(a)]" in plan.estimand
    monkeypatch.setattr(effects, "PCL_ROWS", 100)           # large data: the curve over a subset of rows
    small = contrast(data)
    assert len(small.points) == 2 * effects.PCL_GRID * 100 and "averaged over 100 random rows" in small.estimand
    assert plug_in(model, small) == pytest.approx(plug_in(model, plan), abs=0.3)


# ------------------------------------------------------------------ intervals
def test_2sls_effect_is_linearmodels_coefficient_and_interval():
    from linearmodels.iv import IV2SLS

    data = linear_iv(800, seed=3, covariates=2)
    record = effect_record(TwoStageLeastSquares().fit(data), data)
    t = data.table.assign(const=1.0)
    ref = IV2SLS(t["y"], t[["const", "x0", "x1"]], t["a"], t["z"]).fit(cov_type="unadjusted")
    assert record["estimate"] == pytest.approx(ref.params["a"], rel=1e-9)
    assert (record["ci_lower"], record["ci_upper"]) == pytest.approx(tuple(ref.conf_int().loc["a"]), rel=1e-6)
    assert record["level"] == 0.95 and record["interval"].startswith("2SLS")


def test_2sls_binary_treatment_with_other_values_scales_the_coefficient():
    data = linear_iv(600, seed=2, binary=True)
    data.table["a"] = 1 + 2 * data.table["a"]                  # values 1 and 3
    model = TwoStageLeastSquares().fit(data)
    record = effect_record(model, data)
    assert record["estimate"] == pytest.approx(2 * model.coef_["a"])
    assert record["ci_upper"] - record["ci_lower"] == pytest.approx(2 * 2 * norm.ppf(0.975) * model.std_errors_["a"])


@pytest.mark.parametrize("make", ["sieve-2sls", "dml-sieve"])
def test_delta_method_is_the_band_of_a_linear_functional(make):
    data = linear_iv(1200, seed=5)
    model = (Sieve2SLS(n_knots=4).fit(data) if make == "sieve-2sls" else
             DMLCMR("linear", 3, f_model="sieve", seed=1).fit(data))
    point = data.table[["a"]].iloc[:1]
    lower, upper = model.predict_interval(point)
    functional = model.linear_functional if make == "sieve-2sls" else (
        lambda X, w: model.f_.linear_functional(X.to_numpy(), w))
    estimate, se = functional(point, np.ones(1))               # one point, weight 1: f(x) and its se
    assert estimate == pytest.approx(model.predict(point)[0])
    assert 2 * norm.ppf(0.975) * se == pytest.approx(upper[0] - lower[0])
    record = effect_record(model, data)["plug_in"]               # the headline is the debiased effect
    assert record["estimate"] == pytest.approx(plug_in(model, contrast(data)), rel=1e-6)
    assert record["ci_lower"] < 2.0 < record["ci_upper"]       # the true slope, on this seed
    assert record["interval"].startswith("delta method")


def test_methods_without_a_closed_form_say_how_to_get_an_interval():
    data = linear_iv(400)
    record = effect_record(DMLCMR("linear", 2, f_model="linear").fit(data), data)["plug_in"]
    assert record["estimate"] is not None and record["ci_lower"] is None
    assert "bootstrap" in record["interval"]


# ------------------------------------------------------------------ bootstrap
def test_bootstrap_matches_the_2sls_standard_error():
    data = linear_iv(600, seed=7)
    events = []
    boot = bootstrap_effect(data, "2sls", {}, 60, seed=3, callback=events.append)
    se = TwoStageLeastSquares().fit(data).std_errors_["a"]
    assert 0.7 < boot["sd"] / se < 1.4 and boot["failed"] == 0 and boot["refits"] == 60
    assert boot["percentile"][0] < 2.0 < boot["percentile"][1]
    assert [e["progress"] for e in events] == pytest.approx([(i + 1) / 60 for i in range(60)])
    run = fit_run(data, "naive", learner="linear", f_model="linear", bootstrap=20, heldout_folds=0)
    effect = run.record["effect"]["plug_in"]
    assert effect["interval"].startswith("bootstrap over rows, 20 refits")
    assert effect["ci_lower"] < effect["estimate"] < effect["ci_upper"]
    assert run.record["config"]["bootstrap"] == 20


def test_bootstrap_can_be_cancelled():
    with pytest.raises(FitCancelled):
        bootstrap_effect(linear_iv(300), "2sls", {}, 10, should_stop=lambda: True)


@pytest.mark.parametrize("refits", [0, 1, 100_000, 2.5, True, "50"])
def test_bad_bootstrap_sizes(refits):
    with pytest.raises(DMLCoreError, match=r"between 2 and 5,000 refits.*Leave it out"):
        check_bootstrap(refits)


def test_bad_bootstrap_on_the_command_line(capsys):
    for refits in ("0", "100000"):
        code, _, err = run_main(capsys, "fit", "--n", "200", "--method", "2sls", "--bootstrap", refits)
        assert_one_line_error(code, err, "between 2 and 5,000 refits", refits)


# ------------------------------------------------------------------ bad input
def test_too_few_treatment_values_for_a_derivative(capsys):
    data = linear_iv(300)
    data.table["a"] = np.round(data.table["a"]).clip(-1, 1)    # three values
    record = fit_run(data, "2sls", heldout_folds=0).record
    assert record["effect"]["estimate"] is None
    assert "only 3 distinct values (-1, 0, 1): too few for a derivative" in record["effect"]["error"]
    fits = []
    with pytest.raises(DMLCoreError, match="too few for a derivative"):   # refused before any refit
        fit_run(data, "2sls", bootstrap=10, callback=fits.append)
    assert fits == []


def test_categorical_treatment_and_outcome():
    data = linear_iv(300)
    table = data.table.assign(a=np.round(data.table["a"]).clip(-2, 2))
    categorical = CausalData(table, "iv", "y", treatment="a", instrument="z", categorical=["a"])
    with pytest.raises(DMLCoreError, match="categorical with 5 levels"):
        contrast(categorical)
    with pytest.raises(DMLCoreError, match="outcome 'y' cannot be categorical"):
        CausalData(table.assign(y=np.round(table["y"]).clip(0, 3)), "iv", "y", treatment="a", instrument="z",
                   categorical=["y"])


def test_image_treatment_has_no_single_effect():
    from dmlcore.data.registry import load_dataset

    data = load_dataset("dsprites-pcl", n=50, seed=0).data
    with pytest.raises(DMLCoreError, match="the treatment here is an image"):
        contrast(data)


# ------------------------------------------------------------------ records and command line
def test_cli_record_has_effect_and_diagnostics_like_fit_run(capsys, tmp_path):
    path = tmp_path / "run.json"
    code, out, err = run_main(capsys, "fit", "--n", "300", "--method", "2sls", "--json", str(path))
    assert code == 0, err
    cli = json.loads(path.read_text())
    from dmlcore.data.registry import load_dataset
    loaded = load_dataset("demand-iv", n=300, seed=0)
    direct = fit_run(loaded.data, "2sls", truth=loaded.truth, dataset="demand-iv", data_params=loaded.params).record
    assert set(cli) == set(json.loads(json.dumps(direct, default=str)))
    assert cli["diagnostics"]["treatments"]["price"]["f_stat"] == pytest.approx(
        direct["diagnostics"]["treatments"]["price"]["f_stat"])
    assert cli["effect"]["estimate"] == pytest.approx(direct["effect"]["estimate"])
    assert f"effect={cli['effect']['estimate']:.4g} [" in out and "2SLS s.e." in out
    assert cli["heldout"] is None                               # a known truth: no held-out residual by default


# ------------------------------------------------------------------ real covariates
def test_spline_f_gives_bands_and_an_interval_on_card():
    pytest.importorskip("linearmodels")
    from dmlcore.data.datasets import load_real_dataset

    data = load_real_dataset("card")
    run = fit_run(data, "dml-cmr", learner="linear", folds=2, f_model="sieve", heldout_folds=0)
    effect = run.record["effect"]
    plug = effect["plug_in"]                                   # the spline f's delta-method interval
    assert plug["ci_lower"] < plug["estimate"] < plug["ci_upper"]
    # Card's one binary instrument: first-stage F 13.3 and representer strength 12.3, both above the flag's
    # bars (10 each, calibrated in docs/coverage.md), so the debiased headline has its interval
    from dmlcore.inference.debiased_effect import WEAK_FIRST_STAGE_F, WEAK_STRENGTH
    debiased = effect["debiased"]
    assert round(debiased["first_stage_f"], 1) == 13.3 and debiased["first_stage_f"] >= WEAK_FIRST_STAGE_F
    assert debiased["strength"] >= WEAK_STRENGTH and not effect["weakly_identified"]
    assert effect["ci_lower"] < effect["estimate"] < effect["ci_upper"] and effect["interval"].startswith("debiased")
    assert run.record["bands"]["confidence"]["mean_width"] > 0
    assert any("additive basis" in note for note in run.record["notes"])
    curve = run.curve()
    assert (curve["lower"] < curve["upper"]).all()
    sieve = fit_run(data, "sieve-2sls", heldout_folds=0).record["effect"]["debiased"]
    assert sieve["ci_lower"] < 0.13 < sieve["ci_upper"]         # covers the 2SLS estimate on Card
