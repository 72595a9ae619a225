"""Tests of DML-CMR, CE-DML-CMR and the naive plug-in (dmlcore.estimators.dml) and of the
second-stage models (dmlcore.estimators.second_stage).

The central property is cross-fitting honesty: the nuisances used for the rows of fold k are
fitted without those rows, so changing fold k's outcomes and treatments leaves them unchanged.
"""

import math

import numpy as np
import pandas as pd
import pytest

from conftest import make_linear_iv
from dmlcore.data.roles import CausalData
from dmlcore.data.simulate import simulate_demand_iv, simulate_demand_pcl
from dmlcore.errors import DMLCoreError, FitCancelled, FitDiverged
from dmlcore.estimators.dml import DRAW_BANK, CEDMLCMR, DMLCMR, NaivePlugIn, make_folds
from dmlcore.estimators.second_stage import BoostedF, LinearF, NeuralF
from dmlcore.learners.tabular import TabularOutcome
from dmlcore.progress import Monitor

FAST_NN = dict(epochs=3, n_draws=4)
# the learner's own nuisances, named (the default is "auto"), for tests of that learner's fold models
NN_OWN, GB_OWN = dict(outcome_learner="nn", sampler="nn"), dict(outcome_learner="gb", sampler="gb")


def demand(n=300, seed=0):
    return simulate_demand_iv(n, seed=seed).data


def with_rows_changed(data, rows, seed=5):
    """A copy of demand-iv data whose outcome and treatment are changed on ``rows`` only."""
    table = data.table.copy()
    rng = np.random.default_rng(seed)
    table.loc[rows, "sales"] = table.loc[rows, "sales"] * 100 + rng.normal(size=len(rows))
    table.loc[rows, "price"] = table.loc[rows, "price"] * 3 + rng.normal(size=len(rows))
    return CausalData(table, "iv", "sales", treatment="price", instrument="fuel_price",
                      covariates=["time", "customer_type"], categorical=data.categorical)


def linear_iv(n=600, seed=0, effect=2.0):
    """y = effect * a + 3 u + e with a = 2 z + u + e': OLS of y on a is biased upward by about 0.5."""
    return make_linear_iv(n, seed, slope=effect)


# ------------------------------------------------------------------ cross-fitting honesty
HONESTY_CASES = {
    "nn": ("nn", dict(epochs=3)),
    # early stopping: a fold model's stopping must not depend on the other fold models
    "nn-early-stopping": ("nn", dict(nuisance_params=dict(max_epochs=40, patience=0))),
    "gb": ("gb", dict(epochs=5)),
    "gb-early-stopping": ("gb", dict(nuisance_params=dict(max_iter=60, n_iter_no_change=2))),
}


@pytest.mark.parametrize("case", list(HONESTY_CASES))
def test_fold_nuisances_do_not_see_their_own_fold(case):
    learner, kwargs = HONESTY_CASES[case]
    data = demand(300)
    k = 1
    named = dict(outcome_learner=learner, sampler=learner)   # the learner's own fold models
    a = DMLCMR(learner, folds=3, f_model="linear", n_draws=4, seed=0, **named, **kwargs).fit(data)
    rows = a.folds_[k]
    b = DMLCMR(learner, folds=3, f_model="linear", n_draws=4, seed=0, **named, **kwargs).fit(
        with_rows_changed(data, rows))
    for fa, fb in zip(a.folds_, b.folds_):
        np.testing.assert_array_equal(fa, fb)  # the folds depend on n and seed only
    C = data.cmr().conditioning  # instrument and covariates were not changed
    for j in range(3):
        s_a, s_b = a.s_model_.predict(j, C), b.s_model_.predict(j, C)
        g_a = a.g_model_.sample(j, C, 6, np.random.default_rng(0))
        g_b = b.g_model_.sample(j, C, 6, np.random.default_rng(0))
        if j == k:
            np.testing.assert_allclose(s_b, s_a, rtol=1e-5, atol=1e-3)
            np.testing.assert_allclose(g_b, g_a, rtol=1e-5, atol=1e-4)
        else:  # fold models trained on fold k's rows must react to the change
            assert np.abs(s_b - s_a).max() > 10.0
            assert np.abs(g_b - g_a).max() > 1.0
    # the values used for fold k's rows in the second stage are unchanged too
    np.testing.assert_allclose(b.targets_[rows], a.targets_[rows], rtol=1e-5, atol=1e-3)
    np.testing.assert_allclose(b.draws_[rows], a.draws_[rows], rtol=1e-5, atol=1e-4)


