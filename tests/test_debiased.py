"""Tests of dmlcore.inference.debiased_effect: the representer, the correction, weak identification, bad input,
and the debiased effect in run records and on the command line."""

import numpy as np
import pandas as pd
import pytest

from dmlcore.inference import debiased_effect as debiased
from dmlcore.data.registry import load_dataset
from dmlcore.data.roles import CausalData
from dmlcore.inference.debiased_effect import LADDER, Rung, build_bases, debias, per_row, riesz_gamma
from dmlcore.inference.sieve_dimension import SOURCE as SIEVE_SOURCE
from dmlcore.runs.average_effect import contrast, effect_record
from dmlcore.estimators.tsls import TwoStageLeastSquares
from dmlcore.runs import fit_run

from test_cli import run_main
from test_effects import Known


def gaussian_iv(n, strength=1.0, seed=0):
    """y = 2a + 1.5u + e, a = strength * z + u: (a, z) jointly normal, no covariates."""
    rng = np.random.default_rng(seed)
    z, u = rng.normal(size=n), rng.normal(size=n)
    a = strength * z + u
    table = pd.DataFrame({"y": 2 * a + 1.5 * u + rng.normal(size=n), "a": a, "z": z})
    return CausalData(table, "iv", "y", treatment="a", instrument="z")


def full_sample(data, rung, penalty=0.0):
    """Bases of ``rung`` at the rows and the rows' m(W; b), and gamma fitted on all rows."""
    b, q = build_bases(data, rung)
    plan = contrast(data)
    bx = b(data.table[data.input_columns].to_numpy(dtype=float))
    qc = q(data.table[data.conditioning_columns].to_numpy(dtype=float))
    mb = per_row(plan, len(data.table), basis=b)
    n = len(bx)
    return bx, qc, plan, riesz_gamma(qc.T @ qc / n, qc.T @ bx / n, mb.mean(0), debiased.smoothness(b), penalty)


def test_representer_matches_the_hand_derived_one_on_a_gaussian_design():
    # With (a, z) jointly normal and a = pi z + u, Stein's lemma gives E[h'(a)] = E[h(a) z] / pi for
    # every h: the representer of the average derivative is xi(z) = z / pi, here 2z, and it lies in
    # the span of a spline in z, so the minimum-distance xi-hat must find it.
    # Without the penalty, the spline rung's nonlinear directions (barely moved by z) make it erratic.
    data = gaussian_iv(20_000, strength=0.5)
    z = data.table["z"].to_numpy()
    inner = np.abs(z) < 2
    for rung, penalty in ((Rung(None, 3), 0.0), (Rung(4, 6), debiased.PENALTY / np.sqrt(len(z)))):
        _, qc, _, gamma = full_sample(data, rung, penalty)
        assert np.max(np.abs(qc[inner] @ gamma - 2 * z[inner])) < 0.3
        assert np.mean((qc @ gamma - 2 * z) ** 2) < 0.02 * np.mean((2 * z) ** 2)
    _, qc, _, gamma = full_sample(data, Rung(4, 6), 0.0)
    assert np.mean((qc @ gamma - 2 * z) ** 2) > 0.1 * np.mean((2 * z) ** 2)


def test_debiased_equals_the_plug_in_for_sieve_2sls_with_the_same_bases():
    # f-hat = b'theta from unpenalised sieve 2SLS on the same bases b, q: its residual is orthogonal to
    # Q^-1 G, so the correction mean xi-hat(C)(Y - f-hat(X)) is exactly 0 (the design note's identity).
    loaded = load_dataset("nonlinear-iv", n=1500, seed=3)
    data, rung = loaded.data, Rung(4, 6)
    bx, qc, plan, gamma = full_sample(data, rung)
    y = data.table["y"].to_numpy()
    n = len(y)
    gram_q, cross = qc.T @ qc / n, qc.T @ bx / n
    weights = np.linalg.solve(gram_q, cross)
    theta = np.linalg.solve(cross.T @ weights, weights.T @ (qc.T @ y / n))
    correction = np.mean(qc @ gamma * (y - bx @ theta))
    plug = float(per_row(plan, n, basis=build_bases(data, rung)[0]).mean(0) @ theta)
    assert abs(correction) < 1e-8 * max(1.0, abs(plug))
    assert abs(plug - loaded.truth.effect(plan.points, plan.weights)) < 0.3   # and it is near the truth


