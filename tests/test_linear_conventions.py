"""The linear IV layer's small-sample conventions against their anchors (issue 46): Stata's own ``ivregress``
output shipped with linearmodels (``small``, HC1, CR1) and pyfixest's (fixest's ``fixef.K`` nested or full,
two-way ``cluster.df`` min or conventional, t(G - 1) intervals), each to 1e-8 relative."""

from __future__ import annotations

import functools
import json
import os
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import t as t_dist

from dmlcore.data.roles import CausalData
from dmlcore.errors import DMLCoreError
from dmlcore.estimators import make_estimator
from dmlcore.runs.average_effect import effect_record

TOL = 1e-8
FIXTURE = Path(__file__).parent / "fixtures" / "pyfixest_iv_conventions.json"


@functools.lru_cache(maxsize=1)
def _stata():
    import linearmodels.tests.iv.results as results
    from linearmodels.tests.iv.results.read_stata_results import process_results
    base = os.path.dirname(results.__file__)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        data = pd.read_stata(os.path.join(base, "simulated-data.dta"))
    return data, process_results(os.path.join(base, "stata-iv-simulated-results.txt"))


STATA_COV = {"vce(unadjusted)": ("unadjusted", "y_unadjusted"), "vce(robust)": ("robust", "y_robust"),
             "vce(cluster cluster_id)": ("clustered", "y_clustered")}
METHOD = {"2sls": "2sls", "liml": "liml", "gmm": "gmm-iv"}


def _stata_cases():
    data, results = _stata()
    for key, stata in results.items():
        model, nendog, nexog, ninstr, weighted, var, other = key.split("-")
        var = var.replace("wmatrix", "vce")
        if var not in STATA_COV or other not in ("", "small") or "2" not in ninstr or ("2" in nendog and not other):
            continue        # two instruments; with two treatments, the small runs
        if model == "gmm" and "True" in weighted and var == "vce(unadjusted)":
            continue        # Stata's weighted homoskedastic GMM weight matrix differs (linearmodels skips it too)
        yield key, model, var, other == "small", "True" in weighted, "3" in nexog, "2" in nendog, stata, data


def _relative(ours, theirs):
    return float(np.max(np.abs(np.asarray(ours) - np.asarray(theirs)) / np.abs(np.asarray(theirs))))


def test_small_hc1_and_cr1_equal_statas_ivregress_output():
    """Every ivregress run Stata wrote with two instruments and one or two endogenous treatments (2SLS, LIML,
    GMM; unadjusted, robust, cluster; weighted or not; with and without ``small``, two treatments with it): coefficients and standard errors to 1e-8 relative. Without ``small`` Stata's
    vce(cluster) is CR0 (this project's "clustered"); with it, CR1 ("clustered" + small = "clustered-cr1" +
    small); vce(robust) small is HC1 ("robust-hc1")."""
    worst, count = 0.0, 0
    for key, model, var, small, weighted, exog, two, stata, data in _stata_cases():
        cov = STATA_COV[var][0]
        frame = CausalData(data, "iv", STATA_COV[var][1], treatment=["x1", "x2"] if two else ["x1"], instrument=["z1", "z2"],
                           covariates=["x3", "x4", "x5"] if exog else [], weights="weights" if weighted else None)
        choices = [(cov, small)]
        if small and cov != "unadjusted":
            choices.append(("clustered-cr1" if cov == "clustered" else "robust-hc1", False))
        for cov_type, flag in choices:
            est = make_estimator(METHOD[model], cov_type=cov_type, small=flag,
                                 cluster="cluster_id" if cov_type.startswith("clustered") else None).fit(frame)
            names = list(est.coef_.index)
            se = np.sqrt(np.diag(stata.cov.reindex(index=names, columns=names).to_numpy()))
            worst = max(worst, _relative(est.coef_, stata.params.reindex(names)), _relative(est.std_errors_, se))
            if flag:
                n, k = len(data), len(names)
                assert est.df_ == (data.cluster_id.nunique() - 1 if cov == "clustered" else n - k), key
            count += 1
    assert count == 150 and worst < TOL, (count, worst)


@pytest.fixture(scope="module")
def anchors():
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