def test_fit_is_deterministic_for_a_seed():
    data = demand(300)
    grid = data.table[["price", "time", "customer_type"]].iloc[:50]
    p1 = DMLCMR("nn", folds=2, seed=3, **FAST_NN).fit(data).predict(grid)
    p2 = DMLCMR("nn", folds=2, seed=3, **FAST_NN).fit(data).predict(grid)
    np.testing.assert_allclose(p1, p2, rtol=1e-6)


# ------------------------------------------------------------------ folds and nuisance roles
@pytest.mark.parametrize("n, folds", [(300, 3), (301, 4), (57, 5)])
def test_make_folds_partitions_rows(n, folds):
    parts = make_folds(n, folds, seed=1)
    assert len(parts) == folds
    allrows = np.concatenate(parts)
    assert sorted(allrows) == list(range(n))
    sizes = [len(p) for p in parts]
    assert max(sizes) - min(sizes) <= 1
    assert all(np.all(np.diff(p) > 0) for p in parts)
    for a, b in zip(parts, make_folds(n, folds, seed=1)):
        np.testing.assert_array_equal(a, b)
    assert not all(np.array_equal(a, b) for a, b in zip(parts, make_folds(n, folds, seed=2)))


def test_dml_uses_one_fold_model_per_fold_and_orthogonal_targets():
    data = demand(300)
    est = DMLCMR("gb", folds=3, epochs=5, n_draws=4, **GB_OWN).fit(data)
    arr = data.cmr()
    assert len(est.folds_) == 3 and len(est.s_model_.models_) == 3 and len(est.g_model_.models_) == 3
    for k, rows in enumerate(est.folds_):
        assert np.all(est.fold_of_[rows] == k)
        np.testing.assert_allclose(est.targets_[rows], est.s_model_.predict(k, arr.conditioning[rows]))
    assert not np.allclose(est.targets_, arr.y)
    # draws: the modelled treatment varies, the known covariates are the row's own values
    assert est.draws_.shape == (300, DRAW_BANK * 4, 3)
    known = arr.inputs.astype(np.float32)  # draws are stored in float32
    np.testing.assert_array_equal(est.draws_[:, :, 1], np.repeat(known[:, [1]], DRAW_BANK * 4, axis=1))
    np.testing.assert_array_equal(est.draws_[:, :, 2], np.repeat(known[:, [2]], DRAW_BANK * 4, axis=1))
    assert np.all(est.draws_[:, :, 0].std(1) > 0)


def test_dml_nn_batches_one_network_per_fold():
    est = DMLCMR("nn", folds=4, **FAST_NN, **NN_OWN).fit(demand(300))
    assert est.s_model_.model_.weights[0].shape[0] == 4
    assert est.g_model_.model_.weights[0].shape[0] == 4


def test_ce_dml_uses_one_model_on_all_rows():
    data = demand(300)
    est = CEDMLCMR("gb", epochs=5, n_draws=4, **GB_OWN).fit(data)
    arr = data.cmr()
    assert len(est.folds_) == 1 and np.array_equal(est.folds_[0], np.arange(300))
    assert len(est.s_model_.models_) == 1 and len(est.g_model_.models_) == 1
    np.testing.assert_allclose(est.targets_, est.s_model_.predict(0, arr.conditioning))
    assert len(est.fold_losses_) == 1 and est.fold_losses_[0]["rows"] == 300


def test_naive_targets_are_the_outcome():
    data = demand(300)
    est = NaivePlugIn("gb", epochs=5, n_draws=4, sampler="gb").fit(data)
    np.testing.assert_array_equal(est.targets_, data.table["sales"].to_numpy())
    assert est.s_model_ is None and len(est.g_model_.models_) == 1
    assert "s" not in est.fold_losses_[0] and "g" in est.fold_losses_[0]


def test_ce_and_naive_do_not_need_folds():
    data = demand(40)  # too small for 10 folds, fine without cross-fitting
    CEDMLCMR("linear", folds=10).fit(data)
    with pytest.raises(DMLCoreError, match="10 folds need at least 100 rows"):
        DMLCMR("linear", folds=10).fit(data)


