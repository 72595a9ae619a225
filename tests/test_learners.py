"""Tests of the nuisance learners (dmlcore.learners) and the Monitor that records their losses."""

import math

import numpy as np
import pytest

from dmlcore.errors import DMLCoreError, FitCancelled, FitDiverged
from dmlcore.learners import make_outcome_learner, make_sampler
from dmlcore.learners.base import Scaler, validation_split
from dmlcore.learners.nn import MixtureDensity, NeuralOutcome
from dmlcore.learners.tabular import ResidualSampler, TabularOutcome
from dmlcore.progress import Monitor

NN_FAST = dict(max_epochs=30, lr=3e-3, batch_size=64)
TAB_FAST = {"rf": dict(n_estimators=40, n_jobs=1), "gb": None, "linear": None,
            # an overfitting forest: only out-of-sample residuals keep the spread
            "rf-deep": dict(n_estimators=40, n_jobs=1, min_samples_leaf=1)}


def regression_problem(n=500, seed=0):
    rng = np.random.default_rng(seed)
    C = rng.uniform(-2, 2, size=(n, 2))
    y = 2 * C[:, 0] + C[:, 1] ** 2 + 0.3 * rng.normal(size=n)
    return C, y


def gaussian_problem(n=500, seed=1, dims=1):
    """X | C ~ N(2 C + 1, 0.5^2) in each dimension (dimension j shifted by 3 j)."""
    rng = np.random.default_rng(seed)
    C = rng.uniform(-1, 1, size=(n, 1))
    X = np.column_stack([2 * C[:, 0] + 1 + 3 * j + 0.5 * rng.normal(size=n) for j in range(dims)])
    return C, X


TEST_C = np.array([[-0.5], [0.0], [0.5]])
GRID = np.linspace(-0.9, 0.9, 100)[:, None]


def mean_error_and_spread(draws):
    """Mean absolute error of the draws' mean against 2 c + 1 over GRID, and their average std."""
    first = draws[:, :, 0]
    return float(np.abs(first.mean(1) - (2 * GRID[:, 0] + 1)).mean()), float(first.std(1).mean())


def held_out_mse(model, C, y, test):
    return float(np.mean((model.predict(0, C[test]) - y[test]) ** 2))


# ------------------------------------------------------------------ factory
def test_factory_makes_learners_by_name():
    assert isinstance(make_outcome_learner("nn"), NeuralOutcome)
    assert isinstance(make_sampler("nn"), MixtureDensity)
    for name in ("rf", "gb", "linear"):
        assert isinstance(make_outcome_learner(name), TabularOutcome) and make_outcome_learner(name).kind == name
        assert isinstance(make_sampler(name), ResidualSampler) and make_sampler(name).kind == name
    for make in (make_outcome_learner, make_sampler):
        with pytest.raises(DMLCoreError, match="'svm'.*nn, rf, gb, linear"):
            make("svm")


def test_validation_split_stays_inside_training_rows():
    rows = np.arange(10, 110, 2)
    fit, val = validation_split(rows, 0.2, np.random.default_rng(0))
    assert len(val) == 10 and len(fit) == 40
    assert set(fit) | set(val) == set(rows) and not set(fit) & set(val)


def test_scaler_handles_constant_columns():
    values = np.column_stack([np.arange(5.0), np.full(5, 3.0)])
    s = Scaler(values)
    z = s.transform(values)
    np.testing.assert_allclose(z.mean(0), 0, atol=1e-12)
    np.testing.assert_allclose(z[:, 0].std(), 1)
    np.testing.assert_allclose(s.inverse(z), values)


# ------------------------------------------------------------------ neural learners
def test_neural_outcome_beats_the_mean_on_held_out_rows():
    C, y = regression_problem()
    train, test = np.arange(400), np.arange(400, 500)
    model = NeuralOutcome(NN_FAST, seed=0).fit(C, y, [train], Monitor())
    assert held_out_mse(model, C, y, test) < 0.2 * np.var(y[test])


def test_mixture_density_samples_have_the_conditional_mean_and_spread():
    C, X = gaussian_problem()
    model = MixtureDensity({**NN_FAST, "components": 3}, seed=0).fit(C, X, [np.arange(len(C))], Monitor())
    draws = model.sample(0, GRID, 400, np.random.default_rng(1))
    assert draws.shape == (len(GRID), 400, 1)
    error, spread = mean_error_and_spread(draws)
    assert error < 0.2
    assert 0.35 < spread < 0.75


def test_mixture_density_two_dimensions_and_reproducible_draws():
    C, X = gaussian_problem(dims=2)
    model = MixtureDensity({**NN_FAST, "components": 2}, seed=0).fit(C, X, [np.arange(len(C))], Monitor())
    a = model.sample(0, TEST_C, 500, np.random.default_rng(4))
    b = model.sample(0, TEST_C, 500, np.random.default_rng(4))
    assert a.shape == (3, 500, 2)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(a[:, :, 1].mean(1) - a[:, :, 0].mean(1), 3.0, atol=0.4)


