"""Nuisances chosen by their cross-fitted held-out loss (outcome_learner / sampler = "auto")."""

import json

import numpy as np
import pytest

from dmlcore.cli import main
from dmlcore.errors import DMLCoreError
from dmlcore.estimators import make_estimator
from dmlcore.estimators.dml import CEDMLCMR, DMLCMR, NaivePlugIn, make_folds
from dmlcore.learners.base import ConditionalSampler, OutcomeLearner
from dmlcore.estimators import trains_networks
from dmlcore.learners.select import PILOT, SelectedOutcome, SelectedSampler, describe, energy_score, nuisance_default
from dmlcore.learners import tabular
from dmlcore.learners.tabular import ResidualSampler, TabularOutcome
from dmlcore.progress import Monitor
from dmlcore.studies.spec import config_key, spec_from_dict
from dmlcore.runs import fit_run


class Line(OutcomeLearner):
    """Least squares of y on C per training set, its slope multiplied by ``shrink`` (1: the fit)."""

    def __init__(self, shrink=1.0):
        self.shrink = shrink

    def fit(self, C, y, train_sets, monitor):
        self.coefs_ = []
        for rows in train_sets:
            X = np.column_stack([np.ones(len(rows)), C[rows]])
            beta = np.linalg.lstsq(X, y[rows], rcond=None)[0]
            beta[1:] *= self.shrink
            self.coefs_.append(beta)
        return self

    def predict(self, k, C):
        return self.coefs_[k][0] + C @ self.coefs_[k][1:]


class Shifted(ConditionalSampler):
    """Draws of the treatment a = 2 z + e around its true mean, with spread ``sd`` (the truth: sd 1)."""

    def __init__(self, sd):
        self.sd = sd

    def fit(self, C, X, train_sets, monitor):
        return self

    def sample(self, k, C, n_draws, rng):
        return (2.0 * C[:, :1] + self.sd * rng.standard_normal((len(C), n_draws)))[:, :, None]


def design(n=1000, seed=0):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, 1))
    a = 2.0 * z[:, 0] + rng.normal(size=n)
    y = 3.0 * a + rng.normal(size=n)
    return z, a, y


@pytest.mark.parametrize("order", [("shrunk", "fit"), ("fit", "shrunk")])
def test_outcome_choice_is_the_lower_cross_fitted_loss(order):
    z, _, y = design()
    folds = make_folds(len(y), 5, 0)
    train = [np.setdiff1d(np.arange(len(y)), rows) for rows in folds]
    candidates = {"fit": Line(1.0), "shrunk": Line(0.5)}
    chosen = SelectedOutcome({name: candidates[name] for name in order}, seed=0).fit(z, y, train, None)
    record = chosen.selection_
    assert record["heldout_loss"]["fit"] < record["heldout_loss"]["shrunk"]
    assert record["choice"] == "fit" and record["choice_per_fold"] == ["fit"] * 5
    # the loss is the held-out one: the pilot folds' rows scored by the fold models that never saw them
    expected = np.mean(np.concatenate([(y[rows] - candidates["fit"].predict(k, z[rows])) ** 2
                                       for k, rows in enumerate(folds[:PILOT])]))
    assert record["heldout_loss"]["fit"] == pytest.approx(expected)
    assert record["scored_folds"] == PILOT and record["rows_scored"] == sum(len(r) for r in folds[:PILOT])
    assert np.allclose(chosen.predict(2, z[:7]), candidates["fit"].predict(2, z[:7]))


class Counting(Line):
    """A Line that records, in the class's log (copies share it), its shrink and the number of training sets
    of each fit."""

    log = []

    def fit(self, C, y, train_sets, monitor):
        Counting.log.append((self.shrink, len(train_sets)))
        return super().fit(C, y, train_sets, monitor)