def test_a_shrunk_f_is_corrected_to_the_truth():
    loaded = load_dataset("linear-iv", n=3000, seed=4)
    data, truth = loaded.data, loaded.truth
    shrunk = Known(lambda X: 0.5 * truth.structural(X), ["a", "x1", "x2"])
    plan = contrast(data)
    result = debiased.debiased_effect(shrunk, data, plan)
    assert result["uncorrected"] == pytest.approx(1.0)                 # half the true slope 2
    assert result["correction"] == pytest.approx(1.0, abs=3 * result["std_error"])
    assert result["ci_lower"] < 2.0 < result["ci_upper"] and not result["weakly_identified"]


def test_weak_identification_is_said_in_words():
    weak, strong = gaussian_iv(2000, strength=0.02, seed=1), gaussian_iv(2000, strength=1.0, seed=1)
    model = Known(lambda X: 2 * X["a"], ["a"])
    record = effect_record(model, weak)
    assert record["weakly_identified"] and record["debiased"]["strength"] < debiased.WEAK_STRENGTH
    assert record["ci_lower"] is None and record["interval"].startswith("weakly identified")
    assert "weakly identified" in record["warning"] and record["debiased"]["ci_lower"] is not None
    tsls = effect_record(TwoStageLeastSquares().fit(weak), weak)
    assert tsls["weakly_identified"] and "weakly identified" in tsls["warning"]
    sure = effect_record(model, strong)
    assert not sure["weakly_identified"] and sure["ci_lower"] < 2 < sure["ci_upper"] and "warning" not in sure


def test_record_keeps_the_plug_in_beside_the_debiased_effect():
    data = load_dataset("linear-iv", n=800, seed=2).data
    model = Known(lambda X: 0.5 * (2 * X["a"] + X["x1"] - X["x2"]), ["a", "x1", "x2"])
    record = effect_record(model, data)
    assert record["plug_in"]["estimate"] == pytest.approx(1.0) and record["plug_in"]["ci_lower"] is None
    assert record["estimate"] == record["debiased"]["estimate"] != record["plug_in"]["estimate"]
    sources = [e.get("source") for e in record["intervals"]]     # the debiased entry, then the sieve effect's beside it
    assert record["interval"].startswith("debiased") and sources[-2:] == ["debiased", SIEVE_SOURCE]
    tsls = effect_record(TwoStageLeastSquares().fit(data), data)
    assert tsls["interval"].startswith("2SLS") and "first-stage-weighted average" in tsls["estimand"]
    debiased = next(e for e in tsls["intervals"] if e.get("source") == "debiased")
    assert debiased["estimand"].startswith("average derivative")


def test_results_table_says_weakly_identified_and_shows_the_plug_in():
    from dashboard.results import ResultItem, effects_table

    weak, strong = gaussian_iv(2000, strength=0.02, seed=1), gaussian_iv(2000, strength=1.0, seed=1)
    shrunk = Known(lambda X: X["a"], ["a"])
    items = [ResultItem("w", "weak", {"method": "naive", "effect": effect_record(shrunk, weak)}),
             ResultItem("s", "strong", {"method": "naive", "effect": effect_record(shrunk, strong)}),
             ResultItem("t", "2SLS", {"method": "2sls", "effect": effect_record(TwoStageLeastSquares().fit(strong),
                                                                                strong)})]
    table = effects_table(items).set_index("run")
    assert table.loc["weak", "95% interval"] == "weakly identified: no confident interval"
    assert table.loc["strong", "kind"] == "debiased" and table.loc["strong", "plug-in"].startswith("1")
    assert table.loc["2SLS", "kind"].startswith("2SLS s.e.")
    assert table.loc["2SLS: debiased average derivative", "kind"] == "debiased"


def test_the_truth_scores_the_effect_in_a_run_record():
    loaded = load_dataset("linear-iv", n=600, seed=0)
    effect = fit_run(loaded.data, "2sls", truth=loaded.truth, heldout_folds=0).record["effect"]
    assert effect["truth"] == pytest.approx(2.0)
    assert effect["covered"] == (effect["ci_lower"] <= 2.0 <= effect["ci_upper"])
    assert effect["debiased"]["covered"] == (effect["debiased"]["ci_lower"] <= 2.0 <= effect["debiased"]["ci_upper"])


