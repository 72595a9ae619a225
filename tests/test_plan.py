"""dashboard.plan: the Estimators page's choices turned into fit_run keyword arguments (no Streamlit run)."""

import inspect

import numpy as np
import pytest

from dashboard import plan
from dmlcore.data.registry import load_dataset
from dmlcore.data.simulate import simulate_demand_iv
from dmlcore.runs import fit_run


@pytest.fixture(scope="module")
def data():
    return simulate_demand_iv(300, seed=0).data


def choices(**changes):
    return {**plan.ESTIMATOR_DEFAULTS, "est_learner": "gb", **changes}


def test_defaults_pass_neither_f_model_nor_reps(data):
    fits, errors = plan.build_plan(choices(), data)
    assert not errors
    for fit in fits:
        assert "f_model" not in fit.kwargs and "reps_crossfit" not in fit.kwargs
        assert "sieve" not in plan.describe(fit) and "repeated" not in plan.describe(fit)


def test_sieve_and_repeated_crossfits_reach_the_neural_methods_only(data):
    fits, errors = plan.build_plan(choices(est_methods=["dml-cmr", "ce-dml-cmr", "naive", "2sls"],
                                           est_f_model="sieve", est_reps=4), data, batch=2)
    assert not errors
    by_method = {fit.method: fit for fit in fits}
    for method in ("dml-cmr", "ce-dml-cmr", "naive"):
        kwargs = by_method[method].kwargs
        assert kwargs["f_model"] == "sieve" and kwargs["reps_crossfit"] == 4
        assert kwargs.get("f_params") is None            # the boosted f's settings do not apply
        assert by_method[method].label.endswith("· gb · sieve f · R = 4")
        text = plan.describe(by_method[method])
        assert "spline basis (sieve) with 95 % confidence bands" in text and "4 repeated cross-fits" in text
    assert "f_model" not in by_method["2sls"].kwargs and "reps_crossfit" not in by_method["2sls"].kwargs
    # what the Train page submits binds to fit_run
    for fit in fits:
        inspect.signature(fit_run).bind(data, fit.method, **fit.kwargs)


def test_reps_alone_keeps_the_learners_second_stage(data):
    fits, errors = plan.build_plan(choices(est_methods=["dml-cmr"], est_reps=3, adv_f_boost_max_depth=2), data)
    assert not errors
    assert fits[0].kwargs["reps_crossfit"] == 3 and "f_model" not in fits[0].kwargs
    assert fits[0].kwargs["f_params"] == {"max_depth": 2}


@pytest.mark.parametrize("reps", [0, 21, 2.5, "3"])
def test_bad_reps_are_refused_with_the_value(data, reps):
    _, errors = plan.build_plan(choices(est_reps=reps), data)
    assert "from 1 to 20" in errors["est_reps"] and repr(reps) in errors["est_reps"]


def test_sieve_f_is_refused_on_image_data():
    images = load_dataset("digits-iv", n=100, seed=0).data
    _, errors = plan.build_plan(choices(est_methods=["dml-cmr", "2sls"], est_learner="nn", est_f_model="sieve"),
                                images)
    assert "spline-basis (sieve) second stage" in errors["est_f_model"]
    assert "64 image pixel columns" in errors["est_f_model"] and "learner's own" in errors["est_f_model"]
    _, fine = plan.build_plan(choices(est_methods=["dml-cmr"], est_learner="nn"), images)
    assert "est_f_model" not in fine
    _, linear_only = plan.build_plan(choices(est_methods=["2sls"], est_f_model="sieve"), images)
    assert "est_f_model" not in linear_only              # nothing to apply it to


def test_the_demo_resets_the_band_choices():
    assert plan.DEMO_SETTINGS["est_f_model"] == "own" and plan.DEMO_SETTINGS["est_reps"] == 1


def test_the_demo_skips_the_debiased_effect_and_the_defaults_keep_it(data):
    demo, errors = plan.build_plan(choices(**plan.DEMO_SETTINGS), data)
    assert not errors and len(demo) == len(plan.DEMO_SETTINGS["est_methods"])
    assert all(fit.kwargs["debias"] is False for fit in demo)
    assert all(plan.describe(fit).endswith("no debiased effect (the plug-in only)") for fit in demo)
    default, _ = plan.build_plan(choices(), data)
    assert all("debias" not in fit.kwargs for fit in default)        # on: fit_run's own default
    assert not any("debiased" in plan.describe(fit) for fit in default)
    assert plan.ESTIMATOR_DEFAULTS["est_debias"] is True
    for fit in demo:
        inspect.signature(fit_run).bind(data, fit.method, **fit.kwargs)     # keywords fit_run takes


