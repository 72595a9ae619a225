"""Linear-IV inference: instrument checks, covariance choice, effective F, Anderson-Rubin sets."""

import json

import numpy as np
import pandas as pd
import pytest
from linearmodels.iv import IV2SLS

from dmlcore import cli
from dmlcore.data.registry import load_dataset
from dmlcore.data.roles import CausalData
from dmlcore.data.simulate import simulate_demand_pcl
from dmlcore.inference.first_stage import first_stage
from dmlcore.errors import DMLCoreError
from dmlcore.estimators.tsls import TwoStageLeastSquares
from dmlcore.stats.covariance import check_covariance
from dmlcore.inference.linear_iv import anderson_rubin_set, first_stage_inference, linear_iv, set_kind
from dmlcore.runs import fit_run


@pytest.fixture(scope="module")
def card():
    return load_dataset("card").data


def _table(n=400, pi=1.0, seed=0, instruments=1):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, instruments))
    u, x = rng.normal(size=(2, n))
    d = z @ np.full(instruments, pi) + u + 0.5 * x + rng.normal(size=n)
    y = 0.5 * d + 2 * u + x + rng.normal(size=n) * (1 + np.abs(x))      # heteroskedastic
    table = pd.DataFrame({"y": y, "d": d, "x": x, "g": rng.integers(0, 40, size=n)})
    for j in range(instruments):
        table[f"z{j}"] = z[:, j]
    return table


def _data(table, instruments=("z0",)):
    return CausalData(table, "iv", "y", treatment="d", instrument=list(instruments), covariates=["x"])


# ------------------------------------------------------------------ part 1: instrument checks
@pytest.mark.parametrize("make", [lambda t: t["d"], lambda t: 2 * t["d"] - t["x"] + 1])
def test_an_instrument_that_explains_the_treatment_is_refused(make):
    table = _table().assign(zc=make)
    with pytest.raises(DMLCoreError, match=r"Column 'zc' \(instrument\) explains the treatment 'd' perfectly"):
        _data(table, ("zc",))
    with pytest.raises(DMLCoreError, match="explains the treatment"):       # also among good instruments
        _data(table, ("z0", "zc"))