def test_only_the_pilot_folds_of_a_losing_candidate_are_fitted():
    z, _, y = design()
    folds = make_folds(len(y), 10, 0)
    train = [np.setdiff1d(np.arange(len(y)), rows) for rows in folds]
    Counting.log.clear()
    chosen = SelectedOutcome({"shrunk": Counting(0.5), "fit": Counting(1.0)}, seed=0).fit(z, y, train, None)
    # the loser's pilot folds only; the winner's pilot, then every fold
    assert sorted(Counting.log) == [(0.5, PILOT), (1.0, PILOT), (1.0, 10)]
    assert chosen.selection_["choice_per_fold"] == ["fit"] * 10
    # the chosen fold models are those a fit of every fold gives: as if there had been no choice
    alone = Line(1.0).fit(z, y, train, None)
    for k in range(10):
        assert np.array_equal(chosen.predict(k, z[:9]), alone.predict(k, z[:9]))


@pytest.mark.parametrize("role", ["s", "g"])
def test_the_chosen_tabular_candidate_keeps_its_pilot_fold_models(role, monkeypatch):
    # its first PILOT fold models are taken from the pilot, not fitted again; the fold models, their draws and
    # their loss histories are those of a fit of that learner on every fold (the random splits of the folds
    # before them replayed: linear fits hold out rows drawn from the learner's generator)
    z, a, y = design()
    target = y if role == "s" else np.column_stack([a, a ** 2])
    folds = make_folds(len(y), 6, 0)
    train = [np.setdiff1d(np.arange(len(y)), rows) for rows in folds]
    make = TabularOutcome if role == "s" else ResidualSampler
    fits = []
    real = tabular.fit_regressor
    monkeypatch.setattr(tabular, "fit_regressor", lambda *args: (fits.append(1), real(*args))[1])
    chooser = SelectedOutcome if role == "s" else SelectedSampler
    monitor = Monitor()
    chosen = chooser({"shrunk": make("linear", {"alpha": 1e5}), "fit": make("linear")}, seed=0).fit(
        z, target, train, monitor)
    assert chosen.selection_["choice_per_fold"] == ["fit"] * 6
    per_fold = 2 * (1 if role == "s" else target.shape[1])     # a fit on part of the rows, then on all of them
    assert len(fits) == per_fold * (PILOT + PILOT + (6 - PILOT))   # not PILOT + PILOT + 6
    alone_monitor = Monitor()
    alone = make("linear").fit(z, target, train, alone_monitor)
    for k in range(6):
        if role == "s":
            assert np.array_equal(chosen.predict(k, z[:9]), alone.predict(k, z[:9]))
        else:
            draws = [m.sample(k, z[:9], 5, np.random.default_rng(3)) for m in (chosen, alone)]
            assert np.array_equal(*draws)
    assert monitor.histories == alone_monitor.histories and len(monitor.histories) == 6


class Offset(OutcomeLearner):
    """Predicts the row's own y plus an error given per fold of the rows (a dict fold -> error; 0 elsewhere)."""

    def __init__(self, y, folds, errors):
        self.by_value = {float(row): float(y[row]) + errors.get(k, 0.0)   # the row number is the input
                         for k, rows in enumerate(folds) for row in rows}

    def fit(self, C, y_, train_sets, monitor):
        return self

    def predict(self, k, C):
        return np.array([self.by_value[float(c)] for c in C[:, 0]])


def _offset_case(k=6, n=300):
    y = np.random.default_rng(0).normal(size=n)
    C = np.arange(n, dtype=float)[:, None]     # the input is the row number
    folds = make_folds(n, k, 0)
    return y, C, folds, [np.setdiff1d(np.arange(n), rows) for rows in folds]


def test_only_the_pilot_folds_rows_are_scored():
    # "a" is exact on the pilot folds' rows and far off elsewhere; "b" slightly off on the pilot's rows only
    y, C, folds, train = _offset_case()
    far = {k: 5.0 for k in range(PILOT, len(folds))}
    chosen = SelectedOutcome({"a": Offset(y, folds, far), "b": Offset(y, folds, {0: 0.5, 1: 0.5})}).fit(
        C, y, train, None)
    assert chosen.selection_["choice_per_fold"] == ["a"] * len(folds)
    every = SelectedOutcome({"a": Offset(y, folds, far), "b": Offset(y, folds, {0: 0.5, 1: 0.5})},
                            pilot=None).fit(C, y, train, None)
    assert every.selection_["choice_per_fold"] == ["b"] * len(folds)   # scoring every fold sees a's errors