def test_one_binary_instrument_identifies_only_a_slope():
    rng = np.random.default_rng(0)
    n = 1500
    z, u = rng.integers(0, 2, n).astype(float), rng.normal(size=n)
    a = 2 * z + u
    data = CausalData(pd.DataFrame({"y": a + u + rng.normal(size=n), "a": a, "z": z}), "iv", "y",
                      treatment="a", instrument="z")
    result = debiased.debiased_effect(Known(lambda X: X["a"], ["a"]), data, contrast(data))
    assert result["basis"].startswith("linear in the treatment")
    assert all("singular" in r["skipped"] for r in result["rungs"][1:])


# ------------------------------------------------------------------ bad input
def test_image_inputs_give_one_line_and_keep_the_plug_in():
    loaded = load_dataset("digits-iv", n=200, seed=0)
    data = loaded.data
    model = Known(lambda X: -2.0 * X["price"], ["price"])
    record = effect_record(model, data)
    assert record["debiased"] is None and record["estimate"] == pytest.approx(-2.0)
    assert record["debiased_error"].startswith("no debiased effect:") and "image pixel" in record["debiased_error"]
    assert "\n" not in record["debiased_error"]


def test_a_basis_that_identifies_nothing_gives_one_line(monkeypatch):
    data = gaussian_iv(600)
    monkeypatch.setattr(debiased, "SINGULAR", 2.0)             # every G'Q^-1G counts as singular
    record = effect_record(Known(lambda X: 2 * X["a"], ["a"]), data)
    assert record["debiased"] is None and "no basis identifies it" in record["debiased_error"]
    assert record["estimate"] == pytest.approx(2.0)            # the plug-in stays, with its line


def test_too_few_rows_for_cross_fitting():
    data = gaussian_iv(60)
    with pytest.raises(debiased.DMLCoreError, match="needs at least 100 rows"):
        debias(data, contrast(data), np.zeros(120), np.zeros(60))


def test_cli_prints_debiased_and_plug_in_and_exits_0(capsys, tmp_path):
    code, out, err = run_main(capsys, "fit", "--dataset", "linear-iv", "--n", "400", "--method", "sieve-2sls")
    assert code == 0, err
    assert "debiased" in out and "plug-in=" in out


def test_ladder_is_ordered_from_plain_to_rich():
    sizes = [sum(build_bases(load_dataset("demand-iv", n=400, seed=0).data, rung)[0].size for _ in [0])
             for rung in LADDER]
    assert sizes == sorted(sizes)


def test_per_row_contrast_averages_to_the_plug_in_also_for_a_row_subset(monkeypatch):
    from dmlcore.runs import average_effect as effects

    monkeypatch.setattr(effects, "PCL_ROWS", 150)                # the proximal slope over a subset of rows
    data = load_dataset("demand-pcl", n=400, seed=0).data
    plan = contrast(data)
    values = np.sin(plan.points["price"].to_numpy()) * plan.points["views"].to_numpy()
    m = per_row(plan, 400, values)
    assert np.isfinite(m).sum() == 150
    assert np.nanmean(m) == pytest.approx(plan.weights @ values)
    b = build_bases(data, Rung(2, 4))[0]
    assert np.nanmean(per_row(plan, 400, basis=b), axis=0) == pytest.approx(
        plan.weights @ b(plan.points[[c.name for c in b.columns]].to_numpy()))


# ------------------------------------------------------------------ switched off (debias=False)
def count_fits(monkeypatch, cls):
    """Every ``cls.fit`` call from now on, the refits' too, as a list that grows."""
    calls, fit = [], cls.fit

    def counted(self, *args, **kwargs):
        calls.append(type(self).__name__)
        return fit(self, *args, **kwargs)

    monkeypatch.setattr(cls, "fit", counted)
    return calls


def test_the_regression_that_ignores_c_makes_no_refits_for_an_effect_it_never_corrects(monkeypatch):
    from dmlcore.estimators.regression import OutcomeRegression
    from dmlcore.runs import fits_in_run

    loaded = load_dataset("linear-iv", n=400, seed=1)
    calls = count_fits(monkeypatch, OutcomeRegression)
    record = fit_run(loaded.data, "regression", truth=loaded.truth, learner="linear").record
    assert len(calls) == fits_in_run({}, True, "regression") == 1 < fits_in_run({}, True, "sieve-2sls")
    assert record["effect"]["debiased"] is None and "ignores C" in record["effect"]["debiased_error"]