def test_neural_loss_histories_recorded_per_fold():
    C, y = regression_problem(n=300)
    sets = [np.arange(0, 200), np.arange(100, 300)]
    events = []
    monitor = Monitor(events.append)
    NeuralOutcome(dict(max_epochs=4, patience=100), seed=0).fit(C, y, sets, monitor)
    for k in (0, 1):
        hist = monitor.histories[("s", k)]
        assert hist["epoch"] == [0, 1, 2, 3]
        assert all(math.isfinite(v) for v in hist["train"] + hist["val"])
    losses = [e for e in events if e["type"] == "loss"]
    assert len(losses) == 8 and {e["fold"] for e in losses} == {0, 1} and {e["model"] for e in losses} == {"s"}
    # training loss (standardized scale) falls below the variance of a constant fit
    assert monitor.histories[("s", 0)]["train"][-1] < monitor.histories[("s", 0)]["train"][0]


@pytest.mark.parametrize("rate", [0.1, 0.5])
def test_dropout_mask_keeps_the_rate_and_scales_the_kept_units(rate):
    from dmlcore.learners.nn import dropout_mask

    mask = dropout_mask((4, 500, 50), rate, np.random.default_rng(0)).numpy()
    assert set(np.unique(mask)) == {0.0, np.float32(1.0 / (1.0 - rate))}
    assert abs((mask > 0).mean() - (1.0 - rate)) < 0.01    # 100,000 units
    assert abs(mask.mean() - 1.0) < 0.02                    # inverted dropout keeps the mean
    active = np.array([3, 1])
    part = dropout_mask((4, 500, 50), rate, np.random.default_rng(0), active).numpy()
    np.testing.assert_array_equal(part, mask[active])        # a fold's mask ignores the others


def test_neural_fit_is_reproducible_while_other_threads_draw_random_numbers():
    """Dropout masks come from the model's own stream: a concurrent job (the dashboard runs
    fits in threads) drawing from torch's global generator must not change the fit."""
    import threading

    import torch

    C, y = regression_problem(400)
    params = dict(NN_FAST, max_epochs=8, dropout=0.3)
    alone = NeuralOutcome(params, seed=3).fit(C, y, [np.arange(400)], Monitor()).predict(0, C)
    stop = threading.Event()

    def other_job():
        while not stop.is_set():
            torch.rand(1000)
            torch.manual_seed(0)

    thread = threading.Thread(target=other_job)
    thread.start()
    try:
        busy = NeuralOutcome(params, seed=3).fit(C, y, [np.arange(400)], Monitor()).predict(0, C)
    finally:
        stop.set()
        thread.join()
    np.testing.assert_array_equal(busy, alone)


def test_neural_per_fold_standardization():
    C, y = regression_problem(n=300)
    y = y.copy()
    a, b = np.arange(0, 150), np.arange(150, 300)
    y[a] += 1000.0       # fold model 0 only sees outcomes near 1000, fold model 1 near 0
    C = C.copy()
    C[a] *= 50.0
    model = NeuralOutcome(dict(max_epochs=2), seed=0).fit(C, y, [a, b], Monitor())
    np.testing.assert_allclose(model.data_.t_mean[0].numpy().ravel(), [y[a].mean()], rtol=1e-5)
    np.testing.assert_allclose(model.data_.c_std[1].numpy().ravel(), C[b].std(0), rtol=1e-5)
    assert abs(model.predict(0, C[a]).mean() - 1000) < 20
    assert abs(model.predict(1, C[b]).mean()) < 20


def test_neural_fold_model_reads_only_its_training_rows():
    C, y = regression_problem(n=300)
    folds = [np.arange(k, 300, 3) for k in range(3)]
    sets = [np.setdiff1d(np.arange(300), f) for f in folds]
    y2 = y.copy()
    y2[folds[0]] = 5 * y2[folds[0]] + 3.0
    params = dict(max_epochs=5, patience=100)
    a = NeuralOutcome(params, seed=0).fit(C, y, sets, Monitor())
    b = NeuralOutcome(params, seed=0).fit(C, y2, sets, Monitor())
    np.testing.assert_array_equal(a.predict(0, C), b.predict(0, C))
    assert not np.allclose(a.predict(1, C), b.predict(1, C))