def test_pcl_treatment_is_known_and_outcome_proxy_is_modelled():
    data = simulate_demand_pcl(300, seed=0).data
    est = DMLCMR("gb", folds=2, epochs=5, n_draws=4).fit(data)
    arr = data.cmr()
    assert arr.input_names == ["price", "views"]
    np.testing.assert_array_equal(est.draws_[:, :, 0], np.repeat(arr.inputs[:, [0]].astype(np.float32), est.draws_.shape[1], axis=1))
    assert np.all(est.draws_[:, :, 1].std(1) > 0)
    assert np.all(np.isfinite(est.predict(data.table[["price", "views"]])))


def test_cmr_without_modelled_inputs_needs_no_sampler():
    rng = np.random.default_rng(0)
    x = rng.normal(size=300)
    table = pd.DataFrame({"y": 1.5 * x + 0.5 + 0.1 * rng.normal(size=300), "x": x})
    est = DMLCMR("linear", folds=3).fit(CausalData(table, "cmr", "y", inputs=["x"], conditioning=["x"]))
    assert est.g_model_ is None and est.draws_.shape == (300, 1, 1)
    np.testing.assert_array_equal(est.draws_[:, 0, 0], x.astype(np.float32))
    np.testing.assert_allclose(est.f_.coef_, [0.5, 1.5], atol=0.05)


# ------------------------------------------------------------------ progress, cancel, divergence
def test_progress_events_rise_to_one():
    events = []
    DMLCMR("nn", folds=2, **FAST_NN, **NN_OWN).fit(demand(200), callback=events.append)
    stages = [e["stage"] for e in events if e["type"] == "stage"]
    assert stages[0].startswith("outcome model") and "price" in stages[1]
    assert stages[2].startswith("second stage") and stages[-1] == "done"
    losses = [e for e in events if e["type"] == "loss"]
    assert {e["model"] for e in losses} == {"s", "g", "f"}
    assert {e["fold"] for e in losses if e["model"] == "s"} == {0, 1}
    assert all(math.isfinite(e["train"]) for e in losses)
    progress = [e["progress"] for e in events]
    assert all(0.0 <= p <= 1.0 for p in progress)
    assert all(b >= a for a, b in zip(progress, progress[1:]))
    assert progress[-1] == 1.0 and events[-1]["type"] == "stage"


def test_naive_reports_no_outcome_model():
    events = []
    NaivePlugIn("linear").fit(demand(200), callback=events.append)
    assert "s" not in {e.get("model") for e in events}
    assert events[-1]["progress"] == 1.0


@pytest.mark.parametrize("cls", [CEDMLCMR, NaivePlugIn])
def test_methods_without_cross_fitting_refuse_folds(cls):
    with pytest.raises(DMLCoreError, match="folds=5 does not apply"):
        cls("linear", folds=5).fit(demand(200))
    assert cls("linear").fit(demand(200)).folds_ is not None      # the default is fine


@pytest.mark.parametrize("stop_on", ["s", "f"])
def test_should_stop_cancels_the_fit(stop_on):
    seen = []

    def callback(event):
        if event["type"] == "loss":
            seen.append(event["model"])

    est = DMLCMR("nn", folds=2, **FAST_NN, **NN_OWN)
    with pytest.raises(FitCancelled):
        est.fit(demand(200), callback=callback, should_stop=lambda: stop_on in seen)
    assert not hasattr(est, "f_")
    if stop_on == "s":
        assert "g" not in seen and "f" not in seen and len(seen) <= 2  # stopped after the first epoch
    else:
        assert seen.count("f") == 1


def test_exploding_learning_rate_raises_fit_diverged():
    est = DMLCMR("nn", folds=2, epochs=3, nuisance_params=dict(lr=1e6), **NN_OWN)
    with pytest.raises(FitDiverged) as info:
        est.fit(demand(200))
    msg = str(info.value)
    assert "diverged" in msg and "fold" in msg and "smaller learning rate" in msg


def test_exploding_second_stage_raises_fit_diverged():
    est = CEDMLCMR("linear", f_model="nn", f_params=dict(lr=1e8, max_epochs=3, clip=1e12))
    with pytest.raises(FitDiverged, match="second-stage model f diverged"):
        est.fit(demand(200))


