"""The Weak IV and Invalid IV tabs' robust sections (issue 47): the homoskedastic first-stage F and
Anderson-Rubin set beside the effective F (Montiel Olea & Pflueger 2013) and the robust or clustered AR set,
and Sargan's / Hansen's overidentification tests -- all computed by dmlcore's linear-IV inference, and moving
the way the tabs' text says."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import chi2

from dmlcore.errors import DMLCoreError
from dmlcore.inference.linear_iv import anderson_rubin_set, first_stage_inference
from dmlcore.teaching import robust


@pytest.fixture(scope="module")
def heteroskedastic():
    return robust.robust_inference("heteroskedastic", draws=30)


def test_the_example_is_the_library_s_own_numbers(heteroskedastic):
    data = robust.heteroskedastic_data(0)
    example = heteroskedastic.params["example"]
    assert example["homoskedastic"]["effective F"] == pytest.approx(
        first_stage_inference(data)["endogenous"]["price"]["f_stat_cov"])        # the usual F
    assert example["heteroskedasticity-robust"]["effective F"] == pytest.approx(
        first_stage_inference(data, "robust")["effective_f"])
    assert example["heteroskedasticity-robust"]["AR pieces"] == anderson_rubin_set(data, "robust")["pieces"]
    # the two covariances give different sets on the same data
    assert example["homoskedastic"]["AR pieces"] != example["heteroskedasticity-robust"]["AR pieces"]


def test_heteroskedasticity_shrinks_the_effective_f_and_the_robust_ar_set_keeps_its_level(heteroskedastic):
    s = heteroskedastic.summary.set_index("covariance")
    homo, rob = s.loc["homoskedastic"], s.loc["heteroskedasticity-robust"]
    # the homoskedastic F overstates the strength: the robust effective F is well below it
    assert rob["median effective F"] < 0.6 * homo["median effective F"]
    # the homoskedastic AR set misses the truth more often than the robust one (200 draws: 76 % and 95.5 %)
    assert homo["AR coverage"] < rob["AR coverage"] and rob["AR coverage"] >= 0.85
    assert len(heteroskedastic.draws) == 2 * 30


def test_clustered_errors_shrink_the_effective_f_by_far_more():
    exp = robust.robust_inference("clustered", draws=6)
    s = exp.summary.set_index("covariance")
    assert s.loc["cluster-robust", "median effective F"] < 0.25 * s.loc["homoskedastic", "median effective F"]
    assert exp.params["clusters"] == 40 and exp.params["cov_type"] == "clustered"
    with pytest.raises(DMLCoreError, match="'bogus'"):
        robust.robust_inference("bogus")


@pytest.fixture(scope="module")
def overid():
    return robust.overidentification(draws=8)


def test_overidentification_rejects_one_invalid_instrument_not_valid_or_alike_ones(overid):
    s = overid.summary.set_index("design")
    for test in ("Sargan rejects", "Hansen J rejects"):
        assert s.loc["invalid", test] >= 0.75                 # most of a few seeds
        assert s.loc["valid", test] <= 0.25
        assert s.loc["all invalid", test] <= 0.25             # instruments invalid alike agree
    # and yet 2SLS is far from the truth when all are invalid alike
    assert s.loc["all invalid", "median 2SLS"] > -0.7
    assert s.loc["all invalid", "large-sample 2SLS"] == pytest.approx(-1 + 0.2 / 0.3)


def test_sargan_is_n_times_r2_of_the_2sls_residuals_on_the_instruments(overid):
    data = robust.overid_data("invalid", 0)
    t = data.table
    z = np.column_stack([np.ones(len(t)), t[["fuel1", "fuel2", "fuel3"]].to_numpy()])
    a, y = t["price"].to_numpy(), t["sales"].to_numpy()
    x = np.column_stack([np.ones(len(t)), a])
    xhat = z @ np.linalg.lstsq(z, x, rcond=None)[0]
    beta = np.linalg.lstsq(xhat, y, rcond=None)[0]
    e = y - x @ beta
    fitted = z @ np.linalg.lstsq(z, e, rcond=None)[0]
    sargan = len(y) * (1 - ((e - fitted) @ (e - fitted)) / ((e - e.mean()) @ (e - e.mean())))
    row = overid.draws.query("design == 'invalid' and draw == 0").iloc[0]
    assert row["Sargan"] == pytest.approx(sargan, rel=1e-8)
    assert row["Sargan p"] == pytest.approx(chi2.sf(sargan, 2), rel=1e-6) and row["df"] == 2
    assert row["2SLS"] == pytest.approx(beta[1], rel=1e-10)


@pytest.mark.usefixtures("fresh_runtime")
def test_the_tabs_show_the_prepared_numbers_and_say_what_they_show(heteroskedastic, overid, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from dashboard.learn.common import num, pct
    from dmlcore.teaching import prepared
    from tests.test_app import APP, LEARN, all_text
    monkeypatch.setitem(prepared.SLOW, "robust-heteroskedastic", lambda: heteroskedastic)
    monkeypatch.setitem(prepared.SLOW, "overid", lambda: overid)
    prepared.prepare(["robust-heteroskedastic", "overid"], echo=lambda line: None)   # this test's DMLCORE_HOME
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.switch_page(LEARN).run()
    at.session_state["learn_tab"] = "Weak IV"
    at.run()
    assert not at.exception and not at.error
    assert not any(b.key == "learn_run_robust-heteroskedastic" for b in at.button)
    table = next(d.value for d in at.dataframe if "AR bounded" in d.value)
    s = heteroskedastic.summary
    assert list(table["median effective F"]) == [num(v, 1) for v in s["median effective F"]]
    text = all_text(at)
    assert "Montiel Olea & Pflueger (2013)" in text and "Andrews, Stock & Sun" in text
    assert "The homoskedastic set is too short" in text       # it is, in these 30 draws
    at.session_state["learn_tab"] = "Invalid IV"
    at.run()
    assert not at.exception and not at.error
    table = next(d.value for d in at.dataframe if "Hansen J rejects" in d.value)
    assert list(table["Hansen J rejects"]) == [pct(v) for v in overid.summary["Hansen J rejects"]]
    text = all_text(at)
    assert "Sargan's** (1958)" in text and "Hansen's J** (1982)" in text and "Parente & Santos Silva 2012" in text