def test_a_cluster_column_reaches_every_method_and_is_checked():
    from dmlcore.data.designs import simulate_design

    clustered = simulate_design("clustered-iv", 300, 0).data
    methods = ["dml-cmr", "naive", "2sls", "sieve-2sls", "regression"]
    fits, errors = plan.build_plan(choices(est_methods=methods, est_folds=5, est_cluster="cluster"), clustered)
    assert not errors and len(fits) == len(methods)
    for fit in fits:
        assert fit.kwargs["cluster"] == "cluster" and fit.kwargs["cov_type"] == "clustered"
        assert "intervals clustered by cluster" in plan.describe(fit)
        inspect.signature(fit_run).bind(clustered, fit.method, **fit.kwargs)
    unclustered, _ = plan.build_plan(choices(est_methods=methods), clustered)
    assert all("cluster" not in fit.kwargs for fit in unclustered)
    _, missing = plan.build_plan(choices(est_cluster="region"), clustered)
    assert "region" in missing["est_cluster"]
    clustered.table["pair"] = np.arange(len(clustered.table)) % 3       # 3 groups cannot fill 5 folds
    _, few = plan.build_plan(choices(est_methods=["dml-cmr"], est_folds=5, est_cluster="pair"), clustered)
    assert "5 folds that keep clusters whole need at least 5 clusters; the data has 3" in few["est_cluster"]
    _, linear = plan.build_plan(choices(est_methods=["2sls"], est_folds=5, est_cluster="pair"), clustered)
    assert "est_cluster" not in linear                                   # 2SLS has no folds
    assert plan.DEMO_SETTINGS["est_cluster"] is None


def test_a_clustered_plan_fits_with_clustered_intervals():
    from dmlcore.data.designs import simulate_design

    clustered = simulate_design("clustered-iv", 300, 0).data
    fits, _ = plan.build_plan(choices(est_methods=["naive"], est_learner="linear", est_cluster="cluster"), clustered)
    record = fit_run(clustered, "naive", **fits[0].kwargs).record
    assert record["effect"]["debiased"]["clusters"]["column"] == "cluster"


def test_the_plan_says_which_nuisances_auto_chooses():
    def line(method, learner="nn", **kwargs):
        return plan.describe(plan.PlannedFit(method=method, label=method, learner=learner,
                                             kwargs={"learner": learner, **kwargs}))

    assert "outcome model s(c) and distribution model chosen by their own held-out losses (auto)" in line("dml-cmr")
    assert "· distribution model chosen by its own held-out loss (auto)" in line("naive")   # no outcome model
    assert ("outcome model s(c) and distribution model chosen by DML-CMR's target (held-out projected residual of "
            "the pilot f̂) (auto)") in line("dml-cmr", nuisance_choice="target")
    assert "auto" not in line("dml-cmr", outcome_learner="nn", sampler="nn")          # named: the learner alone
    assert "· distribution model chosen" in line("dml-cmr", outcome_learner="nn")
    assert "auto" not in line("dml-cmr", learner="rf")                                # auto never chooses for rf


def test_the_target_choice_reaches_dml_cmr_alone_and_is_refused_where_it_cannot_act(data):
    fits, errors = plan.build_plan(choices(est_methods=["dml-cmr", "ce-dml-cmr", "naive", "2sls"], est_folds=3,
                                           est_nuisance_choice="target"), data)
    assert not errors
    by_method = {fit.method: fit.kwargs for fit in fits}
    assert by_method["dml-cmr"]["nuisance_choice"] == "target"
    assert all("nuisance_choice" not in by_method[m] for m in ("ce-dml-cmr", "naive", "2sls"))
    for fit in fits:
        inspect.signature(fit_run).bind(data, fit.method, **fit.kwargs)
    default, _ = plan.build_plan(choices(est_methods=["dml-cmr"]), data)
    assert "nuisance_choice" not in default[0].kwargs                  # the default is not passed
    # where it cannot act: one line under the widget, the fit's own refusal, before any fit
    refused = {
        "named": dict(est_learner="rf", est_folds=3),
        "more folds": dict(est_folds=2),
        "not among the methods": dict(est_methods=["ce-dml-cmr", "naive"], est_folds=3),
        "Unknown nuisance_choice 'best'": dict(est_nuisance_choice="best"),
    }
    for words, changes in refused.items():
        _, errors = plan.build_plan(choices(**{"est_methods": ["dml-cmr"], "est_nuisance_choice": "target",
                                               **changes}), data)
        assert words in errors["est_nuisance_choice"] and "\n" not in errors["est_nuisance_choice"], (words, errors)
    override = {plan.learner_override_key("dml-cmr"): "linear"}            # the method's own learner counts
    _, errors = plan.build_plan(choices(est_methods=["dml-cmr", "naive"], est_folds=3, est_nuisance_choice="target",
                                        **override), data)
    assert errors["est_nuisance_choice"].startswith("DML-CMR with learner linear: nuisance_choice='target'")
    images = load_dataset("digits-iv", n=100, seed=0).data
    _, errors = plan.build_plan(choices(est_methods=["dml-cmr"], est_learner="nn", est_folds=3,
                                        est_nuisance_choice="target"), images)
    assert "image" in errors["est_nuisance_choice"]