def test_nan_nuisance_is_caught(monkeypatch):
    monkeypatch.setattr(TabularOutcome, "predict", lambda self, k, C: np.full(len(C), np.nan))
    with pytest.raises(FitDiverged, match="diverged"):
        DMLCMR("linear", folds=2).fit(demand(200))


# ------------------------------------------------------------------ fold losses
def test_fold_losses_has_one_entry_per_fold():
    data = demand(300)
    est = DMLCMR("nn", folds=3, **FAST_NN, **NN_OWN).fit(data)
    assert len(est.fold_losses_) == 3
    per_row = est.f_.score_per_row(est.targets_, est.draws_)
    y_var = np.var(data.table["sales"].to_numpy())
    for k, entry in enumerate(est.fold_losses_):
        assert entry["fold"] == k and entry["rows"] == len(est.folds_[k])
        for name in ("s", "g"):
            hist = entry[name]
            assert len(hist["train"]) == len(hist["val"]) == len(hist["epoch"]) == 3
            assert all(math.isfinite(v) for v in hist["train"] + hist["val"])
        assert entry["second_stage_loss"] == pytest.approx(per_row[est.folds_[k]].mean() / y_var, rel=1e-9)
    assert sum(e["rows"] for e in est.fold_losses_) == 300
    assert len(est.second_stage_history_["train"]) >= 1


# ------------------------------------------------------------------ second stages
def second_stage_problem(n=400, bank=16, seed=0):
    """Draws of one input around c_i; targets t_i = mean_j f0(x_ij) with f0 nonlinear."""
    rng = np.random.default_rng(seed)
    c = rng.uniform(-2, 2, size=(n, 1))
    draws = c[:, None, :] + 0.3 * rng.normal(size=(n, bank, 1))
    f0 = lambda x: np.sin(2 * x[..., 0]) + x[..., 0]
    return f0(draws).mean(1), draws, c, f0


def test_linear_f_recovers_a_linear_function_from_draws():
    rng = np.random.default_rng(1)
    n, bank = 300, 8
    draws = rng.normal(size=(n, 1, 2)) + 0.5 * rng.normal(size=(n, bank, 2))
    t = (1.0 + 2.0 * draws[..., 0] - 3.0 * draws[..., 1]).mean(1)
    monitor = Monitor()
    f = LinearF(None, bank).fit(t, draws, draws[:, 0], monitor)
    np.testing.assert_allclose(f.coef_, [1.0, 2.0, -3.0], atol=1e-4)
    np.testing.assert_allclose(f.predict(np.array([[1.0, 1.0], [0.0, 2.0]])), [0.0, -5.0], atol=1e-4)
    assert f.score_per_row(t, draws).max() < 1e-8
    assert monitor.histories[("f", None)]["train"][0] < 1e-8


def test_boosted_f_training_score_decreases():
    t, draws, c, f0 = second_stage_problem()
    monitor = Monitor()
    f = BoostedF(dict(max_stages=60), n_draws=8, seed=0).fit(t, draws, c, monitor)
    train = np.array(monitor.histories[("f", None)]["train"])
    assert len(train) > 10
    assert np.all(np.diff(train) <= 1e-12)   # a line search along each tree never increases the score
    assert train[-1] < 0.05 * train[0]
    assert f.score_per_row(t, draws).mean() < 0.05 * np.var(t)
    xs = np.linspace(-1.5, 1.5, 7)[:, None]
    np.testing.assert_allclose(f.predict(xs), f0(xs), atol=0.3)


def test_neural_f_beats_a_constant():
    t, draws, c, f0 = second_stage_problem()
    monitor = Monitor()
    f = NeuralF(dict(max_epochs=15, lr=3e-3, batch_size=64), n_draws=8, seed=0).fit(t, draws, c, monitor)
    assert f.score_per_row(t, draws).mean() < 0.1 * np.var(t)
    xs = np.linspace(-1.5, 1.5, 7)[:, None]
    np.testing.assert_allclose(f.predict(xs), f0(xs), atol=0.4)
    hist = monitor.histories[("f", None)]
    assert hist["train"][-1] < hist["train"][0] and all(v is not None for v in hist["val"])


