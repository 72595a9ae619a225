"""The teaching experiments (dmlcore.teaching): each test fails when the mechanism it shows breaks."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dmlcore.data.roles import CausalData
from dmlcore.inference.first_stage import LEE_T_TEST_F, STOCK_YOGO_SIZE_10, WEAK_F, first_stage, strength_label
from dmlcore.errors import DMLCoreError
from dmlcore.estimators.tsls import TwoStageLeastSquares
from dmlcore.teaching import forbidden, iv, nuisance, proximal
from dmlcore.teaching.measured import measured


# ---------------------------------------------------------------- strength labels
def test_strength_label_thresholds_and_sources():
    assert (WEAK_F, LEE_T_TEST_F, STOCK_YOGO_SIZE_10[1]) == (10.0, 104.7, 16.38)
    assert strength_label(9.99).level == "weak"
    assert strength_label(float("nan")).level == "weak"
    assert strength_label(10.0).level == "moderate"
    assert strength_label(104.69).level == "moderate"
    assert strength_label(104.7).level == "strong"
    weak, moderate = strength_label(3.2), strength_label(26.4)
    assert "Staiger-Stock" in weak.text and "Anderson-Rubin" in weak.text and "3.2" in weak.text
    assert "Lee et al. 2022" in moderate.text and "above Stock-Yogo's 16.38" in moderate.text
    assert "below 19.93 (Stock-Yogo's critical value for 2 instruments" in strength_label(18.0, 2).text
    assert "Stock-Yogo" not in strength_label(18.0, 7).text       # no critical value tabled here
    # with several instruments the bar is Stock-Yogo's, not Lee et al.'s one-instrument 104.7 (issue 26)
    four = strength_label(50.0, 4)
    assert four.level == "strong" and "24.58" in four.text and "does not apply" in four.text
    assert strength_label(24.0, 4).level == "moderate"
    # robust errors and several instruments: no tabled bar, so never "strong" by a homoskedastic table
    assert strength_label(500.0, 2, cov_type="robust").level == "moderate"


def test_first_stage_reports_the_label_of_its_weakest_f():
    rng = np.random.default_rng(0)
    z = rng.standard_normal(400)
    for pi, level in ((0.02, "weak"), (0.3, "moderate"), (2.0, "strong")):
        a = pi * z + rng.standard_normal(400)
        table = pd.DataFrame({"y": a + rng.standard_normal(400), "a": a, "z": z})
        out = first_stage(CausalData(table, "iv", outcome="y", treatment="a", instrument="z"), nonparametric=False)
        assert out["strength"]["level"] == level, (pi, out["treatments"]["a"]["f_stat"])
        assert out["strength"]["text"] == strength_label(out["strength"]["f_stat"], 1).text
        assert out["weak"] == (level == "weak") and (out["warning"] is not None) == (level == "weak")


# ---------------------------------------------------------------- linear IV
def test_closed_form_2sls_and_f_match_the_tools_own():
    d = iv.build(iv.draw_noise(300, 1, seed=3), pi=0.4, rho=0.7)
    z, a, y = d["z"][0, :, 0], d["a"][0], d["y"][0]
    data = CausalData(pd.DataFrame({"y": y, "a": a, "z": z}), "iv", outcome="y", treatment="a", instrument="z")
    tool = TwoStageLeastSquares().fit(data)
    ours = iv.tsls(z, a, y)
    assert float(ours["slope"]) == pytest.approx(float(pd.Series(tool.coef_)["a"]), rel=1e-9)
    assert float(ours["f_stat"]) == pytest.approx(first_stage(data, nonparametric=False)["treatments"]["a"]["f_stat"],
                                                  rel=1e-9)


def test_ols_bias_grows_with_confounding_and_2sls_does_not_move():
    exp = iv.confounding(rhos=(0.0, 0.3, 0.6, 0.9), n=300, draws=100)
    s = exp.summary
    ols, tsls = s[s["estimator"] == "OLS"], s[s["estimator"] == "2SLS"]
    bias = (ols["median"] - exp.truth).to_numpy()
    assert np.all(np.diff(bias) > 0.05) and abs(bias[0]) < 0.02
    assert np.allclose(ols["median"], ols["large-sample value"], atol=0.03)
    assert np.all(np.abs(tsls["median"] - exp.truth) < 0.03)


def test_2sls_drifts_toward_ols_as_f_falls_and_ar_keeps_its_level():
    exp = iv.weak_instruments((1.5, 3.0, 10.0, 50.0), instruments=4, n=200, draws=400)
    s = exp.summary
    rel = s["relative median bias"].to_numpy()
    assert np.all(np.diff(rel) < 0) and rel[0] > 0.4 and rel[2] < 0.15
    assert s["median F"].iloc[2] == pytest.approx(10, rel=0.2)
    assert s["2SLS interval coverage"].iloc[0] < 0.8
    assert s["AR coverage"].between(0.92, 0.98).all()
    assert s["AR unbounded"].iloc[0] > 0.5 and s["AR unbounded"].iloc[-1] == 0


def test_ar_set_is_the_inversion_of_the_ar_test():
    d = iv.build(iv.draw_noise(100, 60, seed=5), pi=0.15, rho=0.9)
    z, a, y = d["z"][..., 0], d["a"], d["y"]
    ar = iv.ar_interval(z, a, y)
    crit = iv.ar_critical(100)
    assert set(ar["shape"]) >= {"interval", "two half-lines"} or set(ar["shape"]) >= {"interval", "whole line"}
    bounded = ar["shape"] == "interval"
    assert np.array_equal(bounded, iv.first_stage_f(z, a) > crit)
    for beta0 in np.linspace(-6, 4, 41):
        inside = iv.ar_statistic(z, a, y, beta0) <= crit
        in_set = np.where(ar["shape"] == "interval", (ar["lower"] <= beta0) & (beta0 <= ar["upper"]),
                          np.where(ar["shape"] == "two half-lines", (beta0 <= ar["lower"]) | (beta0 >= ar["upper"]),
                                   ar["shape"] == "whole line"))
        assert np.array_equal(inside, in_set), beta0


def test_exclusion_violation_biases_2sls_by_direct_effect_over_first_stage():
    for pi in (0.5, 1.0):
        exp = iv.exclusion((0.0, 0.3), pi=pi, n=1000, draws=100)
        s = exp.summary[exp.summary["estimator"] == "2SLS"].set_index("direct effect")["median"]
        assert s[0.3] - s[0.0] == pytest.approx(0.3 / pi, abs=0.06)


def test_wald_ratio_is_2sls_with_a_binary_instrument():
    exp = iv.wald(seed=2)
    s = exp.summary.set_index("estimate")["slope"]
    (a0, y0), (a1, y1) = exp.params["means"]["off"], exp.params["means"]["on"]
    assert s["Wald ratio"] == pytest.approx((y1 - y0) / (a1 - a0), rel=1e-12)
    assert s["Wald ratio"] == pytest.approx(s["2SLS"], rel=1e-9)
    assert set(exp.draws["instrument"]) == {"on", "off"}
    assert abs(s["Wald ratio"] - exp.truth) < abs(s["OLS"] - exp.truth)


def test_wald_estimates_the_compliers_effect_not_the_ate():
    exp = iv.late(draws=100, compliers=0.4, always=0.3, effect_compliers=1.0, effect_always=3.0)
    med = exp.summary.set_index("estimator")["median"]
    assert exp.params["ate"] == pytest.approx(1.3)
    assert med["Wald"] == pytest.approx(1.0, abs=0.1)
    assert abs(med["treated minus untreated"] - 1.0) > 1.0
    with pytest.raises(DMLCoreError, match="compliers"):
        iv.late(compliers=0.8, always=0.4)


def test_settings_are_checked():
    with pytest.raises(DMLCoreError, match="rho"):
        iv.confounding(rhos=(1.5,))
    with pytest.raises(DMLCoreError, match="draws"):
        iv.weak_instruments(draws=1)
    with pytest.raises(DMLCoreError, match="expected_f"):
        iv.pi_for_f(0.5, 100)
    with pytest.raises(DMLCoreError, match="Unknown setting"):
        nuisance.compare_methods("other")


# ---------------------------------------------------------------- nonlinear and proximal
def test_forbidden_regression_recovers_the_flattened_curve():
    exp = forbidden.forbidden_regression(n=1000, draws=8, sigma=0.8)
    s = exp.summary.set_index("method")
    assert s.loc["forbidden", "slope ratio"] == pytest.approx(exp.params["flattening"], abs=0.1)
    assert s.loc["two-stage", "mse"] < 0.5 * s.loc["forbidden", "mse"]
    assert s.loc["regression", "slope ratio"] > 1.2            # confounded: too steep
    assert exp.params["flattening"] == pytest.approx(np.exp(-0.32))


def test_proximal_2sls_needs_both_proxies_and_an_unaffected_w():
    exp = proximal.proximal(n=1000, draws=60)
    med = exp.summary.set_index("estimator")["median"]
    assert abs(med["proximal 2SLS"] - exp.truth) < 0.15
    assert abs(med["Y on A"] - exp.truth) > 0.5 and abs(med["Y on A and W"] - exp.truth) > 0.3
    spread = exp.summary.set_index("estimator").eval("q75 - q25")
    assert spread["proximal 2SLS, Z dropped (noise)"] > 3 * spread["proximal 2SLS"]
    exact = proximal.proximal(n=1000, draws=60, proxy_noise=0.0).summary.set_index("estimator")["median"]
    assert abs(exact["Y on A and W"] - exp.truth) < 0.05          # a perfect proxy is U itself
    bent = proximal.proximal(n=1000, draws=60, kappa=0.2)
    assert bent.summary.set_index("estimator").loc["proximal 2SLS", "median"] == pytest.approx(
        bent.params["predicted"], abs=0.15)


# ---------------------------------------------------------------- the tool's estimators
def test_naive_and_ce_differ_only_in_the_target():
    from dmlcore.estimators.dml import CEDMLCMR, NaivePlugIn
    data = nuisance.simulate(200, 0)
    naive = NaivePlugIn("linear", f_model="linear").fit(data)
    ce = CEDMLCMR("linear", f_model="linear").fit(data)
    assert np.array_equal(naive.draws_, ce.draws_)
    assert np.array_equal(naive.targets_, data.table["sales"].to_numpy())
    assert not np.allclose(ce.targets_, naive.targets_)


def test_nuisance_errors_move_f_hat_at_first_order():
    exp = nuisance.orthogonality(n=300, seeds=1, epsilons=(0.0, 0.1, 0.2), folds=2)
    s = exp.summary.set_index(["perturbation", "method", "eps"])
    for method in nuisance.METHODS:
        assert s.loc[("s", method, 0.0), "change"] == 0
        for kind in nuisance.PERTURBATIONS:
            if kind == "s" and method == "naive":
                assert s.loc[(kind, method, 0.2), "change"] == 0         # no s-hat to perturb
                continue
            assert s.loc[(kind, method, 0.1), "change"] > 0.01
            assert s.loc[(kind, method, 0.2), "order"] == pytest.approx(1.0, abs=0.25)


def test_perturbations_do_what_they_say():
    t, x = np.arange(3.0), np.array([[0.0, 2.0], [1.0, 3.0], [2.0, 2.0]])
    delta = np.array([1.0, -1.0, 0.0])
    assert np.allclose(nuisance.perturb("s", 0.5, t, x, delta, 2.0, 1.0)[0], t + delta)
    assert np.allclose(nuisance.perturb("shift", 0.5, t, x, delta, 2.0, 4.0)[1], x + 2.0)
    widened = nuisance.perturb("widen", 1.0, t, x, delta, 2.0, 1.0)[1]
    assert np.allclose(widened.mean(1), x.mean(1)) and np.allclose(np.ptp(widened, 1), 2 * np.ptp(x, 1))


def test_cross_fitting_matters_when_the_nuisances_overfit():
    exp = nuisance.compare_methods("overfit", n=500, draws=2, folds=3)
    med = exp.summary.set_index("method")["median"]
    assert med["dml-cmr"] < 0.5 * med["ce-dml-cmr"]
    assert set(exp.draws["method"]) == set(nuisance.METHODS) and len(exp.draws) == 6
    assert exp.summary["lowest MSE on"].sum() == 2


# ---------------------------------------------------------------- measured benchmarks
def test_measured_summarizes_paired_wins(tmp_path):
    rows = [("demand-iv", 100, seed, method, "gb", mse) for seed, (d, n) in enumerate([(0.2, 0.1), (0.3, 0.4)])
            for method, mse in (("dml-cmr", d), ("naive", n), ("2sls", 9.0))]
    pd.DataFrame(rows, columns=["dataset", "n", "seed", "method", "learner", "mse"]).to_csv(tmp_path / "x.csv")
    table = measured(("x.csv", "missing.csv"), tmp_path)
    assert len(table) == 1 and table.loc[0, "naive wins"] == 1 and table.loc[0, "paired seeds"] == 2
    assert table.loc[0, "design"] == "raw" and table.loc[0, "Naive plug-in"].startswith("0.25 [")
    assert measured(("missing.csv",), tmp_path).empty


# ---------------------------------------------------------------- what Results says
def test_results_name_the_closest_method_and_explain_a_naive_win():
    from dashboard.results import ResultItem, closest_notes, score_caption
    items = [ResultItem(m, t, {"method": m, "mse": v, "truth": "x", "dataset": "demand-iv"})
             for m, t, v in (("dml-cmr", "DML-CMR", 0.02), ("naive", "Naive plug-in", 0.01), ("2sls", "2SLS", 0.3))]
    notes = closest_notes(items)
    assert notes[0].startswith("**Closest to the truth: Naive plug-in** (MSE 0.01)")
    assert "DML-CMR 2.0×" in notes[0] and "2SLS 30.0×" in notes[0]
    assert "naive plug-in beat DML-CMR" in notes[1]
    assert len(closest_notes(items[:1])) == 0 and len(closest_notes([items[0], items[2]])) == 1
    assert "units of 158 tickets" in score_caption(items[0].record) and "292" not in score_caption(items[0].record)


def test_cli_names_the_strength_with_the_same_label(capsys):
    from dmlcore.cli import main
    for strength, word in ((0.3, "note: instrument strength moderate:"), (0.02, "look weak: first-stage F")):
        assert main(["fit", "--dataset", "demand-iv", "--n", "300", "--method", "2sls",
                     "--iv-strength", str(strength)]) == 0
        err = capsys.readouterr().err
        assert word in err, err


def test_demand_regression_moves_with_the_hidden_shock():
    from dmlcore.teaching import demand
    confounded, clean = demand.demand_fits(1.0, 0.9, 500, 0), demand.demand_fits(1.0, 0.0, 500, 0)
    reg = demand.REGRESSION
    assert confounded["fits"][reg]["slope"] - clean["fits"][reg]["slope"] > 5       # the shock tilts it
    assert abs(confounded["fits"]["2SLS"]["slope"] - clean["fits"]["2SLS"]["slope"]) < 5
    assert confounded["true_slope"] == pytest.approx(clean["true_slope"], rel=0.05)


# ---------------------------------------------------------------- orthogonality that works (PLIV)
def test_orthogonal_score_keeps_its_coverage_and_the_naive_score_does_not():
    from dmlcore.teaching import pliv
    s = pliv.simulations(n=500, sims=60, seed=0).summary.set_index(["score", "cross-fitting"])
    for crossfit in (True, False):
        assert s.loc[("orthogonal", crossfit), "coverage"] >= 0.85
        assert s.loc[("naive", crossfit), "coverage"] <= 0.6
        assert abs(s.loc[("orthogonal", crossfit), "mean t"]) < 1.0 < 1.5 < abs(s.loc[("naive", crossfit), "mean t"])


def test_second_order_control_shrinks_like_eps_squared():
    from dmlcore.teaching import pliv
    slopes = pliv.second_order().params["slopes"]
    assert slopes["orthogonal"] == pytest.approx(2.0, abs=0.2)
    assert slopes["naive"] == pytest.approx(1.0, abs=0.25)
    assert pliv.loglog_slope([0.1, 0.2, 0.4], [0.01, 0.04, 0.16]) == pytest.approx(2.0)


def test_shipped_pliv_rows_are_what_the_code_computes():
    from dmlcore.teaching import pliv
    shipped = pliv.cached()
    assert shipped.params["sims"] == shipped.draws["sim"].nunique() == pliv.CACHE_SETTINGS["sims"]
    settings = {k: v for k, v in pliv.CACHE_SETTINGS.items() if k != "sims"}
    again = pliv.simulations(sims=2, **settings).draws
    first = shipped.draws[shipped.draws["sim"] < 2]
    assert np.allclose(again["theta_hat"], first["theta_hat"], rtol=1e-5)
    assert np.allclose(again["se"], first["se"], rtol=1e-5)


# ---------------------------------------------------------------- Card (1995), the real-data exercise
def test_card_steps_agree_with_each_other_and_the_ar_set_inverts_the_test():
    from scipy.stats import f as f_dist

    from dmlcore.data.registry import load_dataset
    from dmlcore.teaching import card
    s = card.linear_steps()
    assert s["ratio"] == pytest.approx(s["tsls"]["coef"], rel=1e-9)          # reduced form / first stage = 2SLS
    assert s["f_stat"] == pytest.approx((s["first_stage"]["coef"] / s["first_stage"]["se"]) ** 2, rel=1e-6)
    assert s["ols"]["coef"] < s["tsls"]["coef"] and s["ar"]["shape"] == "interval"
    data = load_dataset("card").data
    t = data.table
    x = np.column_stack([np.ones(len(t)), t[data.covariates].to_numpy(float), t["nearc4"].to_numpy(float)])

    def ar_f(beta):       # F test of nearc4 in the regression of lwage - beta educ on it and the covariates
        v = (t["lwage"] - beta * t["educ"]).to_numpy(float)
        full = v - x @ np.linalg.lstsq(x, v, rcond=None)[0]
        short = v - x[:, :-1] @ np.linalg.lstsq(x[:, :-1], v, rcond=None)[0]
        return (short @ short - full @ full) / (full @ full / (len(t) - x.shape[1]))
    crit = f_dist.ppf(0.95, 1, len(t) - x.shape[1])
    for end in (s["ar"]["lower"], s["ar"]["upper"]):
        assert ar_f(end) == pytest.approx(crit, rel=1e-6)
    assert ar_f(s["tsls"]["coef"]) < crit < ar_f(0.0)


def test_card_exercise_names_an_unbounded_anderson_rubin_set_without_ends():
    from dmlcore.teaching.card import _ar_shape
    assert _ar_shape([[0.1, 0.3]]) == {"shape": "interval", "lower": 0.1, "upper": 0.3}
    assert _ar_shape([[None, -1.0], [2.0, None]])["shape"] == "two half-lines"
    assert _ar_shape([[None, None]]) == {"shape": "whole line", "lower": None, "upper": None}
    assert _ar_shape([])["shape"] == "empty"