def test_fixed_effects_k_and_two_way_g_equal_pyfixest(anchors):
    """fixef_k (nested / full), cluster_df (min / conventional), HC1 with absorbed fixed effects: coefficients,
    standard errors, the t degrees of freedom and the 95 % interval of every model pyfixest fitted."""
    table = pd.DataFrame(anchors["rows"])
    worst = 0.0
    for model in anchors["models"]:
        options = dict(model["dmlcore"])
        absorb = options.pop("absorb")
        instruments = model["formula"].split("~")[-1].replace(" ", "").split("+")
        data = CausalData(table, "iv", "y", treatment=["d"], instrument=instruments, covariates=["x1"], absorb=absorb)
        est = make_estimator("2sls", **options).fit(data)
        names = [n for n in model["coef"] if n != "Intercept"]
        ours = est.coef_.rename({"const": "Intercept"})
        worst = max(worst, _relative(ours[list(model["coef"])], list(model["coef"].values())),
                    _relative(est.std_errors_.rename({"const": "Intercept"})[list(model["se"])],
                              list(model["se"].values())))
        assert est.df_ == model["df_t"], model["name"]
        interval = effect_record(est, data)["intervals"][0]
        lo, hi = model["ci"]["d"]
        worst = max(worst, _relative([interval["ci_lower"], interval["ci_upper"]], [lo, hi]))
        assert f"t with {model['df_t']} df" in interval["interval"] and names
    assert worst < TOL, worst


def test_small_intervals_use_t_and_the_default_says_normal(anchors):
    """small: the interval is coefficient -/+ t(df) x s.e., and says so; without it the normal's 1.96."""
    table = pd.DataFrame(anchors["rows"])
    data = CausalData(table, "iv", "y", treatment=["d"], instrument=["z1"], covariates=["x1"])
    small = make_estimator("2sls", cov_type="clustered", cluster="g", small=True).fit(data)
    plain = make_estimator("2sls", cov_type="clustered", cluster="g").fit(data)
    assert small.df_ == 7 and plain.df_ is None
    b, s = float(small.coef_["d"]), float(small.std_errors_["d"])
    entry = effect_record(small, data)["intervals"][0]
    assert entry["ci_upper"] == pytest.approx(b + t_dist.ppf(0.975, 7) * s, rel=1e-12)
    assert "small: t with 7 df" in entry["interval"]
    assert "t with" not in effect_record(plain, data)["intervals"][0]["interval"]
    assert "1.96" in effect_record(plain, data)["intervals"][0]["interval"]


@pytest.mark.parametrize("options,match", [
    ({"fixef_k": "nested", "cov_type": "clustered-cr1", "cluster": "g"}, "needs absorbed columns"),
    ({"fixef_k": "nested", "cov_type": "clustered", "cluster": "g", "absorb": ["unit"]}, "CR1 or small"),
    ({"fixef_k": "nested", "cov_type": "robust-hc1", "absorb": ["unit"]}, "clustered covariance"),
    ({"cluster_df": "min", "cov_type": "clustered-cr1", "cluster": "g"}, "two cluster columns"),
    ({"cluster_df": "min", "cov_type": "clustered", "cluster": "g,year"}, "CR1 or small"),
    ({"fixef_k": "some"}, "Unknown fixef_k 'some'; choose one of full, nested"),
    ({"small": "yes"}, "small must be True or False"),
])
def test_a_convention_that_cannot_act_is_refused_in_one_line(anchors, options, match):
    table = pd.DataFrame(anchors["rows"])
    absorb = options.pop("absorb", [])
    data = CausalData(table, "iv", "y", treatment=["d"], instrument=["z1"], covariates=["x1"], absorb=absorb)
    with pytest.raises(DMLCoreError, match=match) as err:
        make_estimator("2sls", **options).fit(data)
    assert "\n" not in str(err.value)
    with pytest.raises(DMLCoreError, match="not to dml-cmr"):
        make_estimator("dml-cmr", small=True)


def test_r2_equals_statas():
    """The run record's R^2 (1 - RSS / TSS, weighted) equals Stata's e(r2), weighted or not."""
    worst, count = 0.0, 0
    for key, model, var, small, weighted, exog, two, stata, data in _stata_cases():
        if small or var != "vce(unadjusted)" or two:
            continue
        frame = CausalData(data, "iv", STATA_COV[var][1], treatment=["x1"], instrument=["z1", "z2"],
                           covariates=["x3", "x4", "x5"] if exog else [], weights="weights" if weighted else None)
        est = make_estimator(METHOD[model]).fit(frame)
        worst, count = max(worst, abs(est.r2_ - stata.rsquared) / stata.rsquared), count + 1
    assert count == 10 and worst < TOL, (count, worst)