@pytest.mark.parametrize("method", [DMLCMR, CEDMLCMR])
def test_linear_learner_recovers_linear_iv_effect_where_ols_is_biased(method):
    data = linear_iv()
    est = (method("linear", folds=3) if method is DMLCMR else method("linear")).fit(data)
    slope = est.f_.coef_[1]
    a, y = data.table["a"].to_numpy(), data.table["y"].to_numpy()
    ols = np.polyfit(a, y, 1)[0]
    assert abs(slope - 2.0) < 0.2
    assert abs(ols - 2.0) > 0.35
    assert est.predict(np.array([[1.0]]))[0] - est.predict(np.array([[0.0]]))[0] == pytest.approx(slope)


def test_nn_dml_beats_constant_on_demand_iv():
    sim = simulate_demand_iv(600, seed=0)
    est = DMLCMR("nn", folds=2, n_draws=4, nuisance_params=dict(max_epochs=15),
                 f_params=dict(max_epochs=15), **NN_OWN).fit(sim.data)

    class Mean:
        def predict(self, frame):
            return np.full(len(frame), sim.data.table["sales"].mean())

    assert sim.truth.score(est)["mse"] < 0.5 * sim.truth.score(Mean())["mse"]


# ------------------------------------------------------------------ input checks
@pytest.fixture(scope="module")
def fitted():
    return DMLCMR("linear", folds=2).fit(demand(200))


def test_predict_before_fit_raises():
    with pytest.raises(DMLCoreError, match="not fitted"):
        DMLCMR("nn").predict(np.zeros((3, 3)))


def test_predict_missing_columns_named(fitted):
    frame = demand(50).table[["price", "time"]]
    with pytest.raises(DMLCoreError, match="customer_type"):
        fitted.predict(frame)


@pytest.mark.parametrize("shape", [(5, 2), (5, 4), (5,), (2, 5, 3)])
def test_predict_wrong_shape_raises(fitted, shape):
    with pytest.raises(DMLCoreError, match="3 columns"):
        fitted.predict(np.zeros(shape))


def test_predict_accepts_frame_in_any_column_order(fitted):
    frame = demand(50).table
    np.testing.assert_allclose(fitted.predict(frame[["customer_type", "price", "time"]]),
                               fitted.predict(frame[["price", "time", "customer_type"]].to_numpy()))


@pytest.mark.parametrize("kwargs, word", [
    (dict(learner="svm"), "svm"), (dict(f_model="spline"), "spline"), (dict(n_draws=0), "n_draws"),
    (dict(epochs=0), "epochs"), (dict(folds=1), "folds"), (dict(folds=50), "50 folds"),
])
def test_bad_settings_raise(kwargs, word):
    with pytest.raises(DMLCoreError, match=word):
        DMLCMR(**{"learner": "linear", "folds": 2, **kwargs}).fit(demand(200))


@pytest.mark.parametrize("learner, f_model, f_params, word", [
    ("linear", "nn", dict(hidden=(8, -1)), "hidden"),
    ("linear", "nn", dict(dropout=1.0), "dropout"),
    ("linear", "boost", dict(subsample=0.0), "subsample"),
    ("linear", "boost", dict(subsample=2.0), "subsample"),
    ("linear", "linear", dict(alpha=1.0), "Unknown linear second-stage setting"),
    ("linear", "sieve", dict(max_epochs=5), "Unknown sieve second-stage setting.*'max_epochs'"),
])
def test_bad_f_params_raise(learner, f_model, f_params, word):
    with pytest.raises(DMLCoreError, match=word):
        CEDMLCMR(learner, f_model=f_model, f_params=f_params, epochs=2).fit(demand(200))


def test_epochs_leave_closed_form_second_stages_alone():
    """``epochs`` caps networks and boosting; a sieve or linear f has no epochs to cap."""
    for f_model in ("sieve", "linear"):
        est = CEDMLCMR("linear", f_model=f_model, epochs=2).fit(demand(300))
        assert np.isfinite(est.predict(demand(20).table)).all()


def test_fit_requires_causal_data():
    with pytest.raises(DMLCoreError, match="CausalData"):
        DMLCMR("linear").fit(demand(200).table)


def test_outcome_learner_override_with_epochs():
    """An outcome learner other than the main learner must not receive the main learner's options.

    With learner="nn" and epochs set, the nuisance options get max_epochs, which are passed to
    the linear outcome model as a scikit-learn keyword (Ridge(max_epochs=...)): TypeError.
    """
    est = DMLCMR("nn", folds=2, outcome_learner="linear", epochs=2, n_draws=4).fit(demand(200))
    assert len(est.s_model_.models_) == 2
