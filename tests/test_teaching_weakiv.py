"""The weak-IV lesson's additions (issue 47): LIML / Fuller / CLR in closed form per draw, checked
against the library's own estimators and tests on one data set, and the tF critical values of Lee,
McCrary, Moreira & Porter (2022)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dmlcore.data.roles import CausalData
from dmlcore.errors import DMLCoreError
from dmlcore.inference.linear_iv import clr_test
from dmlcore.runs import fit_run
from dmlcore.teaching import iv
from dmlcore.teaching.tf import CRITICAL_05, SQRT_F_GRID, tf_critical_value, tf_interval


def _design(k: int, pi: float, seed: int = 3, n: int = 400):
    noise = iv.draw_noise(n, 1, seed, k)
    d = iv.build(noise, pi=pi, rho=0.9)
    z, a, y = d["z"][0], d["a"][0], d["y"][0]
    cols = {f"z{j}": z[:, j] for j in range(k)}
    data = CausalData(pd.DataFrame({"y": y, "a": a, **cols}), "iv", outcome="y", treatment="a",
                      instrument=list(cols))
    return z, a, y, data


@pytest.mark.parametrize("method,alpha", [("liml", None), ("fuller", 1.0)])
def test_kclass_matches_the_library_estimator(method, alpha):
    z, a, y, data = _design(4, 0.08)
    ours = iv.kclass(z, a, y, alpha)
    coef = fit_run(data, method).record["effect"]["estimate"]
    assert float(ours["slope"]) == pytest.approx(coef, rel=1e-7)
    # LIML and Fuller are not 2SLS with four instruments (the check would pass trivially otherwise)
    assert abs(float(ours["slope"]) - float(iv.tsls(z, a, y)["slope"])) > 1e-4


def test_liml_equals_2sls_with_one_instrument():
    z, a, y, _ = _design(1, 0.1)
    assert float(iv.kclass(z[:, 0], a, y)["slope"]) == pytest.approx(float(iv.tsls(z[:, 0], a, y)["slope"]), rel=1e-9)


@pytest.mark.parametrize("beta0", [-1.0, -0.6, 0.3])
def test_clr_covers_matches_the_library_test(beta0):
    z, a, y, data = _design(4, 0.06)
    p = clr_test(data, beta0)["pvalue"]
    assert bool(iv.clr_covers(z, a, y, beta0)) == (p > 0.05)
    # the vectorised statistic is the library's: coverage flips exactly where the p-value crosses 5 %
    level = 1 - p + 1e-6
    assert bool(iv.clr_covers(z, a, y, beta0, level=level)) is True
    assert bool(iv.clr_covers(z, a, y, beta0, level=max(0.01, 1 - p - 1e-3))) is False


def test_tf_critical_values_follow_the_published_table():
    assert len(SQRT_F_GRID) == len(CRITICAL_05) == 84
    assert np.all(np.diff(CRITICAL_05) <= 0)                       # falls as F grows
    assert tf_critical_value(10.0) == pytest.approx(3.43, abs=0.01)  # Lee et al. (2022): 3.43 at F = 10
    assert tf_critical_value(4.0) == pytest.approx(18.66)
    assert tf_critical_value(104.7) == 1.96 and tf_critical_value(1e6) == 1.96
    assert tf_critical_value(3.0) == float("inf")
    out = tf_interval(0.13, 0.05, 10.0)
    assert out["lower"] == pytest.approx(0.13 - 0.05 * out["critical"]) and out["factor"] > 1.7
    assert tf_interval(0.13, 0.05, 2.0)["lower"] is None
    with pytest.raises(DMLCoreError, match="got -1"):
        tf_critical_value(-1.0)


def test_weak_lesson_reports_the_new_procedures():
    one = iv.weak_instruments((2.0, 50.0), instruments=1, draws=200, n=200).summary
    four = iv.weak_instruments((2.0, 50.0), instruments=4, draws=200, n=200).summary
    # one instrument: LIML is 2SLS, CLR is AR, tF keeps its size where the usual interval does not
    assert np.allclose(one["median LIML"], one["median 2SLS"])
    # CLR with one instrument is the AR test with a chi-square(1) critical value (AR here: the exact F)
    assert np.allclose(one["CLR coverage"], one["AR coverage"], atol=0.015)
    assert one["tF coverage"].iloc[0] >= 0.93 > one["2SLS interval coverage"].iloc[0]
    # four weak instruments: LIML is far less biased toward OLS than 2SLS; tF does not apply
    assert abs(four["LIML relative median bias"].iloc[0]) < 0.5 * four["relative median bias"].iloc[0]
    assert four["CLR coverage"].min() >= 0.9
    assert four["tF coverage"].isna().all()


def test_repeated_crossfit_measures_how_much_the_split_moves_f_hat():
    from dmlcore.teaching import nuisance
    exp = nuisance.repeated_crossfit("simple", n=200, splits=2, reps=(1, 2), folds=2)
    s = exp.summary.set_index("R")
    assert list(s.index) == [1, 2] and len(exp.draws) == 4
    assert s.loc[1, "split spread"] > 0                      # another split seed, another f-hat
    assert np.isfinite(s["median MSE"]).all()
    with pytest.raises(DMLCoreError, match="splits"):
        nuisance.repeated_crossfit("simple", splits=1)