@pytest.mark.parametrize("has_truth", [True, False])
def test_switched_off_makes_no_refits_and_says_why(monkeypatch, has_truth):
    from dmlcore.estimators.dml import NaivePlugIn
    from dmlcore.runs import fits_in_run

    loaded = load_dataset("linear-iv", n=400, seed=1)
    truth = loaded.truth if has_truth else None
    calls = count_fits(monkeypatch, NaivePlugIn)
    on = fit_run(loaded.data, "naive", truth=truth, learner="linear").record
    fits_on = len(calls)
    off = fit_run(loaded.data, "naive", truth=truth, learner="linear", debias=False).record
    fits_off = len(calls) - fits_on
    assert fits_on == fits_in_run({}, has_truth, "naive") == 3   # the fit and 2 whole refits
    assert fits_in_run({}, has_truth) == fits_in_run({}, has_truth, "sieve-2sls") == 3  # the fit and 2 refits
    assert fits_off == fits_in_run({"debias": False}, has_truth) == (1 if has_truth else 3)  # real data: held-out's
    assert on["effect"]["debiased"] is not None and on["config"]["debias"] is True
    effect = off["effect"]
    assert effect["debiased"] is None and effect["weakly_identified"] is None
    assert effect["debiased_error"] == debiased.SWITCHED_OFF and "\n" not in effect["debiased_error"]
    assert effect["estimate"] == effect["plug_in"]["estimate"] == on["effect"]["plug_in"]["estimate"]
    assert not any(e.get("source") == "debiased" for e in effect["intervals"]) and effect["ci_lower"] is None
    assert off["config"]["debias"] is False and (off["heldout"] is None) == has_truth


@pytest.mark.parametrize("method,title", [("2sls", "2SLS"), ("liml", "LIML"), ("gmm-iv", "GMM")])
def test_a_linear_iv_coefficient_is_named_for_its_own_estimator(method, title):
    loaded = load_dataset("linear-iv", n=300, seed=0)
    estimand = fit_run(loaded.data, method, debias=False).record["effect"]["estimand"]
    assert estimand.startswith(f"{title} slope of ") and ("Kolesár" in estimand) == (title != "2SLS")


def test_switched_off_keeps_the_plug_in_of_2sls_named_and_refuses_a_bad_value():
    loaded = load_dataset("linear-iv", n=300, seed=0)
    effect = fit_run(loaded.data, "2sls", truth=loaded.truth, debias=False).record["effect"]
    assert effect["debiased"] is None and effect["interval"].startswith("2SLS")
    assert "first-stage-weighted average" in effect["estimand"] and effect["covered"] is not None
    with pytest.raises(debiased.DMLCoreError, match="debias is True .* or False .*; got 'no'"):
        fit_run(loaded.data, "2sls", debias="no")
    with pytest.raises(debiased.DMLCoreError, match="at least 2 refits"):
        fit_run(loaded.data, "2sls", debias=False, effect_folds=1)    # refused even when unused


def test_results_label_a_switched_off_effect_as_the_plug_in_with_its_reason():
    from dashboard.results import ResultItem, effects_table, interval_descriptions

    loaded = load_dataset("linear-iv", n=400, seed=1)
    off = fit_run(loaded.data, "naive", truth=loaded.truth, learner="gb", epochs=20, debias=False).record
    items = [ResultItem("o", "naive off", off)]
    row = effects_table(items).set_index("run").loc["naive off"]
    assert row["effect"] == off["effect"]["plug_in"]["estimate"]
    assert row["kind"] == "plug-in, none (ask for a bootstrap)"
    assert row.get("95% interval", "—") == "—" and "plug-in" not in row        # no interval, no debiased beside
    assert row.get("measured coverage", "—") == "—"    # naive gb's measured coverage is the debiased interval's
    how = interval_descriptions(items)
    assert how["no debiased effect, naive off"].startswith("not computed: switched off for this run")
    assert how["plug-in"].startswith("the effect of f-hat itself")


def test_cli_no_debias_prints_the_reason_and_records_it(capsys, tmp_path):
    import json

    out_json = tmp_path / "run.json"
    code, out, err = run_main(capsys, "fit", "--dataset", "linear-iv", "--n", "400", "--method", "sieve-2sls",
                              "--no-debias", "--json", str(out_json))
    assert code == 0, err
    assert "switched off for this run" in out and "debiased" not in out.split("(not computed")[0]
    record = json.loads(out_json.read_text())
    assert record["config"]["debias"] is False and record["effect"]["debiased"] is None


