"""The linear IV layer (docs/linear-iv.md): absorbed fixed effects, weights, LIML / Fuller / GMM, CR1 and
two-way clustering, Hansen's J, checked against linearmodels with the fixed effects entered as dummies."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
from linearmodels.iv import IV2SLS, IVGMM, IVLIML

from dmlcore.data.roles import CausalData
from dmlcore.inference.first_stage import first_stage
from dmlcore.errors import DMLCoreError
from dmlcore.estimators import make_estimator
from dmlcore.inference.linear_iv import anderson_rubin_set, first_stage_inference
from dmlcore.runs import fit_run

DIGITS = 1e-9        # relative agreement asserted below: at least 9 significant digits (docs/linear-iv.md)
COVS = [("unadjusted", None), ("robust", None), ("clustered", "cl"), ("clustered-cr1", "cl")]


def _table(n=600, seed=0):
    rng = np.random.default_rng(seed)
    g, h = rng.integers(0, 12, n), rng.integers(0, 5, n)
    fe = rng.normal(size=12)[g] + 0.5 * rng.normal(size=5)[h]
    z1, z2, x1, u = rng.normal(size=n) + 0.3 * fe, rng.normal(size=n), rng.normal(size=n), rng.normal(size=n)
    d = z1 + 0.5 * z2 + u + fe
    y = 1.5 * d + 0.5 * x1 + 2 * fe + 0.8 * u + rng.normal(size=n) * (1 + np.abs(z1))
    return pd.DataFrame(dict(y=y, d=d, z1=z1, z2=z2, x1=x1, g=g, h=h, w=rng.uniform(0.5, 2, n),
                             cl=rng.integers(0, 40, n), cl2=rng.integers(0, 35, n)))


@pytest.fixture(scope="module")
def table():
    return _table()


def _data(table, **options):
    return CausalData(table, "iv", "y", treatment="d", instrument=["z1", "z2"], covariates=["x1"], **options)


def _dummies(table, columns):
    parts = [pd.get_dummies(table[c], prefix=c, dtype=float) for c in columns]
    out = pd.concat([parts[0]] + [p.iloc[:, 1:] for p in parts[1:]], axis=1)   # one level of the second left out
    return pd.concat([table[["x1"]], out], axis=1)


def _reference(kind, table, exog, cov, cluster, weights=True, alpha=1.0):
    """linearmodels with the fixed effects as dummies in ``exog``."""
    clusters = {"clusters": table[cluster]} if cluster else {}
    lm_cov, debiased = ("clustered" if cluster else cov), cov == "clustered-cr1"
    w = {"weights": table["w"]} if weights else {}
    parts = (table.y, exog, table.d, table[["z1", "z2"]])
    if kind == "2sls":
        model = IV2SLS(*parts, **w)
    elif kind == "liml":
        model = IVLIML(*parts, **w)
    elif kind == "fuller":
        model = IVLIML(*parts, fuller=alpha, **w)
    else:
        model = IVGMM(*parts, weight_type=lm_cov, **w, **clusters)
    return model.fit(cov_type=lm_cov, debiased=debiased, **clusters)


@pytest.mark.parametrize("cov,cluster", COVS)
@pytest.mark.parametrize("method", ["2sls", "liml", "fuller"])
def test_absorbed_and_weighted_fits_equal_linearmodels_with_dummies(table, method, cov, cluster):
    est = make_estimator(method, cov_type=cov, cluster=cluster).fit(_data(table, absorb="g", weights="w"))
    ref = _reference(method, table, _dummies(table, ["g"]), cov, cluster)
    for name in ("d", "x1"):
        assert est.coef_[name] == pytest.approx(ref.params[name], rel=DIGITS)
        assert est.std_errors_[name] == pytest.approx(ref.std_errors[name], rel=DIGITS)
    assert "const" not in est.coef_.index          # the fixed effects absorb it


@pytest.mark.parametrize("cov,cluster", COVS)
def test_gmm_with_weights_equals_linearmodels(table, cov, cluster):
    est = make_estimator("gmm-iv", cov_type=cov, cluster=cluster).fit(_data(table, weights="w"))
    ref = _reference("gmm", table, table[["x1"]].assign(const=1.0), cov, cluster)
    for name in ("d", "x1", "const"):
        assert est.coef_[name] == pytest.approx(ref.params[name], rel=DIGITS)
        assert est.std_errors_[name] == pytest.approx(ref.std_errors[name], rel=DIGITS)


@pytest.mark.parametrize("cov,cluster", COVS)
def test_gmm_absorbed_coefficients_equal_the_dummies(table, cov, cluster):
    """The estimates equal the dummies' exactly; the standard errors are GMM's on the demeaned rows
    (ivreghdfe's way), which differ from the dummies' under robust weights (docs/linear-iv.md)."""
    est = make_estimator("gmm-iv", cov_type=cov, cluster=cluster).fit(_data(table, absorb="g", weights="w"))
    ref = _reference("gmm", table, _dummies(table, ["g"]), cov, cluster)
    assert est.coef_["d"] == pytest.approx(ref.params["d"], rel=DIGITS)
    if cov == "unadjusted":
        assert est.std_errors_["d"] == pytest.approx(ref.std_errors["d"], rel=DIGITS)


def test_two_absorbed_columns_equal_their_dummies(table):
    est = make_estimator("2sls", cov_type="clustered-cr1", cluster="cl").fit(_data(table, absorb=["g", "h"]))
    ref = _reference("2sls", table, _dummies(table, ["g", "h"]), "clustered-cr1", "cl", weights=False)
    assert est.coef_["d"] == pytest.approx(ref.params["d"], rel=DIGITS)
    assert est.std_errors_["d"] == pytest.approx(ref.std_errors["d"], rel=DIGITS)


def test_fuller_alpha_acts(table):
    est = make_estimator("fuller", f_params={"alpha": 4}).fit(_data(table))
    ref = _reference("fuller", table, table[["x1"]].assign(const=1.0), "unadjusted", None, weights=False, alpha=4)
    assert est.coef_["d"] == pytest.approx(ref.params["d"], rel=DIGITS)
    assert est.coef_["d"] != pytest.approx(make_estimator("fuller").fit(_data(table)).coef_["d"], rel=1e-6)
    with pytest.raises(DMLCoreError, match="alpha"):
        make_estimator("fuller", f_params={"alpha": -1}).fit(_data(table))
    with pytest.raises(DMLCoreError, match="Unknown Fuller setting"):
        make_estimator("fuller", f_params={"kappa": 1})


def test_cr1_is_cr0_times_stata_factor(table):
    data = _data(table)
    cr0 = make_estimator("2sls", cov_type="clustered", cluster="cl").fit(data).std_errors_["d"]
    cr1 = make_estimator("2sls", cov_type="clustered-cr1", cluster="cl").fit(data).std_errors_["d"]
    n, k, g = len(table), 3, table["cl"].nunique()
    assert cr1 == pytest.approx(cr0 * np.sqrt(g / (g - 1) * (n - 1) / (n - k)), rel=1e-12)


def test_two_way_clustering_is_cameron_gelbach_miller_by_hand(table):
    data = _data(table)
    est = make_estimator("2sls", cov_type="clustered", cluster="cl,cl2").fit(data)
    # by hand: V = B (S_1 + S_2 - S_12) B with S_c the CR0 meat of the clustering c
    x = np.column_stack([np.ones(len(table)), table[["d", "x1"]]])
    z = np.column_stack([np.ones(len(table)), table[["z1", "z2", "x1"]]])
    x_hat = z @ np.linalg.lstsq(z, x, rcond=None)[0]
    beta = np.linalg.solve(x_hat.T @ x, x_hat.T @ table["y"].to_numpy())
    score = x_hat * (table["y"].to_numpy() - x @ beta)[:, None]
    bread = np.linalg.inv(x_hat.T @ x_hat)

    def meat(groups):
        sums = pd.DataFrame(score).groupby(np.asarray(groups)).sum().to_numpy()
        return sums.T @ sums

    both = table["cl"].astype(str) + "/" + table["cl2"].astype(str)
    v = bread @ (meat(table["cl"]) + meat(table["cl2"]) - meat(both)) @ bread
    assert est.std_errors_["d"] == pytest.approx(np.sqrt(v[1, 1]), rel=DIGITS)
    assert "'cl' and 'cl2'" in est.interval_how(1.96)
    with pytest.raises(DMLCoreError, match="two-way"):
        make_estimator("gmm-iv", cov_type="clustered", cluster="cl,cl2").fit(data)
    with pytest.raises(DMLCoreError, match="one column or two"):
        make_estimator("2sls", cov_type="clustered", cluster="cl,cl2,g").fit(data)


@pytest.mark.parametrize("cov,cluster", COVS)
def test_diagnostics_and_anderson_rubin_with_absorption_equal_dummies(table, cov, cluster):
    absorbed = _data(table, absorb="g", weights="w")
    dummies = CausalData(table, "iv", "y", treatment="d", instrument=["z1", "z2"], covariates=["x1", "g"],
                         categorical="g", weights="w")
    a, b = (first_stage(d, nonparametric=False, cov_type=cov, cluster=cluster) for d in (absorbed, dummies))
    assert a["absorbed_df"] == 12
    assert a["treatments"]["d"]["f_stat"] == pytest.approx(b["treatments"]["d"]["f_stat"], rel=DIGITS)
    assert a["treatments"]["d"]["partial_r2"] == pytest.approx(b["treatments"]["d"]["partial_r2"], rel=DIGITS)
    assert a["treatments"]["d"]["df_denom"] == b["treatments"]["d"]["df_denom"]
    for key in ("effective_f", "kleibergen_paap_f"):
        assert a["inference"][key] == pytest.approx(b["inference"][key], rel=DIGITS)
    assert a["inference"]["kleibergen_paap"]["stat"] == pytest.approx(b["inference"]["kleibergen_paap"]["stat"],
                                                                      rel=DIGITS)
    fa, fb = (a["inference"]["endogenous"]["d"], b["inference"]["endogenous"]["d"])
    assert fa["f_stat_cov"] == pytest.approx(fb["f_stat_cov"], rel=DIGITS)
    assert fa["f_cov_pvalue"] == pytest.approx(fb["f_cov_pvalue"], rel=1e-6, abs=1e-300)
    for test in ("sargan", "basmann", "wooldridge", "hansen_j"):
        ta, tb = a["inference"]["overid"][test], b["inference"]["overid"][test]
        assert (ta is None) == (tb is None) == (test == "hansen_j" and cov == "unadjusted")
        if ta is not None:
            assert ta["stat"] == pytest.approx(tb["stat"], rel=DIGITS)
            assert ta["pvalue"] == pytest.approx(tb["pvalue"], rel=1e-8)
    sa, sb = anderson_rubin_set(absorbed, cov, cluster), anderson_rubin_set(dummies, cov, cluster)
    assert np.allclose(np.array(sa["pieces"], dtype=float), np.array(sb["pieces"], dtype=float), rtol=1e-8)


def test_overidentification_labels_and_a_cluster_robust_hansen_j(table):
    data = _data(table)
    plain = first_stage_inference(data, "unadjusted")["overid"]
    assert plain["hansen_j"] is None and plain["sargan"]["robust_to"] == "homoskedastic errors only"
    clustered = first_stage_inference(data, "clustered", "cl")
    robust = first_stage_inference(data, "robust")
    j = clustered["overid"]["hansen_j"]
    ref = IVGMM(table.y, table[["x1"]].assign(const=1.0), table.d, table[["z1", "z2"]], weight_type="clustered",
                clusters=table.cl).fit(cov_type="clustered", clusters=table.cl).j_stat
    assert j["stat"] == pytest.approx(ref.stat, rel=DIGITS) and j["robust_to"] == "cluster-robust"
    assert j["stat"] != pytest.approx(robust["overid"]["hansen_j"]["stat"], rel=1e-3)
    assert clustered["overid"]["wooldridge"]["robust_to"].endswith("not cluster-robust")
    assert any("none is cluster-robust" in note for note in clustered["notes"])
    assert not any("cluster-robust" in note for note in robust["notes"])


def test_predict_adds_the_fixed_effects_mean(table):
    data = _data(table, absorb="g", weights="w")
    est = make_estimator("2sls").fit(data)
    resid = table["y"] - est.predict(table[["d", "x1"]])
    assert np.average(resid, weights=table["w"]) == pytest.approx(0.0, abs=1e-10)


def test_the_registry_says_which_methods_take_the_options(table):
    from dmlcore.estimators import METHODS
    data = _data(table, weights="w")
    takers = {name for name, m in METHODS.items() if m.refusal(data) is None}
    assert takers == {"2sls", "liml", "fuller", "gmm-iv"}
    assert "takes no absorbed fixed effects or weights" in METHODS["kiv"].refusal(data)
    assert {name for name, m in METHODS.items() if m.refusal(_data(table)) is None} > takers


def test_bad_options_are_refused_in_one_line(table):
    with pytest.raises(DMLCoreError, match=r"apply to the linear IV estimators \(Fuller, GMMIV, LIML, "
                                           r"TwoStageLeastSquares\) only, not to DMLCMR"):
        make_estimator("dml-cmr", learner="linear", folds=2).fit(_data(table, absorb="g"))
    with pytest.raises(DMLCoreError, match="has a role and cannot also be the absorbed column"):
        _data(table, absorb="x1")
    with pytest.raises(DMLCoreError, match="weights must be positive"):
        _data(table.assign(w=table["w"] - 1.0), weights="w")
    with pytest.raises(DMLCoreError, match="one or two columns"):
        _data(table.assign(k=0), absorb=["g", "h", "cl"])
    grouped = table.assign(xg=table["g"] * 2.0)
    with pytest.raises(DMLCoreError, match="'xg' is constant within the groups of 'g'"):
        make_estimator("2sls").fit(CausalData(grouped, "iv", "y", treatment="d", instrument=["z1"],
                                              covariates=["xg"], absorb="g"))
    with pytest.raises(DMLCoreError, match="heldout_folds=2 is not computed with --absorb"):
        fit_run(_data(table, absorb="g"), "2sls", heldout_folds=2)


def test_a_run_records_the_options_and_says_why_no_debiased_effect(table):
    run = fit_run(_data(table, absorb="g", weights="w"), "liml", cov_type="clustered-cr1", cluster="cl")
    rec = run.record
    assert rec["absorb"] == ["g"] and rec["weights"] == "w" and rec["heldout"] is None
    assert "absorbed fixed effects, weights or two-way clusters" in rec["effect"]["debiased_error"]
    assert rec["effect"]["interval"].startswith("LIML:") and "CR1" in rec["effect"]["interval"]
    assert "fixed effects of 'g' absorbed" in rec["effect"]["interval"]
    ar = next(i for i in rec["effect"]["intervals"] if i["interval"].startswith("Anderson-Rubin"))
    assert ar["interval"].startswith("Anderson-Rubin set (clustered by 'cl', CR1; robust")   # the set's errors, named whole
    assert rec["coefficients"]["d"] == pytest.approx(run.estimator.coef_["d"])
    # a subset (bootstrap, refits) keeps the options
    assert dataclasses.asdict(run.data.subset(np.arange(300)))["absorb"] == ["g"]


# ------------------------------------------------------------------ CLR against ivmodels (a test dependency)
def _weak(a, seed=3, n=400):
    rng = np.random.default_rng(seed)
    z, u = rng.normal(size=(n, 2)), rng.normal(size=n)
    d = a * z[:, 0] + u + rng.normal(size=n)
    return pd.DataFrame(dict(y=d + u + rng.normal(size=n), d=d, z1=z[:, 0], z2=z[:, 1]))


@pytest.mark.parametrize("instruments,covariates", [(["z1"], ["x1"]), (["z1", "z2"], ["x1"]), (["z1", "z2", "x1"], [])])
def test_clr_test_and_set_equal_ivmodels(table, instruments, covariates):
    ivtests = pytest.importorskip("ivmodels.tests")
    from dmlcore.inference.linear_iv import clr_set, clr_test
    data = CausalData(table, "iv", "y", treatment="d", instrument=instruments, covariates=covariates)
    c = table[covariates].to_numpy() if covariates else None
    for beta in (1.0, 1.5, 2.5):
        ours = clr_test(data, beta)
        stat, pvalue = ivtests.conditional_likelihood_ratio_test(
            table[instruments].to_numpy(), table[["d"]].to_numpy(), table["y"].to_numpy(), np.array([beta]), C=c,
            tol=1e-12)
        assert ours["statistic"] == pytest.approx(stat, rel=1e-9)
        if pvalue > 1e-6:
            assert ours["pvalue"] == pytest.approx(pvalue, rel=1e-6)
    ref = ivtests.inverse_conditional_likelihood_ratio_test(
        table[instruments].to_numpy(), table[["d"]].to_numpy(), table["y"].to_numpy(), alpha=0.05, C=c, tol=1e-12)
    ours = clr_set(data)
    assert ours["kind"] == "bounded" and ours["robust_to"].startswith("homoskedastic")
    ends = ref.boundaries[0] if hasattr(ref, "boundaries") else sorted(np.ravel(ref._boundary()))   # one instrument: a quadric
    assert np.allclose(ours["pieces"][0], ends, rtol=1e-6)


@pytest.mark.parametrize("strength", [0.05, 0.15, 0.2])
def test_clr_set_is_unbounded_exactly_when_ivmodels_says_so(strength):
    ivtests = pytest.importorskip("ivmodels.tests")
    from dmlcore.inference.linear_iv import clr_set
    frame = _weak(strength)
    ours = clr_set(CausalData(frame, "iv", "y", treatment="d", instrument=["z1", "z2"]))
    ref = ivtests.inverse_conditional_likelihood_ratio_test(frame[["z1", "z2"]].to_numpy(), frame[["d"]].to_numpy(),
                                                            frame["y"].to_numpy(), alpha=0.05, tol=1e-12)
    expected = [[None if not np.isfinite(v) else v for v in piece] for piece in ref.boundaries]
    assert len(ours["pieces"]) == len(expected)
    for mine, theirs in zip(ours["pieces"], expected):
        for a, b in zip(mine, theirs):
            assert (a is None and b is None) or a == pytest.approx(b, rel=1e-6)


def test_clr_p_value_is_moreiras_conditional_distribution():
    """By simulation of its definition, as a check on the quadrature independent of ivmodels."""
    from dmlcore.inference.linear_iv import clr_pvalue
    rng = np.random.default_rng(0)
    q1, s = rng.chisquare(1, 400_000), rng.chisquare(2, 400_000)
    lam, m = 4.0, 3.0
    lr = 0.5 * (q1 + s - lam + np.sqrt((q1 + s + lam) ** 2 - 4 * s * lam))
    assert float(clr_pvalue(m, lam, 3)) == pytest.approx(np.mean(lr > m), abs=4e-3)
    assert float(clr_pvalue(m, lam, 1)) == pytest.approx(float(__import__("scipy").stats.chi2.sf(m, 1)))


# ------------------------------------------------------------------ wild cluster bootstrap (WRE)
def test_wild_bootstrap_draws_equal_linearmodels_refits_of_davidson_mackinnon(table):
    """Each vectorised draw (exogenous columns partialled out) equals a linearmodels 2SLS refit of the
    draw built in the full model as Davidson & MacKinnon (2010) write it."""
    from dmlcore.inference.wild_bootstrap import _Draws, _parts
    data = _data(table)
    b0 = 1.2
    boot = _Draws(*_parts(data, "cl"), draws=99, weights="webb", seed=1)
    t_star = boot.draw_t(b0)
    x = table[["x1"]].assign(const=1.0)
    restricted = IV2SLS(table.y - b0 * table.d, x, None, None).fit()
    u = restricted.resids.to_numpy()
    reduced = IV2SLS(table.d, pd.concat([x, table[["z1", "z2"]], pd.Series(u, name="u")], axis=1), None,
                     None).fit()
    part = reduced.params.drop("u")
    fitted = pd.concat([x, table[["z1", "z2"]]], axis=1)[part.index].to_numpy() @ part.to_numpy()
    v = table.d.to_numpy() - fitted
    for b in range(5):
        w = boot.w[:, b]
        d_star = fitted + v * w
        y_star = b0 * d_star + restricted.params["const"] + restricted.params["x1"] * table.x1.to_numpy() + u * w
        fit = IV2SLS(pd.Series(y_star, name="y"), x, pd.Series(d_star, name="d"), table[["z1", "z2"]]).fit(
            cov_type="clustered", clusters=table.cl, debiased=False)
        assert t_star[b] == pytest.approx((fit.params["d"] - b0) / fit.std_errors["d"], rel=1e-9)


def test_wild_bootstrap_p_value_interval_and_refusals(table):
    from dmlcore.inference.wild_bootstrap import wild_cluster_bootstrap
    data = _data(table)
    est = make_estimator("2sls", cov_type="clustered", cluster="cl").fit(data)
    at_estimate = wild_cluster_bootstrap(data, "cl", beta0=float(est.coef_["d"]), draws=199, interval=False)
    assert at_estimate["pvalue"] == 1.0 and at_estimate["t"] == pytest.approx(0.0, abs=1e-9)
    far = wild_cluster_bootstrap(data, "cl", beta0=0.0, draws=199, seed=2)
    assert far["weights"] == "rademacher"          # 40 clusters; Webb's below 12
    assert far["pvalue"] < 0.01 and far["t"] == pytest.approx(est.coef_["d"] / est.std_errors_["d"], rel=1e-9)
    lo, hi = far["interval"]
    assert lo < est.coef_["d"] < hi
    wald = 1.96 * est.std_errors_["d"]
    assert 0.5 * wald < (hi - lo) / 2 < 2 * wald          # same scale as the Wald interval (strong instruments)
    assert wild_cluster_bootstrap(data, "cl", beta0=lo - 0.02 * wald, draws=199, seed=2, interval=False)["pvalue"] < 0.05
    assert wild_cluster_bootstrap(data, "cl", beta0=lo + 0.02 * wald, draws=199, seed=2, interval=False)["pvalue"] >= 0.05
    with pytest.raises(DMLCoreError, match="one column"):
        wild_cluster_bootstrap(data, "cl,cl2")
    with pytest.raises(DMLCoreError, match="99 to 99,999 draws"):
        wild_cluster_bootstrap(data, "cl", draws=10)


def test_the_row_bootstrap_keeps_fixed_effects_and_weights(table):
    data = _data(table, absorb="g", weights="w")
    run = fit_run(data, "2sls", bootstrap=30, seed=1)
    effect = run.record["effect"]
    assert effect.get("bootstrap") and effect["ci_lower"] < run.estimator.coef_["d"] < effect["ci_upper"]
    # the refits on resampled rows are weighted and absorbed: their spread is near the 2SLS standard error
    spread = (effect["ci_upper"] - effect["ci_lower"]) / (2 * 1.96)
    assert 0.4 < spread / run.estimator.std_errors_["d"] < 2.5


@pytest.mark.parametrize("column,match", [
    ("nowhere", "Absorbed column 'nowhere' is not in the table"),
    ("one", "Absorbed column 'one' has a single level, which the constant already absorbs"),
    ("row", "Absorbed column 'row' has a different value in every row"),
    ("gap", "Absorbed column 'gap' has 1 missing value"),
])
def test_an_unusable_absorbed_column_is_refused_naming_it(column, match):
    from dmlcore.stats.fixed_effects import check_absorb

    table = pd.DataFrame({"one": np.ones(6), "row": np.arange(6.0), "gap": [1.0, 1.0, np.nan, 2.0, 2.0, 2.0]})
    with pytest.raises(DMLCoreError, match=match):
        check_absorb(table, [column])