def test_mixture_density_fold_model_reads_only_its_training_rows():
    C, X = gaussian_problem(n=300)
    folds = [np.arange(k, 300, 2) for k in range(2)]
    sets = [folds[1], folds[0]]
    X2 = X.copy()
    X2[folds[0]] = 4 * X2[folds[0]] - 2
    params = dict(max_epochs=4, patience=100, components=3)
    a = MixtureDensity(params, seed=0).fit(C, X, sets, Monitor())
    b = MixtureDensity(params, seed=0).fit(C, X2, sets, Monitor())
    np.testing.assert_array_equal(a.sample(0, C, 4, np.random.default_rng(0)),
                                  b.sample(0, C, 4, np.random.default_rng(0)))
    assert not np.allclose(a.sample(1, C, 4, np.random.default_rng(0)),
                           b.sample(1, C, 4, np.random.default_rng(0)))


@pytest.mark.parametrize("params, word", [(dict(lr=-1.0), "lr"), (dict(batch_size=0), "batch_size"),
                                          (dict(max_epochs=2.5), "max_epochs"), (dict(dropout=1.0), "dropout"),
                                          (dict(components=0), "components"), (dict(patience=-1), "patience"),
                                          (dict(hidden=(64, -1)), "hidden"), (dict(hidden=()), "hidden"),
                                          (dict(hidden=(64, 0)), "hidden"), (dict(val_fraction=0.0), "val_fraction"),
                                          (dict(learning_rate=0.1), "Unknown nn nuisance setting.*'learning_rate'")])
def test_neural_bad_params_raise(params, word):
    C, y = regression_problem(n=100)
    with pytest.raises(DMLCoreError, match=word):
        NeuralOutcome(params).fit(C, y, [np.arange(100)], Monitor())


@pytest.mark.parametrize("kind, params, word", [
    ("gb", dict(learning_rate=0.0), "learning_rate must be a positive"),
    ("gb", dict(max_leaf_nodes=1), "max_leaf_nodes must be at least 2"),
    ("gb", dict(validation_fraction=1.0), "validation_fraction"),
    ("gb", dict(n_estimators=10), "Unknown gb nuisance setting.*'n_estimators'"),
    ("rf", dict(max_features=0.0), "max_features"),
    ("rf", dict(n_estimators=0), "n_estimators"),
    ("linear", dict(alpha=-1.0), "alpha"),
])
def test_tabular_bad_params_raise(kind, params, word):
    C, y = regression_problem(n=100)
    with pytest.raises(DMLCoreError, match=word):
        TabularOutcome(kind, params).fit(C, y, [np.arange(100)], Monitor())


# ------------------------------------------------------------------ tabular learners
@pytest.mark.parametrize("kind", ["rf", "gb", "linear"])
def test_tabular_outcome_beats_the_mean_on_held_out_rows(kind):
    C, y = regression_problem()
    train, test = np.arange(400), np.arange(400, 500)
    model = TabularOutcome(kind, TAB_FAST[kind], seed=0).fit(C, y, [train], Monitor())
    bound = 0.5 if kind == "linear" else 0.1   # linear cannot fit the square, but the slope
    assert held_out_mse(model, C, y, test) < bound * np.var(y[test])


@pytest.mark.parametrize("kind", ["rf", "rf-deep", "gb", "linear"])
def test_residual_sampler_has_the_conditional_mean_and_spread(kind):
    C, X = gaussian_problem(n=1200)  # the residual pool (25 %) must be large enough to centre the draws
    model = ResidualSampler(kind.split("-")[0], TAB_FAST[kind], seed=0).fit(C, X, [np.arange(len(C))], Monitor())
    draws = model.sample(0, GRID, 400, np.random.default_rng(1))
    assert draws.shape == (len(GRID), 400, 1)
    error, spread = mean_error_and_spread(draws)
    if kind == "rf-deep":  # noisy mean; out-of-sample residuals include its error, so wider draws
        assert error < 0.45 and 0.4 < spread < 0.85
    else:
        assert error < (0.08 if kind == "linear" else 0.25)
        assert 0.4 < spread < 0.65


def test_residual_sampler_draws_are_mean_plus_pooled_residuals():
    C, X = gaussian_problem(dims=2)
    model = ResidualSampler("linear", seed=0).fit(C, X, [np.arange(len(C))], Monitor())
    draws = model.sample(0, TEST_C, 300, np.random.default_rng(2))
    assert draws.shape == (3, 300, 2)
    cs, xs = model.scales_[0]
    mean = np.column_stack([m.predict(cs.transform(TEST_C)) for m in model.models_[0]])
    resid = xs.transform(draws) - mean[:, None, :]
    pool = {tuple(np.round(r, 9)) for r in model.pools_[0]}
    assert all(tuple(np.round(r, 9)) in pool for r in resid.reshape(-1, 2))
    assert len(model.pools_[0]) == round(0.25 * len(C))  # out-of-sample residual pool