def test_the_measured_coverage_next_to_a_run_covers_the_designs_of_its_own_problem():
    from dmlcore.inference.effect_coverage import COLUMNS, coverage_note
    rows = [dict(zip(COLUMNS, (design, problem, "2sls", "plug_in", 90, cover, 0.02, 1.0, 0.3, 1.0, 0.0, float("nan"),
                               cover)))
            for design, problem, cover in (("linear", "iv", 0.95), ("hetero-iv", "iv", 0.76),
                                           ("demand-pcl", "pcl", 0.0))]
    table = pd.DataFrame(rows)
    record = {"method": "2sls", "config": {}, "effect": {"estimate": 1.0}, "problem": "iv"}
    assert coverage_note(record, table) == "linear 0.95 · hetero-iv 0.76 (90+ seeds each)"
    assert coverage_note({**record, "problem": "pcl"}, table) == "demand-pcl 0.00 (90+ seeds each)"


def test_the_shipped_coverage_was_measured_with_whole_refits_as_runs_make_them():
    """Every method's debiased effect refits the whole method: the shipped coverage is the 200-seed study,
    measured that way, and the note beside a run says so with the number of seeds."""
    from dmlcore.inference.effect_coverage import PROCEDURE, coverage_note, measured_coverage
    table = measured_coverage()
    debiased_rows = table[table["kind"] == "debiased"]
    assert set(debiased_rows["procedure"]) == {PROCEDURE} == {"whole refits"}
    assert set(table["seeds"]) == {200}
    assert table.loc[table["kind"] == "plug_in", "procedure"].isna().all()
    for method in ("dml-cmr", "naive", "2sls"):
        record = {"method": method, "config": {"learner": "gb"}, "problem": "iv",
                  "effect": {"estimate": 1.0, "debiased": {"estimate": 1.0}}}
        assert coverage_note(record, table).endswith("(200+ seeds each; whole refits)"), method
    # the study named its nuisances (gb), before auto became the default: a run whose nuisances auto chose says so
    assert set(table.loc[table["arm"].str.startswith("dml-cmr gb"), "nuisances"]) == {"the learner's own"}
    chosen = {"method": "dml-cmr", "config": {"learner": "gb"}, "problem": "iv", "nuisances": {"s": {"choice": "gb"}},
              "effect": {"estimate": 1.0, "debiased": {"estimate": 1.0}}}
    assert coverage_note(chosen, table).endswith(
        "(200+ seeds each; whole refits; with the learner's own nuisances, where this run's were chosen by auto)")
    linear = {**chosen, "method": "2sls", "config": {}}
    assert coverage_note(linear, table).endswith("(200+ seeds each; whole refits)")


# ------------------------------------------------------------------ specification spread (issue 31)
def test_spread_lists_the_bases_and_each_cross_fit_and_flags_a_wide_one():
    loaded = load_dataset("linear-iv", n=800, seed=0)
    record = fit_run(loaded.data, "dml-cmr", truth=loaded.truth, learner="linear", folds=3, reps_crossfit=3,
                     effect_folds=0).record
    spread, result = record["effect"]["spread"], record["effect"]["debiased"]
    kinds = [s["kind"] for s in spread["specifications"]]
    assert kinds.count("cross-fit") == 3 and kinds.count("representer basis") == sum(
        "estimate" in r for r in result["rungs"])
    values = [s["estimate"] for s in spread["specifications"]] + [result["estimate"]]
    assert spread["low"] == min(values) and spread["high"] == max(values)
    assert spread["range_over_se"] == pytest.approx((max(values) - min(values)) / result["std_error"])
    assert spread["sensitive"] == (spread["range_over_se"] > debiased.SPREAD_SE)
    assert "Lepski" in spread["rule"] and len(spread["text"]) <= 200
    wide = debiased.specification_spread({**result, "std_error": 1e-6 * result["std_error"]})
    assert wide["sensitive"] and "matters" in wide["text"]


def test_learner_families_join_the_spread():
    from dmlcore.runs.learner_spread import learner_spread, with_families
    loaded = load_dataset("linear-iv", n=500, seed=1)
    run = fit_run(loaded.data, "naive", learner="linear", heldout_folds=0, effect_folds=0)
    families = learner_spread(loaded.data, "naive", {"effect_folds": 0}, (("linear", None), ("linear", "sieve")))
    assert [f["what"] for f in families] == ["linear nuisances, own f", "linear nuisances, spline f"]
    merged = with_families(run.record["effect"]["spread"], families)
    assert merged["low"] <= min(f["estimate"] for f in families) and "2 learner families" in merged["text"]
    assert learner_spread(loaded.data, "2sls", {}) == []