def test_small_anderson_rubin_set_ends_where_the_f_test_rejects(anchors):
    """small: the AR set's ends are where the reduced form's Wald statistic (CR1) equals F(0.95; 1, G - 1)."""
    from linearmodels.iv import IV2SLS
    from scipy.stats import f as f_dist

    from dmlcore.inference.linear_iv import anderson_rubin_set

    table = pd.DataFrame(anchors["rows"])
    data = CausalData(table, "iv", "y", treatment=["d"], instrument=["z1"], covariates=["x1"])
    pieces = anderson_rubin_set(data, "clustered", "g", small=True)["pieces"]
    assert len(pieces) == 1
    exog = table[["x1"]].assign(const=1.0)
    for b in pieces[0]:
        fit = IV2SLS(table.y - b * table.d, pd.concat([exog, table[["z1"]]], axis=1), None, None).fit(
            cov_type="clustered", clusters=table.g, debiased=True)
        wald = float(fit.params["z1"] ** 2 / fit.cov.loc["z1", "z1"])
        assert wald == pytest.approx(f_dist.ppf(0.95, 1, table.g.nunique() - 1), rel=1e-7)



def _by_hand_sw(table, treatments, instruments, exog):
    """Sanderson-Windmeijer's conditional F by numpy: partial out the exogenous columns, 2SLS of d_j on the
    other treatments, then the F of the instruments for its residual (q - p + 1 and n - q - k degrees of freedom)."""
    n = len(table)
    x = np.column_stack([np.ones(n), table[exog].to_numpy()])
    part = lambda a: a - x @ np.linalg.lstsq(x, a, rcond=None)[0]    # noqa: E731
    z, d = part(table[instruments].to_numpy()), part(table[treatments].to_numpy())
    project = lambda a: z @ np.linalg.lstsq(z, a, rcond=None)[0]       # noqa: E731
    q, p, out = z.shape[1], d.shape[1], {}
    for j, name in enumerate(treatments):
        others = np.delete(d, j, axis=1)
        delta = np.linalg.solve(project(others).T @ others, project(others).T @ d[:, j])
        e = d[:, j] - others @ delta
        fitted = project(e)
        out[name] = (fitted @ fitted / (q - p + 1)) / ((e - fitted) @ (e - fitted) / (n - q - x.shape[1]))
    return out


def test_several_treatments_sanderson_windmeijer_by_hand_and_first_stage_f_with_one():
    """Two endogenous treatments: each one's Sanderson-Windmeijer F (homoskedastic) equals the formula by numpy;
    with one treatment it is the first-stage F of linearmodels' partial R^2."""
    from linearmodels.iv import IV2SLS

    from dmlcore.inference.linear_iv import first_stage_inference

    data, _ = _stata()
    two = CausalData(data, "iv", "y_unadjusted", treatment=["x1", "x2"], instrument=["z1", "z2"],
                     covariates=["x3", "x4"])
    ours = first_stage_inference(two)["endogenous"]
    hand = _by_hand_sw(data, ["x1", "x2"], ["z1", "z2"], ["x3", "x4"])
    for name in ("x1", "x2"):
        assert ours[name]["sanderson_windmeijer_f"] == pytest.approx(hand[name], rel=TOL)
    one = CausalData(data, "iv", "y_unadjusted", treatment=["x1"], instrument=["z1", "z2"], covariates=["x3"])
    # one treatment: the first-stage F, from linearmodels' first-stage partial R^2 (n - q - k degrees of freedom)
    lm = IV2SLS(data.y_unadjusted, data[["x3"]].assign(const=1.0), data.x1, data[["z1", "z2"]]).fit(debiased=True)
    r2 = float(lm.first_stage.diagnostics.loc["x1", "partial.rsquared"])
    f_lm = r2 / 2 / ((1 - r2) / (len(data) - 4))
    assert first_stage_inference(one)["endogenous"]["x1"]["sanderson_windmeijer_f"] == pytest.approx(f_lm, rel=TOL)


def test_several_treatments_only_for_the_linear_iv_methods():
    from dmlcore.estimators import METHODS

    data, _ = _stata()
    two = CausalData(data, "iv", "y_unadjusted", treatment=["x1", "x2"], instrument=["z1", "z2"])
    for method in ("2sls", "liml", "fuller", "gmm-iv"):
        assert METHODS[method].refusal(two) is None
        assert set(make_estimator(method).fit(two).coef_.index) >= {"x1", "x2"}
    assert "only the linear IV estimators" in METHODS["dml-cmr"].refusal(two)
    with pytest.raises(DMLCoreError, match="2 treatment columns .x1, x2. are several endogenous") as err:
        make_estimator("sieve-2sls").fit(two)
    assert "\n" not in str(err.value)