def test_every_fold_gets_the_pilots_pooled_choice():
    # pooled over the pilot's rows "b" is lower (errors 1 on fold 1 against 2 on fold 0), though fold 0's own
    # rows favour "b" and fold 1's favour "a": every fold, the pilot's included, gets "b"
    y, C, folds, train = _offset_case()
    chosen = SelectedOutcome({"a": Offset(y, folds, {0: 2.0}), "b": Offset(y, folds, {1: 1.0})}).fit(
        C, y, train, None)
    assert chosen.selection_["choice_per_fold"] == ["b"] * len(folds)
    every = SelectedOutcome({"a": Offset(y, folds, {0: 2.0}), "b": Offset(y, folds, {1: 1.0})},
                            pilot=None).fit(C, y, train, None)
    assert every.selection_["choice_per_fold"][:2] == ["a", "b"]   # the other folds' rows, fold by fold


def test_one_training_set_is_scored_on_inner_folds():
    z, _, y = design()
    chosen = SelectedOutcome({"shrunk": Line(0.5), "fit": Line(1.0)}, seed=0).fit(z, y, [np.arange(len(y))], None)
    assert chosen.selection_["choice"] == "fit" and chosen.selection_["inner_folds"] == 5
    assert chosen.selection_["scored_folds"] == 5      # every inner fold scored (the K-fold pilot is not used)
    assert chosen.selection_["heldout_loss"]["fit"] < chosen.selection_["heldout_loss"]["shrunk"]


def test_sampler_choice_is_the_lower_energy_score():
    z, a, _ = design()
    folds = make_folds(len(a), 4, 1)
    train = [np.setdiff1d(np.arange(len(a)), rows) for rows in folds]
    for order in (("wide", "true"), ("true", "wide")):
        candidates = {"wide": Shifted(2.5), "true": Shifted(1.0)}
        chosen = SelectedSampler({name: candidates[name] for name in order}, seed=0).fit(z, a[:, None], train, None)
        assert chosen.selection_["choice"] == "true"
        assert chosen.selection_["heldout_loss"]["true"] < chosen.selection_["heldout_loss"]["wide"]


def test_energy_score_is_lowest_at_the_truth():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4000, 1))
    scores = {sd: energy_score(sd * rng.standard_normal((4000, 16, 1)), x).mean() for sd in (0.5, 1.0, 2.0)}
    assert scores[1.0] < scores[0.5] and scores[1.0] < scores[2.0]


def test_dml_cmr_auto_records_its_choice_and_uses_it(linear_iv):
    data = linear_iv(400, seed=2)
    est = DMLCMR("gb", 3, outcome_learner="auto", sampler="auto", epochs=3, seed=0).fit(data)
    for role in ("s", "g"):
        record = est.nuisance_selection_[role]
        assert record["candidates"] == ["gb", "gb-small"]
        losses = record["heldout_loss"]
        assert record["choice"] == min(losses, key=losses.get)
    s = est.s_model_
    picked = s.fitted_[s.choices_[0]]
    rows = est.folds_[0]
    assert np.allclose(est.targets_[rows], picked.predict(0, data.cmr().conditioning[rows]))
    assert all("s" in entry and "g" in entry for entry in est.fold_losses_)   # the chosen model's histories


@pytest.mark.parametrize("cls", [CEDMLCMR, NaivePlugIn])
def test_every_method_of_the_family_takes_auto(cls, linear_iv):
    outcome = {"outcome_learner": "auto"} if cls is CEDMLCMR else {}   # the naive plug-in has no outcome model
    est = cls("gb", sampler="auto", epochs=3, **outcome).fit(linear_iv(300))
    assert est.nuisance_selection_["g"]["inner_folds"] == 5
    assert ("s" in est.nuisance_selection_) == (cls is CEDMLCMR)


def test_an_outcome_learner_where_there_is_no_outcome_model_is_refused(linear_iv):
    with pytest.raises(DMLCoreError, match="NaivePlugIn has no outcome model, so outcome_learner='auto'"):
        NaivePlugIn("gb", outcome_learner="auto").fit(linear_iv(100))
    for method in ("naive", "2sls"):
        with pytest.raises(DMLCoreError, match=f"outcome_learner='auto' applies to dml-cmr and ce-dml-cmr only, "
                                               f"not to {method}"):
            make_estimator(method, outcome_learner="auto")
    with pytest.raises(DMLCoreError, match="sampler='gb' applies to dml-cmr, ce-dml-cmr and naive only, not to kiv"):
        make_estimator("kiv", sampler="gb")