# ------------------------------------------------------------------ the debiased effect's cross-fit: whole refits
@pytest.mark.parametrize("method", ["dml-cmr", "ce-dml-cmr", "naive"])
def test_the_dml_family_cross_fits_f_hat_by_whole_refits(monkeypatch, method):
    """Each refit behind the debiased effect is the whole method fitted on part of the rows, its nuisances
    included (refitting f alone with the full fit's nuisances covered less: docs/coverage.md), and
    fits_in_run counts those refits."""
    from dmlcore.estimators import METHODS
    from dmlcore.runs import fits_in_run
    loaded = load_dataset("linear-iv", n=600, seed=2)
    refits, add = [], debiased.CrossFitted.add

    def kept(self, held, estimator):
        refits.append((held, estimator))
        return add(self, held, estimator)

    monkeypatch.setattr(debiased.CrossFitted, "add", kept)
    calls = count_fits(monkeypatch, METHODS[method].cls)
    run = fit_run(loaded.data, method, truth=loaded.truth, learner="gb", epochs=30,
                  **({"folds": 3} if method == "dml-cmr" else {}))
    assert len(calls) == fits_in_run({}, True, method) == 3 and len(refits) == 2
    for held, refit in refits:
        assert refit is not run.estimator and refit.n_ == 600 - len(held)
        nuisances = [(getattr(refit, a), getattr(run.estimator, a)) for a in ("s_model_", "g_model_")]
        assert any(full is not None for _, full in nuisances)
        assert all(mine is not full for mine, full in nuisances if full is not None)    # refitted, not kept
        assert refit.targets_.shape[0] == refit.n_ < run.estimator.targets_.shape[0]
    assert "2 refits of the method" in run.record["effect"]["debiased"]["f_hat"]
    tsls = fit_run(loaded.data, "sieve-2sls", truth=loaded.truth).record["effect"]
    assert "2 refits of the method" in tsls["debiased"]["f_hat"]


# ------------------------------------------------------------------ identification check (issue 31: RHC)
def test_coinciding_functions_of_b_are_solved_not_refused_and_units_do_not_matter():
    rng = np.random.default_rng(0)
    n = 2000
    c = np.column_stack([np.ones(n), rng.normal(size=n), rng.normal(size=n)])
    x1 = c[:, 1] + rng.normal(size=n)
    b = np.column_stack([np.ones(n), x1, 1e4 * c[:, 2]])             # a column in other units
    qq, qb = c.T @ c / n, c.T @ b / n
    m = np.array([0.0, 1.0, 0.0])
    gamma = riesz_gamma(qq, qb, m)
    assert np.allclose(qb.T @ gamma, m)                                 # the representer matches M
    twice = np.column_stack([b, b[:, 2]])                               # two functions that coincide
    gamma2 = riesz_gamma(qq, c.T @ twice / n, np.r_[m, 0.0])
    assert np.allclose(c @ gamma2, c @ gamma)
    unmoved = np.column_stack([b, rng.normal(size=n)])                  # four functions, three of C: one unmoved
    with pytest.raises(debiased.DMLCoreError, match="do not move every function"):
        riesz_gamma(qq, c.T @ unmoved / n, np.r_[m, 1.0])              # ... on which the effect loads


def test_weak_reasons_are_one_line():
    assert debiased.weak_reason(500.0, 0.1) is None
    for reason in (debiased.weak_reason(3.0, 0.1), debiased.weak_reason(500.0, float("nan")),
                   debiased.weak_reason(500.0, 0.1, 0.5 * debiased.WEAK_FIRST_STAGE_F) if debiased.WEAK_FIRST_STAGE_F
                   else "x"):
        assert reason and "\n" not in reason and len(reason) <= 200