def test_copied_instrument_refused_by_the_cli(tmp_path, capsys):
    path = tmp_path / "copy.csv"
    _table().assign(zc=lambda t: t["d"]).to_csv(path, index=False)
    code = cli.main(["fit", "--csv", str(path), "--outcome", "y", "--treatment", "d", "--instrument", "zc",
                     "--method", "2sls"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "explains the treatment 'd' perfectly" in err


def test_an_outcome_proxy_copied_by_a_treatment_proxy_is_refused():
    data = simulate_demand_pcl(n=300, seed=0).data
    table = data.table.assign(z_copy=data.table[data.outcome_proxy[0]])
    with pytest.raises(DMLCoreError, match="explains the outcome proxy"):
        CausalData(table, "pcl", data.outcome, treatment=data.treatment, treatment_proxy=["z_copy"],
                   outcome_proxy=data.outcome_proxy, covariates=data.covariates)


def test_first_stage_f_is_positive_and_finite_when_nearly_perfect():
    table = _table()
    table["zn"] = table["d"] + 1e-7 * np.random.default_rng(1).normal(size=len(table))
    d = first_stage(_data(table, ("zn",)), nonparametric=False, inference=False)["treatments"]["d"]
    assert np.isfinite(d["f_stat"]) and d["f_stat"] > 1e10 and 0 < d["partial_r2"] <= 1


# ------------------------------------------------------------------ part 2: covariance choice
def _card_reference(card, cov, **kwargs):
    t = card.table.assign(const=1.0)
    return IV2SLS(t[card.outcome], t[["const"] + card.covariates], t[card.treatment], t[card.instrument]).fit(
        cov_type=cov, **kwargs)


@pytest.mark.parametrize("cov, cluster", [("unadjusted", None), ("robust", None), ("clustered", "smsa66")])
def test_2sls_intervals_on_card_equal_linearmodels(card, cov, cluster):
    run = fit_run(card, "2sls", heldout_folds=0, cov_type=cov, cluster=cluster)
    kwargs = {"clusters": pd.factorize(card.table[cluster])[0]} if cluster else {}
    ref = _card_reference(card, cov, **kwargs).conf_int().loc["educ"]
    effect = run.record["effect"]
    assert effect["ci_lower"] == pytest.approx(ref["lower"], abs=1e-10)
    assert effect["ci_upper"] == pytest.approx(ref["upper"], abs=1e-10)
    assert cov in effect["interval"] and run.record["config"]["cov_type"] == cov
    assert run.record["diagnostics"]["inference"]["cov_type"] == cov


def test_the_covariance_changes_the_interval(card):
    widths = {cov: TwoStageLeastSquares(cov_type=cov, cluster="reg662" if cov == "clustered" else None)
              .fit(card).std_errors_["educ"] for cov in ("unadjusted", "robust", "clustered")}
    assert len({round(w, 8) for w in widths.values()}) == 3


@pytest.mark.parametrize("cov, cluster, match", [
    ("sandwich", None, "Unknown covariance 'sandwich'"),
    ("clustered", None, "needs a cluster column"),
    ("robust", "g", "used only with the clustered covariance"),
    ("clustered", "one", "single level"),
    ("clustered", "row", "different value in every row"),
    ("clustered", "nope", "Cluster column 'nope' is not in the table"),
])
def test_bad_covariance_choices(cov, cluster, match):
    table = _table().assign(one=1, row=lambda t: np.arange(len(t)))
    with pytest.raises(DMLCoreError, match=match):
        check_covariance(cov, cluster, table)
    with pytest.raises(DMLCoreError, match=match):         # before any fit
        fit_run(_data(table), "2sls", cov_type=cov, cluster=cluster)


@pytest.mark.parametrize("argv, words", [
    (["--cov", "clustered", "--cluster", "one"], "single level"),
    (["--cov", "clustered", "--cluster", "row"], "different value in every row"),
    (["--cov", "clustered"], "needs a cluster column"),
])
def test_bad_cluster_on_the_cli(tmp_path, capsys, argv, words):
    path = tmp_path / "t.csv"
    _table().assign(one=1, row=lambda t: np.arange(len(t))).to_csv(path, index=False)
    code = cli.main(["fit", "--csv", str(path), "--outcome", "y", "--treatment", "d", "--instrument", "z0",
                     "--method", "2sls", *argv])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and words in err


# ------------------------------------------------------------------ first-stage inference
def test_effective_f_equals_a_hand_computation():
    table = _table(n=500, pi=0.3, instruments=3)
    data = _data(table, ("z0", "z1", "z2"))
    out = first_stage_inference(data, "robust")
    # by hand: partial the constant and x out, first stage by least squares, HC0 sandwich scaled
    # by n / (n - k) (linearmodels' debiased robust covariance), F_eff = pi'Q pi / tr(V Q)
    n = len(table)
    x = np.column_stack([np.ones(n), table["x"]])
    z = table[["z0", "z1", "z2"]].to_numpy()
    full = np.column_stack([x, z])
    coef = np.linalg.lstsq(full, table["d"].to_numpy(), rcond=None)[0]
    v_hat = table["d"].to_numpy() - full @ coef
    bread = np.linalg.inv(full.T @ full)
    cov = bread @ (full.T * v_hat ** 2) @ full @ bread * n / (n - full.shape[1])
    pi, v = coef[2:], cov[2:, 2:]
    z_t = z - x @ np.linalg.lstsq(x, z, rcond=None)[0]
    q = z_t.T @ z_t / n
    assert out["effective_f"] == pytest.approx(pi @ q @ pi / np.trace(v @ q), rel=1e-10)
    # homoskedastic: the effective F is the usual first-stage F
    plain = first_stage_inference(data, "unadjusted")
    assert plain["effective_f"] == pytest.approx(first_stage(data, nonparametric=False)["treatments"]["d"]["f_stat"],
                                                 rel=1e-9)
    assert set(out["overid"]) == {"sargan", "basmann", "wooldridge", "hansen_j"}
    assert 0 <= out["overid"]["wooldridge"]["pvalue"] <= 1


def test_card_diagnostics_show_the_effective_f_and_label_by_it(card):
    out = first_stage(card, nonparametric=False, cov_type="robust")
    assert out["strength"]["statistic"] == "effective F (robust)"
    assert out["strength"]["f_stat"] == pytest.approx(out["inference"]["effective_f"])
    assert out["inference"]["overid"] is None           # one instrument, one treatment
    assert out["treatments"]["educ"]["f_stat"] == pytest.approx(13.2558, rel=1e-4)   # unchanged contract


def test_proxy_diagnostics_on_rhc():
    rhc = load_dataset("rhc").data
    out = first_stage(rhc, nonparametric=False, inference=False)
    assert set(out["outcome_proxies"]) == set(rhc.outcome_proxy) and out["instruments"] == rhc.treatment_proxy
    assert "not a test of the completeness" in out["note"]
    for d in out["outcome_proxies"].values():
        assert 0 <= d["partial_r2"] <= 1 and d["f_stat"] > 0
    # the rank version is no larger than the weakest single column's F
    assert out["cragg_donald_f"] <= min(d["f_stat"] for d in out["outcome_proxies"].values()) + 1e-9
    assert out["weak"] and "treatment proxies" in out["warning"] and "Anderson" not in out["warning"]


# ------------------------------------------------------------------ Anderson-Rubin
def _ar_grid(data, cov, cluster, grid, level=0.95):
    """AR(b) <= critical value at each b of ``grid``, from linearmodels regressions of y - b d."""
    from scipy.stats import chi2, f as f_dist
    model = linear_iv(data, cluster)
    regressors = pd.concat([model.exog, model.instruments], axis=1)
    names = list(model.instruments.columns)
    q = len(names)
    kwargs = {"clusters": model.clusters} if cov == "clustered" else {}
    inside = []
    for b in grid:
        fit = IV2SLS(model.y - b * model.endog.iloc[:, 0], regressors, None, None).fit(
            cov_type=cov, debiased=cov == "unadjusted", **kwargs)
        p = fit.params[names].to_numpy()
        wald = p @ np.linalg.solve(fit.cov.loc[names, names].to_numpy(), p)
        crit = q * f_dist.ppf(level, q, fit.df_resid) if cov == "unadjusted" else chi2.ppf(level, q)
        inside.append(wald <= crit)
    return np.array(inside)


def _in_pieces(grid, pieces):
    lo = np.array([-np.inf if p[0] is None else p[0] for p in pieces])
    hi = np.array([np.inf if p[1] is None else p[1] for p in pieces])
    return np.array([bool(np.any((lo <= b) & (b <= hi))) for b in grid])


def _assert_matches_grid(data, cov, cluster, grid):
    ar = anderson_rubin_set(data, cov, cluster)
    expected = _ar_grid(data, cov, cluster, grid)
    ends = [e for p in ar["pieces"] for e in p if e is not None]
    near = np.array([any(abs(b - e) < 1e-6 * (1 + abs(e)) for e in ends) for b in grid])
    np.testing.assert_array_equal(_in_pieces(grid, ar["pieces"])[~near], expected[~near])
    return ar


@pytest.mark.parametrize("cov, cluster", [("unadjusted", None), ("robust", None), ("clustered", "smsa66")])
def test_ar_set_on_card_equals_a_grid_inversion(card, cov, cluster):
    ar = _assert_matches_grid(card, cov, cluster, np.linspace(-0.4, 0.6, 41))
    assert ar["kind"] == "bounded" and ar["pieces"][0][0] < 0.1315 < ar["pieces"][0][1]


def test_ar_set_shapes_under_weak_instruments_match_the_grid():
    kinds = set()
    for seed in range(6):
        data = _data(_table(n=200, pi=0.08, seed=seed))
        for cov in ("unadjusted", "robust"):
            ar = _assert_matches_grid(data, cov, None, np.linspace(-40, 40, 41))
            kinds.add(ar["kind"])
            assert ar["text"].startswith("The 95% Anderson-Rubin set")
    assert {"two rays", "everything"} <= kinds


def test_ar_set_with_several_instruments_equals_the_grid():
    data = _data(_table(n=300, pi=0.25, seed=3, instruments=3), ("z0", "z1", "z2"))
    for cov in ("unadjusted", "robust"):
        _assert_matches_grid(data, cov, None, np.linspace(-5, 5, 41))


def test_ar_set_refuses_problems_without_one_treatment():
    with pytest.raises(DMLCoreError, match="one treatment column of an IV problem"):
        anderson_rubin_set(simulate_demand_pcl(n=200).data)


def test_set_kind():
    assert set_kind([]) == "empty" and set_kind([[None, None]]) == "everything"
    assert set_kind([[None, -1.0], [2.0, None]]) == "two rays" and set_kind([[0.0, 1.0]]) == "bounded"


def test_ar_entry_in_the_record_is_json_and_never_the_headline(card, tmp_path, capsys):
    out = tmp_path / "rec.json"
    assert cli.main(["fit", "--dataset", "card", "--method", "2sls", "--heldout-folds", "0", "--cov", "robust",
                     "--json", str(out)]) == 0
    assert "anderson_rubin=[" in capsys.readouterr().out
    effect = json.loads(out.read_text())["effect"]
    ar = next(e for e in effect["intervals"] if e["interval"].startswith("Anderson-Rubin"))
    sources = [e.get("source") for e in effect["intervals"]]
    assert ar["kind"] == "bounded" and sources.index("debiased") > effect["intervals"].index(ar)   # listed, after 2SLS's
    assert ar["set"] == [[ar["ci_lower"], ar["ci_upper"]]]
    assert effect["interval"].startswith("2SLS") and effect["ci_lower"] == effect["intervals"][0]["ci_lower"]