def test_run_record_and_cli_carry_the_choice(linear_iv, tmp_path, capsys):
    run = fit_run(linear_iv(300), "dml-cmr", learner="gb", folds=2, epochs=3, outcome_learner="auto", sampler="gb",
                  heldout_folds=0)
    assert run.record["config"]["outcome_learner"] == "auto" and run.record["config"]["sampler"] == "gb"
    assert set(run.record["nuisances"]) == {"s"}
    out = tmp_path / "run.json"
    assert main(["fit", "--n", "300", "--learner", "gb", "--folds", "2", "--epochs", "3", "--outcome-learner", "auto",
                 "--json", str(out)]) == 0
    nuisances = json.loads(out.read_text())["nuisances"]
    choice, g = nuisances["s"]["choice"], nuisances["g"]["choice"]
    assert choice in ("gb", "gb-small")
    assert (f"s-hat=auto:{choice} g-hat=auto:{g} nuisances=(outcome model {choice}, distribution model {g}, chosen by "
            f"their own held-out losses)") in capsys.readouterr().out


def test_auto_is_for_one_nuisance_only(linear_iv):
    with pytest.raises(DMLCoreError, match="'auto' applies to outcome_learner and sampler"):
        DMLCMR("auto").fit(linear_iv(100))


# ---- "auto" is the default of the family's nuisances with learner nn or gb (issue 32)

def test_the_default_nuisances_are_auto_for_nn_and_gb_and_the_learners_own_otherwise():
    assert [nuisance_default(None, name) for name in ("nn", "gb", "rf", "linear")] == ["auto", "auto", "rf", "linear"]
    assert nuisance_default("nn", "gb") == "nn"     # a named nuisance learner is kept


@pytest.mark.parametrize("method", ["dml-cmr", "ce-dml-cmr", "naive"])
def test_the_family_fits_auto_by_default_and_its_record_says_so(method, linear_iv):
    run = fit_run(linear_iv(300), method, learner="gb", epochs=3, heldout_folds=0, effect_folds=0,
                  **({"folds": 2} if method == "dml-cmr" else {}))
    config, nuisances = run.record["config"], run.record["nuisances"]
    orthogonal = method != "naive"
    assert config["sampler"] == "auto" and config["outcome_learner"] == ("auto" if orthogonal else None)
    assert set(nuisances) == ({"s", "g"} if orthogonal else {"g"})
    assert all(entry["candidates"] == ["gb", "gb-small"] for entry in nuisances.values())


def test_naming_the_learner_keeps_the_old_default(linear_iv):
    named = DMLCMR("gb", 2, outcome_learner="gb", sampler="gb", epochs=3).fit(linear_iv(300))
    assert named.nuisance_selection_ == {}
    assert named.nuisance_learners_ == {"outcome_learner": "gb", "sampler": "gb"}
    linear = DMLCMR("linear", 2, n_draws=2).fit(linear_iv(300))     # auto does not choose among linear models
    assert linear.nuisance_selection_ == {} and linear.nuisance_learners_ == {"outcome_learner": "linear",
                                                                              "sampler": "linear"}


def test_a_study_names_the_auto_default_so_fits_stored_before_it_are_not_reused():
    spec = spec_from_dict({"dataset": "demand-iv", "data": {"n": 200}, "methods": ["dml-cmr", "naive"],
                           "learner": ["nn", "linear"], "folds": 2, "seeds": "0"})
    by = {(c["method"], c["learner"]): c for c in spec.configs()}
    assert (by["dml-cmr", "nn"]["outcome_learner"], by["dml-cmr", "nn"]["sampler"]) == ("auto", "auto")
    assert (by["naive", "nn"]["outcome_learner"], by["naive", "nn"]["sampler"]) == (None, "auto")
    assert by["dml-cmr", "linear"]["outcome_learner"] is None and by["dml-cmr", "linear"]["sampler"] is None
    before = {**by["dml-cmr", "nn"], "outcome_learner": None, "sampler": None}    # a fit stored with the old default
    assert config_key(before) != config_key(by["dml-cmr", "nn"])
    assert not trains_networks({"method": "dml-cmr", "learner": "gb"})        # auto fits boosters on tabular data
    assert trains_networks({"method": "dml-cmr", "learner": "gb", "outcome_learner": "nn"})