def test_the_flag_catches_a_moderately_weak_instrument_the_representer_strength_misses():
    """linear-iv at instrument strength 0.07, seed 2: first-stage F 5.03 but representer strength 22.8 --
    silent under the old rule (strength below 10 only), where such fits covered well under 90 %."""
    loaded = load_dataset("linear-iv", n=1000, seed=2, iv_strength=0.07)
    effect = fit_run(loaded.data, "2sls", truth=loaded.truth, heldout_folds=0).record["effect"]
    result = effect["debiased"]
    assert result["strength"] >= debiased.WEAK_STRENGTH                  # the representer alone is silent
    assert result["first_stage_f"] < debiased.WEAK_FIRST_STAGE_F
    assert effect["weakly_identified"] and "first stage's F" in result["weak_reason"]
    assert effect["warning"].startswith("weakly identified (the linear first stage's F") and len(effect["warning"]) <= 200
    strong = load_dataset("linear-iv", n=1000, seed=2)
    assert not fit_run(strong.data, "2sls", truth=strong.truth, heldout_folds=0).record["effect"]["weakly_identified"]


def noisy_proxies(noise, n=1000, seed=0) -> CausalData:
    """Proximal data whose proxies are copies of the confounder u with noise of sd ``noise``: 0.5 strong,
    3 weak (proxies' first-stage F about 3)."""
    r = np.random.default_rng(seed)
    u = r.normal(size=n)
    z, w = u + noise * r.normal(size=n), u + noise * r.normal(size=n)
    a = u + r.normal(size=n)
    y = 2 * a + 3 * u + 0.3 * r.normal(size=n)
    return CausalData(pd.DataFrame(dict(y=y, a=a, z=z, w=w)), "pcl", "y", treatment="a", treatment_proxy="z",
                      outcome_proxy="w")


@pytest.mark.parametrize("method", ["dml-cmr", "naive", "2sls"])
def test_the_flag_catches_weak_proxies_in_every_method(method):
    """Proximal learning: the flag reads the proxies' first stage (outcome proxy on treatment proxy), fires
    on weak proxies with that reason and no interval, and stays silent on strong ones."""
    kwargs = dict(learner="linear", **({"folds": 5} if method == "dml-cmr" else {})) if method != "2sls" else {}
    weak = fit_run(noisy_proxies(3.0), method, heldout_folds=0, **kwargs).record["effect"]
    assert weak["debiased"]["first_stage_f"] < debiased.WEAK_FIRST_STAGE_F
    assert weak["weakly_identified"] and "first stage's F" in weak["debiased"]["weak_reason"]
    assert weak["warning"].startswith("weakly identified") and len(weak["warning"]) <= 200
    if method != "2sls":                                       # its headline: no interval, the reason instead
        assert weak["ci_lower"] is None and weak["interval"].startswith("weakly identified")
    strong = fit_run(noisy_proxies(0.5), method, heldout_folds=0, **kwargs).record["effect"]
    assert strong["debiased"]["first_stage_f"] > debiased.WEAK_FIRST_STAGE_F and not strong["weakly_identified"]


def test_both_ladders_build_each_rung_and_fold_once_with_the_same_numbers(monkeypatch):
    # a run's debiased effect and sieve effect share one LadderBases: each rung's bases, and each fold's Q, G and
    # Q^-1 G, computed once for both ladders (they share rungs), and the two results equal those computed apart
    from dmlcore.inference.sieve_dimension import DD_LADDER, sieve_effect

    data = gaussian_iv(600, seed=3)
    plan = contrast(data)
    rng = np.random.default_rng(0)
    f_rows = data.table["y"].to_numpy() + rng.normal(size=600)
    f_points = rng.normal(size=len(plan.weights))
    apart = debias(data, plan, f_points, f_rows), sieve_effect(data, plan)
    built, solved = [], []
    real_build, real_grams = debiased.build_bases, debiased.fold_grams
    monkeypatch.setattr(debiased, "build_bases", lambda data, rung: (built.append(rung), real_build(data, rung))[1])
    monkeypatch.setattr(debiased, "fold_grams", lambda *args: (solved.append(1), real_grams(*args))[1])
    shared = debiased.LadderBases(data, plan)
    together = debias(data, plan, f_points, f_rows, bases=shared), sieve_effect(data, plan, bases=shared)
    assert together == apart
    rungs = set(LADDER) | set(DD_LADDER)
    assert sorted(built, key=repr) == sorted(rungs, key=repr)          # each rung's bases once
    fitted = {r for r in shared._values}                               # rungs whose values were needed
    assert len(solved) == debiased.RIESZ_FOLDS * len(fitted) and len(fitted) < len(LADDER) + len(DD_LADDER)
