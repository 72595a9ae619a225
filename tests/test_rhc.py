"""Tests of the built-in proximal data set ``rhc`` (right heart catheterization) and of the
methods on it: roles, the shipped copy against its source, the effects and the spline f."""

import importlib.util
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dmlcore.data.datasets import REAL_DATASETS, load_real_dataset
from dmlcore.data.registry import dataset_names, load_dataset
from dmlcore.runs import fit_run

from test_cli import run_main

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data" / "rhc"
PROXIES = ["pafi1", "paco21", "ph1", "hema1"]


@pytest.fixture(scope="module")
def rhc():
    return load_real_dataset("rhc")


def test_roles_as_in_the_proximal_literature(rhc):
    assert "rhc" in dataset_names() and REAL_DATASETS["rhc"].problem == "pcl"
    assert rhc.problem == "pcl" and rhc.outcome == "t3d30" and rhc.treatment == ["swang1"]
    assert rhc.treatment_proxy == ["pafi1", "paco21"] and rhc.outcome_proxy == ["ph1", "hema1"]
    assert len(rhc.covariates) == 73 and not set(rhc.covariates) & {"t3d30", "swang1", *PROXIES}
    table = rhc.table
    assert len(table) == 5735 and np.isfinite(table.to_numpy(dtype=float)).all()
    assert set(table["swang1"]) == {0, 1} and table["swang1"].sum() == 2184     # 2,184 had RHC
    assert table["t3d30"].between(2, 30).all()
    assert table["ph1"].between(6.5, 8).all() and table["hema1"].between(0, 70).all()   # raw units
    assert load_dataset("rhc").truth is None


def test_shipped_copy_is_the_source_coded_as_documented(rhc):
    if not (SHARED / "rhc_raw.csv").exists():
        pytest.skip(f"the source data is not here ({SHARED})")
    spec = importlib.util.spec_from_file_location("build_rhc", ROOT / "scripts" / "build_rhc.py")
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    raw = pd.read_csv(SHARED / "rhc_raw.csv")
    covariates = pd.read_csv(SHARED / "RHC_X_allfeatures_list.csv")["variable"].tolist()
    rebuilt = build.build(raw, covariates)
    pd.testing.assert_frame_equal(rebuilt[rhc.table.columns].reset_index(drop=True), rhc.table, check_dtype=False)
    assert ((raw["swang1"] == "RHC").astype(int) == rhc.table["swang1"]).all()
    assert (raw["t3d30"] == rhc.table["t3d30"]).all()


def test_2sls_effect_is_linear_proximal_2sls(rhc):
    from linearmodels.iv import IV2SLS

    record = fit_run(rhc, "2sls", dataset="rhc", heldout_folds=0).record
    t = rhc.table.assign(const=1.0)
    ref = IV2SLS(t["t3d30"], t[["const", "swang1", *rhc.covariates]], t[["ph1", "hema1"]],
                 t[["pafi1", "paco21"]]).fit(cov_type="unadjusted")
    effect = record["effect"]
    assert effect["estimate"] == pytest.approx(ref.params["swang1"], rel=1e-8)
    assert (effect["ci_lower"], effect["ci_upper"]) == pytest.approx(tuple(ref.conf_int().loc["swang1"]), rel=1e-6)
    assert "E[Y | do(swang1=1)] - E[Y | do(swang1=0)]" in effect["estimand"]
    se = ref.std_errors["swang1"]   # the description quotes this fit
    assert f"{ref.params['swang1']:.2f} days (s.e. {se:.2f})" in REAL_DATASETS["rhc"].description


def test_spline_f_gives_bands_and_an_interval(rhc):
    run = fit_run(rhc, "dml-cmr", learner="linear", folds=2, f_model="sieve", dataset="rhc", heldout_folds=0)
    effect = run.record["effect"]
    plug = effect["plug_in"]                             # the spline f's delta-method interval
    assert plug["ci_lower"] < plug["estimate"] < plug["ci_upper"] < 0         # shorter survival with RHC
    assert plug["interval"].startswith("delta method")
    # the debiased headline (issue 31: no longer refused on RHC) is flagged: the proxies' F is 3.1
    assert effect["weakly_identified"] and effect["ci_lower"] is None
    assert "first stage's F 3.14" in effect["debiased"]["weak_reason"] and len(effect["interval"]) <= 200
    assert run.record["bands"]["confidence"]["n_points"] == 5735
    curve = run.curve()                                  # E[Y | do(swang1)] at the two values, with a band
    assert list(curve["x"]) == [0.0, 1.0] and (curve["lower"] < curve["estimate"]).all()
    assert any("additive basis" in note for note in run.record["notes"])


def test_command_line(capsys):
    code, out, err = run_main(capsys, "fit", "--dataset", "rhc", "--method", "2sls", "--heldout-folds", "0")
    assert code == 0, err
    assert "2sls on rhc (n=5735" in out and "(95%, 2SLS s.e., homoskedastic)" in out
    assert "debiased average derivative=" not in out      # 2SLS's line prints what 2SLS estimates (issue 46)
    estimate, lower, upper = map(float, re.search(r"effect=(\S+) \[(\S+), (\S+)\]", out).groups())
    assert lower < estimate < upper < 0


def test_every_effect_on_rhc_has_an_interval_or_one_short_line(rhc):
    """Issue 31: the debiased effect no longer fails on RHC's many category dummies (every rung was
    refused as singular), and a missing interval is said in one line of at most 200 characters."""
    effect = fit_run(rhc, "2sls", dataset="rhc", heldout_folds=0).record["effect"]
    debiased = effect["debiased"]
    assert debiased is not None and debiased["ci_lower"] < debiased["estimate"] < debiased["ci_upper"] < 0
    regression = fit_run(rhc, "regression", dataset="rhc", learner="linear", heldout_folds=0).record["effect"]
    assert regression["ci_lower"] is None
    for line in (regression["interval"], regression["debiased_error"]):
        assert "\n" not in line and len(line) <= 200