def test_one_candidate_and_one_training_set_is_fitted_once_without_an_inner_cross_fit():
    rng = np.random.default_rng(0)
    C = rng.standard_normal((200, 2))
    y = C @ [1.0, -2.0] + rng.standard_normal(200)
    calls = []

    class Counted(TabularOutcome):
        def fit(self, C, y, train_sets, monitor):
            calls.append(len(train_sets))
            return super().fit(C, y, train_sets, monitor)

    chosen = SelectedOutcome({"linear": Counted("linear")}).fit(C, y, [np.arange(200)], Monitor())
    assert calls == [1]
    assert chosen.selection_["inner_folds"] is None and chosen.selection_["heldout_loss"] == {"linear": None}
    assert np.allclose(chosen.predict(0, C[:3]), chosen.fitted_["linear"].predict(0, C[:3]))


def test_settings_of_a_learner_that_auto_does_not_fit_act_or_are_refused_in_one_line(linear_iv):
    with pytest.raises(DMLCoreError, match=r"nuisance_params \['alpha'\] set the linear nuisances, but they are 'auto'"):
        DMLCMR("linear", 2, outcome_learner="auto", nuisance_params={"alpha": 2.0}).fit(linear_iv(100))
    # with the network as the learner it is one of auto's candidates, and its settings reach it
    chosen = DMLCMR("nn", 2, n_draws=2, outcome_learner="auto", sampler="linear",
                    nuisance_params={"max_epochs": 2}).fit(linear_iv(100))
    assert chosen.nuisance_selection_["s"]["candidates"] == ["nn", "gb", "gb-small"]
    own = DMLCMR("nn", 2, n_draws=2, nuisance_params={"max_epochs": 2}).fit(linear_iv(100))  # the settings act
    assert own.nuisance_learners_ == {"outcome_learner": "nn", "sampler": "nn"} and own.nuisance_selection_ == {}
    est = DMLCMR("gb", 2, n_draws=2, nuisance_params={"max_iter": 4}).fit(linear_iv(200))   # gb's reach its candidates
    assert all(m.max_iter == 4 for m in est.s_model_.fitted_[est.s_model_.choices_[0]].models_)


def test_on_images_auto_is_the_network_alone_fitted_as_when_named():
    # the benchmarks' image tables (digits-iv, dsprites-pcl) made with the network named stand for auto
    from dmlcore.data.registry import load_dataset
    data = load_dataset("digits-iv", n=120, seed=0).data
    fits = [DMLCMR("nn", 2, epochs=2, seed=0, **named).fit(data) for named in ({}, {"outcome_learner": "nn",
                                                                                   "sampler": "nn"})]
    assert fits[0].nuisance_selection_["s"]["candidates"] == ["nn"] == fits[0].nuisance_selection_["g"]["candidates"]
    grid = data.table[data.input_columns].iloc[:20]
    assert np.array_equal(fits[0].predict(grid), fits[1].predict(grid))


def test_a_recorded_choice_is_described_with_its_losses_and_rows():
    z, _, y = design()
    folds = make_folds(len(y), 10, 0)
    train = [np.setdiff1d(np.arange(len(y)), rows) for rows in folds]
    record = SelectedOutcome({"shrunk": Line(0.5), "fit": Line(1.0)}, seed=0).fit(z, y, train, None).selection_
    text = describe(record, "s")
    assert text.startswith("Outcome model s(c): auto chose fit; held-out mean squared error on the 200 rows of the "
                           "first 2 folds, lower is better: fit ")
    assert text.index("fit ") < text.index("shrunk ")       # the lowest loss first
    mixed = {**record, "choice_per_fold": ["fit"] * 9 + ["shrunk"]}
    assert "auto chose fit for 9 of 10 folds (shrunk for 1)" in describe(mixed, "s")
    one = {"candidates": ["nn"], "heldout_loss": {"nn": None}, "choice": "nn", "choice_per_fold": ["nn"] * 3}
    assert describe(one, "g") == "Distribution model: auto chose nn (its only candidate here)."
