"""Learners as objects: scikit-learn regressors and per-fold nuisance objects (an oracle) in DML-CMR."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.ensemble import HistGradientBoostingRegressor
from sklearn.linear_model import LinearRegression

from conftest import make_linear_iv
from dmlcore.errors import DMLCoreError
from dmlcore.estimators import DMLCMR, NaivePlugIn, OutcomeRegression, make_estimator
from dmlcore.learners import ConditionalSampler, OutcomeLearner, SelectedOutcome
from dmlcore.runs import fit_run


def slope(est, lo=-1.0, hi=1.0):
    return float(np.diff(est.predict(np.array([[lo], [hi]])))[0] / (hi - lo))


@pytest.fixture(scope="module")
def data():
    return make_linear_iv(2000, 0)      # f(a) = 2a; OLS of y on a is biased by the confounder


def test_a_regressor_object_is_a_nuisance_learner(data):
    user = LinearRegression()
    est = DMLCMR(learner=user, folds=3, f_model="linear", n_draws=4).fit(data)
    named = DMLCMR(learner="linear", folds=3, f_model="linear", n_draws=4).fit(data)
    ols = OutcomeRegression("linear").fit(data)
    assert abs(slope(est) - 2.0) < 0.15 and abs(slope(est) - slope(named)) < 0.1
    assert slope(ols) - 2.0 > 0.3                                  # what the instrument corrects
    assert not hasattr(user, "coef_")                              # the user's object is never fitted
    fold_models = [m for m in est.s_model_.models_] + [m for ms in est.g_model_.models_ for m in ms]
    assert len({id(m) for m in fold_models}) == len(fold_models) == 6 and user not in fold_models
    assert est.s_model_.name == "LinearRegression()"


def test_a_regressor_object_gets_the_boosted_second_stage_and_a_json_record(data):
    run = fit_run(data, "dml-cmr", learner=HistGradientBoostingRegressor(max_iter=20, random_state=0), folds=2,
                  n_draws=2, epochs=20, heldout_folds=0)
    record = json.loads(run.to_json())
    assert record["f_model"] == "boost" and record["learner"].startswith("HistGradientBoostingRegressor(")
    assert record["config"]["learner"] == record["learner"]
    assert {"s", "g"} <= set(record["fold_losses"][0])             # the nuisances' losses are reported


def test_separate_objects_for_the_two_nuisances(data):
    est = DMLCMR(learner="gb", outcome_learner=LinearRegression(),
                 sampler=HistGradientBoostingRegressor(max_iter=15), folds=2, n_draws=2, epochs=10).fit(data)
    assert est.s_model_.name == "LinearRegression()"
    assert est.g_model_.name.startswith("HistGradientBoostingRegressor(")


class OracleOutcome(OutcomeLearner):
    """The true E[Y | z] = 4z of the linear IV design; records what each fold model was asked."""

    def fit(self, C, y, train_sets, monitor):
        self.train_sets_ = [set(rows.tolist()) for rows in train_sets]
        self.asked_ = []
        return self

    def predict(self, k, C):
        self.asked_.append((k, C[:, 0].copy()))
        return 4.0 * C[:, 0]


class OracleSampler(ConditionalSampler):
    """Draws from the true distribution of a given z: N(2z, 2)."""

    def fit(self, C, X, train_sets, monitor):
        return self

    def sample(self, k, C, n_draws, rng):
        return 2.0 * C[:, :1, None] + np.sqrt(2.0) * rng.standard_normal((len(C), n_draws, 1))


def test_oracle_nuisances_through_the_per_fold_interface(data):
    oracle = OracleOutcome()
    est = DMLCMR(outcome_learner=oracle, sampler=OracleSampler(), learner="linear", f_model="linear",
                 folds=3, n_draws=8).fit(data)
    assert abs(slope(est) - 2.0) < 0.1
    fitted = est.s_model_.learner                                    # a copy: the user's oracle is untouched
    assert fitted is not oracle and not hasattr(oracle, "asked_")
    z = data.table["z"].to_numpy()
    for k, asked in fitted.asked_:                                   # fold k is asked only about rows it never saw
        rows = set(np.flatnonzero(np.isin(z, asked)).tolist())
        assert rows and not rows & fitted.train_sets_[k]


class Flat(OutcomeLearner):
    """E[Y | z] taken as 0: a shrunk outcome model, worse than the oracle on held-out rows."""

    def fit(self, C, y, train_sets, monitor):
        return self

    def predict(self, k, C):
        return np.zeros(len(C))


def test_auto_through_the_registry_beside_a_regressor_object(data):
    est = make_estimator("dml-cmr", learner=LinearRegression(), outcome_learner="auto", folds=2, n_draws=2, epochs=3,
                         device="cpu")
    assert clone(est).get_params()["outcome_learner"] == "auto"
    est.fit(data)
    record = est.nuisance_selection_["s"]
    assert record["candidates"] == ["gb", "gb-small"]
    assert record["choice"] == min(record["heldout_loss"], key=record["heldout_loss"].get)
    assert est.f_model_name_ == "boost" and set(est.nuisance_selection_) == {"s"}   # the sampler is the regressor's


def test_a_selection_among_nuisance_objects_is_recorded(data):
    chosen = SelectedOutcome({"flat": Flat(), "oracle": OracleOutcome()})
    run = fit_run(data, "dml-cmr", learner="linear", outcome_learner=chosen, f_model="linear", folds=3, n_draws=2,
                  heldout_folds=0, effect_folds=0)
    record = json.loads(run.to_json())
    assert record["nuisances"]["s"]["choice"] == "oracle"
    assert record["nuisances"]["s"]["heldout_loss"]["oracle"] < record["nuisances"]["s"]["heldout_loss"]["flat"]
    assert record["config"]["outcome_learner"] == "SelectedOutcome(candidates=['flat', 'oracle'])"
    assert not hasattr(chosen, "selection_")                         # the user's object is a template, not fitted


@pytest.mark.parametrize("bad, expected", [
    (object(), "has no fit and predict methods"),
    ("xgboost", "Unknown learner 'xgboost'"),
])
def test_a_learner_that_is_not_a_regressor_is_one_line(data, bad, expected):
    with pytest.raises(DMLCoreError, match=expected) as err:
        NaivePlugIn(learner=bad).fit(data)
    assert "\n" not in str(err.value)


class Broken(LinearRegression):
    def fit(self, X, y):
        raise RuntimeError("no BLAS today")


class Wide(LinearRegression):
    def predict(self, X):
        return np.zeros((len(X), 2))


@pytest.mark.parametrize("bad, expected", [
    (Broken(), r"The learner Broken\(\) failed as the outcome model .*RuntimeError: no BLAS today"),
    (Wide(), r"Wide\(\) predicts an array of shape \(2, 2\)"),
])
def test_a_regressor_that_fails_is_named_in_one_line(data, bad, expected):
    with pytest.raises(DMLCoreError, match=expected) as err:
        DMLCMR(learner=bad, folds=2).fit(data)
    assert "\n" not in str(err.value)


def test_named_settings_do_not_go_to_an_object(data):
    with pytest.raises(DMLCoreError, match="set them on your regressor"):
        DMLCMR(learner=LinearRegression(), nuisance_params={"alpha": 1.0}, folds=2).fit(data)


def test_the_wrong_kind_of_nuisance_object_is_refused(data):
    with pytest.raises(DMLCoreError, match="OracleSampler.*ConditionalSampler.*not the outcome learner"):
        DMLCMR(outcome_learner=OracleSampler(), folds=2).fit(data)