@pytest.mark.parametrize("kind", ["gb", "linear"])
def test_tabular_fold_models_read_only_their_training_rows(kind):
    C, y = regression_problem(n=300)
    params = dict(max_iter=40) if kind == "gb" else None
    folds = [np.arange(k, 300, 3) for k in range(3)]
    sets = [np.setdiff1d(np.arange(300), f) for f in folds]
    y2 = y.copy()
    y2[folds[2]] = -7 * y2[folds[2]]
    X2 = np.column_stack([C[:, 0], y2])
    X1 = np.column_stack([C[:, 0], y])
    a = TabularOutcome(kind, params, seed=0).fit(C, y, sets, Monitor())
    b = TabularOutcome(kind, params, seed=0).fit(C, y2, sets, Monitor())
    np.testing.assert_allclose(a.predict(2, C), b.predict(2, C), rtol=1e-12)
    assert not np.allclose(a.predict(0, C), b.predict(0, C))
    ga = ResidualSampler(kind, params, seed=0).fit(C, X1, sets, Monitor())
    gb = ResidualSampler(kind, params, seed=0).fit(C, X2, sets, Monitor())
    np.testing.assert_allclose(ga.sample(2, C, 3, np.random.default_rng(0)),
                               gb.sample(2, C, 3, np.random.default_rng(0)), rtol=1e-12)
    assert not np.allclose(ga.sample(1, C, 3, np.random.default_rng(0)),
                           gb.sample(1, C, 3, np.random.default_rng(0)))


@pytest.mark.parametrize("kind", ["gb", "linear", "rf"])
def test_tabular_per_fold_standardization(kind):
    C, y = regression_problem(n=300)
    y = y.copy()
    a, b = np.arange(0, 150), np.arange(150, 300)
    y[a] += 1000.0
    model = TabularOutcome(kind, TAB_FAST[kind], seed=0).fit(C, y, [a, b], Monitor())
    cs, ys = model.scales_[0]
    assert ys.mean == pytest.approx(y[a].mean()) and ys.std == pytest.approx(y[a].std())
    np.testing.assert_allclose(cs.mean, C[a].mean(0))
    assert abs(model.predict(0, C[b]).mean() - 1000) < 10
    assert abs(model.predict(1, C[a]).mean()) < 10


def test_tabular_loss_histories_recorded():
    C, y = regression_problem(n=300)
    sets = [np.arange(0, 200), np.arange(100, 300)]
    for kind in ("linear", "gb"):
        monitor = Monitor()
        model = TabularOutcome(kind, seed=0).fit(C, y, sets, monitor)
        for k in (0, 1):
            hist = monitor.histories[("s", k)]
            assert all(v is not None and math.isfinite(v) for v in hist["train"] + hist["val"])
            if kind == "linear":
                assert hist["epoch"] == [0]
            else:
                assert len(hist["train"]) == model.models_[k].n_iter_ + 1 > 5  # + the initial score
                assert hist["train"][-1] < hist["train"][0]
        monitor = Monitor()
        ResidualSampler(kind, seed=0).fit(C, np.column_stack([y, C[:, 0] + y]), sets, monitor)
        assert set(monitor.histories) == {("g", 0), ("g", 1)}  # one history per fold model


def test_learners_check_for_cancellation_between_fold_models():
    C, y = regression_problem(n=300)
    calls = []

    def stop():
        calls.append(1)
        return len(calls) >= 2

    monitor = Monitor(should_stop=stop)
    with pytest.raises(FitCancelled):
        TabularOutcome("linear").fit(C, y, [np.arange(100), np.arange(100, 200), np.arange(200, 300)], monitor)
    assert set(monitor.histories) == {("s", 0), ("s", 1)}


# ------------------------------------------------------------------ monitor
def test_monitor_raises_on_non_finite_loss_with_clear_message():
    monitor = Monitor()
    monitor.loss("s", 0, 0, 1.0, 0.5)
    with pytest.raises(FitDiverged, match=r"outcome model.*diverged.*epoch 3.*fold 2.*learning rate"):
        monitor.loss("s", 2, 3, float("nan"), 0.5)
    with pytest.raises(FitDiverged, match="validation inf"):
        monitor.loss("g", None, 0, 1.0, float("inf"))


def test_monitor_progress_follows_stage_spans():
    events = []
    monitor = Monitor(events.append)
    monitor.stage("a", start=0.0, end=0.5)
    for epoch in range(4):
        monitor.loss("s", 0, epoch, 1.0, None, of=4)
    assert events[-1]["progress"] == pytest.approx(0.5)
    assert [e["progress"] for e in events[1:]] == pytest.approx([0.125, 0.25, 0.375, 0.5])
    monitor.stage("b", start=0.5, end=1.0)
    monitor.loss("f", None, 0, 1.0, None, of=2)
    assert events[-1]["progress"] == pytest.approx(0.75)
    assert events[0] == {"type": "stage", "stage": "a", "fold": None, "progress": 0.0}
